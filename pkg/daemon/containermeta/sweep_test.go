package containermeta

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime/fakecri"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
)

// kubeletHash is the io.kubernetes.container.hash annotation a 1.31+ kubelet writes on a container
// it creates from the named container with the given image.
func kubeletHash(name, image string) string {
	return fmt.Sprintf("%x", inplaceupdate.KubeletContainerHash(&corev1.Container{Name: name, Image: image}))
}

// runningFrom adds a running instance that the kubelet created from image.
func (h *harness) runningFrom(id, name, image string, attempt uint32, env ...string) {
	h.cri.Add(fakecri.Container{ID: id, PodUID: "uid-web", Name: name, Attempt: attempt, State: criruntime.StateRunning,
		Created: t0.Add(time.Duration(attempt) * time.Minute), Env: env,
		Annotations: map[string]string{"io.kubernetes.container.hash": kubeletHash(name, image)}})
}

// startPodFromSpec is startPod with the kubelet hashes of newPod's spec images.
func (h *harness) startPodFromSpec() {
	h.runningFrom("app-0", "app", "app:v1", 0, "PLAIN=x", "VERSION=v1")
	h.runningFrom("app2-0", "app2", "app:v1", 0, "VERSION=v1")
	h.runningFrom("sidecar-0", "sidecar", "sidecar:v1", 0, "CONFIG=c1")
	h.runningFrom("plain-0", "plain", "plain:v1", 0)
}

func setInPlaceUpdateReady(pod *corev1.Pod, status corev1.ConditionStatus) {
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: status,
		Reason: inplaceupdate.ReasonStartInPlaceUpdate})
}

