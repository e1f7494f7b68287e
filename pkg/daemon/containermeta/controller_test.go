package containermeta

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime/fakecri"
	"github.com/inplace-dev/inplace/pkg/daemon/internal/daemontest"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// ---- fixtures ----

func envLabel(name, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['" + key + "']"}}}
}

func envAnnotation(name, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + key + "']"}}}
}

// newPod is a CloneSet Pod: app and app2 read label version, sidecar reads annotation config,
// plain reads no metadata. Its status names the instances app-0, app2-0, sidecar-0, plain-0.
func newPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: "web-0", UID: "uid-web", ResourceVersion: "1",
			Labels:      map[string]string{"app": "web", "version": "v1"},
			Annotations: map[string]string{"config": "c1"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet",
				Name: "web", UID: "uid-cs", Controller: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{
			NodeName:       "node-1",
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
			Containers: []corev1.Container{
				{Name: "app", Image: "app:v1", Env: []corev1.EnvVar{{Name: "PLAIN", Value: "x"}, envLabel("VERSION", "version")}},
				{Name: "app2", Image: "app:v1", Env: []corev1.EnvVar{envLabel("VERSION", "version")}},
				{Name: "sidecar", Image: "sidecar:v1", Env: []corev1.EnvVar{envAnnotation("CONFIG", "config")}},
				{Name: "plain", Image: "plain:v1"},
			},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](5),
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "app", ContainerID: "containerd://app-0", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
				{Name: "app2", ContainerID: "containerd://app2-0", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
				{Name: "sidecar", ContainerID: "containerd://sidecar-0", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
				{Name: "plain", ContainerID: "containerd://plain-0", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			},
		},
	}
}

type harness struct {
	t        *testing.T
	cri      *fakecri.Server
	client   *fake.Clientset
	factory  kubeinformers.SharedInformerFactory
	c        *Controller
	recorder *record.FakeRecorder
}

