package e2e

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	"github.com/inplace-dev/inplace/pkg/generated/informers/externalversions"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// The faults of the highly available installation (artifacts/deploy/ha: three etcd members, two
// inplace-apiservers, two inplace-controllers). Each strikes while three updates are under way —
// an in-place rollout of a CloneSet of haPods Pods, a SidecarSet upgrade of the sidecar those Pods
// carry, a ContainerRecreateRequest on another Pod — and a client keeps writing (acknowledged
// writes are counted) and an informer keeps watching the CloneSet. Each checks what users rely
// on: the three complete with the same Pods, every container restarted exactly once, no Pod
// created or deleted, every acknowledged write readable afterwards. They need that installation (make test-e2e-ha,
// INPLACE_E2E_IN_CLUSTER=ha) and are skipped by the passes that run another one.

// haPods is the size of the CloneSet rolled out during a fault.
const haPods = 10

func requireHA(t *testing.T) {
	t.Helper()
	if shape := framework.InClusterShape(); shape != "ha" {
		t.Skipf("needs inplace installed from artifacts/deploy/ha (make test-e2e-ha); this cluster runs %s",
			cmp.Or(shape, "host processes"))
	}
}

// haRollout is a rollout under way with its witnesses.
type haRollout struct {
	cs        *v1alpha1.CloneSet
	set       string // the SidecarSet of the CloneSet's Pods
	before    map[string]*corev1.Pod
	crrBefore *corev1.Pod // the Pod of the ContainerRecreateRequest haCRR
	pods      *framework.PodEvents
	writer    *ackedWriter
	watched   cache.GenericLister
	kubectl   *kubectlWatch
}

// haCRR recreates the container main of the Pod crr-target during a fault.
const haCRR = "recreate-main"

// startHARollout creates the SidecarSet (sidecar agent), the CloneSet and the CRR's Pod, waits for
// the Pods, starts the writer and the watcher, changes the app's and the sidecar's images, asks
// for the CRR, and returns once the first Pod is being updated.
func startHARollout(t *testing.T, ctx context.Context, prefix string) *haRollout {
	t.Helper()
	ns := framework.NewNamespace(t, ctx, prefix)
	set := framework.ScopedSidecarSet(ns, ns, "web")
	set.Spec.Containers = []v1alpha1.SidecarContainer{framework.Sidecar(corev1.Container{
		Name: framework.UpgradeSidecar, Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever,
	}, v1alpha1.AfterAppContainerType)}
	framework.CreateSidecarSet(t, ctx, set)
	probe := framework.LabeledPod(ns, "probe", "web", corev1.Container{Name: "main", Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever})
	framework.WaitPodWebhook(t, ctx, "the Pod webhook to inject SidecarSet "+ns, probe, func(p *corev1.Pod) bool {
		return framework.FindContainer(p.Spec.Containers, framework.UpgradeSidecar) != nil
	})
	cs := framework.NewUpdateCloneSet(t, ctx, ns, haPods, v1alpha1.CloneSetUpdateStrategy{
		Type:           v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
		MaxUnavailable: ptr.To(intstr.FromString("20%")),
	})
	r := &haRollout{set: ns, before: framework.WaitCloneSetReady(t, ctx, cs, haPods)}
	framework.WaitSidecarSetStatus(t, ctx, r.set, haPods, haPods, haPods, haPods)
	r.crrBefore = framework.CreateCRRPod(t, ctx, framework.CRRPod(ns, "crr-target", false, framework.Container("main", framework.AppImageV1)))
	r.pods = framework.RecordPods(t, ctx, ns)
	r.writer = startAckedWriter(t, ctx, ns)
	r.watched = watchCloneSets(t, ctx, ns)
	r.kubectl = startKubectlWatch(t, ctx, ns)

	r.cs = framework.UpdateCloneSet(t, ctx, cs, framework.SetImage(framework.AppImageV2))
	framework.UpdateSidecarSet(t, ctx, r.set, framework.SidecarImage(framework.AppImageV2))
	framework.CreateCRR(t, ctx, ns, framework.NewCRR(haCRR, r.crrBefore.Name, "main"))
	framework.Poll(t, ctx, framework.RolloutTimeout, "the rollout to start", func(ctx context.Context) (bool, error) {
		pods, err := framework.CloneSetPods(ctx, r.cs)
		if err != nil {
			return false, err
		}
		for _, p := range pods {
			if framework.SpecImage(p, "main") == framework.AppImageV2 {
				return true, nil
			}
		}
		return false, nil
	})
	return r
}

