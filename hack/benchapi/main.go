// Command benchapi compares the two ways to serve apps.kruise.io CloneSets through kube-apiserver
// (hack/bench-api.sh runs it): inplace's aggregated API server (apps.kruise.io/v1alpha1, proxied by
// kube-apiserver's aggregator to inplace-apiserver and its embedded etcd) and OpenKruise's own
// CustomResourceDefinition (served by kube-apiserver itself from its etcd; installed under the
// group apps.kruise.example so that both exist at once). Three clients drive them with the same
// objects and the same concurrency: the dynamic client (JSON) on each, and inplace's generated
// clientset speaking protobuf on the aggregated one (a CRD cannot serve protobuf):
//
//   - create, get and update of -objects CloneSets, at each concurrency of -concurrency;
//   - list of all of them, whole and in pages of -page (limit/continue);
//   - watch fan-out: -watchers watches of the namespace, -events objects created one at a time,
//     the latency from sending each create to each watcher's event;
//
// printing p50/p99 and operations per second of each, and each aggregated path's ratio to the CRD's.
// With -pids it also prints the CPU seconds each named process used during each path's run and
// its resident memory at the end (Linux /proc).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/inplace-dev/inplace/hack/benchlib"
)

// A path is one way the CloneSets are served and read.
type path struct {
	name string
	// newTarget returns the client of this path in namespace.
	newTarget func(cfg *rest.Config, namespace string) (target, error)
}

var (
	aggregatedGVR = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "clonesets"}
	crdGVR        = schema.GroupVersionResource{Group: "apps.kruise.example", Version: "v1alpha1", Resource: "clonesets"}
)

var paths = []path{
	{"aggregated", func(cfg *rest.Config, ns string) (target, error) { return newDynamicTarget(cfg, aggregatedGVR, ns) }},
	{"aggregated protobuf", newProtobufTarget},
	// The direct paths talk to inplace-apiserver itself (-direct), not through kube-apiserver's
	// aggregator: the difference to the aggregated paths is the proxy hop.
	{"direct", func(cfg *rest.Config, ns string) (target, error) { return newDynamicTarget(cfg, aggregatedGVR, ns) }},
	{"direct protobuf", newProtobufTarget},
	{"CRD", func(cfg *rest.Config, ns string) (target, error) { return newDynamicTarget(cfg, crdGVR, ns) }},
}

// isDirect tells the paths that bypass the aggregator.
func isDirect(name string) bool { return strings.HasPrefix(name, "direct") }

type config struct {
	namespace   string
	objects     int
	concurrency []int
	page        int64
	watchers    int
	events      int
	pids        map[string]int
	paths       []string
	rounds      int
}