func newHarness(t *testing.T, cfg Config, pods ...*corev1.Pod) *harness {
	t.Helper()
	cri, rt := fakecri.Start(t)

	client := fake.NewClientset()
	for _, p := range pods {
		if err := client.Tracker().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	factory := kubeinformers.NewSharedInformerFactory(client, 0)
	recorder := record.NewFakeRecorder(100)
	c, err := New(factory.Core().V1().Pods(), client, rt, recorder, cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, cri: cri, client: client, factory: factory, c: c, recorder: recorder}
	for _, p := range pods {
		h.cache(p)
	}
	return h
}

// cache puts pod in the controller's informer cache (as the informer would).
func (h *harness) cache(pod *corev1.Pod) {
	h.t.Helper()
	if err := h.factory.Core().V1().Pods().Informer().GetIndexer().Update(pod); err != nil {
		h.t.Fatal(err)
	}
}

// refresh caches the Pod as the API now has it and returns it.
func (h *harness) refresh(pod *corev1.Pod) *corev1.Pod {
	h.t.Helper()
	got, err := h.client.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.cache(got)
	return got
}

// write stores pod in the API (as another program would) and in the cache.
func (h *harness) write(pod *corev1.Pod) *corev1.Pod {
	h.t.Helper()
	if _, err := h.client.CoreV1().Pods(pod.Namespace).Update(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	return h.refresh(pod)
}

func (h *harness) sync(pod *corev1.Pod) time.Duration {
	h.t.Helper()
	return daemontest.Sync(h.t, context.Background(), h.c.sync, cache.MetaObjectToName(pod))
}

func (h *harness) patches() []k8stesting.PatchAction {
	return daemontest.Patches(h.client.Actions(), "")
}

func (h *harness) stopped() []string {
	ids, _ := h.cri.Stopped()
	return ids
}

func (h *harness) events() []string {
	return daemontest.Events(h.recorder)
}

// running adds a running instance of a container of newPod with the given env.
func (h *harness) running(id, name string, attempt uint32, env ...string) {
	h.cri.Add(fakecri.Container{ID: id, PodUID: "uid-web", Name: name, Attempt: attempt, State: criruntime.StateRunning,
		Created: t0.Add(time.Duration(attempt) * time.Minute), Env: env,
		Annotations: map[string]string{"io.kubernetes.container.hash": "c939881b"}})
}

// startPod gives the fake runtime the containers of newPod as the kubelet started them.
func (h *harness) startPod() {
	h.cri.Add(fakecri.Container{ID: "init-0", PodUID: "uid-web", Name: "init", State: criruntime.StateExited, Created: t0})
	h.running("app-0", "app", 0, "PLAIN=x", "VERSION=v1")
	h.running("app2-0", "app2", 0, "VERSION=v1")
	h.running("sidecar-0", "sidecar", 0, "CONFIG=c1")
	h.running("plain-0", "plain", 0)
	// Another Pod's container: never reported.
	h.cri.Add(fakecri.Container{ID: "other-0", PodUID: "uid-other", Name: "app", State: criruntime.StateRunning, Env: []string{"VERSION=zz"}})
}

func metaOf(t *testing.T, pod *corev1.Pod) *pub.RuntimeContainerMetaSet {
	t.Helper()
	raw, ok := pod.Annotations[pub.RuntimeContainerMetaKey]
	if !ok {
		t.Fatalf("pod has no annotation %s", pub.RuntimeContainerMetaKey)
	}
	set := &pub.RuntimeContainerMetaSet{}
	if err := json.Unmarshal([]byte(raw), set); err != nil {
		t.Fatal(err)
	}
	return set
}

func container(pod *corev1.Pod, name string) *corev1.Container {
	return findContainer(pod.Spec.Containers, name)
}

// ---- annotation ----

func TestReportsRuntimeContainerMeta(t *testing.T) {
	pod := newPod()
	h := newHarness(t, DefaultConfig(), pod)
	h.startPod()
	// app crashed once: app-0 exited, app-1 runs.
	h.cri.SetState("app-0", criruntime.StateExited)
	h.running("app-1", "app", 1, "PLAIN=x", "VERSION=v1")

	if requeue := h.sync(pod); requeue != 0 {
		t.Errorf("requeue %s, want none", requeue)
	}
	patches := h.patches()
	if len(patches) != 1 {
		t.Fatalf("%d patches, want 1", len(patches))
	}
	if p := patches[0]; p.GetSubresource() != "status" || p.GetPatchType() != types.MergePatchType || p.GetName() != "web-0" {
		t.Errorf("patch %s %s of %s, want a merge patch of pods/status of web-0", p.GetPatchType(), p.GetSubresource(), p.GetName())
	}
	var body map[string]map[string]map[string]string
	if err := json.Unmarshal(patches[0].GetPatch(), &body); err != nil || len(body["metadata"]["annotations"]) != 1 {
		t.Errorf("patch %s (%v): want only the annotation", patches[0].GetPatch(), err)
	}

	pod = h.refresh(pod)
	got := metaOf(t, pod)
	hash := func(name string, env map[string]string) uint64 {
		return inplaceupdate.RuntimeEnvFromMetadataHash(container(pod, name), env)
	}
	want := &pub.RuntimeContainerMetaSet{Containers: []pub.RuntimeContainerMeta{
		{Name: "app", ContainerID: "containerd://app-1", RestartCount: 1, Hashes: pub.RuntimeContainerHashes{
			PlainHash: 0xc939881b, ExtractedEnvFromMetadataHash: hash("app", map[string]string{"VERSION": "v1"})}},
		{Name: "app2", ContainerID: "containerd://app2-0", Hashes: pub.RuntimeContainerHashes{
			PlainHash: 0xc939881b, ExtractedEnvFromMetadataHash: hash("app2", map[string]string{"VERSION": "v1"})}},
		{Name: "sidecar", ContainerID: "containerd://sidecar-0", Hashes: pub.RuntimeContainerHashes{
			PlainHash: 0xc939881b, ExtractedEnvFromMetadataHash: hash("sidecar", map[string]string{"CONFIG": "c1"})}},
		{Name: "plain", ContainerID: "containerd://plain-0", Hashes: pub.RuntimeContainerHashes{
			PlainHash: 0xc939881b, ExtractedEnvFromMetadataHash: hash("plain", nil)}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("annotation:\n got %+v\nwant %+v", got, want)
	}
	// The containers see the Pod's current metadata: the hashes are the engine's expected ones.
	for _, m := range got.Containers {
		if exp := inplaceupdate.EnvFromMetadataHash(container(pod, m.Name), pod); m.Hashes.ExtractedEnvFromMetadataHash != exp {
			t.Errorf("container %s: hash %d, engine expects %d", m.Name, m.Hashes.ExtractedEnvFromMetadataHash, exp)
		}
	}
	// The wire form: OpenKruise's field names.
	for _, field := range []string{`"containers":[`, `"containerID":"containerd://app-1"`, `"restartCount":1`, `"plainHash":3375990811`, `"extractedEnvFromMetadataHash":`} {
		if !strings.Contains(pod.Annotations[pub.RuntimeContainerMetaKey], field) {
			t.Errorf("annotation %s lacks %s", pod.Annotations[pub.RuntimeContainerMetaKey], field)
		}
	}
	statusCalls := h.cri.StatusCalls()
	if statusCalls != 4 {
		t.Errorf("%d ContainerStatus calls, want 4 (one per reported instance)", statusCalls)
	}

	// Unchanged: no write, whether the cache shows the write already or not yet.
	h.sync(pod)
	stale := newPod()
	h.cache(stale)
	h.sync(stale)
	h.refresh(pod)
	h.sync(pod)
	if n := len(h.patches()); n != 1 {
		t.Errorf("%d patches after syncing an unchanged pod, want still 1", n)
	}
	if n := h.cri.StatusCalls(); n != statusCalls {
		t.Errorf("%d ContainerStatus calls, want still %d: an instance's env is read once", n, statusCalls)
	}

	// A new instance of app: written again.
	h.cri.SetState("app-1", criruntime.StateExited)
	h.running("app-2", "app", 2, "PLAIN=x", "VERSION=v1")
	h.sync(pod)
	if n := len(h.patches()); n != 2 {
		t.Fatalf("%d patches after app restarted, want 2", n)
	}
	pod = h.refresh(pod)
	if m := metaOf(t, pod).Containers[0]; m.ContainerID != "containerd://app-2" || m.RestartCount != 2 {
		t.Errorf("app after restart: %+v", m)
	}
	if len(h.stopped()) != 0 {
		t.Errorf("stopped %v without an in-place update", h.stopped())
	}
}

func TestReportsNewestInstanceWhenNoneRuns(t *testing.T) {
	pod := newPod()
	h := newHarness(t, DefaultConfig(), pod)
	h.startPod()
	h.cri.SetState("app-0", criruntime.StateExited)
	h.cri.Add(fakecri.Container{ID: "app-1", PodUID: "uid-web", Name: "app", Attempt: 1, State: criruntime.StateExited,
		Created: t0.Add(time.Minute), Env: []string{"VERSION=v1"}})
	h.sync(pod)
	if m := metaOf(t, h.refresh(pod)).Containers[0]; m.ContainerID != "containerd://app-1" || m.RestartCount != 1 {
		t.Errorf("app with no running instance: %+v, want the newest instance app-1", m)
	}
}

func TestIrrelevantPodsAreLeftAlone(t *testing.T) {
	plain := newPod()
	plain.OwnerReferences = nil
	deleting := newPod()
	deleting.Name, deleting.DeletionTimestamp = "web-1", ptr.To(metav1.Now())
	h := newHarness(t, DefaultConfig(), plain, deleting)
	h.startPod()
	h.sync(plain)
	h.sync(deleting)
	if n := len(h.patches()); n != 0 {
		t.Errorf("%d patches of pods that are not in-place updated", n)
	}
	if n := h.cri.ListCalls(); n != 0 {
		t.Errorf("%d ListContainers calls for pods that are not in-place updated", n)
	}
	// No container yet: nothing to write.
	h2 := newHarness(t, DefaultConfig(), newPod())
	h2.sync(newPod())
	if n := len(h2.patches()); n != 0 {
		t.Errorf("%d patches of a pod without containers", n)
	}
}

func TestUnreadableEnvIsRetried(t *testing.T) {
	pod := newPod()
	h := newHarness(t, DefaultConfig(), pod)
	h.startPod()
	h.cri.Add(fakecri.Container{ID: "app-0", PodUID: "uid-web", Name: "app", State: criruntime.StateRunning, InfoMode: "none"})
	if requeue := h.sync(pod); requeue != DefaultConfig().RetryAfter {
		t.Errorf("requeue %s, want %s", requeue, DefaultConfig().RetryAfter)
	}
	if m := metaOf(t, h.refresh(pod)).Containers[0]; m.ContainerID != "containerd://app-0" || m.Hashes.ExtractedEnvFromMetadataHash != 0 {
		t.Errorf("app with an unreadable env: %+v, want hash 0", m)
	}
	calls := h.cri.StatusCalls()
	h.sync(pod)
	if h.cri.StatusCalls() != calls+1 {
		t.Errorf("an unreadable env was not read again")
	}
}

// ---- env-from-metadata restarts ----

// beginUpdate starts an in-place update setting label version=v2, through the engine.
func beginUpdate(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	return beginStep(t, pod).Pod
}

// beginStep is the engine's first step of an in-place update setting label version=v2, which
// restarts app and app2 (their env reads the label).
func beginStep(t *testing.T, pod *corev1.Pod) *inplaceupdate.Step {
	t.Helper()
	spec, err := inplaceupdate.SpecFromRequest(pod, &apps.InPlaceUpdate{Spec: apps.InPlaceUpdateSpec{
		Revision: "r2", Metadata: &apps.InPlaceUpdateMetadata{Labels: map[string]string{"version": "v2"}}}})
	if err != nil {
		t.Fatal(err)
	}
	step, err := inplaceupdate.Begin(pod, spec, t0)
	if err != nil {
		t.Fatal(err)
	}
	if got := inplaceupdate.EnvRestartContainers(step.Pod); !reflect.DeepEqual(got, []string{"app", "app2"}) {
		t.Fatalf("EnvRestartContainers = %v, want [app app2]", got)
	}
	return step
}

// noDelay is DefaultConfig without EnvRestartDelay, for tests of what is stopped rather than when.
func noDelay() Config {
	cfg := DefaultConfig()
	cfg.EnvRestartDelay = 0
	return cfg
}

func TestRestartsContainersWhoseEnvIsStale(t *testing.T) {
	pod := newPod()
	h := newHarness(t, noDelay(), pod)
	h.startPod()
	h.sync(pod)
	pod = h.write(beginUpdate(t, h.refresh(pod)))

	// app2 was restarted by the kubelet (a crash) after the label changed: it has v2 already.
	h.cri.SetState("app2-0", criruntime.StateExited)
	h.running("app2-1", "app2", 1, "VERSION=v2")

	if requeue := h.sync(pod); requeue != DefaultConfig().PendingRequeue {
		t.Errorf("requeue %s, want %s while the update is pending", requeue, DefaultConfig().PendingRequeue)
	}
	ids, timeouts := h.cri.Stopped()
	if !reflect.DeepEqual(ids, []string{"app-0"}) || !reflect.DeepEqual(timeouts, []int64{5}) {
		t.Fatalf("stopped %v with timeouts %v, want [app-0] with the pod's grace [5]", ids, timeouts)
	}
	if ev := h.events(); len(ev) != 1 || !strings.Contains(ev[0], reasonEnvRestart) || !strings.Contains(ev[0], "containerd://app-0") {
		t.Errorf("events %q, want one %s naming containerd://app-0", ev, reasonEnvRestart)
	}

	// The runtime still reports app-0 running (the stop is in flight): not stopped twice.
	h.cri.SetState("app-0", criruntime.StateRunning)
	h.sync(pod)
	h.sync(h.refresh(pod))
	if got := h.stopped(); !reflect.DeepEqual(got, []string{"app-0"}) {
		t.Errorf("stopped %v, want app-0 once", got)
	}

	// The kubelet created app-1, but from a Pod it had not updated yet: old env, stopped too.
	h.cri.SetState("app-0", criruntime.StateExited)
	h.running("app-1", "app", 1, "PLAIN=x", "VERSION=v1")
	h.sync(pod)
	if got := h.stopped(); !reflect.DeepEqual(got, []string{"app-0", "app-1"}) {
		t.Errorf("stopped %v, want app-0 then app-1", got)
	}

	// app-2 has the new env: nothing more to stop; the annotation shows it with the new hash.
	h.cri.SetState("app-1", criruntime.StateExited)
	h.running("app-2", "app", 2, "PLAIN=x", "VERSION=v2")
	h.sync(pod)
	if got := h.stopped(); len(got) != 2 {
		t.Errorf("stopped %v, want no more", got)
	}
	pod = h.refresh(pod)
	meta := metaOf(t, pod)
	for _, m := range meta.Containers[:2] {
		if exp := inplaceupdate.EnvFromMetadataHash(container(pod, m.Name), pod); m.Hashes.ExtractedEnvFromMetadataHash != exp {
			t.Errorf("container %s (%s): hash %d, want the new %d", m.Name, m.ContainerID, m.Hashes.ExtractedEnvFromMetadataHash, exp)
		}
	}

	// The engine judges the update done once the kubelet reports the new instances.
	pod.Status.ContainerStatuses[0].ContainerID = "containerd://app-2"
	pod.Status.ContainerStatuses[1].ContainerID = "containerd://app2-1"
	step, err := inplaceupdate.Progress(pod, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if !step.Done {
		t.Errorf("engine not done after the restarts: %s", step.Message)
	}
	if step.Pod != nil {
		pod = h.write(step.Pod)
	}
	if requeue := h.sync(pod); requeue != 0 {
		t.Errorf("requeue %s after the update completed, want none", requeue)
	}
}

func TestRestartOnlyWithRestartPolicyAlways(t *testing.T) {
	pod := newPod()
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	h := newHarness(t, DefaultConfig(), pod)
	h.startPod()
	h.sync(pod)
	pod = h.write(beginUpdate(t, h.refresh(pod)))
	h.sync(pod)
	h.sync(pod)
	if got := h.stopped(); len(got) != 0 {
		t.Errorf("stopped %v of a pod with restartPolicy Never", got)
	}
	ev := h.events()
	if len(ev) != 2 || !strings.Contains(ev[0], reasonEnvRestartPolicy) || !strings.Contains(ev[0], "Never") {
		t.Errorf("events %q, want one warning per container (app, app2), once", ev)
	}
}

func TestUnknownEnvIsNotRestarted(t *testing.T) {
	pod := newPod()
	h := newHarness(t, noDelay(), pod)
	h.startPod()
	h.cri.Add(fakecri.Container{ID: "app-0", PodUID: "uid-web", Name: "app", State: criruntime.StateRunning, InfoMode: "none"})
	h.sync(pod)
	pod = h.write(beginUpdate(t, h.refresh(pod)))
	if requeue := h.sync(pod); requeue != DefaultConfig().PendingRequeue {
		t.Errorf("requeue %s, want %s", requeue, DefaultConfig().PendingRequeue)
	}
	if got := h.stopped(); !reflect.DeepEqual(got, []string{"app2-0"}) {
		t.Errorf("stopped %v, want only app2-0 (app's env is unknown)", got)
	}
}

func TestGracePeriod(t *testing.T) {
	c := &Controller{cfg: DefaultConfig()}
	for _, tc := range []struct {
		pod  *int64
		max  time.Duration
		want time.Duration
	}{
		{pod: nil, max: 30 * time.Second, want: 30 * time.Second},
		{pod: ptr.To[int64](5), max: 30 * time.Second, want: 5 * time.Second},
		{pod: ptr.To[int64](120), max: 30 * time.Second, want: 30 * time.Second},
		{pod: ptr.To[int64](0), max: 30 * time.Second, want: 0},
		{pod: nil, max: 10 * time.Second, want: 10 * time.Second},
		{pod: ptr.To[int64](20), max: 0, want: 0},
	} {
		c.cfg.MaxStopGracePeriod = tc.max
		pod := &corev1.Pod{Spec: corev1.PodSpec{TerminationGracePeriodSeconds: tc.pod}}
		if got := c.gracePeriod(pod); got != tc.want {
			t.Errorf("grace(pod %v, max %s) = %s, want %s", ptr.Deref(tc.pod, -1), tc.max, got, tc.want)
		}
	}
}

// ---- event filtering ----

func TestRelevant(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*corev1.Pod)
		want bool
	}{
		{"owned by a CloneSet", func(*corev1.Pod) {}, true},
		{"owned by a ReplicaSet", func(p *corev1.Pod) { p.OwnerReferences[0].APIVersion = "apps/v1" }, false},
		{"not controlled", func(p *corev1.Pod) { p.OwnerReferences[0].Controller = nil }, false},
		{"in-place updated", func(p *corev1.Pod) {
			p.OwnerReferences = nil
			p.Annotations[pub.InPlaceUpdateStateKey] = "{}"
		}, true},
		{"legacy state key", func(p *corev1.Pod) {
			p.OwnerReferences = nil
			p.Annotations[pub.InPlaceUpdateStateKeyOld] = "{}"
		}, true},
		{"grace", func(p *corev1.Pod) {
			p.OwnerReferences = nil
			p.Annotations[pub.InPlaceUpdateGraceKey] = "{}"
		}, true},
		{"reported before", func(p *corev1.Pod) {
			p.OwnerReferences = nil
			p.Annotations[pub.RuntimeContainerMetaKey] = "{}"
		}, true},
		{"sidecarset injected", func(p *corev1.Pod) {
			p.OwnerReferences = nil
			p.Annotations["kruise.io/sidecarset-injected-list"] = "log"
		}, true},
		{"terminating", func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.Now()) }, false},
		{"succeeded", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, false},
		{"failed", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, false},
	} {
		pod := newPod()
		tc.mod(pod)
		if got := relevant(pod); got != tc.want {
			t.Errorf("%s: relevant = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestChanged(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*corev1.Pod)
		want bool
	}{
		{"resync", func(p *corev1.Pod) {}, true},
		{"status condition only", func(p *corev1.Pod) {
			p.ResourceVersion = "2"
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady})
		}, false},
		{"ready only", func(p *corev1.Pod) { p.ResourceVersion = "2"; p.Status.ContainerStatuses[0].Ready = false }, false},
		{"label", func(p *corev1.Pod) { p.ResourceVersion = "2"; p.Labels["version"] = "v2" }, true},
		{"annotation", func(p *corev1.Pod) { p.ResourceVersion = "2"; p.Annotations["x"] = "y" }, true},
		{"new container id", func(p *corev1.Pod) {
			p.ResourceVersion = "2"
			p.Status.ContainerStatuses[0].ContainerID = "containerd://app-1"
		}, true},
		{"restart count", func(p *corev1.Pod) { p.ResourceVersion = "2"; p.Status.ContainerStatuses[0].RestartCount = 1 }, true},
		{"stopped running", func(p *corev1.Pod) {
			p.ResourceVersion = "2"
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}
		}, true},
	} {
		oldPod, newPod := newPod(), newPod()
		tc.mod(newPod)
		if got := changed(oldPod, newPod); got != tc.want {
			t.Errorf("%s: changed = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestIDSetExpires(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(t0)
	s := newIDSet(time.Hour, clk)
	if !s.add("a") || s.add("a") || !s.has("a") {
		t.Fatal("add/has")
	}
	clk.SetTime(t0.Add(2 * time.Hour))
	s.add("b")
	if s.has("a") || !s.has("b") {
		t.Error("a did not expire")
	}
}

// ---- wiring ----

// TestRunWithInformer runs the controller as the daemon does: informer events drive it.
func TestRunWithInformer(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.startPod()
	ctx := daemontest.RunWithInformers(t, h.factory, h.client, func(ctx context.Context) { h.c.Run(ctx, 2) })

	if _, err := h.client.CoreV1().Pods("default").Create(ctx, newPod(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		pod, err = h.client.CoreV1().Pods("default").Get(ctx, "web-0", metav1.GetOptions{})
		return err == nil && pod.Annotations[pub.RuntimeContainerMetaKey] != "", nil
	})
	if err != nil {
		t.Fatalf("annotation not written: %v", err)
	}

	// An in-place update of the label: the informer event leads to the restarts.
	if _, err := h.client.CoreV1().Pods("default").Update(ctx, beginUpdate(t, pod), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		got := h.stopped()
		slices.Sort(got)
		return reflect.DeepEqual(got, []string{"app-0", "app2-0"}), nil
	})
	if err != nil {
		t.Fatalf("stopped %v, want app-0 and app2-0: %v", h.stopped(), err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(h.patches()); n != 1 {
		t.Errorf("%d patches, want 1 (nothing the runtime reports changed yet)", n)
	}
}

// A container is stopped only once this daemon has seen it need the restart for
// EnvRestartDelay: the kubelet may still be syncing the Pod version from before the new labels.
func TestEnvRestartWaitsForTheDelay(t *testing.T) {
	pod := newPod()
	h := newHarness(t, DefaultConfig(), pod)
	clock := testingclock.NewFakePassiveClock(time.Now())
	h.c.needRestart.clock = clock
	h.startPod()
	h.sync(pod)
	pod = h.write(beginUpdate(t, h.refresh(pod)))

	if requeue := h.sync(pod); requeue != DefaultConfig().PendingRequeue {
		t.Errorf("requeue %s, want %s while the restart waits", requeue, DefaultConfig().PendingRequeue)
	}
	if got := h.stopped(); len(got) != 0 {
		t.Fatalf("stopped %v at once, want nothing before EnvRestartDelay", got)
	}
	clock.SetTime(clock.Now().Add(DefaultConfig().EnvRestartDelay - time.Millisecond))
	h.sync(h.refresh(pod))
	if got := h.stopped(); len(got) != 0 {
		t.Fatalf("stopped %v just before EnvRestartDelay", got)
	}
	clock.SetTime(clock.Now().Add(time.Millisecond))
	h.sync(h.refresh(pod))
	// The two stops run in parallel: compare them in name order.
	if got := slices.Sorted(slices.Values(h.stopped())); !reflect.DeepEqual(got, []string{"app-0", "app2-0"}) {
		t.Errorf("stopped %v once EnvRestartDelay passed, want [app-0 app2-0]", got)
	}
}

func TestReportNow(t *testing.T) {
	withAnn := func(kv ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
		for i := 0; i < len(kv); i += 2 {
			p.Annotations[kv[i]] = kv[i+1]
		}
		return p
	}
	const running = `{"revision":"r2","updateTimestamp":"2026-01-02T03:04:05Z","updateImages":true}`
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"no in-place update", withAnn(), true},
		{"image update under way", withAnn(pub.InPlaceUpdateStateKey, running), false},
		{"env-from-metadata update under way", withAnn(pub.InPlaceUpdateStateKey,
			`{"revision":"r2","updateTimestamp":"2026-01-02T03:04:05Z","updateEnvFromMetadata":true}`), true},
		{"grace period", withAnn(pub.InPlaceUpdateStateKey, running, pub.InPlaceUpdateGraceKey, `{"revision":"r2"}`), true},
		{"completed", withAnn(pub.InPlaceUpdateStateKey,
			`{"revision":"r2","updateTimestamp":"2026-01-02T03:04:05Z","updateImages":true,"completedTimestamp":"2026-01-02T03:04:09Z"}`), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reportNow(tc.pod, nil); got != tc.want {
				t.Errorf("reportNow %v, want %v", got, tc.want)
			}
		})
	}
}
