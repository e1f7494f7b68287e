// Command benchscale drives thousands of Pods on kwok's fake nodes through two controllers with
// the same Pod template, replicas and availability budget (hack/bench-scale.sh runs it):
// inplace-controller with -workloads CloneSets (InPlaceIfPossible) and kube-controller-manager
// with as many Deployments, the control plane's own anchor. For each kind, in turn:
//
//   - create: create the workloads (-concurrency at a time) and wait until every one has all its
//     -replicas ready;
//   - rollout: change the image of all of them at once and wait until every one has converged on
//     it; count the Pods created and deleted meanwhile (an in-place rollout creates none) and the
//     container restarts;
//   - scale-down: replicas 0 everywhere, wait until no Pod is left;
//   - delete: delete every workload and wait until nothing they made is left (Pods, ReplicaSets,
//     ControllerRevisions).
//
// Each phase reports its wall time, the requests its controller sent (client-go's
// rest_client_requests_total on the controller's /metrics) and how many were answered 429, the
// requests kube-apiserver rejected by priority and fairness, and the CPU seconds and peak
// resident memory of every process named in -pids. It prints one table, both kinds side by side
// and the ratio inplace / anchor.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/inplace-dev/inplace/hack/benchlib"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	"github.com/inplace-dev/inplace/pkg/util/serving"
)

type config struct {
	workloads, concurrency int
	replicas               int32
	kinds                  []string
	timeout                time.Duration
	pids                   map[string]int
	// metrics: the /metrics URL of each kind's controller.
	metrics map[string]string
	// files whose size is reported (etcd databases), by name.
	files map[string]string
}

func main() {
	var c config
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	namespace := flag.String("namespace", "", "namespace to run in (must exist)")
	flag.IntVar(&c.workloads, "workloads", 100, "workloads of each kind")
	replicas := flag.Int("replicas", 10, "Pods of each workload")
	flag.IntVar(&c.concurrency, "concurrency", 32, "requests of the benchmark in flight at once")
	kinds := flag.String("kinds", "cloneset,deployment", "kinds to run, in order: cloneset, deployment")
	flag.DurationVar(&c.timeout, "timeout", 30*time.Minute, "deadline of each phase")
	pids := flag.String("pids", "", "name=pid,...: processes whose CPU seconds and peak memory are reported")
	metrics := flag.String("metrics", "", "kind=URL,...: the /metrics of each kind's controller (https uses the kubeconfig's client certificate)")
	files := flag.String("files", "", "name=path,...: files whose size is reported after each phase (etcd databases)")
	flag.Parse()
	c.replicas = int32(*replicas)
	c.kinds = strings.Split(*kinds, ",")
	c.pids = map[string]int{}
	for name, v := range pairs(*pids) {
		var pid int
		if _, err := fmt.Sscan(v, &pid); err != nil {
			fail("-pids %s=%s: %v", name, v, err)
		}
		c.pids[name] = pid
	}
	c.metrics, c.files = pairs(*metrics), pairs(*files)
	if *namespace == "" || c.workloads <= 0 || c.replicas <= 0 {
		fail("-namespace, -workloads > 0 and -replicas > 0 are required")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail("loading %s: %v", *kubeconfig, err)
	}
	// The benchmark's own requests are not what is measured: no client-side limit.
	cfg.QPS, cfg.Burst = 5000, 10000
	serving.PreferProtobuf(cfg)
	kube := kubernetes.NewForConfigOrDie(cfg)
	inplace := clientset.NewForConfigOrDie(cfg)
	b := &bench{config: c, cfg: cfg, kube: kube, namespace: *namespace}
	b.startPods(ctx)

	results := map[string][]phaseResult{}
	for _, kind := range c.kinds {
		var w workload
		switch kind {
		case "cloneset":
			w = newCloneSets(inplace, kube, *namespace)
		case "deployment":
			w = newDeployments(kube, *namespace)
		default:
			fail("unknown kind %q (cloneset, deployment)", kind)
		}
		r, err := b.run(ctx, kind, w)
		if err != nil {
			fail("%s: %v", w.name(), err)
		}
		results[kind] = r
	}
	b.report(results)
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "benchscale: "+format+"\n", args...)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

