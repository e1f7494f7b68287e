package inplaceupdate

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// injectedPod is a running Pod with app container "main" and sidecar "log" injected by SidecarSet
// "logs" at hash h1.
func injectedPod() *corev1.Pod {
	pod := runningPod(ctr("main", "app:v1"), ctr("log", "log:v1"))
	hashes := map[string]pub.SidecarSetUpgradeSpec{"logs": {Hash: "h1", SidecarSetName: "logs", SidecarList: []string{"log"}}}
	b, _ := json.Marshal(hashes)
	pod.Annotations[pub.SidecarSetHashKey] = string(b)
	return pod
}

func sidecarRequest(set, hash string, images ...string) *apps.InPlaceUpdate {
	req := &apps.InPlaceUpdate{Spec: apps.InPlaceUpdateSpec{Revision: hash, SidecarSet: &apps.InPlaceUpdateSidecarSet{Name: set, ControllerRevision: set + "-" + hash}}}
	for _, ci := range images {
		name, image, _ := strings.Cut(ci, "=")
		req.Spec.Containers = append(req.Spec.Containers, apps.InPlaceUpdateContainer{Name: name, Image: image})
	}
	return req
}

func workloadRequest(rev string, images ...string) *apps.InPlaceUpdate {
	req := &apps.InPlaceUpdate{Spec: apps.InPlaceUpdateSpec{Revision: rev}}
	for _, ci := range images {
		name, image, _ := strings.Cut(ci, "=")
		req.Spec.Containers = append(req.Spec.Containers, apps.InPlaceUpdateContainer{Name: name, Image: image})
	}
	return req
}

// begin runs SpecFromRequest and Begin and writes the step.
func begin(t *testing.T, pod *corev1.Pod, req *apps.InPlaceUpdate, now time.Time) (*corev1.Pod, *Step) {
	t.Helper()
	spec, err := SpecFromRequest(pod, req)
	if err != nil {
		t.Fatalf("SpecFromRequest: %v", err)
	}
	step, err := Begin(pod, spec, now)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	return write(t, pod, step), step
}

func progress(t *testing.T, pod *corev1.Pod, now time.Time) (*corev1.Pod, *Step) {
	t.Helper()
	step, err := Progress(pod, now)
	if err != nil {
		t.Fatalf("Progress: %v", err)
	}
	return write(t, pod, step), step
}

func TestSidecarSetUpgradeKeepsServiceByDefault(t *testing.T) {
	pod := withGate(injectedPod())
	pod, step := begin(t, pod, sidecarRequest("logs", "h2", "log=log:v2"), t0)
	if len(step.Conditions) != 0 {
		t.Errorf("a sidecar upgrade that keeps service wrote conditions %v", step.Conditions)
	}
	if got := FindContainer(pod.Spec.Containers, "log").Image; got != "log:v2" {
		t.Errorf("sidecar image %s", got)
	}
	if pod.Labels[RevisionLabelKey] != "rev-1" {
		t.Errorf("the workload's revision label changed to %q", pod.Labels[RevisionLabelKey])
	}
	if _, ok := pod.Annotations[pub.InPlaceUpdateStateKey]; ok {
		t.Error("a sidecar upgrade wrote the workload's state annotation")
	}
	hashes, err := SidecarSetHashes(pod, pub.SidecarSetHashKey)
	if err != nil {
		t.Fatal(err)
	}
	if e := hashes["logs"]; e.Hash != "h2" || e.ControllerRevision != "logs-h2" || !e.UpdateTimestamp.Time.Equal(t0) || len(e.SidecarList) != 1 {
		t.Errorf("hash entry %+v", e)
	}
	st, done, ok := SidecarSetUpgradeState(pod, "logs")
	if !ok || done || st.Revision != "h2" || st.LastContainerStatuses["log"].ImageID != imageIDOf("log:v1") || !st.UpdateImages {
		t.Fatalf("state %+v done=%v ok=%v", st, done, ok)
	}
	if !AnyInProgress(pod) || IsInProgress(pod) {
		t.Errorf("AnyInProgress=%v IsInProgress=%v", AnyInProgress(pod), IsInProgress(pod))
	}

	pod, step = progress(t, pod, t0.Add(time.Second))
	if step.Pod != nil {
		t.Fatalf("completed before the kubelet reported the new image: %s", step.Message)
	}
	kubeletRestart(pod, "log")
	pod, step = progress(t, pod, t0.Add(2*time.Second))
	if _, done, _ := SidecarSetUpgradeState(pod, "logs"); !done {
		t.Fatalf("not completed: %s", step.Message)
	}
	if AnyInProgress(pod) {
		t.Error("still in progress")
	}
	if c := getCondition(pod, pub.InPlaceUpdateReady); c.Status != corev1.ConditionTrue {
		t.Errorf("gate %v", c)
	}
}