func main() {
	var c config
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	flag.StringVar(&c.namespace, "namespace", "", "namespace for the CloneSets (must exist)")
	flag.IntVar(&c.objects, "objects", 1000, "CloneSets created, read and updated at each concurrency")
	conc := flag.String("concurrency", "1,8,32", "comma-separated numbers of concurrent clients")
	flag.Int64Var(&c.page, "page", 500, "page size of the paged list")
	flag.IntVar(&c.watchers, "watchers", 10, "watches of the namespace for the fan-out")
	flag.IntVar(&c.events, "events", 100, "objects created one at a time while the watches run")
	pids := flag.String("pids", "", "NAME=PID,... processes whose CPU and memory to report")
	pathNames := flag.String("paths", "aggregated,aggregated protobuf,CRD", "comma-separated paths to run")
	direct := flag.String("direct", "", "URL of inplace-apiserver itself, for the direct paths (the kubeconfig's credentials and CA)")
	flag.IntVar(&c.rounds, "rounds", 1, "rounds of all the paths, one path after the other in each (rotated), "+
		"their latencies pooled: a machine slower for a while then slows every path, not the one it ran")
	flag.Parse()
	if c.namespace == "" || c.objects < 1 || c.watchers < 1 || c.events < 1 || c.page < 1 || c.rounds < 1 {
		fmt.Fprintln(os.Stderr, "usage: benchapi -namespace NS [-objects 1000] [-concurrency 1,8,32] [-page 500] [-watchers 10] [-events 100] [-pids NAME=PID,...] [-paths P,...] [-direct URL] [-rounds 1]")
		os.Exit(2)
	}
	for _, s := range strings.Split(*conc, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "benchapi: -concurrency %q: want positive numbers\n", *conc)
			os.Exit(2)
		}
		c.concurrency = append(c.concurrency, n)
	}
	c.paths = strings.Split(*pathNames, ",")
	for _, name := range c.paths {
		if !slices.ContainsFunc(paths, func(p path) bool { return p.name == name }) {
			fmt.Fprintf(os.Stderr, "benchapi: -paths: unknown path %q\n", name)
			os.Exit(2)
		}
		if isDirect(name) && *direct == "" {
			fmt.Fprintf(os.Stderr, "benchapi: -paths: path %q needs -direct\n", name)
			os.Exit(2)
		}
	}
	c.pids = map[string]int{}
	for _, kv := range strings.Split(*pids, ",") {
		if kv == "" {
			continue
		}
		name, v, _ := strings.Cut(kv, "=")
		pid, err := strconv.Atoi(v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchapi: -pids %q: %v\n", kv, err)
			os.Exit(2)
		}
		c.pids[name] = pid
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchapi:", err)
		os.Exit(1)
	}
	// Client-side throttling would time the client, not the servers.
	cfg.QPS, cfg.Burst = -1, 0
	targets := map[string]target{}
	var order []string
	for _, p := range paths {
		if !slices.Contains(c.paths, p.name) {
			continue
		}
		pathCfg := cfg
		if isDirect(p.name) {
			pathCfg = rest.CopyConfig(cfg)
			pathCfg.Host = *direct
		}
		t, err := p.newTarget(pathCfg, c.namespace)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchapi: %s path: %v\n", p.name, err)
			os.Exit(1)
		}
		targets[p.name] = t
		order = append(order, p.name)
	}
	results := map[string]*pathResult{}
	for round := range c.rounds {
		for i := range order {
			// Rotated, so that no path always follows the same one (the one before leaves the
			// servers its garbage and its watch cache's history).
			name := order[(i+round)%len(order)]
			fmt.Fprintf(os.Stderr, "benchapi: round %d/%d: %s path\n", round+1, c.rounds, name)
			r, err := runPath(ctx, targets[name], c)
			if err != nil {
				fmt.Fprintf(os.Stderr, "benchapi: %s path: %v\n", name, err)
				os.Exit(1)
			}
			if results[name] == nil {
				results[name] = r
			} else {
				results[name].add(r)
			}
		}
	}
	report(c, results)
}

// pathResult holds one path's latencies per operation ("create/8", "list", "watch", ...), their
// wall times, and the processes' CPU seconds and memory.
type pathResult struct {
	lat   map[string][]time.Duration
	wall  map[string]time.Duration
	cpu   map[string]float64
	rssMB map[string]float64
}

// add pools another round's result into r: latencies and wall and CPU times add up, memory is
// the larger.
func (r *pathResult) add(o *pathResult) {
	for k, v := range o.lat {
		r.lat[k] = append(r.lat[k], v...)
	}
	for k, v := range o.wall {
		r.wall[k] += v
	}
	for k, v := range o.cpu {
		r.cpu[k] += v
	}
	for k, v := range o.rssMB {
		r.rssMB[k] = max(r.rssMB[k], v)
	}
}