// pairs parses "a=x,b=y".
func pairs(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

type bench struct {
	config
	cfg       *rest.Config
	kube      kubernetes.Interface
	namespace string
	pods      cache.SharedIndexInformer
	// created and deleted count the Pods of the namespace the watch saw appear and go.
	created, deleted atomic.Int64
}

// startPods follows the namespace's Pods: how many exist, and how many were created and deleted.
func (b *bench) startPods(ctx context.Context) {
	f := kubeinformers.NewSharedInformerFactoryWithOptions(b.kube, 0, kubeinformers.WithNamespace(b.namespace))
	b.pods = f.Core().V1().Pods().Informer()
	_, _ = b.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { b.created.Add(1) },
		DeleteFunc: func(any) { b.deleted.Add(1) },
	})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
}

// restarts is the sum of the restart counts of the namespace's containers.
func (b *bench) restarts() int64 {
	var n int64
	for _, o := range b.pods.GetStore().List() {
		for _, s := range o.(*corev1.Pod).Status.ContainerStatuses {
			n += int64(s.RestartCount)
		}
	}
	return n
}

// phaseResult is what one phase of one kind measured.
type phaseResult struct {
	wall     time.Duration
	created  int64
	deleted  int64
	restarts int64
	// requests the kind's controller sent, and how many of them were answered 429.
	requests, throttled float64
	// rejected: requests kube-apiserver's priority and fairness rejected (any client).
	rejected float64
	// writes: the write requests kube-apiserver served (any client), by "VERB resource[/sub]".
	writes  map[string]float64
	cpu     map[string]float64
	peakRSS map[string]float64
	files   map[string]int64
	// leftovers after delete: Pods plus the controller's ReplicaSets / ControllerRevisions.
	leftovers int
}

// run runs the four phases of one kind.
func (b *bench) run(ctx context.Context, kind string, w workload) ([]phaseResult, error) {
	inf := w.informer()
	go inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, ctx.Err()
	}
	names := make([]string, b.workloads)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%04d", kind, i)
	}
	converged := func(replicas int32, image string) func() (int, string) {
		return func() (int, string) {
			n := 0
			for _, o := range inf.GetStore().List() {
				if w.converged(o, replicas, image) {
					n++
				}
			}
			return n, fmt.Sprintf("%d/%d %ss converged", n, b.workloads, kind)
		}
	}
	podsGone := func() (int, string) {
		n := len(b.pods.GetStore().List())
		if n == 0 {
			return b.workloads, "no Pod left"
		}
		return 0, fmt.Sprintf("%d Pods left", n)
	}
	var out []phaseResult
	phase := func(name string, act func() error, wanted func() (int, string)) error {
		logf("%s: %s", w.name(), name)
		r, err := b.measure(ctx, kind, func() error {
			if err := act(); err != nil {
				return err
			}
			return b.wait(ctx, wanted)
		})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, r)
		logf("%s: %s took %.1fs", w.name(), name, r.wall.Seconds())
		return nil
	}
	// eachName runs op on every workload.
	eachName := func(op func(context.Context, string) error) func() error {
		return func() error {
			_, _, err := benchlib.Parallel(ctx, b.concurrency, names, op)
			return err
		}
	}
	if err := phase("create", eachName(func(ctx context.Context, n string) error {
		return w.create(ctx, n, b.replicas, imageFrom)
	}), converged(b.replicas, imageFrom)); err != nil {
		return nil, err
	}
	if err := phase("rollout", eachName(func(ctx context.Context, n string) error {
		return w.setImage(ctx, n, imageTo)
	}), converged(b.replicas, imageTo)); err != nil {
		return nil, err
	}
	if err := phase("scale-down", eachName(func(ctx context.Context, n string) error {
		return w.scale(ctx, n, 0)
	}), podsGone); err != nil {
		return nil, err
	}
	var left int
	if err := phase("delete", func() error { return w.deleteAll(ctx) }, func() (int, string) {
		if n := len(inf.GetStore().List()); n > 0 {
			return 0, fmt.Sprintf("%d %ss left", n, kind)
		}
		n, err := w.leftovers(ctx)
		if err != nil {
			return 0, err.Error()
		}
		left = n + len(b.pods.GetStore().List())
		if left > 0 {
			return 0, fmt.Sprintf("%d objects made by the %ss left", left, kind)
		}
		return b.workloads, "nothing left"
	}); err != nil {
		return nil, err
	}
	out[len(out)-1].leftovers = left
	return out, nil
}