func stateJSON(t *testing.T, st pub.InPlaceUpdateState) string {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Label version was edited by hand to v2 while the containers kept running with v1 (nothing
// restarts them then). During an in-place update of an OpenKruise Pod (InPlaceUpdateReady
// False) the daemon restarts every container whose env is stale, as OpenKruise's does, whether
// the update lists it or not; with the listed containers only otherwise.
func TestSweepRestartsStaleEnvWhileNotInPlaceUpdateReady(t *testing.T) {
	imageInBatch := func(t *testing.T, p *corev1.Pod) {
		// app's image changes in the current batch.
		p.Spec.Containers[0].Image = "app:v2"
		p.Annotations[pub.InPlaceUpdateStateKey] = stateJSON(t, pub.InPlaceUpdateState{Revision: "r2", UpdateTimestamp: metav1.NewTime(t0),
			UpdateImages:           true,
			LastContainerStatuses:  map[string]pub.InPlaceUpdateContainerStatus{"app": {ImageID: "sha256:app-v1"}},
			ContainerBatchesRecord: []pub.InPlaceUpdateContainerBatch{{Timestamp: metav1.NewTime(t0), Containers: []string{"app"}}}})
	}
	cases := []struct {
		name    string
		mod     func(t *testing.T, p *corev1.Pod)
		runtime func(h *harness) // after startPodFromSpec
		want    []string         // stopped, sorted
		pending bool
	}{
		{name: "CloneSet pod, InPlaceUpdateReady False: every stale container",
			mod:  func(_ *testing.T, p *corev1.Pod) { setInPlaceUpdateReady(p, corev1.ConditionFalse) },
			want: []string{"app-0", "app2-0"}, pending: true},
		{name: "InPlaceUpdateReady True: a hand edit restarts nothing",
			mod: func(_ *testing.T, p *corev1.Pod) { setInPlaceUpdateReady(p, corev1.ConditionTrue) }},
		{name: "no InPlaceUpdateReady condition",
			mod: func(*testing.T, *corev1.Pod) {}},
		{name: "not an OpenKruise pod (ReplicaSet, updated through pods/inplaceupdate)",
			mod: func(t *testing.T, p *corev1.Pod) {
				p.OwnerReferences[0].APIVersion = "apps/v1"
				p.Annotations[pub.InPlaceUpdateStateKey] = stateJSON(t, pub.InPlaceUpdateState{Revision: "r2", UpdateTimestamp: metav1.NewTime(t0)})
				setInPlaceUpdateReady(p, corev1.ConditionFalse)
			}},
		{name: "SidecarSet-injected pod",
			mod: func(_ *testing.T, p *corev1.Pod) {
				p.OwnerReferences = nil
				p.Annotations[v1alpha1.SidecarSetHashAnnotation] = `{"log":{}}`
				setInPlaceUpdateReady(p, corev1.ConditionFalse)
			},
			want: []string{"app-0", "app2-0"}, pending: true},
		{name: "grace period: no container may change yet",
			mod: func(t *testing.T, p *corev1.Pod) {
				p.Annotations[pub.InPlaceUpdateStateKey] = stateJSON(t, pub.InPlaceUpdateState{Revision: "r2", UpdateTimestamp: metav1.NewTime(t0)})
				p.Annotations[pub.InPlaceUpdateGraceKey] = `{"revision":"r2","graceSeconds":30}`
				setInPlaceUpdateReady(p, corev1.ConditionFalse)
			}},
		{name: "image changing in the batch, old instance: left to the kubelet",
			mod: func(t *testing.T, p *corev1.Pod) {
				imageInBatch(t, p)
				setInPlaceUpdateReady(p, corev1.ConditionFalse)
			},
			want: []string{"app2-0"}, pending: true},
		{name: "image changing in the batch, the kubelet's new instance still has the old env",
			mod: func(t *testing.T, p *corev1.Pod) {
				imageInBatch(t, p)
				setInPlaceUpdateReady(p, corev1.ConditionFalse)
			},
			runtime: func(h *harness) {
				h.cri.SetState("app-0", criruntime.StateExited)
				h.runningFrom("app-1", "app", "app:v2", 1, "PLAIN=x", "VERSION=v1")
			},
			want: []string{"app-1", "app2-0"}, pending: true},
		{name: "image changing in a later batch: left to the kubelet",
			mod: func(t *testing.T, p *corev1.Pod) {
				p.Annotations[pub.InPlaceUpdateStateKey] = stateJSON(t, pub.InPlaceUpdateState{Revision: "r2", UpdateTimestamp: metav1.NewTime(t0),
					UpdateImages:           true,
					LastContainerStatuses:  map[string]pub.InPlaceUpdateContainerStatus{"plain": {ImageID: "sha256:plain-v1"}},
					NextContainerImages:    map[string]string{"app": "app:v2"},
					ContainerBatchesRecord: []pub.InPlaceUpdateContainerBatch{{Timestamp: metav1.NewTime(t0), Containers: []string{"plain"}}}})
				setInPlaceUpdateReady(p, corev1.ConditionFalse)
			},
			want: []string{"app2-0"}, pending: true},
		{name: "the containers see the pod's values: nothing to restart",
			mod: func(_ *testing.T, p *corev1.Pod) {
				p.Labels["version"] = "v1"
				setInPlaceUpdateReady(p, corev1.ConditionFalse)
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod()
			pod.Labels["version"] = "v2" // the hand edit
			tc.mod(t, pod)
			h := newHarness(t, noDelay(), pod)
			h.startPodFromSpec()
			if tc.runtime != nil {
				tc.runtime(h)
			}
			requeue := h.sync(pod)
			got := slices.Sorted(slices.Values(h.stopped()))
			if !reflect.DeepEqual(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Fatalf("stopped %v, want %v", got, tc.want)
			}
			if pending := requeue == DefaultConfig().PendingRequeue; pending != tc.pending {
				t.Errorf("requeue %s, pending %v, want %v", requeue, pending, tc.pending)
			}
			// Once per instance: a second look stops nothing more.
			h.sync(pod)
			if again := h.stopped(); len(again) != len(got) {
				t.Errorf("stopped %v on the second sync, want still %v", again, got)
			}
		})
	}
}

// The sweep keeps the safeguards: EnvRestartDelay, and no restart with restartPolicy Never.
func TestSweepSafeguards(t *testing.T) {
	t.Run("delay", func(t *testing.T) {
		pod := newPod()
		pod.Labels["version"] = "v2"
		setInPlaceUpdateReady(pod, corev1.ConditionFalse)
		h := newHarness(t, DefaultConfig(), pod)
		clock := testingclock.NewFakePassiveClock(time.Now())
		h.c.needRestart.clock = clock
		h.startPodFromSpec()
		h.sync(pod)
		if got := h.stopped(); len(got) != 0 {
			t.Fatalf("stopped %v before EnvRestartDelay", got)
		}
		clock.SetTime(clock.Now().Add(DefaultConfig().EnvRestartDelay))
		h.sync(pod)
		if got := slices.Sorted(slices.Values(h.stopped())); !reflect.DeepEqual(got, []string{"app-0", "app2-0"}) {
			t.Fatalf("stopped %v after EnvRestartDelay", got)
		}
	})
	t.Run("restartPolicy Never", func(t *testing.T) {
		pod := newPod()
		pod.Labels["version"] = "v2"
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
		setInPlaceUpdateReady(pod, corev1.ConditionFalse)
		h := newHarness(t, noDelay(), pod)
		h.startPodFromSpec()
		h.sync(pod)
		h.sync(pod)
		if got := h.stopped(); len(got) != 0 {
			t.Fatalf("stopped %v with restartPolicy Never", got)
		}
		if ev := h.events(); len(ev) != 2 || !strings.Contains(ev[0], reasonEnvRestartPolicy) {
			t.Errorf("events %q, want one warning per container", ev)
		}
	})
}

// The whole hand-edit path: label version edited by hand to v2, then the CloneSet template
// changes version to v2 too. The request the controller sends carries version=v2, which the Pod
// already has; the engine still lists app and app2 (they read it), sets InPlaceUpdateReady False,
// the daemon restarts them, and the engine completes once the new instances are reported.
func TestHandEditThenTemplateChange(t *testing.T) {
	pod := newPod()
	inplaceupdate.InjectReadinessGate(pod)
	setInPlaceUpdateReady(pod, corev1.ConditionTrue)
	h := newHarness(t, noDelay(), pod)
	h.startPodFromSpec()
	h.sync(pod)
	pod = h.refresh(pod)

	pod.Labels["version"] = "v2"
	pod = h.write(pod)
	h.sync(pod)
	if got := h.stopped(); len(got) != 0 {
		t.Fatalf("a hand edit alone restarted %v", got)
	}

	step := beginStep(t, pod)
	next := step.Pod.DeepCopy()
	inplaceupdate.SetConditions(&next.Status, step.Conditions...)
	pod = h.write(next)
	h.sync(pod)
	if got := slices.Sorted(slices.Values(h.stopped())); !reflect.DeepEqual(got, []string{"app-0", "app2-0"}) {
		t.Fatalf("stopped %v, want app-0 and app2-0", got)
	}

	// The kubelet starts them again from the current Pod.
	h.runningFrom("app-1", "app", "app:v1", 1, "PLAIN=x", "VERSION=v2")
	h.runningFrom("app2-1", "app2", "app:v1", 1, "VERSION=v2")
	pod.Status.ContainerStatuses[0].ContainerID = "containerd://app-1"
	pod.Status.ContainerStatuses[1].ContainerID = "containerd://app2-1"
	pod = h.write(pod)
	h.sync(pod)
	pod = h.refresh(pod)
	step, err := inplaceupdate.Progress(pod, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if !step.Done {
		t.Fatalf("engine not done: %s", step.Message)
	}
	if n := len(h.stopped()); n != 2 {
		t.Errorf("%d stops, want 2", n)
	}
}

// An image update to a new reference of the same image content. The Pod status keeps the old
// imageID and image name, so the engine can judge it only from runtime-containers-meta: the
// daemon writes it during the update once every container the status reports was created from
// its spec image — and not earlier, nor for an update whose new imageID the status shows.
func TestReportsWhenTheStatusCannotShowTheNewImage(t *testing.T) {
	const to = "mirror.example.com/app:v1"
	setup := func(t *testing.T, completionLabels map[string]string) (*harness, *corev1.Pod) {
		pod := newPod()
		pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
		for i := range pod.Status.ContainerStatuses {
			s := &pod.Status.ContainerStatuses[i]
			s.Image = pod.Spec.Containers[i].Image
			s.ImageID = "sha256:" + s.Name
		}
		h := newHarness(t, DefaultConfig(), pod)
		h.startPodFromSpec()
		h.sync(pod)
		pod = h.refresh(pod)
		spec, err := inplaceupdate.SpecFromRequest(pod, &apps.InPlaceUpdate{Spec: apps.InPlaceUpdateSpec{
			Revision: "r2", Containers: []apps.InPlaceUpdateContainer{{Name: "app", Image: to}}, CompletionLabels: completionLabels}})
		if err != nil {
			t.Fatal(err)
		}
		step, err := inplaceupdate.Begin(pod, spec, t0)
		if err != nil {
			t.Fatal(err)
		}
		pod = h.write(step.Pod)
		h.sync(pod)
		if n := len(h.patches()); n != 1 {
			t.Fatalf("%d patches before the kubelet acted, want 1", n)
		}
		// The kubelet replaced app; the status does not show it yet.
		h.cri.SetState("app-0", criruntime.StateExited)
		h.runningFrom("app-1", "app", to, 1, "PLAIN=x", "VERSION=v1")
		h.sync(pod)
		if n := len(h.patches()); n != 1 {
			t.Fatalf("%d patches before the status shows the new instance, want 1", n)
		}
		return h, pod
	}

	// The report completes the update: the daemon writes both in one pods/status update, with
	// InPlaceUpdateReady True, where the report and inplace-controller's completion were two writes.
	completedWithReport := func(t *testing.T, h *harness, pod *corev1.Pod) {
		t.Helper()
		if n := len(h.patches()); n != 1 {
			t.Errorf("%d patches, want still 1 (the report goes in the completion's write)", n)
		}
		if n := len(statusUpdates(h)); n != 1 {
			t.Fatalf("%d pods/status updates, want 1", n)
		}
		pod = h.refresh(pod)
		if m := metaOf(t, pod).Containers[0]; m.ContainerID != "containerd://app-1" || fmt.Sprintf("%x", m.Hashes.PlainHash) != kubeletHash("app", to) {
			t.Errorf("app's entry %+v", m)
		}
		if !inplaceupdate.IsCompleted(pod) {
			t.Errorf("state %s not completed", pod.Annotations[pub.InPlaceUpdateStateKey])
		}
		if i := slices.IndexFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == pub.InPlaceUpdateReady }); i < 0 || pod.Status.Conditions[i].Status != corev1.ConditionTrue {
			t.Errorf("conditions %+v, want InPlaceUpdateReady True", pod.Status.Conditions)
		}
		if ev := h.events(); !slices.ContainsFunc(ev, func(e string) bool { return strings.Contains(e, inplaceupdate.ReasonInPlaceUpdateCompleted) }) {
			t.Errorf("events %q, want %s", ev, inplaceupdate.ReasonInPlaceUpdateCompleted)
		}
	}
	t.Run("same image id: the report completes the update", func(t *testing.T) {
		h, pod := setup(t, nil)
		pod.Status.ContainerStatuses[0].ContainerID = "containerd://app-1" // same imageID, old name
		pod = h.write(pod)
		if step, _ := inplaceupdate.Progress(pod, t0.Add(time.Second)); step.Done {
			t.Fatal("done before the daemon reported")
		}
		h.sync(pod)
		completedWithReport(t, h, pod)
	})
	t.Run("new image id: completed with the report", func(t *testing.T) {
		h, pod := setup(t, nil)
		pod.Status.ContainerStatuses[0].ContainerID = "containerd://app-1"
		pod.Status.ContainerStatuses[0].ImageID = "sha256:other"
		pod = h.write(pod)
		if !inplaceupdate.ReportBehindStatus(pod) {
			t.Error("ReportBehindStatus false: inplace-controller would not leave the completion to the daemon")
		}
		h.sync(pod)
		completedWithReport(t, h, pod)
		if pod = h.refresh(pod); inplaceupdate.ReportBehindStatus(pod) {
			t.Error("ReportBehindStatus still true after the report")
		}
	})
	t.Run("a completion with a user's labels: left to the controller", func(t *testing.T) {
		h, pod := setup(t, map[string]string{"stage": "done"})
		pod.Status.ContainerStatuses[0].ContainerID = "containerd://app-1"
		pod.Status.ContainerStatuses[0].ImageID = "sha256:other"
		pod = h.write(pod)
		h.sync(pod)
		if n, m := len(h.patches()), len(statusUpdates(h)); n != 1 || m != 0 {
			t.Fatalf("%d patches and %d status updates, want 1 and 0: a Pod update (admission sees the label) is the controller's", n, m)
		}
		if pod = h.refresh(pod); inplaceupdate.IsCompleted(pod) {
			t.Error("completed by the daemon")
		}
	})
}

// statusUpdates are the pods/status updates the daemon sent.
func statusUpdates(h *harness) []k8stesting.UpdateAction {
	var out []k8stesting.UpdateAction
	for _, a := range h.client.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && u.GetSubresource() == "status" {
			out = append(out, u)
		}
	}
	return out
}