func runPath(ctx context.Context, t target, c config) (*pathResult, error) {
	r := &pathResult{lat: map[string][]time.Duration{}, wall: map[string]time.Duration{}, cpu: map[string]float64{}, rssMB: map[string]float64{}}
	before := cpuSeconds(c.pids)
	defer func() {
		after := cpuSeconds(c.pids)
		for name := range c.pids {
			r.cpu[name] = after[name] - before[name]
			r.rssMB[name] = benchlib.RSSMB(c.pids[name])
		}
	}()
	if err := clearAll(ctx, t); err != nil {
		return nil, err
	}
	for _, n := range c.concurrency {
		names := make([]string, c.objects)
		for i := range names {
			names[i] = fmt.Sprintf("c%d-%d", n, i)
		}
		for _, op := range []struct {
			name string
			do   func(context.Context, string) error
		}{
			{"create", func(ctx context.Context, name string) error { return t.create(ctx, name, nil) }},
			{"get", t.get},
			// An update sends back what the create answered, with one field changed (no read
			// first, so only the Update is timed).
			{"update", t.update},
		} {
			key := fmt.Sprint(op.name, "/", n)
			var err error
			if r.lat[key], r.wall[key], err = benchlib.Parallel(ctx, n, names, op.do); err != nil {
				return nil, fmt.Errorf("%s: %w", op.name, err)
			}
		}
		if n != c.concurrency[len(c.concurrency)-1] {
			if err := clearAll(ctx, t); err != nil {
				return nil, err
			}
		}
	}
	// The last concurrency's objects stay for the lists.
	for i := 0; i < 10; i++ {
		for _, kind := range []struct {
			name  string
			limit int64
		}{{"list", 0}, {"list paged", c.page}} {
			start := time.Now()
			n, err := listAll(ctx, t, kind.limit)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", kind.name, err)
			}
			if n != c.objects {
				return nil, fmt.Errorf("%s: %d objects, want %d", kind.name, n, c.objects)
			}
			r.lat[kind.name] = append(r.lat[kind.name], time.Since(start))
		}
	}
	var err error
	if r.lat["watch"], err = fanOut(ctx, t, c.watchers, c.events); err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	return r, clearAll(ctx, t)
}

// clearAll deletes every CloneSet of the namespace and waits until they are gone.
func clearAll(ctx context.Context, t target) error {
	if err := t.deleteAll(ctx); err != nil {
		return fmt.Errorf("clearing the namespace: %w", err)
	}
	for {
		n, _, _, err := t.list(ctx, 1, "")
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// cloneSet is the CloneSet every path stores: a typical one-container template.
func cloneSet(apiVersion, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion,
		"kind":       "CloneSet",
		"metadata":   map[string]any{"name": name, "labels": map[string]any{"app": "bench"}},
		// With OpenKruise's defaults written out (what inplace-apiserver sets, as OpenKruise's
		// webhook does; the CRD has no webhook here and stores what it is sent), so that both
		// paths store and serve the same object: ~2 KB, not ~1 KB on one path and ~2 on the other.
		"spec": map[string]any{
			"replicas":             int64(2),
			"revisionHistoryLimit": int64(10),
			"selector":             map[string]any{"matchLabels": map[string]any{"app": name}},
			"scaleStrategy":        map[string]any{},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": name}},
				"spec": map[string]any{
					"containers": []any{map[string]any{
						"name": "main", "image": "registry.example/app:v1", "imagePullPolicy": "Always",
						"ports":                    []any{map[string]any{"containerPort": int64(8080), "protocol": "TCP"}},
						"resources":                map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "64Mi"}},
						"terminationMessagePath":   "/dev/termination-log",
						"terminationMessagePolicy": "File",
					}},
					"dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
					"securityContext": map[string]any{}, "terminationGracePeriodSeconds": int64(30),
				},
			},
			"updateStrategy": map[string]any{"type": "InPlaceIfPossible", "maxUnavailable": "20%",
				"maxSurge": int64(0), "partition": int64(0), "inPlaceUpdateStrategy": map[string]any{}},
		},
	}}
}

// listAll lists everything, in pages of limit when limit > 0, and counts the objects.
func listAll(ctx context.Context, t target, limit int64) (int, error) {
	total, cont := 0, ""
	for {
		n, next, _, err := t.list(ctx, limit, cont)
		if err != nil {
			return 0, err
		}
		total += n
		if cont = next; cont == "" {
			return total, nil
		}
	}
}