func TestSidecarSetUpgradeLeavesServiceOnRequest(t *testing.T) {
	pod := withGate(injectedPod())
	req := sidecarRequest("logs", "h2", "log=log:v2")
	req.Spec.SidecarSet.LeaveService = true
	pod, step := begin(t, pod, req, t0)
	if c := condition(step.Conditions, pub.InPlaceUpdateReady); c == nil || c.Status != corev1.ConditionFalse || c.Reason != ReasonStartSidecarSetUpgrade {
		t.Fatalf("conditions %v", step.Conditions)
	}
	if _, ok := ImagesToWatch(pod); ok {
		t.Error("the daemon would hand over a Pod a sidecar upgrade holds")
	}
	pod, _ = progress(t, pod, t0.Add(time.Second))
	if c := getCondition(pod, pub.InPlaceUpdateReady); c.Status != corev1.ConditionFalse {
		t.Fatalf("gate released before the sidecar runs its new image")
	}
	kubeletRestart(pod, "log")
	pod, step = progress(t, pod, t0.Add(2*time.Second))
	if c := getCondition(pod, pub.InPlaceUpdateReady); c.Status != corev1.ConditionTrue {
		t.Fatalf("gate not released after completion: %s", step.Message)
	}
}

// A condition written by a sidecar request that has not written its upgrade yet is not undone.
func TestSidecarSetUpgradeStartWindow(t *testing.T) {
	pod := withGate(injectedPod())
	SetConditions(&pod.Status, corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse,
		Reason: ReasonStartSidecarSetUpgrade, LastTransitionTime: metav1.NewTime(t0)})
	_, step := progress(t, pod, t0.Add(time.Second))
	if len(step.Conditions) != 0 || step.RequeueAfter == 0 {
		t.Fatalf("within the start window: conditions %v requeue %v", step.Conditions, step.RequeueAfter)
	}
	_, step = progress(t, pod, t0.Add(StartWindow+time.Second))
	if c := condition(step.Conditions, pub.InPlaceUpdateReady); c == nil || c.Status != corev1.ConditionTrue {
		t.Fatalf("after the start window: conditions %v", step.Conditions)
	}
}

// A CloneSet update of the app container and a SidecarSet upgrade of the sidecar run at once; the
// Pod is back in service only when both are done.
func TestSidecarSetUpgradeBesideWorkloadUpdate(t *testing.T) {
	pod := withGate(injectedPod())
	pod, _ = begin(t, pod, workloadRequest("rev-2", "main=app:v2"), t0)
	req := sidecarRequest("logs", "h2", "log=log:v2")
	req.Spec.SidecarSet.LeaveService = true
	pod, _ = begin(t, pod, req, t0.Add(time.Second))
	if FindContainer(pod.Spec.Containers, "main").Image != "app:v2" || FindContainer(pod.Spec.Containers, "log").Image != "log:v2" {
		t.Fatal("both images must be set")
	}
	if pod.Labels[RevisionLabelKey] != "rev-2" {
		t.Errorf("revision label %q", pod.Labels[RevisionLabelKey])
	}

	kubeletRestart(pod, "main")
	pod, step := progress(t, pod, t0.Add(2*time.Second))
	if !IsCompleted(pod) {
		t.Fatalf("workload update not completed: %s", step.Message)
	}
	if c := getCondition(pod, pub.InPlaceUpdateReady); c.Status != corev1.ConditionFalse {
		t.Fatal("the workload's completion released a Pod the sidecar upgrade holds")
	}
	kubeletRestart(pod, "log")
	pod, _ = progress(t, pod, t0.Add(3*time.Second))
	if c := getCondition(pod, pub.InPlaceUpdateReady); c.Status != corev1.ConditionTrue {
		t.Fatal("not released after both completed")
	}
	if s := status(pod, "main"); !strings.HasSuffix(s.ContainerID, "-1-restarted") {
		t.Errorf("main restarted more than once: %s", s.ContainerID)
	}
}

