// Command benchload drives a mixed CloneSet load through kube-apiserver (hack/bench-load.sh):
// -clients goroutines for -duration, creates, gets, updates, lists and deletes spread over
// -namespaces. It prints per verb the count, rate, p50/p99 and the 409s, 404s and other errors,
// and inplace-apiserver's RSS before and after; it exits 1 on any answer but a success or an
// expected 409 (an update or delete that raced another client) or 404 (one that raced a delete).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/inplace-dev/inplace/hack/benchlib"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	clients := flag.Int("clients", 50, "concurrent clients")
	duration := flag.Duration("duration", 60*time.Second, "how long the load runs")
	namespaces := flag.String("namespaces", "", "comma-separated namespaces (existing)")
	apiserverPid := flag.Int("apiserver-pid", 0, "pid of inplace-apiserver, to report its memory (0: not reported)")
	flag.Parse()
	if err := run(*kubeconfig, *clients, *duration, strings.Split(*namespaces, ","), *apiserverPid); err != nil {
		fmt.Fprintln(os.Stderr, "benchload:", err)
		os.Exit(1)
	}
}

func run(kubeconfig string, clients int, duration time.Duration, namespaces []string, pid int) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	// The load is the point: no client-side throttling.
	cfg.QPS, cfg.Burst = -1, 0
	client, err := clientset.NewForConfig(cfg)
	if err != nil {
		return err
	}
	rssBefore := rss(pid)
	res := benchlib.Load(context.Background(), client, benchlib.LoadConfig{
		Clients: clients, Duration: duration, Namespaces: namespaces, Seed: uint64(time.Now().UnixNano()),
	})
	fmt.Printf("%d clients x %v over %d namespaces (%.1f s)\n", clients, duration, len(namespaces), res.Elapsed.Seconds())
	fmt.Print(res.Table())
	if pid > 0 {
		fmt.Printf("inplace-apiserver RSS MB: %.0f before, %.0f after\n", rssBefore, rss(pid))
	}
	if bad := res.Unexpected(); len(bad) > 0 {
		return fmt.Errorf("%d unexpected answers:\n  %s", len(bad), strings.Join(bad, "\n  "))
	}
	return nil
}

func rss(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	return benchlib.RSSMB(pid)
}
