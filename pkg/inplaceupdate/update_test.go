package inplaceupdate

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

func TestBeginImage(t *testing.T) {
	for _, gate := range []bool{true, false} {
		name := map[bool]string{true: "with readiness gate", false: "without readiness gate"}[gate]
		t.Run(name, func(t *testing.T) {
			pod := runningPod(ctr("app", "app:v1"), ctr("sidecar", "sidecar:v1"))
			if gate {
				withGate(pod)
			}
			before := pod.DeepCopy()
			spec := &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"app": "app:v2"}}
			specBefore := spec.String()

			step, err := Begin(pod, spec, t0)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(pod, before) || spec.String() != specBefore {
				t.Fatal("Begin modified its input")
			}
			if got := step.Pod.Spec.Containers[0].Image; got != "app:v2" {
				t.Errorf("image not set: %s", got)
			}
			if got := step.Pod.Spec.Containers[1].Image; got != "sidecar:v1" {
				t.Errorf("sidecar changed: %s", got)
			}
			if got := step.Pod.Labels[RevisionLabelKey]; got != "rev-2" {
				t.Errorf("revision label %q", got)
			}
			st := mustState(t, step.Pod)
			want := pub.InPlaceUpdateState{
				Revision:               "rev-2",
				UpdateTimestamp:        metav1.NewTime(t0),
				UpdateImages:           true,
				LastContainerStatuses:  map[string]pub.InPlaceUpdateContainerStatus{"app": {ImageID: imageIDOf("app:v1")}},
				ContainerBatchesRecord: []pub.InPlaceUpdateContainerBatch{{Timestamp: metav1.NewTime(t0), Containers: []string{"app"}}},
			}
			if !semEq(st.InPlaceUpdateState, want) {
				t.Errorf("state\n got %+v\nwant %+v", st.InPlaceUpdateState, want)
			}
			if !semEq(step.State, &want) {
				t.Errorf("step state %+v", step.State)
			}
			if step.Done || step.Resize != nil || step.RequeueAfter != 0 {
				t.Errorf("unexpected step %+v", step)
			}
			if !gate {
				if len(step.Conditions) != 0 {
					t.Fatalf("no readiness gate, yet conditions %+v", step.Conditions)
				}
				return
			}
			c := condition(step.Conditions, pub.InPlaceUpdateReady)
			if c == nil || c.Status != corev1.ConditionFalse || c.Reason != ReasonStartInPlaceUpdate || !c.LastTransitionTime.Time.Equal(t0) {
				t.Errorf("InPlaceUpdateReady condition %+v", c)
			}
			if len(step.Conditions) != 1 {
				// Ready is the kubelet's: written by inplace too, the kubelet's cached Ready=True
				// can come back over it (unreadyConditions).
				t.Errorf("conditions %+v, want InPlaceUpdateReady alone", step.Conditions)
			}
			// The caller writes the conditions, reads the Pod back and begins again: the same
			// step without the conditions.
			again, err := Begin(write(t, pod, &Step{Conditions: step.Conditions}), spec, t0)
			if err != nil || len(again.Conditions) != 0 || !reflect.DeepEqual(again.Pod.Spec, step.Pod.Spec) {
				t.Errorf("second Begin: %v %+v", err, again)
			}
		})
	}
}

func TestBeginRefusesPods(t *testing.T) {
	spec := &UpdateSpec{Revision: "r", ContainerImages: map[string]string{"app": "app:v2"}}
	deleting := runningPod(ctr("app", "app:v1"))
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	if _, err := Begin(deleting, spec, t0); !errors.Is(err, ErrPodNotUpdatable) {
		t.Errorf("deleting pod: %v", err)
	}
	if _, err := Begin(runningPod(ctr("other", "x")), spec, t0); err == nil || !strings.Contains(err.Error(), `container "app"`) {
		t.Errorf("missing container: %v", err)
	}
}

func TestBeginResize(t *testing.T) {
	burstable := res("cpu=100m,memory=64Mi", "cpu=200m,memory=128Mi")
	want := resources("cpu=300m,memory=64Mi", "cpu=400m,memory=128Mi")
	cases := []struct {
		name        string
		app         corev1.Container
		wantUnready bool
	}{
		{"default resize policy: no restart, the Pod stays in service", ctr("app", "app:v1", burstable), false},
		{"RestartContainer for a resource that changes", ctr("app", "app:v1", burstable, resizePolicy(corev1.ResourceCPU, corev1.RestartContainer)), true},
		{"RestartContainer for a resource that does not change", ctr("app", "app:v1", burstable, resizePolicy(corev1.ResourceMemory, corev1.RestartContainer)), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := withGate(runningPod(tc.app))
			step, err := Begin(pod, &UpdateSpec{Revision: "rev-2", ContainerResources: map[string]corev1.ResourceRequirements{"app": want}}, t0)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(step.Resize, map[string]corev1.ResourceRequirements{"app": want}) {
				t.Errorf("resize %v", step.Resize)
			}
			if !reflect.DeepEqual(step.Pod.Spec.Containers[0].Resources, pod.Spec.Containers[0].Resources) {
				t.Error("resources must go through pods/resize, not the Pod update")
			}
			if got := len(step.Conditions) > 0; got != tc.wantUnready {
				t.Errorf("unready conditions: %+v", step.Conditions)
			}
			st := mustState(t, step.Pod)
			if !st.UpdateResources || !reflect.DeepEqual(st.ContainerResources, map[string]corev1.ResourceRequirements{"app": want}) {
				t.Errorf("state %+v", st)
			}
			patch, _ := step.ResizePatch()
			if string(patch) != `{"spec":{"containers":[{"name":"app","resources":{"limits":{"cpu":"400m","memory":"128Mi"},"requests":{"cpu":"300m","memory":"64Mi"}}}]}}` {
				t.Errorf("resize patch %s", patch)
			}
		})
	}
}