const (
	imageFrom = "inplace.local/app:v1"
	imageTo   = "inplace.local/app:v2"
)

// wait polls done every 200 ms until it reports every workload, or the phase's deadline.
func (b *bench) wait(ctx context.Context, done func() (int, string)) error {
	var state string
	last := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, b.timeout, true, func(context.Context) (bool, error) {
		var n int
		n, state = done()
		if time.Since(last) > 30*time.Second {
			logf("  %s", state)
			last = time.Now()
		}
		return n == b.workloads, nil
	})
	if err != nil {
		return fmt.Errorf("%s after %s: %w", state, b.timeout, err)
	}
	return nil
}

// measure runs one phase and takes its figures.
func (b *bench) measure(ctx context.Context, kind string, run func() error) (phaseResult, error) {
	r := phaseResult{cpu: map[string]float64{}, files: map[string]int64{}}
	cpu0 := map[string]float64{}
	for n, pid := range b.pids {
		cpu0[n] = benchlib.CPUSeconds(pid)
	}
	req0, thr0 := b.controllerRequests(ctx, kind)
	api0 := b.kubeMetrics(ctx)
	created0, deleted0, restarts0 := b.created.Load(), b.deleted.Load(), b.restarts()
	peak := benchlib.StartPeakRSS(b.pids, time.Second)
	start := time.Now()
	err := run()
	r.wall = time.Since(start)
	r.peakRSS = peak.Stop()
	if err != nil {
		return r, err
	}
	for n, pid := range b.pids {
		r.cpu[n] = benchlib.CPUSeconds(pid) - cpu0[n]
	}
	req1, thr1 := b.controllerRequests(ctx, kind)
	r.requests, r.throttled = req1-req0, thr1-thr0
	api1 := b.kubeMetrics(ctx)
	r.rejected = api1.sum("apiserver_flowcontrol_rejected_requests_total", nil) -
		api0.sum("apiserver_flowcontrol_rejected_requests_total", nil)
	r.writes = api1.writes()
	for k, v := range api0.writes() {
		r.writes[k] -= v
	}
	r.created, r.deleted = b.created.Load()-created0, b.deleted.Load()-deleted0
	r.restarts = b.restarts() - restarts0
	for n, path := range b.files {
		if st, err := os.Stat(path); err == nil {
			r.files[n] = st.Size()
		}
	}
	return r, nil
}

// controllerRequests: the requests the kind's controller has sent so far, and how many were
// answered 429 (rest_client_requests_total); 0 when it has no -metrics.
func (b *bench) controllerRequests(ctx context.Context, kind string) (total, throttled float64) {
	url, ok := b.metrics[kind]
	if !ok {
		return 0, 0
	}
	body, err := b.scrape(ctx, url)
	if err != nil {
		logf("WARNING: %v", err)
		return 0, 0
	}
	ms := parseMetrics(body)
	total = ms.sum("rest_client_requests_total", nil)
	throttled = ms.sum("rest_client_requests_total", map[string]string{"code": "429"})
	return total, throttled
}

// kubeMetrics: kube-apiserver's /metrics, parsed (empty, with a warning, when it cannot be read).
func (b *bench) kubeMetrics(ctx context.Context) metrics {
	body, err := b.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		logf("WARNING: kube-apiserver /metrics: %v", err)
		return nil
	}
	return parseMetrics(body)
}

// controllerOf names the process that drives each kind.
var controllerOf = map[string]string{"cloneset": "inplace-controller", "deployment": "kube-controller-manager"}