// fanOut opens watchers watches, creates events objects one after another, and returns, for each
// object and watcher, the time from sending the create to the watcher's ADDED event.
func fanOut(ctx context.Context, t target, watchers, events int) ([]time.Duration, error) {
	_, _, rv, err := t.list(ctx, 1, "")
	if err != nil {
		return nil, err
	}
	type seen struct {
		name string
		at   time.Time
	}
	got := make(chan seen, watchers*events)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range watchers {
		added, err := t.watchAdded(ctx, rv, "fanout=yes")
		if err != nil {
			return nil, err
		}
		go func() {
			for name := range added {
				got <- seen{name, time.Now()}
			}
		}()
	}
	// From the moment the create is sent: an event often reaches a watcher before the create's
	// answer reaches its client.
	sent := map[string]time.Time{}
	for i := range events {
		name := fmt.Sprintf("w-%d", i)
		sent[name] = time.Now()
		if err := t.create(ctx, name, map[string]string{"app": "bench", "fanout": "yes"}); err != nil {
			return nil, err
		}
	}
	var lat []time.Duration
	deadline := time.After(time.Minute)
	for len(lat) < watchers*events {
		select {
		case s := <-got:
			lat = append(lat, s.at.Sub(sent[s.name]))
		case <-deadline:
			return nil, fmt.Errorf("%d of %d events arrived within a minute", len(lat), watchers*events)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return lat, nil
}

// cpuSeconds reads the CPU seconds each named process has used so far.
func cpuSeconds(pids map[string]int) map[string]float64 {
	out := map[string]float64{}
	for name, pid := range pids {
		out[name] = benchlib.CPUSeconds(pid)
	}
	return out
}

func percentile(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }

// report prints, per operation, each path's p50/p99 (ms) and ops/s, and each aggregated path's
// p50 and p99 as a ratio of the CRD's; then the processes' CPU and memory during each path's run.
func report(c config, results map[string]*pathResult) {
	var names []string
	for _, p := range paths {
		if results[p.name] != nil {
			names = append(names, p.name)
		}
	}
	crd := results["CRD"]
	fmt.Printf("objects: %d  concurrency: %v  page: %d  watchers: %d x %d events  rounds: %d\n", c.objects, c.concurrency, c.page, c.watchers, c.events, c.rounds)
	fmt.Printf("each cell: p50 ms / p99 ms / ops/s; ratios: p50 / p99 of the path over the CRD's\n\n")
	fmt.Printf("%-12s", "operation")
	for _, name := range names {
		fmt.Printf(" %24s", name)
	}
	for _, name := range names {
		if name != "CRD" && crd != nil {
			fmt.Printf(" %24s", name+"/CRD")
		}
	}
	fmt.Println()
	var ops []string
	for _, n := range c.concurrency {
		for _, op := range []string{"create", "get", "update"} {
			ops = append(ops, fmt.Sprint(op, "/", n))
		}
	}
	ops = append(ops, "list", "list paged", "watch")
	for _, op := range ops {
		fmt.Printf("%-12s", op)
		for _, name := range names {
			r := results[name]
			rate := "-"
			if w := r.wall[op]; w > 0 {
				rate = fmt.Sprintf("%.0f", float64(len(r.lat[op]))/w.Seconds())
			}
			fmt.Printf(" %24s", fmt.Sprintf("%s / %s / %s", ms(percentile(r.lat[op], .5)), ms(percentile(r.lat[op], .99)), rate))
		}
		for _, name := range names {
			if name == "CRD" || crd == nil {
				continue
			}
			r := results[name]
			fmt.Printf(" %24s", fmt.Sprintf("%s / %s",
				benchlib.Ratio(float64(percentile(r.lat[op], .5)), float64(percentile(crd.lat[op], .5))),
				benchlib.Ratio(float64(percentile(r.lat[op], .99)), float64(percentile(crd.lat[op], .99)))))
		}
		fmt.Println()
	}
	if len(c.pids) == 0 {
		return
	}
	fmt.Printf("\n%-18s", "process")
	for _, name := range names {
		fmt.Printf(" %24s", "during "+name)
	}
	fmt.Println()
	procs := make([]string, 0, len(c.pids))
	for proc := range c.pids {
		procs = append(procs, proc)
	}
	slices.Sort(procs)
	for _, proc := range procs {
		fmt.Printf("%-18s", proc)
		for _, name := range names {
			fmt.Printf(" %24s", fmt.Sprintf("%.1f CPU s %4.0f MB", results[name].cpu[proc], results[name].rssMB[proc]))
		}
		fmt.Println()
	}
}