// startWatchedHARollout is startHARollout with the APIService's availability recorded from then
// on, until finishWatched or the end of the test.
func startWatchedHARollout(t *testing.T, ctx context.Context, prefix string) (*haRollout, *availabilityRecorder) {
	t.Helper()
	r := startHARollout(t, ctx, prefix)
	avail := recordAvailability(ctx)
	t.Cleanup(avail.stop)
	return r, avail
}

// finishWatched is finish, then stops recording the availability; it returns the writes that
// failed during the rollout (and were retried).
func (r *haRollout) finishWatched(t *testing.T, ctx context.Context, avail *availabilityRecorder) []writeError {
	t.Helper()
	r.finish(t, ctx)
	avail.stop()
	_, errs := r.writer.snapshot()
	return errs
}

// finish waits for the rollout, the sidecar upgrade and the CRR to complete and checks them and
// the writes.
func (r *haRollout) finish(t *testing.T, ctx context.Context) {
	t.Helper()
	got, _ := framework.WaitRolledOut(t, ctx, r.cs, haPods)
	framework.WaitSidecarSetStatus(t, ctx, r.set, haPods, haPods, haPods, haPods)
	after, err := framework.CloneSetPods(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	framework.CheckSamePods(t, r.before, after)
	for name, p := range after {
		for _, c := range []string{"main", framework.UpgradeSidecar} {
			if s := framework.FindStatus(p, c); s == nil || s.RestartCount != 1 || s.Image != framework.AppImageV2 || !s.Ready {
				t.Errorf("pod %s: container %s status %+v, want %s ready, restartCount 1", name, c, s, framework.AppImageV2)
			}
		}
	}
	crr := framework.WaitCRRCompleted(t, ctx, r.cs.Namespace, haCRR, framework.CRRTimeout)
	framework.ExpectStates(t, crr, framework.CRRSucceeded("main"))
	crrAfter := framework.WaitContainersRecreated(t, ctx, r.crrBefore, "main")
	framework.ExpectRecreated(t, r.crrBefore, crrAfter, "main") // exactly once: restartCount one higher
	if changed := framework.PodsAddedOrDeleted(r.pods, r.pods.UpTo(t, ctx, r.cs.Namespace)); len(changed) > 0 {
		t.Errorf("pods created or deleted: %v", changed)
	}
	// The watcher (an informer: it lists and watches again when a watch breaks) sees the end.
	framework.Poll(t, ctx, 30*time.Second, "the watcher to see the rollout complete", func(context.Context) (bool, error) {
		obj, err := r.watched.ByNamespace(r.cs.Namespace).Get(r.cs.Name)
		if err != nil {
			return false, err
		}
		st := obj.(*v1alpha1.CloneSet).Status
		return st.UpdatedReadyReplicas == haPods && st.UpdateRevision == got.Status.UpdateRevision,
			fmt.Errorf("watched status %+v", st)
	})
	r.kubectl.waitShows(t, ctx, r.cs.Name, haPods)
	r.kubectl.mu.Lock()
	t.Logf("kubectl get --watch: run %d time(s)", r.kubectl.runs)
	r.kubectl.mu.Unlock()
	r.writer.stopAndCheck(t, ctx)
}

// ackedWriter creates small CloneSets (no Pods) one after another through kube-apiserver, as a
// client that retries does: each create is sent again (same name) until it is acknowledged, or
// found already there (an attempt that failed on the way back was applied). It keeps what was
// acknowledged, and what failed on the way.
type ackedWriter struct {
	ns     string
	client clientset.Interface
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	acked  []string
	acks   []time.Time
	errors []writeError
}

type writeError struct {
	at    time.Time
	class string // "timeout", an HTTP status code, or "other"
	err   error
}

// writerPause paces the writer (about 5 writes a second on a healthy cluster).
const writerPause = 200 * time.Millisecond

func startAckedWriter(t *testing.T, ctx context.Context, ns string) *ackedWriter {
	t.Helper()
	cfg := rest.CopyConfig(framework.AdminConfig)
	cfg.Timeout = 5 * time.Second // a write stuck without an etcd quorum fails here, and is retried
	client, err := clientset.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &ackedWriter{ns: ns, client: client, cancel: cancel, done: make(chan struct{})}
	t.Cleanup(w.stop)
	go w.run(ctx)
	return w
}

func (w *ackedWriter) run(ctx context.Context) {
	defer close(w.done)
	for i := 0; ; {
		name := fmt.Sprintf("w-%05d", i)
		_, err := w.client.AppsV1alpha1().CloneSets(w.ns).Create(ctx, writerCloneSet(name), metav1.CreateOptions{})
		if ctx.Err() != nil {
			return // stopped: this write's outcome is unknown and not counted
		}
		w.mu.Lock()
		if err == nil || apierrors.IsAlreadyExists(err) {
			w.acked = append(w.acked, name)
			w.acks = append(w.acks, time.Now())
			i++
		} else {
			w.errors = append(w.errors, writeError{at: time.Now(), class: errorClass(err), err: err})
		}
		w.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(writerPause):
		}
	}
}