func TestReportNowWithRuntimeMeta(t *testing.T) {
	pod := newPod()
	for i := range pod.Status.ContainerStatuses {
		pod.Status.ContainerStatuses[i].ImageID = "sha256:" + pod.Status.ContainerStatuses[i].Name
	}
	pod.Spec.Containers[0].Image = "app:v1-alias"
	pod.Annotations[pub.InPlaceUpdateStateKey] = stateJSON(t, pub.InPlaceUpdateState{Revision: "r2", UpdateTimestamp: metav1.NewTime(t0),
		UpdateImages:           true,
		LastContainerStatuses:  map[string]pub.InPlaceUpdateContainerStatus{"app": {ImageID: "sha256:app"}},
		ContainerBatchesRecord: []pub.InPlaceUpdateContainerBatch{{Timestamp: metav1.NewTime(t0), Containers: []string{"app"}}}})
	set := func(appImage string) *pub.RuntimeContainerMetaSet {
		s := &pub.RuntimeContainerMetaSet{}
		for i := range pod.Spec.Containers {
			c := pod.Spec.Containers[i]
			if c.Name == "app" {
				c.Image = appImage
			}
			s.Containers = append(s.Containers, pub.RuntimeContainerMeta{Name: c.Name,
				ContainerID: pod.Status.ContainerStatuses[i].ContainerID,
				Hashes:      pub.RuntimeContainerHashes{PlainHash: inplaceupdate.KubeletContainerHash(&c)}})
		}
		return s
	}
	if reportNow(pod, set("app:v1")) {
		t.Error("the old instance runs: nothing the engine needs")
	}
	if !reportNow(pod, set("app:v1-alias")) {
		t.Error("the status shows the instance created from the new reference, same image id: report")
	}
	done := pod.DeepCopy()
	done.Status.ContainerStatuses[0].ImageID = "sha256:new"
	if reportNow(done, set("app:v1-alias")) {
		t.Error("the status shows a new image id: the engine needs no report")
	}
}