func TestBeginMetadataOnlyCompletesAtOnce(t *testing.T) {
	pod := withGate(runningPod(ctr("app", "app:v1")))
	step, err := Begin(pod, &UpdateSpec{Revision: "rev-2", Metadata: &MetadataChange{
		Labels: map[string]string{"tier": "gold"}, RemoveAnnotations: []string{"note"}}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if step.Pod.Labels["tier"] != "gold" || step.Pod.Annotations["note"] != "" {
		t.Errorf("metadata not applied: %v %v", step.Pod.Labels, step.Pod.Annotations)
	}
	if !step.Done || len(step.Conditions) != 0 || !IsCompleted(step.Pod) {
		t.Errorf("a labels-only update neither restarts nor waits: %+v", step)
	}
	if len(mustState(t, step.Pod).ContainerBatchesRecord) != 0 {
		t.Error("no container batch to record")
	}

	// Replacing an unfinished update that had taken the Pod out of service puts it back.
	pod = withGate(runningPod(ctr("app", "app:v1")))
	step, _ = Begin(pod, &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"app": "app:v2"}}, t0)
	pod = write(t, pod, step)
	step, _ = Begin(pod, &UpdateSpec{Revision: "rev-3", Metadata: &MetadataChange{Labels: map[string]string{"tier": "gold"}}}, t0)
	if c := condition(step.Conditions, pub.InPlaceUpdateReady); !step.Done || c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("InPlaceUpdateReady True expected: %+v", step)
	}
}

func TestBeginEnvFromMetadata(t *testing.T) {
	pod := withGate(runningPod(ctr("app", "app:v1", envLabel("VERSION", "version")), ctr("sidecar", "s:v1")))
	pod.Labels["version"] = "1"
	spec := &UpdateSpec{Revision: "rev-2",
		ContainerRefMetadata:  map[string]metav1.ObjectMeta{"app": {Labels: map[string]string{"version": "2"}}},
		UpdateEnvFromMetadata: true}
	step, err := Begin(pod, spec, t0)
	if err != nil {
		t.Fatal(err)
	}
	if step.Pod.Labels["version"] != "2" {
		t.Error("the label is set with the container's batch")
	}
	st := mustState(t, step.Pod)
	if !st.UpdateEnvFromMetadata || !reflect.DeepEqual(st.EnvRestartContainers, map[string]string{"app": "containerd://app-1"}) {
		t.Errorf("state %+v", st)
	}
	if got := EnvRestartContainers(step.Pod); !reflect.DeepEqual(got, []string{"app"}) {
		t.Errorf("EnvRestartContainers = %v", got)
	}
	if c := condition(step.Conditions, pub.InPlaceUpdateReady); c == nil || c.Status != corev1.ConditionFalse {
		t.Error("an env restart takes the Pod out of service")
	}
}

// OpenKruise #1239: an image change and an env-from-metadata change of one container restart it
// once (the kubelet's restart for the image), not twice.
func TestBeginImageAndEnvRestartOnce(t *testing.T) {
	oldT := template(map[string]string{"version": "1"}, ctr("app", "app:v1", envLabel("VERSION", "version")), ctr("logger", "l:v1", envLabel("V", "version")))
	newT := template(map[string]string{"version": "2"}, ctr("app", "app:v2", envLabel("VERSION", "version")), ctr("logger", "l:v1", envLabel("V", "version")))
	spec, err := CalculateSpec(oldT, newT, "rev-2")
	if err != nil {
		t.Fatal(err)
	}
	pod := withGate(runningPod(newT.Spec.Containers...))
	pod.Spec.Containers[0].Image = "app:v1"
	pod.Labels["version"] = "1"
	step, err := Begin(pod, spec, t0)
	if err != nil {
		t.Fatal(err)
	}
	st := mustState(t, step.Pod)
	if _, ok := st.EnvRestartContainers["app"]; ok {
		t.Error("app restarts for its new image; the daemon must not restart it as well")
	}
	if _, ok := st.EnvRestartContainers["logger"]; !ok {
		t.Error("logger only reads the label: the daemon restarts it")
	}
	if got := EnvRestartContainers(step.Pod); !reflect.DeepEqual(got, []string{"logger"}) {
		t.Errorf("EnvRestartContainers = %v", got)
	}

	// Done once app runs v2 (its env then has the new value) and logger was restarted by the
	// daemon; app's env is not waited for.
	pod = write(t, pod, step)
	kubeletRestart(pod, "app")
	kubeletRestart(pod, "logger")
	daemonReports(t, pod, map[string]metav1.Object{"app": &metav1.ObjectMeta{Labels: map[string]string{"version": "1"}}})
	step, err = Progress(pod, t0.Add(time.Minute))
	if err != nil || !step.Done {
		t.Fatalf("not done: %v %+v", err, step)
	}

	// With the image alone restarting app and nothing from the daemon, only one container needs
	// a daemon restart: the update with app's image and no env reader completes without it.
	single, err := CalculateSpec(
		template(map[string]string{"version": "1"}, ctr("app", "app:v1", envLabel("VERSION", "version"))),
		template(map[string]string{"version": "2"}, ctr("app", "app:v2", envLabel("VERSION", "version"))), "rev-2")
	if err != nil || single.UpdateEnvFromMetadata {
		t.Fatalf("spec %s, %v", single, err)
	}
	pod = withGate(runningPod(ctr("app", "app:v1", envLabel("VERSION", "version"))))
	pod.Labels["version"] = "1"
	step, _ = Begin(pod, single, t0)
	if st := mustState(t, step.Pod); st.UpdateEnvFromMetadata || len(st.EnvRestartContainers) != 0 {
		t.Fatalf("state %+v", st)
	}
	pod = write(t, pod, step)
	kubeletRestart(pod, "app")
	if step, _ = Progress(pod, t0.Add(time.Minute)); !step.Done {
		t.Fatalf("image restart alone completes it: %s", step.Message)
	}
}