// writerCloneSet is a CloneSet of no Pods whose annotation names it, so that a read can tell it
// is whole.
func writerCloneSet(name string) *v1alpha1.CloneSet {
	labels := map[string]string{"app": "writer-" + name}
	return &v1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"e2e.inplace.dev/written-as": name}},
		Spec: v1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: framework.AppImageV1}}},
			},
		},
	}
}

// errorClass sorts a failed write: "timeout" (the client's or the server's), the HTTP status code
// of an API error, or "other".
func errorClass(err error) string {
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err),
		errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code != 0 {
		return strconv.Itoa(int(status.Status().Code))
	}
	return "other"
}

func (w *ackedWriter) stop() {
	w.cancel()
	<-w.done
}

// snapshot returns the acknowledgement times and errors so far.
func (w *ackedWriter) snapshot() ([]time.Time, []writeError) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.acks), slices.Clone(w.errors)
}

// acksSince counts the writes acknowledged after at; errorsSince the failures after it.
func (w *ackedWriter) acksSince(at time.Time) int {
	acks, _ := w.snapshot()
	return len(acks) - sortIndex(acks, at)
}

func (w *ackedWriter) errorsSince(at time.Time) []writeError {
	_, errs := w.snapshot()
	i, _ := slices.BinarySearchFunc(errs, at, func(e writeError, at time.Time) int { return e.at.Compare(at) })
	return errs[i:]
}

func sortIndex(times []time.Time, at time.Time) int {
	i, _ := slices.BinarySearchFunc(times, at, func(a, b time.Time) int { return a.Compare(b) })
	return i
}

// stopAndCheck stops the writer and reads every CloneSet it wrote back: each acknowledged one is
// there, and every one there is whole (its annotation names it). It logs the errors it met.
func (w *ackedWriter) stopAndCheck(t *testing.T, ctx context.Context) {
	t.Helper()
	w.stop()
	var list *v1alpha1.CloneSetList
	framework.Poll(t, ctx, time.Minute, "listing the written CloneSets", func(ctx context.Context) (bool, error) {
		var err error
		list, err = framework.Inplace.AppsV1alpha1().CloneSets(w.ns).List(ctx, metav1.ListOptions{})
		return err == nil, err
	})
	stored := map[string]bool{}
	for _, cs := range list.Items {
		if !strings.HasPrefix(cs.Name, "w-") {
			continue
		}
		stored[cs.Name] = true
		if got := cs.Annotations["e2e.inplace.dev/written-as"]; got != cs.Name || cs.Spec.Replicas == nil || len(cs.Spec.Template.Spec.Containers) != 1 {
			t.Errorf("CloneSet %s is not what was written: annotation %q, spec %+v", cs.Name, got, cs.Spec)
		}
	}
	var lost []string
	for _, name := range w.acked {
		if !stored[name] {
			lost = append(lost, name)
		}
	}
	classes := map[string]int{}
	for _, e := range w.errors {
		classes[e.class]++
	}
	t.Logf("writer: %d writes acknowledged, %d lost, %d stored; failed attempts (retried): %v", len(w.acked), len(lost), len(stored), classes)
	if len(lost) > 0 {
		t.Errorf("%d acknowledged writes lost: %v", len(lost), lost)
	}
	if len(w.acked) == 0 {
		t.Error("no write was acknowledged")
	}
}

// kubectlWatch runs `kubectl get clonesets --watch` on a namespace, as an operator following the
// rollout does, and runs it again whenever it exits (a watch ends when the replica serving it
// stops, and kubectl with it). It keeps the last line it printed for each CloneSet.
type kubectlWatch struct {
	mu     sync.Mutex
	last   map[string][]string // name -> generation, observedGeneration, updatedReadyReplicas
	runs   int
	cancel context.CancelFunc
	done   chan struct{}
}