func TestSidecarSetUpgradeRefusals(t *testing.T) {
	pod := injectedPod()
	var invalid *InvalidRequestError
	for name, tc := range map[string]struct {
		req   *apps.InPlaceUpdate
		field string
	}{
		"not injected":      {sidecarRequest("mesh", "h2", "log=log:v2"), "spec.sidecarSet.name"},
		"an app container":  {sidecarRequest("logs", "h2", "main=app:v2"), "spec.containers[0].name"},
		"unknown container": {sidecarRequest("logs", "h2", "log-1=log:v2"), "spec.containers[0].name"},
	} {
		_, err := SpecFromRequest(pod, tc.req)
		if !errors.As(err, &invalid) || invalid.Errs[0].Field != tc.field {
			t.Errorf("%s: want 422 at %s, got %v", name, tc.field, err)
		}
	}

	// A workload update changing the sidecar (by hand) makes the sidecar upgrade wait, and the
	// reverse.
	busy, _ := begin(t, pod, workloadRequest("rev-2", "log=log:hand"), t0)
	if _, err := SpecFromRequest(busy, sidecarRequest("logs", "h2", "log=log:v2")); !errors.Is(err, ErrInProgress) || !strings.Contains(err.Error(), "workload") {
		t.Errorf("sidecar upgrade over a workload update of the same container: %v", err)
	}
	busy, _ = begin(t, pod, sidecarRequest("logs", "h2", "log=log:v2"), t0)
	if _, err := SpecFromRequest(busy, workloadRequest("rev-2", "log=log:hand")); !errors.Is(err, ErrInProgress) || !strings.Contains(err.Error(), "SidecarSet logs") {
		t.Errorf("workload update over a sidecar upgrade of the same container: %v", err)
	}
	// The app container is free.
	if _, err := SpecFromRequest(busy, workloadRequest("rev-2", "main=app:v2")); err != nil {
		t.Errorf("workload update of the app container during a sidecar upgrade: %v", err)
	}
	// A newer hash supersedes an unfinished upgrade (v2 never starts; v3 fixes it).
	fixed, _ := begin(t, busy, sidecarRequest("logs", "h3", "log=log:v3"), t0.Add(time.Second))
	if st, _, _ := SidecarSetUpgradeState(fixed, "logs"); st.Revision != "h3" || st.LastContainerStatuses["log"].ImageID != imageIDOf("log:v1") {
		t.Errorf("superseding state %+v", st)
	}
	// The same request again changes nothing.
	spec, err := SpecFromRequest(fixed, sidecarRequest("logs", "h3", "log=log:v3"))
	if err != nil {
		t.Fatal(err)
	}
	if step, err := Begin(fixed, spec, t0.Add(2*time.Second)); err != nil || step.Pod != nil {
		t.Errorf("repeated request: step %+v err %v", step, err)
	}
}

// The sidecars already run the SidecarSet's images (a revert, or a hash change by a field the Pod
// does not show): only the hash is recorded, complete at once.
func TestSidecarSetUpgradeRecordsHashOnly(t *testing.T) {
	pod := injectedPod()
	pod, step := begin(t, pod, sidecarRequest("logs", "h2", "log=log:v1"), t0)
	if !step.Done || step.Pod == nil {
		t.Fatalf("step %+v", step)
	}
	if h, _ := SidecarSetHashes(pod, pub.SidecarSetHashKey); h["logs"].Hash != "h2" {
		t.Errorf("hash %v", h)
	}
	if _, done, ok := SidecarSetUpgradeState(pod, "logs"); !ok || !done {
		t.Error("not recorded as completed")
	}
}