func TestBatchesByLaunchPriority(t *testing.T) {
	pod := withGate(runningPod(ctr("main", "main:v1", barrier("0")), ctr("proxy", "proxy:v1", barrier("10"))))
	spec := &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"main": "main:v2", "proxy": "proxy:v2"}}
	step, err := Begin(pod, spec, t0)
	if err != nil {
		t.Fatal(err)
	}
	st := mustState(t, step.Pod)
	if step.Pod.Spec.Containers[1].Image != "proxy:v2" || step.Pod.Spec.Containers[0].Image != "main:v1" {
		t.Fatalf("the first batch is the higher priority only: %v", step.Pod.Spec.Containers)
	}
	if !reflect.DeepEqual(st.NextContainerImages, map[string]string{"main": "main:v2"}) ||
		!reflect.DeepEqual(st.PreCheckBeforeNext, &pub.InPlaceUpdatePreCheckBeforeNext{ContainersRequiredReady: []string{"proxy"}}) ||
		!semEq(st.ContainerBatchesRecord, []pub.InPlaceUpdateContainerBatch{{Timestamp: metav1.NewTime(t0), Containers: []string{"proxy"}}}) {
		t.Fatalf("state after batch 1: %+v", st)
	}
	pod = write(t, pod, step)

	// proxy still runs its old image: wait.
	step, _ = Progress(pod, t0.Add(time.Second))
	if step.Pod != nil || step.Done || !strings.Contains(step.Message, "proxy to run image proxy:v2") {
		t.Fatalf("batch 1 not done yet: %+v", step)
	}
	// proxy runs the new image but is not ready: the next batch waits.
	kubeletRestart(pod, "proxy")
	status(pod, "proxy").Ready = false
	step, _ = Progress(pod, t0.Add(2*time.Second))
	if step.Pod != nil || !strings.Contains(step.Message, "waiting for containers proxy to be ready") {
		t.Fatalf("batch 2 must wait for proxy to be ready: %+v", step)
	}
	// Ready: batch 2 starts.
	status(pod, "proxy").Ready = true
	step, _ = Progress(pod, t0.Add(3*time.Second))
	if step.Pod == nil || step.Pod.Spec.Containers[0].Image != "main:v2" {
		t.Fatalf("batch 2 not started: %+v", step)
	}
	st = mustState(t, step.Pod)
	wantBatches := []pub.InPlaceUpdateContainerBatch{
		{Timestamp: metav1.NewTime(t0), Containers: []string{"proxy"}},
		{Timestamp: metav1.NewTime(t0.Add(3 * time.Second)), Containers: []string{"main"}},
	}
	if !semEq(st.ContainerBatchesRecord, wantBatches) || st.PreCheckBeforeNext != nil || st.hasNext() ||
		!reflect.DeepEqual(st.LastContainerStatuses, map[string]pub.InPlaceUpdateContainerStatus{
			"proxy": {ImageID: imageIDOf("proxy:v1")}, "main": {ImageID: imageIDOf("main:v1")}}) {
		t.Fatalf("state after batch 2: %+v", st)
	}
	if len(step.Conditions) != 0 || step.Done {
		t.Fatalf("InPlaceUpdateReady stays False until the end: %+v", step)
	}
	pod = write(t, pod, step)

	// main restarted: done, InPlaceUpdateReady True.
	kubeletRestart(pod, "main")
	step, _ = Progress(pod, t0.Add(4*time.Second))
	if !step.Done || step.Pod == nil || !IsCompleted(step.Pod) || IsInProgress(step.Pod) {
		t.Fatalf("not completed: %+v", step)
	}
	if c := condition(step.Conditions, pub.InPlaceUpdateReady); c == nil || c.Status != corev1.ConditionTrue {
		t.Fatalf("InPlaceUpdateReady True expected: %+v", step.Conditions)
	}
	if got := mustState(t, step.Pod).Revision; got != "rev-2" {
		t.Fatalf("the state (and its revision) stays: %q", got)
	}
}