// report prints the table: a row per figure, each kind's value and, for numbers, the ratio of the
// first kind to the second.
func (b *bench) report(results map[string][]phaseResult) {
	kinds := slices.Clone(b.kinds)
	fmt.Printf("\n%d workloads x %d Pods of each kind on kwok nodes; image change with maxUnavailable 20%%, no surge\n\n",
		b.workloads, b.replicas)
	fmt.Printf("%-40s", "")
	for _, k := range kinds {
		fmt.Printf(" %16s", k)
	}
	if len(kinds) == 2 {
		fmt.Printf(" %7s", "ratio")
	}
	fmt.Println()
	// row prints value(kind's result of phase) with format; ratio only when numeric.
	row := func(label string, phase int, format string, numeric bool, value func(kind string, r phaseResult) []any) {
		fmt.Printf("%-40s", label)
		var v []float64
		for _, k := range kinds {
			args := value(k, results[k][phase])
			fmt.Printf(" %16s", fmt.Sprintf(format, args...))
			if f, ok := args[0].(float64); ok {
				v = append(v, f)
			}
		}
		if len(kinds) == 2 && numeric && len(v) == 2 {
			fmt.Printf(" %7s", benchlib.Ratio(v[0], v[1]))
		}
		fmt.Println()
	}
	controlPlane := func(r phaseResult) float64 {
		var sum float64
		for _, c := range r.cpu {
			sum += c
		}
		return sum
	}
	procs := make([]string, 0, len(b.pids))
	for n := range b.pids {
		procs = append(procs, n)
	}
	slices.Sort(procs)
	for i, phase := range []string{"create", "rollout", "scale-down", "delete"} {
		row(phase+": seconds", i, "%.1f", true, func(_ string, r phaseResult) []any { return []any{r.wall.Seconds()} })
		if phase == "rollout" {
			row("rollout: Pods created / deleted", i, "%d / %d", false, func(_ string, r phaseResult) []any { return []any{r.created, r.deleted} })
			row("rollout: container restarts", i, "%d", false, func(_ string, r phaseResult) []any { return []any{r.restarts} })
		}
		if phase == "delete" {
			row("delete: objects left", i, "%d", false, func(_ string, r phaseResult) []any { return []any{r.leftovers} })
			continue
		}
		row(phase+": controller requests (per s)", i, "%.0f (%.0f)", true, func(_ string, r phaseResult) []any {
			return []any{r.requests, r.requests / r.wall.Seconds()}
		})
		row(phase+": 429s to controller / APF rejected", i, "%.0f / %.0f", false, func(_ string, r phaseResult) []any {
			return []any{r.throttled, r.rejected}
		})
		row(phase+": controller CPU s", i, "%.1f", true, func(k string, r phaseResult) []any { return []any{r.cpu[controllerOf[k]]} })
		row(phase+": control plane CPU s", i, "%.1f", true, func(_ string, r phaseResult) []any { return []any{controlPlane(r)} })
		if phase == "rollout" {
			b.reportWrites(kinds, results, i, row)
		}
		if phase == "create" || phase == "rollout" {
			for _, p := range procs {
				row(fmt.Sprintf("  %s CPU s", p), i, "%.1f", true, func(_ string, r phaseResult) []any { return []any{r.cpu[p]} })
			}
		}
	}
	for _, p := range procs {
		row("peak MB: "+p, 0, "%.0f", true, func(k string, _ phaseResult) []any {
			var peak float64
			for _, r := range results[k] {
				peak = max(peak, r.peakRSS[p])
			}
			return []any{peak}
		})
	}
	files := make([]string, 0, len(b.files))
	for n := range b.files {
		files = append(files, n)
	}
	slices.Sort(files)
	for _, f := range files {
		row("after create: "+f+" MB", 0, "%.1f", true, func(_ string, r phaseResult) []any { return []any{float64(r.files[f]) / (1 << 20)} })
	}
}

// reportWrites prints, for phase, the write requests kube-apiserver served per Pod of the run, by
// verb and resource, the busiest first: where the two kinds' rollouts spend their writes.
func (b *bench) reportWrites(kinds []string, results map[string][]phaseResult, phase int,
	row func(label string, phase int, format string, numeric bool, value func(kind string, r phaseResult) []any)) {
	pods := float64(b.workloads) * float64(b.replicas)
	total := map[string]float64{}
	for _, k := range kinds {
		for key, v := range results[k][phase].writes {
			total[key] += v
		}
	}
	keys := make([]string, 0, len(total))
	for key, v := range total {
		if v/pods >= 0.05 {
			keys = append(keys, key)
		}
	}
	slices.SortFunc(keys, func(a, c string) int { return cmp.Compare(total[c], total[a]) })
	row("rollout: kube-apiserver writes per Pod", phase, "%.2f", true, func(_ string, r phaseResult) []any {
		var sum float64
		for _, v := range r.writes {
			sum += v
		}
		return []any{sum / pods}
	})
	for _, key := range keys {
		row("  "+key, phase, "%.2f", true, func(_ string, r phaseResult) []any { return []any{r.writes[key] / pods} })
	}
}
