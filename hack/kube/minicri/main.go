// Command minicri is a tiny CRI client (crictl is not served by the Go module
// proxy), used by hack/local-down.sh to tear down every pod sandbox cleanly
// (containers killed, CNI network released, netns removed) before containerd
// is stopped, and by hack/bench-crr.sh to stop containers the way the kubelet
// does (its floor). It is also handy for looking at the node:
//
//	minicri [-endpoint unix:///run/containerd/containerd.sock] pods|ps|images|rmp-all
//	minicri [-endpoint ...] stop [-timeout-seconds S] ID...
//	minicri [-endpoint ...] rmi REF...
//
// rmi calls CRI RemoveImage for each image reference (an image the node does
// not have is no error), as hack/bench-predownload.sh does to make a pull cold.
//
// stop calls CRI StopContainer for every ID at once (SIGTERM, SIGKILL after S
// seconds, as the kubelet does with a Pod's terminationGracePeriodSeconds);
// an ID is bare or as in a Pod's status ("containerd://abc...").
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func main() {
	endpoint := flag.String("endpoint", "unix:///run/containerd/containerd.sock", "CRI endpoint")
	timeout := flag.Duration("timeout", 60*time.Second, "overall deadline")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: %s [flags] pods|ps|images|rmp-all\n", os.Args[0])
		fmt.Fprintf(os.Stderr, "       %s [flags] stop [-timeout-seconds S] ID...   (CRI StopContainer, all IDs at once;\n", os.Args[0])
		fmt.Fprintf(os.Stderr, "           SIGKILL after S seconds, default 30; an ID is bare or containerd://...)\n")
		fmt.Fprintf(os.Stderr, "       %s [flags] rmi REF...   (CRI RemoveImage of each reference)\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() < 1 {
		flag.Usage()
		os.Exit(2)
	}
	cmd, args := flag.Arg(0), flag.Args()[1:]
	var stopTimeout int64
	if cmd == "stop" {
		fs := flag.NewFlagSet("stop", flag.ExitOnError)
		fs.Int64Var(&stopTimeout, "timeout-seconds", 30, "seconds from the stop signal to SIGKILL (0: SIGKILL at once)")
		fs.Usage = flag.Usage
		_ = fs.Parse(args) // ExitOnError
		args = fs.Args()
		if len(args) == 0 || stopTimeout < 0 {
			flag.Usage()
			os.Exit(2)
		}
	} else if (cmd == "rmi") != (len(args) != 0) {
		flag.Usage()
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, *endpoint, cmd, args, stopTimeout); err != nil {
		fmt.Fprintln(os.Stderr, "minicri:", err)
		os.Exit(1)
	}
}

// run runs cmd; args and stopTimeout are stop's container ids and timeout.
func run(ctx context.Context, endpoint, cmd string, args []string, stopTimeout int64) error {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	img := runtimeapi.NewImageServiceClient(conn)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	defer tw.Flush()

	switch cmd {
	case "pods":
		resp, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		if err != nil {
			return err
		}
		fmt.Fprintln(tw, "POD ID\tSTATE\tNAMESPACE\tNAME\tUID")
		for _, p := range resp.Items {
			m := p.GetMetadata()
			fmt.Fprintf(tw, "%.13s\t%s\t%s\t%s\t%s\n", p.Id, p.State, m.GetNamespace(), m.GetName(), m.GetUid())
		}
	case "ps":
		resp, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
		if err != nil {
			return err
		}
		fmt.Fprintln(tw, "CONTAINER ID\tSTATE\tNAME\tATTEMPT\tIMAGE\tPOD ID")
		for _, c := range resp.Containers {
			fmt.Fprintf(tw, "%.13s\t%s\t%s\t%d\t%s\t%.13s\n", c.Id, c.State, c.GetMetadata().GetName(),
				c.GetMetadata().GetAttempt(), c.GetImage().GetImage(), c.PodSandboxId)
		}
	case "images":
		resp, err := img.ListImages(ctx, &runtimeapi.ListImagesRequest{})
		if err != nil {
			return err
		}
		fmt.Fprintln(tw, "IMAGE ID\tTAGS")
		for _, i := range resp.Images {
			fmt.Fprintf(tw, "%.19s\t%v\n", i.Id, i.RepoTags)
		}
	case "rmi":
		for _, ref := range args {
			if _, err := img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
				return fmt.Errorf("rmi %s: %w", ref, err)
			}
		}
	case "rmp-all":
		// Stop then remove every pod sandbox; containerd kills the containers
		// and runs the CNI DEL for each.
		resp, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		if err != nil {
			return err
		}
		var failed error
		for _, p := range resp.Items {
			if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.Id}); err != nil {
				failed = fmt.Errorf("stop %s: %w", p.Id, err)
				continue
			}
			if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.Id}); err != nil {
				failed = fmt.Errorf("remove %s: %w", p.Id, err)
				continue
			}
			fmt.Printf("removed pod sandbox %.13s (%s/%s)\n", p.Id, p.GetMetadata().GetNamespace(), p.GetMetadata().GetName())
		}
		return failed
	case "stop":
		// All at once, as the kubelet stops the containers of many Pods, each
		// in its own goroutine; reported in the order given.
		errs := make([]error, len(args))
		var wg sync.WaitGroup
		for i, id := range args {
			if _, raw, ok := strings.Cut(id, "://"); ok {
				id = raw
			}
			if id == "" {
				errs[i] = fmt.Errorf("stop %q: empty container id", args[i])
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: stopTimeout}); err != nil {
					errs[i] = fmt.Errorf("stop %s: %w", id, err)
				}
			}()
		}
		wg.Wait()
		for i, id := range args {
			if errs[i] == nil {
				fmt.Printf("stopped container %s\n", id)
			}
		}
		return errors.Join(errs...)
	default:
		return fmt.Errorf("unknown command %q", cmd)
	}
	return nil
}