func TestImageCompletion(t *testing.T) {
	cases := []struct {
		name           string
		from, to       string
		statusImage    string
		statusImageID  string
		wantDone       bool
		wantNoStatuses bool
	}{
		{"imageID changed", "app:v1", "app:v2", "app:v2", imageIDOf("app:v2"), true, false},
		{"old image still running", "app:v1", "app:v2", "app:v1", imageIDOf("app:v1"), false, false},
		{"tag-only image is :latest, same imageID", "nginx:1.29", "nginx", "docker.io/library/nginx:latest", imageIDOf("nginx:1.29"), true, false},
		{"tag-only image, old tag still running", "nginx:1.29", "nginx", "docker.io/library/nginx:1.29", imageIDOf("nginx:1.29"), false, false},
		{"same digest under a new tag: done when the status names it", "app:v1", "app:v1-alias", "app:v1-alias", imageIDOf("app:v1"), true, false},
		{"same digest under a new tag: not yet restarted", "app:v1", "app:v1-alias", "app:v1", imageIDOf("app:v1"), false, false},
		{"no container status", "app:v1", "app:v2", "", "", false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := runningPod(ctr("app", tc.from))
			step, err := Begin(pod, &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"app": tc.to}}, t0)
			if err != nil {
				t.Fatal(err)
			}
			pod = write(t, pod, step)
			if tc.wantNoStatuses {
				pod.Status.ContainerStatuses = nil
			} else {
				status(pod, "app").Image, status(pod, "app").ImageID = tc.statusImage, tc.statusImageID
			}
			step, err = Progress(pod, t0.Add(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if step.Done != tc.wantDone {
				t.Fatalf("done = %v, want %v (%s)", step.Done, tc.wantDone, step.Message)
			}
			if len(step.Conditions) != 0 {
				t.Fatalf("a Pod without the readiness gate gets no condition: %+v", step.Conditions)
			}
		})
	}
}

func TestEnvCompletion(t *testing.T) {
	begin := func(t *testing.T) *corev1.Pod {
		pod := withGate(runningPod(ctr("app", "app:v1", envLabel("VERSION", "version"))))
		pod.Labels["version"] = "1"
		daemonReports(t, pod, nil)
		step, err := Begin(pod, &UpdateSpec{Revision: "rev-2",
			ContainerRefMetadata: map[string]metav1.ObjectMeta{"app": {Labels: map[string]string{"version": "2"}}}}, t0)
		if err != nil {
			t.Fatal(err)
		}
		return write(t, pod, step)
	}
	oldMeta := &metav1.ObjectMeta{Labels: map[string]string{"version": "1"}}
	cases := []struct {
		name     string
		simulate func(t *testing.T, pod *corev1.Pod)
		wantDone bool
	}{
		{"nothing happened yet (runtime meta reports the old instance)", func(*testing.T, *corev1.Pod) {}, false},
		{"no runtime meta at all", func(_ *testing.T, pod *corev1.Pod) {
			kubeletRestart(pod, "app")
			delete(pod.Annotations, pub.RuntimeContainerMetaKey)
		}, false},
		{"restarted, but the daemon has not reported the new instance", func(t *testing.T, pod *corev1.Pod) {
			daemonReports(t, pod, map[string]metav1.Object{"app": oldMeta}) // old instance, old hash
			kubeletRestart(pod, "app")
		}, false},
		// The env of an instance never changes: when the daemon reports that the instance the
		// status shows already sees the new value, nothing needs a restart (OpenKruise's check).
		{"same instance that already sees the new value (no restart needed)", func(t *testing.T, pod *corev1.Pod) {
			daemonReports(t, pod, nil)
		}, true},
		{"the daemon reports another instance than the status with the new hash", func(t *testing.T, pod *corev1.Pod) {
			kubeletRestart(pod, "app")
			daemonReports(t, pod, nil)
			status(pod, "app").ContainerID = "containerd://app-1-older"
		}, false},
		{"new instance that still sees the old value", func(t *testing.T, pod *corev1.Pod) {
			kubeletRestart(pod, "app")
			daemonReports(t, pod, map[string]metav1.Object{"app": oldMeta})
		}, false},
		{"new instance with the new hash", func(t *testing.T, pod *corev1.Pod) {
			kubeletRestart(pod, "app")
			daemonReports(t, pod, nil)
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := begin(t)
			tc.simulate(t, pod)
			step, err := Progress(pod, t0.Add(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if step.Done != tc.wantDone {
				t.Fatalf("done = %v, want %v (%s)", step.Done, tc.wantDone, step.Message)
			}
			if !tc.wantDone && !strings.Contains(step.Message, "restarted with the new env from metadata") {
				t.Fatalf("message %q", step.Message)
			}
		})
	}
}

func TestResizeCompletion(t *testing.T) {
	want := resources("cpu=300m,memory=64Mi", "cpu=400m,memory=128Mi")
	begin := func(t *testing.T) (*corev1.Pod, *Step) {
		pod := runningPod(ctr("app", "app:v1", res("cpu=100m,memory=64Mi", "cpu=200m,memory=128Mi")))
		step, err := Begin(pod, &UpdateSpec{Revision: "rev-2", ContainerResources: map[string]corev1.ResourceRequirements{"app": want}}, t0)
		if err != nil {
			t.Fatal(err)
		}
		return pod, step
	}
	resizeCondition := func(ct corev1.PodConditionType) func(*testing.T, *corev1.Pod) {
		return func(_ *testing.T, pod *corev1.Pod) {
			SetConditions(&pod.Status, corev1.PodCondition{Type: ct, Status: corev1.ConditionTrue, Reason: "Deferred"})
		}
	}
	cases := []struct {
		name        string
		skipResize  bool
		simulate    func(*testing.T, *corev1.Pod)
		wantDone    bool
		wantMessage string
	}{
		{"resize sent, kubelet has not applied it", false, func(*testing.T, *corev1.Pod) {}, false, "to report its new resources"},
		{"PodResizePending", false, resizeCondition(corev1.PodResizePending), false, "PodResizePending (Deferred)"},
		{"PodResizeInProgress even if the status already shows it", false, func(t *testing.T, pod *corev1.Pod) {
			kubeletResized(pod, "app")
			resizeCondition(corev1.PodResizeInProgress)(t, pod)
		}, false, "PodResizeInProgress"},
		{"applied", false, func(_ *testing.T, pod *corev1.Pod) { kubeletResized(pod, "app") }, true, "completed"},
		{"the caller died before sending the resize: sent again", true, func(*testing.T, *corev1.Pod) {}, false, "resize not in the pod spec yet"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod, step := begin(t)
			if tc.skipResize {
				step.Resize = nil
			}
			pod = write(t, pod, step)
			tc.simulate(t, pod)
			step, err := Progress(pod, t0.Add(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if step.Done != tc.wantDone || !strings.Contains(step.Message, tc.wantMessage) {
				t.Fatalf("done = %v (want %v), message %q (want %q)", step.Done, tc.wantDone, step.Message, tc.wantMessage)
			}
			wantResize := map[string]corev1.ResourceRequirements(nil)
			if tc.skipResize {
				wantResize = map[string]corev1.ResourceRequirements{"app": want}
			}
			if !reflect.DeepEqual(step.Resize, wantResize) {
				t.Fatalf("resize %v, want %v", step.Resize, wantResize)
			}
		})
	}
}

func TestGracePeriod(t *testing.T) {
	pod := withGate(runningPod(ctr("app", "app:v1")))
	spec := &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"app": "app:v2"},
		Metadata: &MetadataChange{Labels: map[string]string{"tier": "gold"}}, GraceSeconds: 30}
	step, err := Begin(pod, spec, t0)
	if err != nil {
		t.Fatal(err)
	}
	if step.RequeueAfter != 30*time.Second {
		t.Errorf("RequeueAfter %v", step.RequeueAfter)
	}
	if step.Pod.Spec.Containers[0].Image != "app:v1" || step.Pod.Labels["tier"] != "" {
		t.Fatal("nothing but the state and the revision changes during the grace period")
	}
	if c := condition(step.Conditions, pub.InPlaceUpdateReady); c == nil || c.Status != corev1.ConditionFalse {
		t.Fatal("the Pod leaves service at the start of the grace period")
	}
	var stored UpdateSpec
	if err := json.Unmarshal([]byte(step.Pod.Annotations[pub.InPlaceUpdateGraceKey]), &stored); err != nil || stored.String() != spec.String() {
		t.Fatalf("grace annotation %q: %v", step.Pod.Annotations[pub.InPlaceUpdateGraceKey], err)
	}
	if !IsInProgress(step.Pod) || EnvRestartContainers(step.Pod) != nil {
		t.Error("in progress while in grace")
	}
	pod = write(t, pod, step)

	// 10.5s later: 20s left (rounded up), nothing to write.
	step, err = Progress(pod, t0.Add(10*time.Second+500*time.Millisecond))
	if err != nil || step.Pod != nil || step.RequeueAfter != 20*time.Second || step.Done {
		t.Fatalf("during grace: %v %+v", err, step)
	}
	// 30s later: applied as Begin would have.
	step, err = Progress(pod, t0.Add(30*time.Second))
	if err != nil || step.Pod == nil {
		t.Fatalf("after grace: %v %+v", err, step)
	}
	if step.Pod.Spec.Containers[0].Image != "app:v2" || step.Pod.Labels["tier"] != "gold" {
		t.Fatal("the update is applied after the grace period")
	}
	if _, ok := step.Pod.Annotations[pub.InPlaceUpdateGraceKey]; ok {
		t.Fatal("grace annotation left behind")
	}
	st := mustState(t, step.Pod)
	if !st.UpdateTimestamp.Time.Equal(t0) || len(st.ContainerBatchesRecord) != 1 || !st.ContainerBatchesRecord[0].Timestamp.Time.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("state %+v", st)
	}
	pod = write(t, pod, step)
	kubeletRestart(pod, "app")
	if step, _ = Progress(pod, t0.Add(40*time.Second)); !step.Done {
		t.Fatalf("not done: %s", step.Message)
	}
}