func startKubectlWatch(t *testing.T, ctx context.Context, ns string) *kubectlWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	w := &kubectlWatch{last: map[string][]string{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			w.mu.Lock()
			w.runs++
			w.mu.Unlock()
			w.runOnce(ctx, ns)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	t.Cleanup(w.stop)
	return w
}

func (w *kubectlWatch) runOnce(ctx context.Context, ns string) {
	cmd := exec.CommandContext(ctx, framework.KubectlBin, "get", "clonesets", "-n", ns, "--watch", "--no-headers", "-o",
		"custom-columns=NAME:.metadata.name,GEN:.metadata.generation,OBSERVED:.status.observedGeneration,UPDATED_READY:.status.updatedReadyReplicas")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+framework.Kubeconfig, "KUBECACHEDIR="+framework.KubectlCache)
	out, err := cmd.StdoutPipe()
	if err != nil || cmd.Start() != nil {
		return
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 {
			w.mu.Lock()
			w.last[f[0]] = f[1:]
			w.mu.Unlock()
		}
	}
	_ = cmd.Wait()
}

// waitShows waits until kubectl has printed the CloneSet observed at its generation with want
// updated ready replicas.
func (w *kubectlWatch) waitShows(t *testing.T, ctx context.Context, name string, want int32) {
	t.Helper()
	framework.Poll(t, ctx, time.Minute, "kubectl get --watch to show "+name+" rolled out", func(context.Context) (bool, error) {
		w.mu.Lock()
		f := w.last[name]
		w.mu.Unlock()
		return len(f) == 3 && f[0] == f[1] && f[2] == strconv.Itoa(int(want)), fmt.Errorf("kubectl's last line: %v", f)
	})
}

func (w *kubectlWatch) stop() {
	w.cancel()
	<-w.done
}

// watchCloneSets runs an informer on the namespace's CloneSets for the test, and returns its lister.
func watchCloneSets(t *testing.T, ctx context.Context, ns string) cache.GenericLister {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	factory := externalversions.NewSharedInformerFactoryWithOptions(framework.Inplace, 0, externalversions.WithNamespace(ns))
	informer, err := factory.ForResource(v1alpha1.SchemeGroupVersion.WithResource("clonesets"))
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
	})
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		t.Fatal("the CloneSet informer did not sync")
	}
	return informer.Lister()
}

// availabilityRecorder samples the APIService's Available condition until stopped and reports the
// longest stretch it was not Available.
type availabilityRecorder struct {
	cancel  context.CancelFunc
	done    chan struct{}
	longest time.Duration
	samples int
	down    int
}