// A hot upgrade puts the new image into the idle container of the pair and records, at once,
// which container works and the versions; nothing restarts for the annotations. The annotations
// name containers of the SidecarSet's pairs only.
func TestSidecarSetHotUpgradeAnnotations(t *testing.T) {
	pod := runningPod(ctr("main", "app:v1"), ctr("mesh-1", "mesh:v1"), ctr("mesh-2", "empty:1"))
	hashes := map[string]pub.SidecarSetUpgradeSpec{"mesh": {Hash: "h1", SidecarSetName: "mesh", SidecarList: []string{"mesh"}}}
	b, _ := json.Marshal(hashes)
	pod.Annotations[pub.SidecarSetHashKey] = string(b)
	pod.Annotations[pub.SidecarSetWorkingHotUpgradeContainerKey] = `{"mesh":"mesh-1"}`
	pod.Annotations[pub.SidecarSetVersionAnnotationPrefix+"mesh-1"] = "1"

	req := sidecarRequest("mesh", "h2", "mesh-2=mesh:v2")
	req.Spec.Metadata = &apps.InPlaceUpdateMetadata{Annotations: map[string]string{
		pub.SidecarSetWorkingHotUpgradeContainerKey:         `{"mesh":"mesh-2"}`,
		pub.SidecarSetVersionAnnotationPrefix + "mesh-2":    "42",
		pub.SidecarSetVersionAltAnnotationPrefix + "mesh-2": "1",
		pub.SidecarSetVersionAltAnnotationPrefix + "mesh-1": "42",
		pub.SidecarSetVersionAnnotationPrefix + "mesh-1":    "1", // unchanged
	}}
	upgraded, step := begin(t, pod, req, t0)
	if got := upgraded.Annotations[pub.SidecarSetWorkingHotUpgradeContainerKey]; got != `{"mesh":"mesh-2"}` {
		t.Errorf("working container %q", got)
	}
	for k, v := range req.Spec.Metadata.Annotations {
		if upgraded.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, upgraded.Annotations[k], v)
		}
	}
	if specImageOf(upgraded, "mesh-2") != "mesh:v2" || specImageOf(upgraded, "mesh-1") != "mesh:v1" {
		t.Errorf("images: %v", upgraded.Spec.Containers)
	}
	if step.State == nil || len(step.State.ContainerBatchesRecord) != 1 || !slicesEqual(step.State.ContainerBatchesRecord[0].Containers, []string{"mesh-2"}) {
		t.Errorf("only mesh-2 changes: state %+v", step.State)
	}

	var invalid *InvalidRequestError
	for name, key := range map[string]string{
		"an app container":        pub.SidecarSetVersionAnnotationPrefix + "main",
		"a missing container":     pub.SidecarSetVersionAltAnnotationPrefix + "mesh-3",
		"an unparsable work list": pub.SidecarSetWorkingHotUpgradeContainerKey,
	} {
		req := sidecarRequest("mesh", "h2", "mesh-2=mesh:v2")
		req.Spec.Metadata = &apps.InPlaceUpdateMetadata{Annotations: map[string]string{key: "mesh-1"}}
		if _, err := SpecFromRequest(pod, req); !errors.As(err, &invalid) || !strings.HasPrefix(invalid.Errs[0].Field, "spec.metadata.annotations") {
			t.Errorf("%s: want 422 at spec.metadata.annotations, got %v", name, err)
		}
	}
}

func specImageOf(pod *corev1.Pod, name string) string {
	if c := FindContainer(pod.Spec.Containers, name); c != nil {
		return c.Image
	}
	return ""
}