func TestGraceDroppedWhenRevisionMoved(t *testing.T) {
	pod := runningPod(ctr("app", "app:v1"))
	step, _ := Begin(pod, &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"app": "app:v2"}, GraceSeconds: 5}, t0)
	pod = write(t, pod, step)
	pod.Labels[RevisionLabelKey] = "rev-3"
	step, err := Progress(pod, t0.Add(time.Minute))
	if err != nil || step.Pod == nil {
		t.Fatalf("%v %+v", err, step)
	}
	if _, ok := step.Pod.Annotations[pub.InPlaceUpdateGraceKey]; ok || step.Pod.Spec.Containers[0].Image != "app:v1" {
		t.Fatal("a pending update of another revision is dropped, not applied")
	}
}

func TestProgressWithoutUpdate(t *testing.T) {
	// A new Pod with the gate and no condition: InPlaceUpdateReady True (as OpenKruise's Refresh).
	pod := runningPod(ctr("app", "app:v1"))
	InjectReadinessGate(pod)
	step, err := Progress(pod, t0)
	if err != nil || !step.Done || step.Pod != nil {
		t.Fatalf("%v %+v", err, step)
	}
	if c := condition(step.Conditions, pub.InPlaceUpdateReady); c == nil || c.Status != corev1.ConditionTrue {
		t.Fatalf("conditions %+v", step.Conditions)
	}
	patch, _ := step.StatusPatch()
	if !strings.HasPrefix(string(patch), `{"status":{"conditions":[{"type":"InPlaceUpdateReady","status":"True"`) {
		t.Errorf("status patch %s", patch)
	}
	// Already True, or no gate: nothing.
	for _, p := range []*corev1.Pod{withGate(runningPod(ctr("app", "app:v1"))), runningPod(ctr("app", "app:v1"))} {
		if step, _ := Progress(p, t0); len(step.Conditions) != 0 || step.Pod != nil || !step.Done {
			t.Errorf("nothing to do expected: %+v", step)
		}
	}
	// Completed, but the caller died before writing InPlaceUpdateReady True: set it again.
	pod = withGate(runningPod(ctr("app", "app:v1")))
	step, _ = Begin(pod, &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"app": "app:v2"}}, t0)
	pod = write(t, pod, step)
	kubeletRestart(pod, "app")
	step, _ = Progress(pod, t0.Add(time.Second))
	pod = write(t, pod, &Step{Pod: step.Pod}) // state written, condition lost
	step, _ = Progress(pod, t0.Add(2*time.Second))
	if c := condition(step.Conditions, pub.InPlaceUpdateReady); !step.Done || step.Pod != nil || c == nil || c.Status != corev1.ConditionTrue {
		t.Fatalf("completed update: %+v", step)
	}
	// A deleted Pod is left alone.
	pod.DeletionTimestamp = &metav1.Time{Time: t0}
	if step, _ := Progress(pod, t0); step.Pod != nil || len(step.Conditions) != 0 {
		t.Fatalf("deleting pod: %+v", step)
	}
}