func recordAvailability(ctx context.Context) *availabilityRecorder {
	ctx, cancel := context.WithCancel(ctx)
	r := &availabilityRecorder{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		var downSince time.Time
		for ctx.Err() == nil {
			ok, _ := framework.APIServiceAvailable(ctx)
			if ctx.Err() != nil {
				break
			}
			r.samples++
			switch {
			case !ok && downSince.IsZero():
				downSince = time.Now()
			case ok && !downSince.IsZero():
				r.longest = max(r.longest, time.Since(downSince))
				downSince = time.Time{}
			}
			if !ok {
				r.down++
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
		if !downSince.IsZero() {
			r.longest = max(r.longest, time.Since(downSince))
		}
	}()
	return r
}

func (r *availabilityRecorder) stop() {
	r.cancel()
	<-r.done
}

// etcdMember is one member of the ha installation's etcd: its Pod and main process.
type etcdMember struct {
	framework.Program
	leader bool
}

// etcdMembers finds the three members, running, and which one leads (etcd_server_is_leader on
// each member's metrics port).
func etcdMembers(t *testing.T, ctx context.Context) []etcdMember {
	t.Helper()
	var members []etcdMember
	framework.Poll(t, ctx, time.Minute, "three running etcd members, one leading", func(ctx context.Context) (bool, error) {
		pods, err := framework.Kube.CoreV1().Pods(framework.InplaceNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=inplace-etcd"})
		if err != nil {
			return false, err
		}
		members = members[:0]
		leaders := 0
		for i := range pods.Items {
			p, err := framework.PodProgram("etcd "+pods.Items[i].Name, &pods.Items[i])
			if err != nil {
				return false, err
			}
			leader, err := etcdIsLeader(ctx, p.Pod.Status.PodIP)
			if err != nil {
				return false, err
			}
			if leader {
				leaders++
			}
			members = append(members, etcdMember{Program: p, leader: leader})
		}
		return len(members) == 3 && leaders == 1, fmt.Errorf("%d members, %d leaders", len(members), leaders)
	})
	slices.SortFunc(members, func(a, b etcdMember) int { return strings.Compare(a.Pod.Name, b.Pod.Name) })
	return members
}

// etcdIsLeader reads etcd_server_is_leader from the member's metrics port.
func etcdIsLeader(ctx context.Context, podIP string) (bool, error) {
	_, body, err := framework.HTTPGet(ctx, "http://"+net.JoinHostPort(podIP, "2381")+"/metrics")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "etcd_server_is_leader "); ok {
			return strings.TrimSpace(v) == "1", nil
		}
	}
	return false, fmt.Errorf("no etcd_server_is_leader in %s's metrics", podIP)
}

// waitEtcdMembersBack waits until the members' containers are restarted and their Pods Ready
// again, and returns how long that took from since.
func waitEtcdMembersBack(t *testing.T, ctx context.Context, since time.Time, killed ...etcdMember) time.Duration {
	t.Helper()
	for _, m := range killed {
		framework.WaitContainerRestarted(t, ctx, m.Pod)
	}
	return time.Since(since)
}

// TestHAApiserverReplicaKilled: one of the two inplace-apiservers SIGKILLed mid-rollout. The
// aggregator sends to the other (the killed one's endpoint goes unready), the APIService stays
// Available or is back within seconds, clients' retried writes all land, the rollout completes;
// the kubelet restarts the killed one.
func TestHAApiserverReplicaKilled(t *testing.T) {
	requireHA(t)
	ctx := framework.Context(t)
	r, avail := startWatchedHARollout(t, ctx, "ha-apiserver")

	victim := framework.CurrentProgram(t, "inplace-apiserver")
	killed := time.Now()
	victim.Stop(t, ctx, syscall.SIGKILL, 10*time.Second)
	framework.WaitContainerRestarted(t, ctx, victim.Pod)
	back := time.Since(killed)
	errs := r.finishWatched(t, ctx, avail)
	t.Logf("%s killed: Ready again after %.1fs; APIService not Available for at most %.1fs (%d of %d samples); %d failed write attempts",
		victim.Pod.Name, back.Seconds(), avail.longest.Seconds(), avail.down, avail.samples, len(errs))
	if avail.longest > 10*time.Second {
		t.Errorf("the APIService was not Available for %.1fs with one inplace-apiserver of two left, want at most 10s", avail.longest.Seconds())
	}
	checkRetriedErrors(t, errs, "503", "timeout")
}

// TestHAApiserverRollingUpdate: the inplace-apiservers replaced one at a time mid-rollout, as an
// upgrade does (kubectl rollout restart). A stopping replica keeps serving for
// --shutdown-delay-duration while its endpoint leaves the Service, so no client request fails:
// unlike a SIGKILL, a rolling update must cost the users nothing.
func TestHAApiserverRollingUpdate(t *testing.T) {
	requireHA(t)
	ctx := framework.Context(t)
	r, avail := startWatchedHARollout(t, ctx, "ha-apiserver-roll")

	before := framework.CurrentProgram(t, "inplace-apiserver")
	started := time.Now()
	framework.MustKubectl(t, ctx, "", "-n", framework.InplaceNamespace, "rollout", "restart", "deployment/inplace-apiserver")
	framework.MustKubectl(t, ctx, "", "-n", framework.InplaceNamespace, "rollout", "status", "deployment/inplace-apiserver", "--timeout=55s")
	took := time.Since(started)
	framework.Poll(t, ctx, time.Minute, "the replaced inplace-apiserver Pod "+before.Pod.Name+" to go", func(ctx context.Context) (bool, error) {
		_, err := framework.Kube.CoreV1().Pods(framework.InplaceNamespace).Get(ctx, before.Pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	errs := r.finishWatched(t, ctx, avail)
	t.Logf("rolling update of inplace-apiserver: %.1fs; APIService not Available for at most %.1fs (%d of %d samples); %d failed write attempts",
		took.Seconds(), avail.longest.Seconds(), avail.down, avail.samples, len(errs))
	for _, e := range errs {
		t.Errorf("a write failed during the rolling update (%s): %v", e.class, e.err)
	}
}

// TestHAEtcdMemberKilled: the etcd leader (one member of three) SIGKILLed mid-rollout. The other two
// elect a leader and go on; clients see at most retried errors; the rollout completes and every
// acknowledged write is there; the kubelet restarts the member, which rejoins.
func TestHAEtcdMemberKilled(t *testing.T) {
	requireHA(t)
	ctx := framework.Context(t)
	r, avail := startWatchedHARollout(t, ctx, "ha-etcd-one")

	members := etcdMembers(t, ctx)
	victim := members[slices.IndexFunc(members, func(m etcdMember) bool { return m.leader })]
	killed := time.Now()
	victim.Stop(t, ctx, syscall.SIGKILL, 10*time.Second)
	back := waitEtcdMembersBack(t, ctx, killed, victim)
	errs := r.finishWatched(t, ctx, avail)
	t.Logf("etcd leader %s killed: Ready again after %.1fs; APIService not Available for at most %.1fs; %d failed write attempts",
		victim.Pod.Name, back.Seconds(), avail.longest.Seconds(), len(errs))
	checkRetriedErrors(t, errs, "500", "503", "timeout")
	etcdMembers(t, ctx) // three members again, one leader
}

// TestHAEtcdQuorumLost: two etcd members of three frozen (SIGSTOP, a hung disk or host) mid-rollout:
// with no quorum, writes fail (5xx or timeouts, nothing else) and nothing is acknowledged; then
// the two are SIGKILLed, the kubelet restarts them, the quorum is back, writes are acknowledged
// again, the rollout completes, and every write acknowledged before, during and after is there,
// whole.
func TestHAEtcdQuorumLost(t *testing.T) {
	requireHA(t)
	ctx := framework.Context(t)
	r := startHARollout(t, ctx, "ha-etcd-two")

	members := etcdMembers(t, ctx)
	// The leader and one follower: the remaining member can neither commit nor become leader.
	slices.SortFunc(members, func(a, b etcdMember) int {
		switch {
		case a.leader == b.leader:
			return 0
		case a.leader:
			return -1
		}
		return 1
	})
	frozen := members[:2]
	t.Cleanup(func() { // never leave a member stopped to the tests after this one
		for _, m := range frozen {
			if m.Alive() {
				_ = syscall.Kill(m.Pid, syscall.SIGKILL)
			}
		}
	})
	stoppedAt := time.Now()
	for _, m := range frozen {
		m.Signal(t, syscall.SIGSTOP)
	}
	// Writes in flight at the stop may still land; after that, none can.
	settled := stoppedAt.Add(2 * time.Second)
	framework.Poll(t, ctx, time.Minute, "writes to fail without a quorum", func(context.Context) (bool, error) {
		n := len(r.writer.errorsSince(settled))
		return n >= 3, fmt.Errorf("%d failed writes since the quorum was lost", n)
	})
	killedAt := time.Now()
	if n := r.writer.acksSince(settled); n > 0 {
		t.Errorf("%d writes acknowledged with two etcd members of three stopped", n)
	}
	failed := r.writer.errorsSince(stoppedAt)
	for _, m := range frozen {
		m.Stop(t, ctx, syscall.SIGKILL, 10*time.Second)
	}
	framework.Poll(t, ctx, 2*time.Minute, "a write acknowledged again", func(context.Context) (bool, error) {
		return r.writer.acksSince(killedAt) > 0, nil
	})
	recovered := time.Since(killedAt)
	back := waitEtcdMembersBack(t, ctx, killedAt, frozen...)
	r.finish(t, ctx)
	t.Logf("etcd %s and %s stopped %.1fs: %d writes failed, 0 acknowledged; SIGKILLed: writes acknowledged again after %.1fs, members Ready after %.1fs",
		frozen[0].Pod.Name, frozen[1].Pod.Name, killedAt.Sub(stoppedAt).Seconds(), len(failed), recovered.Seconds(), back.Seconds())
	checkRetriedErrors(t, failed, "500", "503", "504", "timeout")
	etcdMembers(t, ctx)
}

// checkRetriedErrors fails the test for a failed write of another class than the allowed ones (a
// 4xx would be a client's fault, not a fault of the installation).
func checkRetriedErrors(t *testing.T, errs []writeError, allowed ...string) {
	t.Helper()
	for _, e := range errs {
		if !slices.Contains(allowed, e.class) {
			t.Errorf("a write failed with %s (allowed while the fault lasts: %v): %v", e.class, allowed, e.err)
		}
	}
}