func slicesEqual(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

// A SidecarSet upgrade writes the SidecarSet's patchPodMetadata with the new images, in the same
// write; an annotation the engine writes itself is refused.
func TestSidecarSetUpgradePatchesAnnotations(t *testing.T) {
	pod := injectedPod()
	pod.Annotations["key"] = `{"log":1}`
	req := sidecarRequest("logs", "h2", "log=log:v2")
	req.Spec.Metadata = &apps.InPlaceUpdateMetadata{Annotations: map[string]string{"key": `{"log":2}`}}
	upgraded, step := begin(t, pod, req, t0)
	if got := upgraded.Annotations["key"]; got != `{"log":2}` {
		t.Errorf("annotation key = %q, want the patched value", got)
	}
	if specImageOf(upgraded, "log") != "log:v2" || step.Done {
		t.Errorf("images %v, step %+v: want log upgrading to log:v2", upgraded.Spec.Containers, step)
	}

	var invalid *InvalidRequestError
	for _, key := range []string{pub.SidecarSetHashKey, pub.SidecarSetInPlaceUpdateStateKey, pub.InPlaceUpdateStateKey} {
		req := sidecarRequest("logs", "h2", "log=log:v2")
		req.Spec.Metadata = &apps.InPlaceUpdateMetadata{Annotations: map[string]string{key: "{}"}}
		if _, err := SpecFromRequest(pod, req); !errors.As(err, &invalid) || invalid.Errs[0].Field != "spec.metadata.annotations["+key+"]" {
			t.Errorf("%s: want 422 at spec.metadata.annotations[%s], got %v", key, key, err)
		}
	}
}

// SidecarSetUpgradePending names the containers of an unfinished upgrade that do not run their
// new image yet: all of them until the kubelet restarts them; none once they run it, or when
// the upgrade is complete.
func TestSidecarSetUpgradePending(t *testing.T) {
	pod := injectedPod()
	if got := SidecarSetUpgradePending(pod, "logs"); len(got) != 0 {
		t.Errorf("no upgrade: pending %v", got)
	}
	upgraded, _ := begin(t, pod, sidecarRequest("logs", "h2", "log=log:v2"), t0)
	if got := SidecarSetUpgradePending(upgraded, "logs"); !slicesEqual(got, []string{"log"}) {
		t.Errorf("just begun: pending %v, want [log]", got)
	}
	if got := SidecarSetUpgradePending(upgraded, "mesh"); len(got) != 0 {
		t.Errorf("another SidecarSet: pending %v", got)
	}
	s := status(upgraded, "log")
	s.Image, s.ImageID = "log:v2", imageIDOf("log:v2")
	if got := SidecarSetUpgradePending(upgraded, "logs"); len(got) != 0 {
		t.Errorf("log runs log:v2: pending %v", got)
	}
}

// nativePod is a running Pod with app container "main", and init containers "setup" (plain,
// completed) and "proxy" (a native sidecar, restartPolicy Always, running and ready), both
// injected by SidecarSet "mesh" at hash h1 (its sidecarList names the native sidecar only, as
// injection writes it).
func nativePod() *corev1.Pod {
	pod := runningPod(ctr("main", "app:v1"))
	always := corev1.ContainerRestartPolicyAlways
	proxy := ctr("proxy", "proxy:v1")
	proxy.RestartPolicy = &always
	pod.Spec.InitContainers = []corev1.Container{ctr("setup", "setup:v1"), proxy}
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{
		{Name: "setup", Image: "setup:v1", ImageID: imageIDOf("setup:v1"), ContainerID: "containerd://setup-1",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}},
		{Name: "proxy", Image: "proxy:v1", ImageID: imageIDOf("proxy:v1"), ContainerID: "containerd://proxy-1", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
	}
	hashes := map[string]pub.SidecarSetUpgradeSpec{"mesh": {Hash: "h1", SidecarSetName: "mesh", SidecarList: []string{"proxy"}}}
	b, _ := json.Marshal(hashes)
	pod.Annotations[pub.SidecarSetHashKey] = string(b)
	return pod
}

// kubeletRestartInit is the kubelet restarting native sidecar name on its spec image.
func kubeletRestartInit(pod *corev1.Pod, name string) {
	s := FindInitStatus(pod, name)
	c := FindContainer(pod.Spec.InitContainers, name)
	s.Image, s.ImageID = c.Image, imageIDOf(c.Image)
	s.ContainerID += "-restarted"
	s.RestartCount++
	s.Ready = true
}

// A SidecarSet upgrades its native sidecar in place: the new image goes into
// spec.initContainers, the previous imageID comes from status.initContainerStatuses, and the
// upgrade completes once the init container status shows the new image. The app container and
// the plain init container are not touched.
func TestSidecarSetUpgradesNativeSidecar(t *testing.T) {
	pod := withGate(nativePod())
	pod, step := begin(t, pod, sidecarRequest("mesh", "h2", "proxy=proxy:v2"), t0)
	if got := FindContainer(pod.Spec.InitContainers, "proxy").Image; got != "proxy:v2" {
		t.Errorf("native sidecar image %s, want proxy:v2", got)
	}
	if FindContainer(pod.Spec.InitContainers, "setup").Image != "setup:v1" || FindContainer(pod.Spec.Containers, "main").Image != "app:v1" ||
		len(pod.Spec.Containers) != 1 {
		t.Errorf("other containers changed: init %v, containers %v", pod.Spec.InitContainers, pod.Spec.Containers)
	}
	if step.Done || len(step.Conditions) != 0 {
		t.Errorf("step %+v: want an upgrade under way that keeps service", step)
	}
	st, done, ok := SidecarSetUpgradeState(pod, "mesh")
	if !ok || done || st.Revision != "h2" || st.LastContainerStatuses["proxy"].ImageID != imageIDOf("proxy:v1") ||
		len(st.ContainerBatchesRecord) != 1 || !slicesEqual(st.ContainerBatchesRecord[0].Containers, []string{"proxy"}) {
		t.Fatalf("state %+v done=%v ok=%v: want proxy upgrading from the imageID of proxy:v1", st, done, ok)
	}
	if h, _ := SidecarSetHashes(pod, pub.SidecarSetHashKey); h["mesh"].Hash != "h2" {
		t.Errorf("hash entry %+v, want h2", h["mesh"])
	}
	if got := SidecarSetUpgradePending(pod, "mesh"); !slicesEqual(got, []string{"proxy"}) {
		t.Errorf("pending %v, want [proxy]", got)
	}

	pod, step = progress(t, pod, t0.Add(time.Second))
	if _, done, _ := SidecarSetUpgradeState(pod, "mesh"); done {
		t.Fatalf("completed before the kubelet restarted the native sidecar: %s", step.Message)
	}
	if !AnyInProgress(pod) {
		t.Errorf("want the upgrade still in progress")
	}
	kubeletRestartInit(pod, "proxy")
	if got := SidecarSetUpgradePending(pod, "mesh"); len(got) != 0 {
		t.Errorf("the native sidecar runs proxy:v2: pending %v", got)
	}
	pod, step = progress(t, pod, t0.Add(2*time.Second))
	if _, done, _ := SidecarSetUpgradeState(pod, "mesh"); !done {
		t.Fatalf("not completed after the kubelet restarted the native sidecar: %s", step.Message)
	}
	if AnyInProgress(pod) {
		t.Error("still in progress")
	}
}

// Only native sidecars among the init containers: a plain one is refused even when named as a
// sidecar, and a workload's request still may not change a native sidecar (init container).
func TestSidecarSetUpgradeNativeSidecarRefusals(t *testing.T) {
	pod := nativePod()
	var invalid *InvalidRequestError
	_, err := SpecFromRequest(pod, sidecarRequest("mesh", "h2", "setup=setup:v2"))
	if !errors.As(err, &invalid) || invalid.Errs[0].Field != "spec.containers[0].name" {
		t.Errorf("plain init container not in the sidecarList: want 422 at spec.containers[0].name, got %v", err)
	}
	listed := pod.DeepCopy()
	b, _ := json.Marshal(map[string]pub.SidecarSetUpgradeSpec{"mesh": {Hash: "h1", SidecarSetName: "mesh", SidecarList: []string{"proxy", "setup"}}})
	listed.Annotations[pub.SidecarSetHashKey] = string(b)
	_, err = SpecFromRequest(listed, sidecarRequest("mesh", "h2", "setup=setup:v2"))
	if !errors.As(err, &invalid) || invalid.Errs[0].Field != "spec.containers[0].image" || !strings.Contains(err.Error(), "plain init container") {
		t.Errorf("plain init container in the sidecarList: want 422 at spec.containers[0].image, got %v", err)
	}
	_, err = SpecFromRequest(pod, workloadRequest("rev-2", "proxy=proxy:v2"))
	if !errors.As(err, &invalid) || invalid.Errs[0].Field != "spec.containers[0].image" {
		t.Errorf("a workload's request for a native sidecar: want 422 at spec.containers[0].image, got %v", err)
	}
	// Begin refuses what SpecFromRequest would: a workload spec naming an init container.
	if _, err := Begin(pod, &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"proxy": "proxy:v2"}}, t0); err == nil {
		t.Error("Begin of a workload update of a native sidecar: want an error")
	}
}