func TestBeginSameRevisionIsUnchanged(t *testing.T) {
	pod := runningPod(ctr("app", "app:v1"))
	step, _ := Begin(pod, &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"app": "app:v2"}}, t0)
	pod = write(t, pod, step)
	again, err := Begin(pod, &UpdateSpec{Revision: "rev-2"}, t0.Add(time.Second))
	if err != nil || again.Pod != nil || len(again.Conditions) != 0 || again.Done || again.State.Revision != "rev-2" {
		t.Fatalf("%v %+v", err, again)
	}
	// An empty spec of a new revision only moves the revision label.
	step, err = Begin(pod, &UpdateSpec{Revision: "rev-3"}, t0)
	if err != nil || step.Pod == nil || step.Pod.Labels[RevisionLabelKey] != "rev-3" || !step.Done {
		t.Fatalf("%v %+v", err, step)
	}
}

func TestStateKeys(t *testing.T) {
	pod := runningPod(ctr("app", "app:v1"))
	if _, ok, err := GetState(pod); ok || err != nil || IsInProgress(pod) {
		t.Fatal("no state expected")
	}
	// OpenKruise's legacy key is read; an OpenKruise state has no completion mark.
	pod.Annotations[pub.InPlaceUpdateStateKeyOld] = `{"revision":"rev-9","updateTimestamp":"2026-01-01T00:00:00Z","lastContainerStatuses":{"app":{"imageID":"x"}}}`
	st, ok, err := GetState(pod)
	if err != nil || !ok || st.Revision != "rev-9" || !IsInProgress(pod) {
		t.Fatalf("legacy key: %+v %v %v", st, ok, err)
	}
	// Writing moves it to the current key.
	step, _ := Begin(pod, &UpdateSpec{Revision: "rev-10", ContainerImages: map[string]string{"app": "app:v2"}}, t0)
	if _, ok := step.Pod.Annotations[pub.InPlaceUpdateStateKeyOld]; ok || step.Pod.Annotations[pub.InPlaceUpdateStateKey] == "" {
		t.Fatal("legacy key kept")
	}
	// A grace annotation under the legacy key counts too.
	legacyGrace := runningPod(ctr("app", "app:v1"))
	legacyGrace.Annotations[pub.InPlaceUpdateGraceKeyOld] = `{"revision":"r","graceSeconds":5}`
	if !IsInProgress(legacyGrace) {
		t.Fatal("legacy grace key")
	}
	// A state that does not decode: reported, and not "in progress".
	pod.Annotations[pub.InPlaceUpdateStateKey] = "{"
	if _, _, err := GetState(pod); err == nil || IsInProgress(pod) {
		t.Fatal("corrupt state")
	}
	if _, err := Progress(pod, t0); err == nil {
		t.Fatal("Progress must report a corrupt state")
	}
}

// The state annotation stays readable as OpenKruise's InPlaceUpdateState.
func TestStateIsOpenKruiseCompatible(t *testing.T) {
	pod := runningPod(ctr("app", "app:v1", envLabel("V", "v")), ctr("b", "b:v1"))
	step, _ := Begin(pod, &UpdateSpec{Revision: "rev-2",
		ContainerImages:      map[string]string{"b": "b:v2"},
		ContainerRefMetadata: map[string]metav1.ObjectMeta{"app": {Labels: map[string]string{"v": "2"}}}}, t0)
	raw := step.Pod.Annotations[pub.InPlaceUpdateStateKey]
	var generic map[string]any
	if err := json.Unmarshal([]byte(raw), &generic); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"revision", "updateTimestamp", "lastContainerStatuses", "updateImages", "updateEnvFromMetadata", "containerBatchesRecord", "envRestartContainers"} {
		if _, ok := generic[k]; !ok {
			t.Errorf("field %s missing from %s", k, raw)
		}
	}
	var kruise pub.InPlaceUpdateState
	if err := json.Unmarshal([]byte(raw), &kruise); err != nil || kruise.Revision != "rev-2" ||
		kruise.LastContainerStatuses["b"].ImageID != imageIDOf("b:v1") {
		t.Fatalf("%+v %v", kruise, err)
	}
}

// A label read by a container of a later batch changes only when that batch starts (so the
// container does not see it early, e.g. after a crash), and the daemon restarts it then.
func TestEnvFromMetadataDeferredToItsBatch(t *testing.T) {
	oldT := template(map[string]string{"k2": "foo"},
		ctr("c1", "c1:v1", barrier("20")),
		ctr("c2", "c2:v1", barrier("10"), envLabel("CFG", "k2")))
	newT := template(map[string]string{"k2": "bar"},
		ctr("c1", "c1:v2", barrier("20")),
		ctr("c2", "c2:v1", barrier("10"), envLabel("CFG", "k2")))
	spec, err := CalculateSpec(oldT, newT, "rev-2")
	if err != nil {
		t.Fatal(err)
	}
	pod := withGate(runningPod(oldT.Spec.Containers...))
	pod.Labels["k2"] = "foo"
	daemonReports(t, pod, nil)

	step, _ := Begin(pod, spec, t0)
	st := mustState(t, step.Pod)
	if step.Pod.Labels["k2"] != "foo" || len(st.EnvRestartContainers) != 0 ||
		!semEq(st.NextContainerRefMetadata, map[string]metav1.ObjectMeta{"c2": {Labels: map[string]string{"k2": "bar"}}}) {
		t.Fatalf("batch 1 must leave k2 for c2's batch: labels %v, state %+v", step.Pod.Labels, st)
	}
	pod = write(t, pod, step)
	kubeletRestart(pod, "c1")
	daemonReports(t, pod, nil)

	step, _ = Progress(pod, t0.Add(time.Second))
	if step.Pod == nil || step.Pod.Labels["k2"] != "bar" {
		t.Fatalf("batch 2 sets k2: %+v", step)
	}
	if got := EnvRestartContainers(step.Pod); len(got) != 1 || got[0] != "c2" {
		t.Fatalf("the daemon restarts c2: %v", got)
	}
	pod = write(t, pod, step)
	// The daemon restarts c2; its new instance sees k2=bar.
	if step, _ = Progress(pod, t0.Add(2*time.Second)); step.Done {
		t.Fatal("done before c2 restarted")
	}
	kubeletRestart(pod, "c2")
	daemonReports(t, pod, nil)
	if step, _ = Progress(pod, t0.Add(3*time.Second)); !step.Done {
		t.Fatalf("not done: %s", step.Message)
	}
}

// A removed label that a container reads is removed with the first batch, and the reader is not
// restarted (OpenKruise restarts for replaced or added keys only): the update is done at once.
func TestRemovedLabelReadThroughEnv(t *testing.T) {
	c := ctr("app", "app:v1", envLabel("VERSION", "version"))
	spec, err := CalculateSpec(template(map[string]string{"version": "1"}, c), template(nil, c), "rev-2")
	if err != nil {
		t.Fatal(err)
	}
	pod := withGate(runningPod(c))
	pod.Labels["version"] = "1"
	step, _ := Begin(pod, spec, t0)
	if _, ok := step.Pod.Labels["version"]; ok {
		t.Fatal("label not removed")
	}
	if got := EnvRestartContainers(step.Pod); len(got) != 0 {
		t.Fatalf("EnvRestartContainers = %v, want none", got)
	}
	if !step.Done || mustState(t, step.Pod).UpdateEnvFromMetadata {
		t.Fatalf("a removal alone is a metadata-only update: done %v, state %+v", step.Done, mustState(t, step.Pod))
	}
	if c := condition(step.Conditions, pub.InPlaceUpdateReady); c != nil && c.Status != corev1.ConditionTrue {
		t.Fatalf("the pod must stay in service: %+v", c)
	}
}

// A label edited by hand to its next value before the template changes: the running container
// still has the old value in its env. The update of the template (through pods/inplaceupdate, as
// the CloneSet controller sends it) must still restart the container for env, and completes once
// the daemon reports the instance with the new value; when the container already sees the value
// (restarted since the edit), it completes without a restart.
func TestHandEditedLabelBeforeTemplateChange(t *testing.T) {
	c := ctr("app", "app:v1", envLabel("VERSION", "version"))
	setup := func(t *testing.T) *corev1.Pod {
		pod := withGate(runningPod(c, ctr("sidecar", "sidecar:v1")))
		pod.Labels["version"] = "1"
		daemonReports(t, pod, nil)  // the containers run with version=1
		pod.Labels["version"] = "2" // the hand edit
		return pod
	}
	begin := func(t *testing.T, pod *corev1.Pod) *corev1.Pod {
		spec, err := SpecFromRequest(pod, withMetadata(request("rev-2"), map[string]string{"version": "2"}, nil))
		if err != nil {
			t.Fatal(err)
		}
		step, err := Begin(pod, spec, t0)
		if err != nil {
			t.Fatal(err)
		}
		if got := EnvRestartContainers(step.Pod); len(got) != 1 || got[0] != "app" {
			t.Fatalf("EnvRestartContainers = %v, want [app]", got)
		}
		if c := condition(step.Conditions, pub.InPlaceUpdateReady); c == nil || c.Status != corev1.ConditionFalse {
			t.Fatalf("InPlaceUpdateReady must turn False for the daemon to restart: %+v", step.Conditions)
		}
		return write(t, pod, step)
	}

	t.Run("the container runs the old value: restarted", func(t *testing.T) {
		pod := begin(t, setup(t))
		old := &metav1.ObjectMeta{Labels: map[string]string{"version": "1"}}
		if step, _ := Progress(pod, t0.Add(time.Second)); step.Done {
			t.Fatal("done while the container still runs version=1")
		}
		kubeletRestart(pod, "app") // the daemon stopped it
		daemonReports(t, pod, map[string]metav1.Object{"sidecar": old})
		step, _ := Progress(pod, t0.Add(2*time.Second))
		if !step.Done {
			t.Fatalf("not done: %s", step.Message)
		}
	})
	t.Run("the container already sees the new value: done without a restart", func(t *testing.T) {
		pod := setup(t)
		daemonReports(t, pod, nil) // restarted (crash) after the edit: it sees version=2
		pod = begin(t, pod)
		step, _ := Progress(pod, t0.Add(time.Second))
		if !step.Done {
			t.Fatalf("not done: %s", step.Message)
		}
	})
}

// The labels asked for at completion (a workload's next lifecycle state) arrive with the write
// that records the completion, not before, and are dropped from the state once set; so do they
// when an update only changes metadata and completes at once, and through a grace period.
func TestCompletionLabels(t *testing.T) {
	after := map[string]string{pub.LifecycleStateKey: string(pub.LifecycleStateNormal)}
	done := t0.Add(time.Minute)
	checkCompleted := func(t *testing.T, pod *corev1.Pod, at time.Time) {
		t.Helper()
		if pod.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateNormal) {
			t.Errorf("completion did not set the lifecycle state: %v", pod.Labels)
		}
		if got, want := pod.Annotations[pub.LifecycleTimestampKey], at.UTC().Format(time.RFC3339); got != want {
			t.Errorf("lifecycle timestamp %q, want the completion time %q", got, want)
		}
		if st := mustState(t, pod); !st.completed() || st.CompletionLabels != nil {
			t.Errorf("state after completion: %+v", st)
		}
	}

	t.Run("image", func(t *testing.T) {
		pod := withGate(runningPod(ctr("app", "app:v1")))
		pod.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStateUpdating)
		step, err := Begin(pod, &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"app": "app:v2"}, CompletionLabels: after}, t0)
		if err != nil {
			t.Fatal(err)
		}
		pod = write(t, pod, step)
		if pod.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateUpdating) {
			t.Fatalf("completion labels set before the update completed: %v", pod.Labels)
		}
		if got := mustState(t, pod).CompletionLabels; !semEq(got, after) {
			t.Fatalf("state keeps completion labels %v, want %v", got, after)
		}
		kubeletRestart(pod, "app")
		step, err = Progress(pod, done)
		if err != nil {
			t.Fatal(err)
		}
		if !step.Done || step.Pod == nil {
			t.Fatalf("update not completed: %+v", step)
		}
		checkCompleted(t, step.Pod, done)
	})

	t.Run("metadata only", func(t *testing.T) {
		pod := withGate(runningPod(ctr("app", "app:v1")))
		step, err := Begin(pod, &UpdateSpec{Revision: "rev-2", Metadata: &MetadataChange{Labels: map[string]string{"tier": "gold"}}, CompletionLabels: after}, t0)
		if err != nil {
			t.Fatal(err)
		}
		if !step.Done {
			t.Fatalf("a labels-only update completes at once: %+v", step)
		}
		checkCompleted(t, step.Pod, t0)
	})

	t.Run("grace period", func(t *testing.T) {
		pod := withGate(runningPod(ctr("app", "app:v1")))
		step, err := Begin(pod, &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"app": "app:v2"}, GraceSeconds: 5, CompletionLabels: after}, t0)
		if err != nil {
			t.Fatal(err)
		}
		pod = write(t, pod, step)
		step, err = Progress(pod, t0.Add(10*time.Second))
		if err != nil || step.Pod == nil {
			t.Fatalf("grace period not over: %+v %v", step, err)
		}
		pod = write(t, pod, step)
		if _, ok := pod.Labels[pub.LifecycleStateKey]; ok {
			t.Fatalf("completion labels set when the containers began to change: %v", pod.Labels)
		}
		kubeletRestart(pod, "app")
		step, err = Progress(pod, done)
		if err != nil || !step.Done {
			t.Fatalf("update not completed: %+v %v", step, err)
		}
		checkCompleted(t, step.Pod, done)
	})
}

// An update asked to stay in service never sets InPlaceUpdateReady False: the Pod's gate stays
// True from the first step to the completion, which writes no condition either.
func TestStayInService(t *testing.T) {
	pod := withGate(runningPod(ctr("app", "app:v1"), ctr("logger", "logger:v1")))
	spec := &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"logger": "logger:v2"}, StayInService: true}
	step, err := Begin(pod, spec, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(step.Conditions) != 0 {
		t.Fatalf("conditions %+v, want none: the update stays in service", step.Conditions)
	}
	if got := step.Pod.Spec.Containers[1].Image; got != "logger:v2" {
		t.Fatalf("logger image %s, want logger:v2", got)
	}
	pod = write(t, pod, step)
	status(pod, "logger").Image, status(pod, "logger").ImageID = "logger:v2", imageIDOf("logger:v2")
	step, err = Progress(pod, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !step.Done || len(step.Conditions) != 0 {
		t.Fatalf("progress step done=%v conditions %+v, want done with no condition to write", step.Done, step.Conditions)
	}

	// Without it, the same update takes the Pod out of service first.
	spec.StayInService = false
	step, err = Begin(withGate(runningPod(ctr("app", "app:v1"), ctr("logger", "logger:v1"))), spec, t0)
	if err != nil {
		t.Fatal(err)
	}
	if c := condition(step.Conditions, pub.InPlaceUpdateReady); c == nil || c.Status != corev1.ConditionFalse {
		t.Fatalf("InPlaceUpdateReady %+v, want False", c)
	}
}
