package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// The pods/inplaceupdate subresource on the real cluster: each test sends its requests with
// `kubectl create --raw /apis/apps.kruise.io/v1alpha1/namespaces/NS/pods/NAME/inplaceupdate -f
// body.json` and follows the Pod through kube-apiserver while inplace-apiserver (first step),
// inplace-controller (grace periods, next batches, InPlaceUpdateReady) and inplace-daemon
// (env-from-metadata restarts) and the kubelet carry the update out.

// TestInPlaceUpdateImage: v1 -> v2 of one container of two, on a Pod with the
// InPlaceUpdateReady readiness gate. The Pod stays the same Pod (UID, IP), only the updated
// container restarts (once, on the new image: new imageID, its log shows v2), the other one is not
// touched, InPlaceUpdateReady goes False before the container changes and True at the end, and the
// state annotation records the batch.
func TestInPlaceUpdateImage(t *testing.T) {
	ctx, ns := framework.Start(t, "iu-image")
	before := framework.CreateSettledPod(t, ctx, framework.GatedPod(ns, "target", framework.Container("main", framework.AppImageV1), framework.Container("side", framework.AppImageV1)))
	mainBefore, sideBefore := framework.ContainerStatus(t, before, "main"), framework.ContainerStatus(t, before, "side")
	rec := framework.RecordPod(t, ctx, ns, "target")

	answer := framework.StartInPlaceUpdate(t, ctx, ns, "target", v1alpha1.InPlaceUpdateSpec{
		Revision:   "rev-v2",
		Containers: []v1alpha1.InPlaceUpdateContainer{{Name: "main", Image: framework.AppImageV2}},
	})
	if st := answer.Status.State; st.Revision != "rev-v2" || len(st.ContainerBatchesRecord) != 1 ||
		!slices.Equal(st.ContainerBatchesRecord[0].Containers, []string{"main"}) || !st.UpdateImages {
		t.Errorf("answered state %+v, want revision rev-v2, updateImages and one batch [main]", st)
	}

	pod := framework.WaitUpdateCompleted(t, ctx, ns, "target", framework.UpdateTimeout)
	records := rec.UpTo(t, ctx, pod.ResourceVersion)
	history := framework.History(t, records, "main", "side")

	if pod.UID != before.UID || pod.Status.PodIP != before.Status.PodIP || pod.Status.PodIP == "" {
		t.Errorf("Pod UID %s IP %s after the update, was UID %s IP %s: not the same Pod", pod.UID, pod.Status.PodIP, before.UID, before.Status.PodIP)
	}
	if got := framework.SpecImage(pod, "main"); got != framework.AppImageV2 {
		t.Errorf("spec image of main %q, want %q", got, framework.AppImageV2)
	}
	main := framework.ContainerStatus(t, pod, "main")
	if main.RestartCount != 1 || main.Image != framework.AppImageV2 || main.ImageID == mainBefore.ImageID || main.ContainerID == mainBefore.ContainerID {
		t.Errorf("main after the update: restartCount %d image %s imageID %s containerID %s; want restartCount 1 on %s with an imageID and "+
			"containerID other than before (%s, %s)", main.RestartCount, main.Image, main.ImageID, main.ContainerID, framework.AppImageV2, mainBefore.ImageID, mainBefore.ContainerID)
	}
	side := framework.ContainerStatus(t, pod, "side")
	if side.RestartCount != 0 || side.ContainerID != sideBefore.ContainerID || framework.SpecImage(pod, "side") != framework.AppImageV1 {
		t.Errorf("side was touched: restartCount %d containerID %s (was %s), spec image %s", side.RestartCount, side.ContainerID, sideBefore.ContainerID, framework.SpecImage(pod, "side"))
	}
	for _, r := range records {
		if s := framework.FindStatus(r.Pod, "side"); s != nil && (s.ContainerID != sideBefore.ContainerID || s.RestartCount != 0) {
			t.Errorf("side restarted during the update (rv %s: %s, restarts %d)", r.Pod.ResourceVersion, s.ContainerID, s.RestartCount)
			break
		}
	}
	if got := pod.Labels["controller-revision-hash"]; got != "rev-v2" {
		t.Errorf("label controller-revision-hash %q, want rev-v2", got)
	}

	// The state annotation: OpenKruise's record of the update.
	st := framework.StateOf(t, pod)
	if st.Revision != "rev-v2" || !st.UpdateImages || st.CompletedTimestamp == nil ||
		!slices.EqualFunc(framework.BatchContainers(st), [][]string{{"main"}}, slices.Equal) ||
		st.LastContainerStatuses["main"].ImageID != mainBefore.ImageID || len(st.NextContainerImages) > 0 {
		t.Errorf("state annotation %s: want revision rev-v2, updateImages, one batch [main], lastContainerStatuses.main.imageID %s, completed",
			pod.Annotations[pub.InPlaceUpdateStateKey], mainBefore.ImageID)
	}

	// InPlaceUpdateReady: True before, False while the container changed, True at the end; the
	// Pod left service (Ready False) meanwhile, and no container changed while it was in service.
	// Exactly once each way: a flip back to True in between would put the Pod back in service
	// while it is being updated.
	if h := framework.ConditionHistory(records, pub.InPlaceUpdateReady); !slices.Equal(h, []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionTrue}) {
		t.Errorf("InPlaceUpdateReady went %v, want True, False, True; history:\n%s", h, history)
	}
	if h := framework.ConditionHistory(records, corev1.PodReady); !slices.Contains(h, corev1.ConditionFalse) {
		t.Errorf("Ready went %v: the Pod never left service during the update; history:\n%s", h, history)
	}
	// The gate went False before the spec changed, and did not put the Pod back in service (Ready
	// and InPlaceUpdateReady True) until the kubelet reported main on the new image. (inplace-daemon
	// may set the gate True as soon as the runtime runs the new container, before the kubelet
	// reports it; Ready stays the kubelet's.)
	if i := slices.IndexFunc(records, func(r framework.PodRecord) bool { return framework.SpecImage(r.Pod, "main") == framework.AppImageV2 }); i < 0 ||
		framework.ConditionStatus(records[i].Pod, pub.InPlaceUpdateReady) != corev1.ConditionFalse {
		t.Errorf("main's spec changed to %s without InPlaceUpdateReady False first; history:\n%s", framework.AppImageV2, history)
	}
	for _, r := range records {
		s := framework.FindStatus(r.Pod, "main")
		if framework.SpecImage(r.Pod, "main") == framework.AppImageV2 && s != nil && s.Image != framework.AppImageV2 &&
			framework.ConditionStatus(r.Pod, pub.InPlaceUpdateReady) == corev1.ConditionTrue && framework.ConditionStatus(r.Pod, corev1.PodReady) == corev1.ConditionTrue {
			t.Errorf("rv %s: main's spec already on %s, the kubelet still reports %s, yet the Pod is Ready with InPlaceUpdateReady True; history:\n%s",
				r.Pod.ResourceVersion, framework.AppImageV2, s.Image, history)
			break
		}
	}

	// The running container is v2; the one before it was v1.
	framework.WaitLog(t, ctx, ns, "target", "main", "app version v2")
	if out := framework.PodLog(t, ctx, ns, "target", "main"); strings.Contains(out, "app version v1") {
		t.Errorf("kubectl logs -c main shows v1: %q", out)
	}
	framework.WaitLog(t, ctx, ns, "target", "main", "app version v1", "--previous")
}

// TestInPlaceUpdateLaunchPriority: with container launch priorities (KRUISE_CONTAINER_PRIORITY
// 10 on c1, 1 on c2) a request for both images updates them in two batches: c1, then c2 only
// once c1 runs its new image and is ready.
func TestInPlaceUpdateLaunchPriority(t *testing.T) {
	ctx, ns := framework.Start(t, "iu-prio")
	c1, c2 := framework.Container("c1", framework.AppImageV1), framework.Container("c2", framework.AppImageV1)
	c1.Env = []corev1.EnvVar{{Name: pub.ContainerLaunchPriorityEnvName, Value: "10"}}
	c2.Env = []corev1.EnvVar{{Name: pub.ContainerLaunchPriorityEnvName, Value: "1"}}
	before := framework.CreateSettledPod(t, ctx, framework.GatedPod(ns, "target", c1, c2))
	c1Before, c2Before := framework.ContainerStatus(t, before, "c1"), framework.ContainerStatus(t, before, "c2")
	rec := framework.RecordPod(t, ctx, ns, "target")

	answer := framework.StartInPlaceUpdate(t, ctx, ns, "target", v1alpha1.InPlaceUpdateSpec{
		Revision: "rev-v2",
		Containers: []v1alpha1.InPlaceUpdateContainer{
			{Name: "c2", Image: framework.AppImageV2}, {Name: "c1", Image: framework.AppImageV2}, // order of the request does not matter
		},
	})
	if st := answer.Status.State; len(st.ContainerBatchesRecord) != 1 || !slices.Equal(st.ContainerBatchesRecord[0].Containers, []string{"c1"}) ||
		st.NextContainerImages["c2"] != framework.AppImageV2 || st.PreCheckBeforeNext == nil ||
		!slices.Equal(st.PreCheckBeforeNext.ContainersRequiredReady, []string{"c1"}) {
		t.Errorf("answered state %+v: want batch [c1] started, c2 -> %s next, after c1 is ready", st, framework.AppImageV2)
	}

	pod := framework.WaitUpdateCompleted(t, ctx, ns, "target", framework.UpdateTimeout)
	records := rec.UpTo(t, ctx, pod.ResourceVersion)
	history := framework.History(t, records, "c1", "c2")

	st := framework.StateOf(t, pod)
	if got := framework.BatchContainers(st); !slices.EqualFunc(got, [][]string{{"c1"}, {"c2"}}, slices.Equal) {
		t.Errorf("containerBatchesRecord %v, want [[c1] [c2]]", got)
	} else if st.ContainerBatchesRecord[1].Timestamp.Before(&st.ContainerBatchesRecord[0].Timestamp) {
		t.Errorf("batch c2 recorded at %v, before batch c1 at %v", st.ContainerBatchesRecord[1].Timestamp, st.ContainerBatchesRecord[0].Timestamp)
	}
	for _, c := range []struct {
		name   string
		before corev1.ContainerStatus
	}{{"c1", c1Before}, {"c2", c2Before}} {
		s := framework.ContainerStatus(t, pod, c.name)
		if s.RestartCount != 1 || s.Image != framework.AppImageV2 || s.ImageID == c.before.ImageID {
			t.Errorf("%s after the update: restartCount %d image %s imageID %s, want 1 restart onto %s", c.name, s.RestartCount, s.Image, s.ImageID, framework.AppImageV2)
		}
	}

	// The order, as the watch saw it: c1's spec changed first (c2's not with it); c2's spec
	// changed only after a version of the Pod showed c1 running v2 and ready.
	first := func(cond func(*corev1.Pod) bool) int {
		return slices.IndexFunc(records, func(r framework.PodRecord) bool { return cond(r.Pod) })
	}
	i1 := first(func(p *corev1.Pod) bool { return framework.SpecImage(p, "c1") == framework.AppImageV2 })
	i2 := first(func(p *corev1.Pod) bool { return framework.SpecImage(p, "c2") == framework.AppImageV2 })
	iReady := first(func(p *corev1.Pod) bool {
		s := framework.FindStatus(p, "c1")
		return s != nil && s.Image == framework.AppImageV2 && s.ContainerID != c1Before.ContainerID && s.Ready
	})
	switch {
	case i1 < 0 || i2 < 0:
		t.Errorf("the watch never saw c1 (%d) or c2 (%d) change; history:\n%s", i1, i2, history)
	case i1 >= i2 || framework.SpecImage(records[i1].Pod, "c2") != framework.AppImageV1:
		t.Errorf("c1 and c2 not in two batches (c1 changed at record %d, c2 at %d); history:\n%s", i1, i2, history)
	case iReady < 0 || iReady >= i2:
		t.Errorf("c2 changed (record %d) before c1 was seen running %s and ready (record %d); history:\n%s", i2, framework.AppImageV2, iReady, history)
	default:
		// c2's batch started at or after c1's new instance started (second resolution).
		c1Started := framework.FindStatus(records[iReady].Pod, "c1").State.Running
		if c1Started != nil && len(st.ContainerBatchesRecord) == 2 && st.ContainerBatchesRecord[1].Timestamp.Before(&c1Started.StartedAt) {
			t.Errorf("batch c2 recorded at %v, before c1's new instance started at %v", st.ContainerBatchesRecord[1].Timestamp, c1Started.StartedAt)
		}
		t.Logf("c1 changed at +%.3fs, ready on v2 at +%.3fs, c2 changed at +%.3fs",
			records[i1].At.Sub(records[0].At).Seconds(), records[iReady].At.Sub(records[0].At).Seconds(), records[i2].At.Sub(records[0].At).Seconds())
	}
}

// TestInPlaceUpdateLaunchPriorityBadImage: with apps.kruise.io/container-launch-priority:
// Ordered (c1 before c2), a request for c1 -> app:bad (exits at once) and c2 -> v2 never
// touches c2: its batch waits for c1 to be ready, which never happens. c1 has a readiness probe:
// without one, the kubelet reports a container ready whenever it sees it running, and a
// crash-looping one restarted every second (this node's back-off cap) is now and then seen so.
func TestInPlaceUpdateLaunchPriorityBadImage(t *testing.T) {
	ctx, ns := framework.Start(t, "iu-prio-bad")
	c1 := framework.Container("c1", framework.AppImageV1)
	c1.ReadinessProbe = framework.ReadinessAfter(0)
	p := framework.GatedPod(ns, "target", c1, framework.Container("c2", framework.AppImageV1))
	p.Annotations = map[string]string{pub.ContainerLaunchPriorityKey: pub.ContainerLaunchOrdered}
	before := framework.CreateSettledPod(t, ctx, p)
	c2Before := framework.ContainerStatus(t, before, "c2")
	rec := framework.RecordPod(t, ctx, ns, "target")

	answer := framework.StartInPlaceUpdate(t, ctx, ns, "target", v1alpha1.InPlaceUpdateSpec{
		Containers: []v1alpha1.InPlaceUpdateContainer{{Name: "c1", Image: framework.AppImageBad}, {Name: "c2", Image: framework.AppImageV2}},
	})
	if st := answer.Status.State; len(st.ContainerBatchesRecord) != 1 || !slices.Equal(st.ContainerBatchesRecord[0].Containers, []string{"c1"}) ||
		st.NextContainerImages["c2"] != framework.AppImageV2 {
		t.Errorf("answered state %+v: want batch [c1] started, c2 -> %s next", st, framework.AppImageV2)
	}

	// c1 crashes again and again (the kubelet's back-off is capped at 1 s on this node).
	pod := framework.WaitPod(t, ctx, 90*time.Second, "c1 on "+framework.AppImageBad+" to have crashed twice", ns, "target", func(pod *corev1.Pod) error {
		if s := framework.FindStatus(pod, "c1"); s == nil || s.Image != framework.AppImageBad || s.RestartCount < 3 {
			return fmt.Errorf("c1 status %+v", s)
		}
		return nil
	})
	records := rec.UpTo(t, ctx, pod.ResourceVersion)
	framework.History(t, records, "c1", "c2")

	c2 := framework.ContainerStatus(t, pod, "c2")
	if framework.SpecImage(pod, "c2") != framework.AppImageV1 || c2.ContainerID != c2Before.ContainerID || c2.RestartCount != 0 || c2.Image != framework.AppImageV1 {
		t.Errorf("c2 was touched while c1 is not ready: spec image %s, status image %s, containerID %s (was %s), restartCount %d",
			framework.SpecImage(pod, "c2"), c2.Image, c2.ContainerID, c2Before.ContainerID, c2.RestartCount)
	}
	for _, r := range records {
		if framework.SpecImage(r.Pod, "c2") != framework.AppImageV1 {
			t.Errorf("rv %s: c2's spec image became %s", r.Pod.ResourceVersion, framework.SpecImage(r.Pod, "c2"))
			break
		}
	}
	st := framework.StateOf(t, pod)
	if st == nil || st.CompletedTimestamp != nil || len(st.ContainerBatchesRecord) != 1 || st.NextContainerImages["c2"] != framework.AppImageV2 {
		t.Errorf("state %s: want the update still waiting after batch [c1], with c2 -> %s next", pod.Annotations[pub.InPlaceUpdateStateKey], framework.AppImageV2)
	}
	if got := framework.ConditionStatus(pod, pub.InPlaceUpdateReady); got != corev1.ConditionFalse {
		t.Errorf("InPlaceUpdateReady %s while c1 crash-loops, want False", got)
	}
}

// TestInPlaceUpdateEnvFromMetadata: a container reads label color through an env fieldRef; a
// request for color=blue makes inplace-daemon stop it once, and the kubelet starts it again with
// the new value. A container that does not read the label is not touched.
func TestInPlaceUpdateEnvFromMetadata(t *testing.T) {
	ctx, ns := framework.Start(t, "iu-env")
	main := framework.Container("main", framework.AppImageV1)
	main.Command = []string{"sh", "-c", `echo "color=$MY_LABEL"; exec /app.sh`}
	main.Env = []corev1.EnvVar{{Name: "MY_LABEL", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['color']"}}}}
	p := framework.GatedPod(ns, "target", main, framework.Container("side", framework.AppImageV1))
	p.Labels["color"] = "red"
	before := framework.CreateSettledPod(t, ctx, p)
	mainBefore, sideBefore := framework.ContainerStatus(t, before, "main"), framework.ContainerStatus(t, before, "side")
	framework.WaitLog(t, ctx, ns, "target", "main", "color=red")
	rec := framework.RecordPod(t, ctx, ns, "target")

	answer := framework.StartInPlaceUpdate(t, ctx, ns, "target", v1alpha1.InPlaceUpdateSpec{
		Metadata: &v1alpha1.InPlaceUpdateMetadata{Labels: map[string]string{"color": "blue"}},
	})
	if st := answer.Status.State; !st.UpdateEnvFromMetadata || len(st.ContainerBatchesRecord) != 1 ||
		!slices.Equal(st.ContainerBatchesRecord[0].Containers, []string{"main"}) {
		t.Errorf("answered state %+v: want updateEnvFromMetadata and one batch [main]", st)
	}

	pod := framework.WaitUpdateCompleted(t, ctx, ns, "target", framework.UpdateTimeout)
	records := rec.UpTo(t, ctx, pod.ResourceVersion)
	framework.History(t, records, "main", "side")

	if pod.Labels["color"] != "blue" {
		t.Errorf("label color %q, want blue", pod.Labels["color"])
	}
	s := framework.ContainerStatus(t, pod, "main")
	if s.RestartCount != 1 || s.ContainerID == mainBefore.ContainerID {
		t.Errorf("main restarted %d times (containerID %s, was %s), want exactly once; the instance before the running one logged %q",
			s.RestartCount, s.ContainerID, mainBefore.ContainerID, framework.PodLog(t, ctx, ns, "target", "main", "--previous"))
	}
	// inplace-daemon stops the container once (its events say each stop).
	events, err := framework.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=target"})
	if err != nil {
		t.Fatal(err)
	}
	var stops []string
	for _, e := range events.Items {
		if e.Reason == "RestartingForEnvFromMetadata" {
			for range max(e.Count, 1) {
				stops = append(stops, e.Message)
			}
		}
	}
	if len(stops) != 1 {
		t.Errorf("inplace-daemon stopped main %d times, want once: %q", len(stops), stops)
	}
	if side := framework.ContainerStatus(t, pod, "side"); side.RestartCount != 0 || side.ContainerID != sideBefore.ContainerID {
		t.Errorf("side restarted: restartCount %d containerID %s (was %s)", side.RestartCount, side.ContainerID, sideBefore.ContainerID)
	}
	if !framework.StateOf(t, pod).UpdateEnvFromMetadata {
		t.Errorf("state %s lacks updateEnvFromMetadata", pod.Annotations[pub.InPlaceUpdateStateKey])
	}
	// The daemon reports the running instance.
	if meta := pod.Annotations[pub.RuntimeContainerMetaKey]; !strings.Contains(meta, s.ContainerID) {
		t.Errorf("annotation %s %q does not report main's running instance %s", pub.RuntimeContainerMetaKey, meta, s.ContainerID)
	}
	if h := framework.ConditionHistory(records, pub.InPlaceUpdateReady); !slices.Contains(h, corev1.ConditionFalse) || h[len(h)-1] != corev1.ConditionTrue {
		t.Errorf("InPlaceUpdateReady went %v, want False while main restarts and True at the end", h)
	}

	framework.WaitLog(t, ctx, ns, "target", "main", "color=blue")
	if out := framework.PodLog(t, ctx, ns, "target", "main"); strings.Contains(out, "color=red") {
		t.Errorf("kubectl logs -c main shows the old value: %q", out)
	}
	if out := framework.PodLog(t, ctx, ns, "target", "main", "--previous"); !strings.Contains(out, "color=red") {
		t.Errorf("kubectl logs -c main --previous: %q, want the instance before the update (color=red)", out)
	}
}

// TestInPlaceUpdateResources: cpu requests/limits of a Burstable Pod whose cpu resizePolicy is
// NotRequired change through pods/resize without a restart, and the Pod stays in service.
func TestInPlaceUpdateResources(t *testing.T) {
	ctx, ns := framework.Start(t, "iu-resize")
	main := framework.Container("main", framework.AppImageV1)
	main.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
	}
	main.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}}
	before := framework.CreateSettledPod(t, ctx, framework.GatedPod(ns, "target", main))
	if before.Status.QOSClass != corev1.PodQOSBurstable {
		t.Fatalf("QoS class %s, want Burstable", before.Status.QOSClass)
	}
	mainBefore := framework.ContainerStatus(t, before, "main")
	rec := framework.RecordPod(t, ctx, ns, "target")

	want := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("150m")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m")},
	}
	answer := framework.StartInPlaceUpdate(t, ctx, ns, "target", v1alpha1.InPlaceUpdateSpec{
		Containers: []v1alpha1.InPlaceUpdateContainer{{Name: "main", Resources: &want}},
	})
	if !answer.Status.State.UpdateResources {
		t.Errorf("answered state %+v lacks updateResources", answer.Status.State)
	}

	var pod *corev1.Pod
	framework.Poll(t, ctx, framework.UpdateTimeout, "main to report cpu 150m/300m", func(ctx context.Context) (bool, error) {
		var err error
		if pod, err = framework.Kube.CoreV1().Pods(ns).Get(ctx, "target", metav1.GetOptions{}); err != nil {
			return false, err
		}
		s := framework.FindStatus(pod, "main")
		if s == nil || s.Resources == nil {
			return false, fmt.Errorf("no resources in the status yet")
		}
		return sameCPU(s.Resources.Requests, "150m") && sameCPU(s.Resources.Limits, "300m"), fmt.Errorf("status resources %+v", s.Resources)
	})
	pod = framework.WaitUpdateCompleted(t, ctx, ns, "target", framework.UpdateTimeout)
	records := rec.UpTo(t, ctx, pod.ResourceVersion)
	framework.History(t, records, "main")

	s := framework.ContainerStatus(t, pod, "main")
	if s.RestartCount != 0 || s.ContainerID != mainBefore.ContainerID {
		t.Errorf("main restarted for a NotRequired cpu resize: restartCount %d containerID %s (was %s)", s.RestartCount, s.ContainerID, mainBefore.ContainerID)
	}
	if s.Resources == nil || !sameCPU(s.Resources.Requests, "150m") || !sameCPU(s.Resources.Limits, "300m") {
		t.Errorf("status resources %+v, want cpu requests 150m, limits 300m", s.Resources)
	}
	if r := pod.Spec.Containers[0].Resources; !sameCPU(r.Requests, "150m") || !sameCPU(r.Limits, "300m") {
		t.Errorf("spec resources %+v, want cpu requests 150m, limits 300m", r)
	}
	if pod.Status.QOSClass != corev1.PodQOSBurstable {
		t.Errorf("QoS class %s after the resize", pod.Status.QOSClass)
	}
	if st := framework.StateOf(t, pod); !st.UpdateResources || st.UpdateImages {
		t.Errorf("state %s: want updateResources only", pod.Annotations[pub.InPlaceUpdateStateKey])
	}
	// A resize the kubelet applies to the running container keeps the Pod in service.
	for _, ct := range []corev1.PodConditionType{pub.InPlaceUpdateReady, corev1.PodReady} {
		if h := framework.ConditionHistory(records, ct); slices.Contains(h, corev1.ConditionFalse) {
			t.Errorf("%s went %v during a resize without restart; it must stay True", ct, h)
		}
	}
}

func sameCPU(list corev1.ResourceList, want string) bool {
	q, ok := list[corev1.ResourceCPU]
	return ok && q.Cmp(resource.MustParse(want)) == 0
}

// TestInPlaceUpdateGracePeriod: with gracePeriodSeconds 5 the Pod leaves service at once but its
// containers change only once the 5 s are over: meanwhile the spec keeps the old image and the
// update waits in the grace annotation.
func TestInPlaceUpdateGracePeriod(t *testing.T) {
	ctx, ns := framework.Start(t, "iu-grace")
	framework.CreateSettledPod(t, ctx, framework.GatedPod(ns, "target", framework.Container("main", framework.AppImageV1)))
	rec := framework.RecordPod(t, ctx, ns, "target")

	const grace = 5
	sent := time.Now()
	answer := framework.StartInPlaceUpdate(t, ctx, ns, "target", v1alpha1.InPlaceUpdateSpec{
		Revision:           "rev-v2",
		Containers:         []v1alpha1.InPlaceUpdateContainer{{Name: "main", Image: framework.AppImageV2}},
		GracePeriodSeconds: grace,
	})
	// The grace period ends at updateTimestamp (whole seconds) + 5 s.
	end := answer.Status.State.UpdateTimestamp.Add(grace * time.Second)
	if d := end.Sub(sent); d < (grace-1)*time.Second || d > (grace+1)*time.Second {
		t.Fatalf("updateTimestamp %v is not the time of the request (%v)", answer.Status.State.UpdateTimestamp, sent)
	}
	if len(answer.Status.State.ContainerBatchesRecord) != 0 {
		t.Errorf("answered state %+v: a batch started during the grace period", answer.Status.State)
	}

	// Until the end of the grace period every read shows the old image and the grace annotation;
	// the first read started after it may show the new image.
	var during int
	var early string
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, framework.UpdateTimeout, true, func(ctx context.Context) (bool, error) {
		started := time.Now()
		var err error
		if pod, err = framework.Kube.CoreV1().Pods(ns).Get(ctx, "target", metav1.GetOptions{}); err != nil {
			return false, nil
		}
		image := framework.SpecImage(pod, "main")
		_, inGrace := pod.Annotations[pub.InPlaceUpdateGraceKey]
		if started.Before(end) {
			during++
			if image != framework.AppImageV1 || !inGrace || framework.ConditionStatus(pod, pub.InPlaceUpdateReady) != corev1.ConditionFalse {
				early = fmt.Sprintf("%.1fs before the grace period ends: spec image %s, grace annotation %v, InPlaceUpdateReady %s; want %s, the annotation, False",
					end.Sub(started).Seconds(), image, inGrace, framework.ConditionStatus(pod, pub.InPlaceUpdateReady), framework.AppImageV1)
				return true, nil
			}
			return false, nil
		}
		return image == framework.AppImageV2, nil
	})
	if early != "" {
		t.Fatal(early)
	}
	if err != nil {
		t.Fatalf("waiting for the image to change after the grace period: %v", err)
	}
	if during < 2 {
		t.Errorf("only %d reads during the grace period, want at least 2", during)
	}
	t.Logf("%d reads during the grace period showed %s and the grace annotation; %s %.1fs after the grace period's end",
		during, framework.AppImageV1, framework.AppImageV2, time.Since(end).Seconds())

	pod = framework.WaitUpdateCompleted(t, ctx, ns, "target", framework.UpdateTimeout)
	records := rec.UpTo(t, ctx, pod.ResourceVersion)
	framework.History(t, records, "main")
	for _, r := range records {
		// The watch delivers a version after it was written: one that reached us before the end
		// was written before it.
		if framework.SpecImage(r.Pod, "main") == framework.AppImageV2 && r.At.Before(end) {
			t.Errorf("the watch saw main on %s %.2fs before the grace period ended", framework.AppImageV2, end.Sub(r.At).Seconds())
		}
	}
	s := framework.ContainerStatus(t, pod, "main")
	if s.RestartCount != 1 || s.Image != framework.AppImageV2 {
		t.Errorf("main after the update: restartCount %d image %s, want 1 restart onto %s", s.RestartCount, s.Image, framework.AppImageV2)
	}
	if st := framework.StateOf(t, pod); !slices.EqualFunc(framework.BatchContainers(st), [][]string{{"main"}}, slices.Equal) ||
		st.ContainerBatchesRecord[0].Timestamp.Time.Before(end) {
		t.Errorf("state %s: want one batch [main] started at or after %v", pod.Annotations[pub.InPlaceUpdateStateKey], end)
	}
}

// TestInPlaceUpdateControllerKilled: inplace-controller killed (SIGKILL, by its recorded pid)
// after the request started batch 1 of a two-batch update and before batch 2, then started
// again through its local-up hook: the update completes.
func TestInPlaceUpdateControllerKilled(t *testing.T) {
	if !hasCommand(t, "controller") {
		t.Fatal("this tree has no cmd/controller")
	}
	ctx := framework.Context(t)
	// Whatever happens here, leave a running inplace-controller to the tests after this one.
	framework.StartAgainAfter(t, "inplace-controller")
	ns := framework.NewNamespace(t, ctx, "iu-kill")
	c1, c2 := framework.Container("c1", framework.AppImageV1), framework.Container("c2", framework.AppImageV1)
	c1.Env = []corev1.EnvVar{{Name: pub.ContainerLaunchPriorityEnvName, Value: "10"}}
	c2.Env = []corev1.EnvVar{{Name: pub.ContainerLaunchPriorityEnvName, Value: "1"}}
	before := framework.CreateSettledPod(t, ctx, framework.GatedPod(ns, "target", c1, c2))
	c1Before := framework.ContainerStatus(t, before, "c1")
	controller := framework.CurrentProgram(t, "inplace-controller")

	framework.StartInPlaceUpdate(t, ctx, ns, "target", v1alpha1.InPlaceUpdateSpec{
		Revision:   "rev-v2",
		Containers: []v1alpha1.InPlaceUpdateContainer{{Name: "c1", Image: framework.AppImageV2}, {Name: "c2", Image: framework.AppImageV2}},
	})
	controller.Stop(t, ctx, syscall.SIGKILL, 10*time.Second)
	t.Logf("inplace-controller (pid %d) killed", controller.Pid)
	pod, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, "target", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if framework.SpecImage(pod, "c1") != framework.AppImageV2 || framework.SpecImage(pod, "c2") != framework.AppImageV1 {
		t.Fatalf("when inplace-controller was killed: c1 on %s, c2 on %s; want batch 1 (c1) started and batch 2 (c2) not",
			framework.SpecImage(pod, "c1"), framework.SpecImage(pod, "c2"))
	}

	// Batch 1 goes on without the controller (the kubelet does it); batch 2 does not start.
	framework.Poll(t, ctx, framework.UpdateTimeout, "c1 running "+framework.AppImageV2+" and ready", func(ctx context.Context) (bool, error) {
		if pod, err = framework.Kube.CoreV1().Pods(ns).Get(ctx, "target", metav1.GetOptions{}); err != nil {
			return false, err
		}
		s := framework.FindStatus(pod, "c1")
		return s != nil && s.Image == framework.AppImageV2 && s.ContainerID != c1Before.ContainerID && s.Ready, fmt.Errorf("c1 %+v", s)
	})
	if framework.SpecImage(pod, "c2") != framework.AppImageV1 {
		t.Fatalf("c2 changed to %s while no inplace-controller ran", framework.SpecImage(pod, "c2"))
	}
	if st := framework.StateOf(t, pod); st.CompletedTimestamp != nil || st.NextContainerImages["c2"] != framework.AppImageV2 {
		t.Fatalf("state %s: want batch 2 (c2) still pending", pod.Annotations[pub.InPlaceUpdateStateKey])
	}
	// inplace-daemon sets InPlaceUpdateReady True only for the last batch.
	if got := framework.ConditionStatus(pod, pub.InPlaceUpdateReady); got != corev1.ConditionFalse {
		t.Fatalf("InPlaceUpdateReady %s after batch 1 of 2, want False", got)
	}

	start := time.Now()
	if err := framework.RunLocalUpHook(t, framework.ControllerHook); err != nil {
		t.Fatalf("%s: %v", framework.ControllerHook, err)
	}
	if now := framework.CurrentProgram(t, "inplace-controller"); now.Pid == controller.Pid || !now.Alive() {
		t.Fatalf("after %s: inplace-controller pid %d alive %v (the killed one was %d)", framework.ControllerHook, now.Pid, now.Alive(), controller.Pid)
	}
	pod = framework.WaitUpdateCompleted(t, ctx, ns, "target", framework.UpdateTimeout)
	t.Logf("update completed %.1fs after inplace-controller was started again", time.Since(start).Seconds())
	for _, name := range []string{"c1", "c2"} {
		s := framework.ContainerStatus(t, pod, name)
		if framework.SpecImage(pod, name) != framework.AppImageV2 || s.Image != framework.AppImageV2 || s.RestartCount != 1 {
			t.Errorf("%s after the update: spec %s, status image %s, restartCount %d; want %s, one restart", name, framework.SpecImage(pod, name), s.Image, s.RestartCount, framework.AppImageV2)
		}
	}
	if got := framework.BatchContainers(framework.StateOf(t, pod)); !slices.EqualFunc(got, [][]string{{"c1"}, {"c2"}}, slices.Equal) {
		t.Errorf("containerBatchesRecord %v, want [[c1] [c2]]", got)
	}
	if got := framework.ConditionStatus(pod, pub.InPlaceUpdateReady); got != corev1.ConditionTrue {
		t.Errorf("InPlaceUpdateReady %s, want True", got)
	}
}

// TestInPlaceUpdateReadyFromDaemon: with inplace-controller stopped, an image update still
// brings the Pod back to Ready and completes: inplace-daemon sets InPlaceUpdateReady True once the
// kubelet reports it observed the new spec (reason NewSpecObservedByKubelet: this kubelet reports
// status.observedGeneration), the kubelet turns Ready True on its own once it reports the new
// container, and the daemon completes the update in the write of its runtime-containers-meta
// report of that container (one pods/status update, event InPlaceUpdateCompleted from
// inplace-daemon). The facts the daemon's fallback for older kubelets reads from the CRI (image
// ids of running containers and of image references) are checked against this node's containerd.
func TestInPlaceUpdateReadyFromDaemon(t *testing.T) {
	ctx := framework.Context(t)
	framework.StartAgainAfter(t, "inplace-controller")
	ns := framework.NewNamespace(t, ctx, "iu-runtime")
	before := framework.CreateSettledPod(t, ctx, framework.GatedPod(ns, "target", framework.Container("main", framework.AppImageV1), framework.Container("sidecar", framework.AppImageV1)))
	mainBefore, sidecarBefore := framework.ContainerStatus(t, before, "main"), framework.ContainerStatus(t, before, "sidecar")
	framework.TakeDown(t, ctx, "inplace-controller")
	rec := framework.RecordPod(t, ctx, ns, "target")

	framework.StartInPlaceUpdate(t, ctx, ns, "target", v1alpha1.InPlaceUpdateSpec{
		Revision:   "rev-v2",
		Containers: []v1alpha1.InPlaceUpdateContainer{{Name: "main", Image: framework.AppImageV2}},
	})
	var pod *corev1.Pod
	framework.Poll(t, ctx, framework.UpdateTimeout, "Pod Ready on "+framework.AppImageV2+" and its update completed, with no inplace-controller", func(ctx context.Context) (bool, error) {
		var err error
		if pod, err = framework.Kube.CoreV1().Pods(ns).Get(ctx, "target", metav1.GetOptions{}); err != nil {
			return false, err
		}
		s := framework.FindStatus(pod, "main")
		c := framework.PodCondition(pod, pub.InPlaceUpdateReady)
		switch {
		case s == nil || s.Image != framework.AppImageV2 || s.ContainerID == mainBefore.ContainerID || !s.Ready:
			return false, fmt.Errorf("main %+v", s)
		case c == nil || c.Status != corev1.ConditionTrue:
			return false, fmt.Errorf("InPlaceUpdateReady %+v", c)
		case framework.ConditionStatus(pod, corev1.PodReady) != corev1.ConditionTrue:
			return false, fmt.Errorf("not Ready")
		case !strings.Contains(pod.Annotations[pub.InPlaceUpdateStateKey], "completedTimestamp"):
			return false, fmt.Errorf("state %s not completed", pod.Annotations[pub.InPlaceUpdateStateKey])
		}
		return true, nil
	})
	if c := framework.PodCondition(pod, pub.InPlaceUpdateReady); c.Reason != "NewSpecObservedByKubelet" {
		t.Errorf("InPlaceUpdateReady reason %q, want NewSpecObservedByKubelet (set by inplace-daemon)", c.Reason)
	}
	checkRuntimeImageIDs(t, ctx, pod, "main", framework.AppImageV2, mainBefore.ImageID)
	// The completion came with the daemon's report of main's new container.
	if meta := pod.Annotations[pub.RuntimeContainerMetaKey]; !strings.Contains(meta, framework.ContainerStatus(t, pod, "main").ContainerID) {
		t.Errorf("annotation %s %q does not report main's new container", pub.RuntimeContainerMetaKey, meta)
	}
	framework.WaitPodEvent(t, ctx, ns, "target", "InPlaceUpdateCompleted", "inplace-daemon")
	if s := framework.ContainerStatus(t, pod, "sidecar"); s.ContainerID != sidecarBefore.ContainerID || s.RestartCount != 0 {
		t.Errorf("sidecar restarted: %+v", s)
	}
	// The old container never comes back into service: in every version where the Pod is Ready
	// after the update began, either the kubelet has not yet turned Ready False (pods/inplaceupdate
	// writes the gate alone and leaves Ready to the kubelet) or it reports main's new container.
	// In particular the gate, set from what the kubelet observed, is never True with the old
	// container Ready, and Ready does not flip False, True, False (what writing Ready=False beside
	// the gate, as OpenKruise does, let the kubelet's cached status do).
	records := rec.UpTo(t, ctx, pod.ResourceVersion)
	wentUnready := false
	for _, r := range records[1:] {
		s := framework.FindStatus(r.Pod, "main")
		ready := framework.ConditionStatus(r.Pod, corev1.PodReady) == corev1.ConditionTrue
		old := s == nil || s.ContainerID == mainBefore.ContainerID
		if ready && old && (wentUnready || framework.ConditionStatus(r.Pod, pub.InPlaceUpdateReady) == corev1.ConditionTrue) {
			t.Errorf("rv %s: Ready again while main is the old container:\n%s", r.Pod.ResourceVersion, framework.DescribeRecords(records, "main"))
			break
		}
		wentUnready = wentUnready || !ready
	}
	// Informational: whether the gate was there before the kubelet's report of the new container
	// (then Ready came with that report, as for a plain image patch).
	for _, r := range records {
		if s := framework.FindStatus(r.Pod, "main"); s != nil && s.ContainerID != mainBefore.ContainerID && s.State.Running != nil {
			t.Logf("first report of the new container: Ready %s, InPlaceUpdateReady %s",
				framework.ConditionStatus(r.Pod, corev1.PodReady), framework.ConditionStatus(r.Pod, pub.InPlaceUpdateReady))
			break
		}
	}

	if err := framework.RunLocalUpHook(t, framework.ControllerHook); err != nil {
		t.Fatalf("%s: %v", framework.ControllerHook, err)
	}
	pod = framework.WaitUpdateCompleted(t, ctx, ns, "target", framework.UpdateTimeout)
	if s := framework.ContainerStatus(t, pod, "main"); s.RestartCount != 1 {
		t.Errorf("main restartCount %d, want 1", s.RestartCount)
	}
}

// checkRuntimeImageIDs checks, through the node's CRI runtime (the e2e runs on the node), what
// inplace-daemon's runtime fallback relies on: the running instance of the container runs the image
// id that the runtime resolves the spec image to, and the image id the Pod status had before the
// update resolves to another one.
func checkRuntimeImageIDs(t *testing.T, ctx context.Context, pod *corev1.Pod, name, image, previousImageID string) {
	t.Helper()
	rt, err := criruntime.Connect(ctx, "unix:///run/containerd/containerd.sock", nil)
	if err != nil {
		t.Fatalf("connecting to the node's containerd: %v", err)
	}
	defer rt.Close()
	containers, err := rt.ListPodContainers(ctx, string(pod.UID))
	if err != nil {
		t.Fatal(err)
	}
	running := ""
	for _, c := range containers {
		if c.Name == name && c.State == criruntime.StateRunning {
			running = c.ImageID
		}
	}
	want, err := rt.ImageID(ctx, image)
	if err != nil || want == "" || running != want {
		t.Errorf("runtime: %s runs image id %q; %s resolves to %q (%v)", name, running, image, want, err)
	}
	before, err := rt.ImageID(ctx, previousImageID)
	if err != nil || before == "" || before == want {
		t.Errorf("runtime: the previous image id %s resolves to %q (%v), want an id other than %q", previousImageID, before, err, want)
	}
}

// refusal is a request the subresource must refuse, and how.
type refusal struct {
	name  string
	pod   string
	spec  v1alpha1.InPlaceUpdateSpec
	code  int
	field string // the field path the 422 names
	msg   string // a part of the message
}

// checkRefused sends the request with kubectl create --raw and with the typed client, and checks
// both are refused as wanted.
func checkRefused(t *testing.T, ctx context.Context, ns string, r refusal) {
	t.Helper()
	resp := framework.PostInPlaceUpdate(t, ctx, ns, r.pod, r.spec)
	if resp.Code != r.code || !strings.Contains(resp.ErrMsg, r.field) || !strings.Contains(resp.ErrMsg, r.msg) {
		t.Errorf("%s: kubectl create --raw answered HTTP %d %q; want %d naming %q and %q", r.name, resp.Code, resp.ErrMsg, r.code, r.field, r.msg)
	}
	_, err := framework.Inplace.AppsV1alpha1().Pods(ns).InPlaceUpdate(ctx, r.pod, &v1alpha1.InPlaceUpdate{Spec: r.spec}, metav1.CreateOptions{})
	status, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Errorf("%s: typed client: %v, want a %d status", r.name, err, r.code)
		return
	}
	s := status.Status()
	if int(s.Code) != r.code {
		t.Errorf("%s: typed client: HTTP %d %s: %s, want %d", r.name, s.Code, s.Reason, s.Message, r.code)
	}
	if r.code == 422 {
		var fields []string
		if s.Details != nil {
			for _, c := range s.Details.Causes {
				fields = append(fields, c.Field)
			}
		}
		if !slices.Contains(fields, r.field) {
			t.Errorf("%s: typed client: 422 causes name fields %v, want %s", r.name, fields, r.field)
		}
	}
}

// TestInPlaceUpdateRefused: a refused request leaves the Pod byte for byte as it was (same
// resourceVersion, same object): invalid requests (422, naming the field), requests while
// another update is in progress (409), a Pod being deleted (409) and no Pod (404).
func TestInPlaceUpdateRefused(t *testing.T) {
	ctx, ns := framework.Start(t, "iu-refused")

	// A settled Pod with the readiness gate and an init container.
	p := framework.GatedPod(ns, "target", framework.Container("main", framework.AppImageV1))
	initC := framework.Container("init", framework.AppImageV1)
	initC.Command = []string{"sh", "-c", "echo init done"}
	p.Spec.InitContainers = []corev1.Container{initC}
	framework.CreateSettledPod(t, ctx, p)

	v2 := []v1alpha1.InPlaceUpdateContainer{{Name: "main", Image: framework.AppImageV2}}
	cpu := func(v string) *corev1.ResourceRequirements {
		return &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}}
	}
	t.Run("invalid", func(t *testing.T) {
		before := framework.GetPodJSON(t, ctx, ns, "target")
		for _, r := range []refusal{
			{name: "unknown container", spec: v1alpha1.InPlaceUpdateSpec{Containers: []v1alpha1.InPlaceUpdateContainer{{Name: "nope", Image: framework.AppImageV2}}},
				code: 422, field: "spec.containers[0].name", msg: `"nope"`},
			{name: "valid container, then an unknown one", spec: v1alpha1.InPlaceUpdateSpec{Containers: append(slices.Clone(v2),
				v1alpha1.InPlaceUpdateContainer{Name: "nope", Image: framework.AppImageV2})}, code: 422, field: "spec.containers[1].name"},
			{name: "init container image", spec: v1alpha1.InPlaceUpdateSpec{Containers: []v1alpha1.InPlaceUpdateContainer{{Name: "init", Image: framework.AppImageV2}}},
				code: 422, field: "spec.containers[0].image", msg: "init container"},
			{name: "image with whitespace", spec: v1alpha1.InPlaceUpdateSpec{Containers: []v1alpha1.InPlaceUpdateContainer{{Name: "main", Image: " " + framework.AppImageV2}}},
				code: 422, field: "spec.containers[0].image"},
			{name: "nothing to change", spec: v1alpha1.InPlaceUpdateSpec{Containers: []v1alpha1.InPlaceUpdateContainer{{Name: "main", Image: framework.AppImageV1}}},
				code: 422, field: "spec", msg: "changes nothing"},
			{name: "reserved annotation", spec: v1alpha1.InPlaceUpdateSpec{Containers: v2, Metadata: &v1alpha1.InPlaceUpdateMetadata{
				Annotations: map[string]string{pub.InPlaceUpdateStateKey: "{}"}}}, code: 422, field: "spec.metadata.annotations[" + pub.InPlaceUpdateStateKey + "]"},
			{name: "revision label", spec: v1alpha1.InPlaceUpdateSpec{Containers: v2, Metadata: &v1alpha1.InPlaceUpdateMetadata{
				Labels: map[string]string{"controller-revision-hash": "x"}}}, code: 422, field: "spec.metadata.labels[controller-revision-hash]"},
			{name: "QoS class change", spec: v1alpha1.InPlaceUpdateSpec{Containers: []v1alpha1.InPlaceUpdateContainer{{Name: "main", Resources: cpu("100m")}}},
				code: 422, field: "spec.containers[0].resources", msg: "QoS"},
			{name: "resource that cannot be resized", spec: v1alpha1.InPlaceUpdateSpec{Containers: []v1alpha1.InPlaceUpdateContainer{{Name: "main",
				Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")}}}}},
				code: 422, field: "spec.containers[0].resources.limits[ephemeral-storage]"},
			{name: "negative grace period", spec: v1alpha1.InPlaceUpdateSpec{Containers: v2, GracePeriodSeconds: -1}, code: 422, field: "spec.gracePeriodSeconds"},
			{name: "no such pod", pod: "nothere", spec: v1alpha1.InPlaceUpdateSpec{Containers: v2}, code: 404, msg: `"nothere" not found`},
		} {
			if r.pod == "" {
				r.pod = "target"
			}
			checkRefused(t, ctx, ns, r)
		}
		comparePodJSON(t, before, framework.GetPodJSON(t, ctx, ns, "target"))
	})

	// kube-apiserver refuses the Pod update (the annotations together exceed 256 KiB) after the
	// subresource accepted the request: still nothing of it may stay on the Pod, and the client
	// must get kube-apiserver's 422. Without the readiness gate the Pod update is the request's
	// only write; with it, InPlaceUpdateReady=False is written first.
	for _, gated := range []bool{false, true} {
		t.Run(fmt.Sprintf("refused by kube-apiserver with readiness gate %v", gated), func(t *testing.T) {
			name := fmt.Sprintf("big-%v", gated)
			big := framework.GatedPod(ns, name, framework.Container("main", framework.AppImageV1))
			if !gated {
				big.Spec.ReadinessGates = nil
			}
			big.Annotations = map[string]string{"e2e.inplace.dev/big-a": strings.Repeat("a", 150<<10)}
			framework.CreateSettledPod(t, ctx, big)
			rec := framework.RecordPod(t, ctx, ns, name)
			before := framework.GetPodJSON(t, ctx, ns, name)
			resp := framework.PostInPlaceUpdate(t, ctx, ns, name, v1alpha1.InPlaceUpdateSpec{
				Containers: v2,
				Metadata:   &v1alpha1.InPlaceUpdateMetadata{Annotations: map[string]string{"e2e.inplace.dev/big-b": strings.Repeat("b", 150<<10)}},
			})
			if resp.Code != 422 || !strings.Contains(resp.ErrMsg, "metadata.annotations: Too long") {
				t.Errorf("annotations over 256 KiB: HTTP %d %q, want 422 (kube-apiserver's Invalid) naming metadata.annotations", resp.Code, resp.ErrMsg)
			}
			comparePodJSON(t, before, framework.GetPodJSON(t, ctx, ns, name))
			pod, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if records := rec.UpTo(t, ctx, pod.ResourceVersion); len(records) > 1 {
				t.Errorf("the refused request wrote the Pod %d times:\n%s", len(records)-1, framework.DescribeRecords(records, "main"))
			}
		})
	}

	// An update sits in a 10-minute grace period: other requests are refused with 409.
	t.Run("in progress", func(t *testing.T) {
		// No readiness gate: nothing but the daemon's report writes this Pod during the grace period.
		busy := framework.AppPod(ns, "busy", framework.AppImageV1)
		framework.CreateSettledPod(t, ctx, busy)
		framework.StartInPlaceUpdate(t, ctx, ns, "busy", v1alpha1.InPlaceUpdateSpec{Revision: "r1", Containers: v2, GracePeriodSeconds: 600})
		framework.Poll(t, ctx, 30*time.Second, "inplace-daemon's report on Pod busy", func(ctx context.Context) (bool, error) {
			pod, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, "busy", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			_, ok := pod.Annotations[pub.RuntimeContainerMetaKey]
			return ok, fmt.Errorf("annotations %v", pod.Annotations)
		})
		before := framework.GetPodJSON(t, ctx, ns, "busy")
		for _, r := range []refusal{
			{name: "another revision", spec: v1alpha1.InPlaceUpdateSpec{Revision: "r2", Containers: []v1alpha1.InPlaceUpdateContainer{{Name: "main", Image: framework.AppImageV3}}},
				code: 409, msg: `in-place update to revision "r1" is in progress`},
			{name: "same revision, other image", spec: v1alpha1.InPlaceUpdateSpec{Revision: "r1", Containers: []v1alpha1.InPlaceUpdateContainer{{Name: "main", Image: framework.AppImageV3}}},
				code: 409, msg: "in progress"},
			{name: "same revision, more labels", spec: v1alpha1.InPlaceUpdateSpec{Revision: "r1", Containers: v2,
				Metadata: &v1alpha1.InPlaceUpdateMetadata{Labels: map[string]string{"extra": "yes"}}}, code: 409, msg: "in progress"},
		} {
			r.pod = "busy"
			checkRefused(t, ctx, ns, r)
		}
		// The same request again is accepted and changes nothing.
		if resp := framework.PostInPlaceUpdate(t, ctx, ns, "busy", v1alpha1.InPlaceUpdateSpec{Revision: "r1", Containers: v2, GracePeriodSeconds: 600}); resp.Code != 201 {
			t.Errorf("the same request again: HTTP %d %s, want 201", resp.Code, resp.ErrMsg)
		}
		comparePodJSON(t, before, framework.GetPodJSON(t, ctx, ns, "busy"))
	})

	t.Run("being deleted", func(t *testing.T) {
		// A Pod that ignores SIGTERM and has 10 minutes to stop stays terminating.
		dying := framework.AppPod(ns, "dying", framework.AppImageV1)
		dying.Spec.Containers[0].Command = []string{"sh", "-c", "trap '' TERM; while :; do sleep 1; done"}
		grace := int64(600)
		dying.Spec.TerminationGracePeriodSeconds = &grace
		framework.CreateSettledPod(t, ctx, dying)
		t.Cleanup(func() {
			zero := int64(0)
			_ = framework.Kube.CoreV1().Pods(ns).Delete(context.Background(), "dying", metav1.DeleteOptions{GracePeriodSeconds: &zero})
		})
		if err := framework.Kube.CoreV1().Pods(ns).Delete(ctx, "dying", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.Poll(t, ctx, 30*time.Second, "Pod dying terminating", func(ctx context.Context) (bool, error) {
			pod, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, "dying", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return pod.DeletionTimestamp != nil, nil
		})
		before := framework.GetPodJSON(t, ctx, ns, "dying")
		checkRefused(t, ctx, ns, refusal{name: "pod being deleted", pod: "dying", spec: v1alpha1.InPlaceUpdateSpec{Containers: v2},
			code: 409, msg: "being deleted"})
		comparePodJSON(t, before, framework.GetPodJSON(t, ctx, ns, "dying"))
	})
}

// comparePodJSON fails the test when the Pod changed: resourceVersion first, then every byte;
// the message lists the fields that differ.
func comparePodJSON(t *testing.T, before, after []byte) {
	t.Helper()
	var b, a map[string]any
	if err := json.Unmarshal(before, &b); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(after, &a); err != nil {
		t.Fatal(err)
	}
	rv := func(m map[string]any) any { return m["metadata"].(map[string]any)["resourceVersion"] }
	if rv(b) != rv(a) {
		t.Errorf("the Pod's resourceVersion changed from %v to %v: a refused request wrote it", rv(b), rv(a))
	}
	if !bytes.Equal(before, after) {
		t.Errorf("the Pod changed:\n%s", strings.Join(jsonDiff("", b, a), "\n"))
	}
}

// jsonDiff lists the paths where two decoded JSON documents differ, with both values (long ones
// cut); list elements with a "type" or "name" are matched by it.
func jsonDiff(path string, before, after any) []string {
	key := func(v any, i int) string {
		if m, ok := v.(map[string]any); ok {
			for _, k := range []string{"type", "name"} {
				if s, ok := m[k].(string); ok {
					return fmt.Sprintf("[%s=%s]", k, s)
				}
			}
		}
		return fmt.Sprintf("[%d]", i)
	}
	switch b := before.(type) {
	case map[string]any:
		a, ok := after.(map[string]any)
		if !ok {
			break
		}
		var out []string
		keys := map[string]bool{}
		for k := range b {
			keys[k] = true
		}
		for k := range a {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			out = append(out, jsonDiff(path+"."+k, b[k], a[k])...)
		}
		return out
	case []any:
		a, ok := after.([]any)
		if !ok {
			break
		}
		bm, am := map[string]any{}, map[string]any{}
		var order []string
		for i, v := range b {
			bm[key(v, i)] = v
			order = append(order, key(v, i))
		}
		for i, v := range a {
			if _, ok := bm[key(v, i)]; !ok {
				order = append(order, key(v, i))
			}
			am[key(v, i)] = v
		}
		var out []string
		for _, k := range order {
			out = append(out, jsonDiff(path+k, bm[k], am[k])...)
		}
		return out
	}
	if reflect.DeepEqual(before, after) {
		return nil
	}
	short := func(v any) string {
		raw, _ := json.Marshal(v)
		if len(raw) > 200 {
			return fmt.Sprintf("%s... (%d bytes)", raw[:200], len(raw))
		}
		return string(raw)
	}
	return []string{fmt.Sprintf("  %s: %s -> %s", path, short(before), short(after))}
}

// TestInPlaceUpdateNoSelfConflict: requests to settled Pods that nobody else writes are accepted
// at once, with or without the InPlaceUpdateReady readiness gate, one Pod after the other. (With
// the gate the request writes InPlaceUpdateReady=False first and the Pod second; a Pod with that
// condition False and no update in progress must not look to inplace-controller like one whose
// condition it should reset to True, or the request's second write conflicts.)
func TestInPlaceUpdateNoSelfConflict(t *testing.T) {
	ctx, ns := framework.Start(t, "iu-conflict")
	const n = 6
	for _, gated := range []bool{false, true} {
		name := func(i int) string { return fmt.Sprintf("gated-%v-%d", gated, i) }
		for i := range n {
			p := framework.GatedPod(ns, name(i), framework.Container("main", framework.AppImageV1))
			if !gated {
				p.Spec.ReadinessGates = nil
			}
			if _, err := framework.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range n {
			framework.WaitPodSettled(t, ctx, ns, name(i))
		}
		var refused []string
		for i := range n {
			resp := framework.PostInPlaceUpdate(t, ctx, ns, name(i), v1alpha1.InPlaceUpdateSpec{Containers: []v1alpha1.InPlaceUpdateContainer{{Name: "main", Image: framework.AppImageV2}}})
			if resp.Code != 201 {
				refused = append(refused, fmt.Sprintf("%s: HTTP %d %s", name(i), resp.Code, resp.ErrMsg))
			}
		}
		if len(refused) > 0 {
			t.Errorf("readiness gate %v: %d of %d requests refused:\n  %s", gated, len(refused), n, strings.Join(refused, "\n  "))
		}
	}
}

// TestInPlaceUpdateExamples: artifacts/examples/pod-inplace.yaml updated in place four times in
// a row with the bodies next to it, as its comment says (kubectl apply, kubectl create --raw):
// images in two batches, a label read through env, a cpu resize, images after a grace period.
func TestInPlaceUpdateExamples(t *testing.T) {
	ctx, ns := framework.Start(t, "iu-examples")
	framework.MustKubectl(t, ctx, "", "apply", "-n", ns, "-f", "artifacts/examples/pod-inplace.yaml")
	const name = "demo-inplace"
	before := framework.WaitPodSettled(t, ctx, ns, name)
	framework.WaitLog(t, ctx, ns, name, "main", "color=red")

	last := before
	// update sends the body and waits until the update is over; it checks how many times each
	// container restarted for it.
	update := func(body string, mainRestarts, sideRestarts int32) *corev1.Pod {
		t.Helper()
		framework.StartInPlaceUpdateFile(t, ctx, ns, name, "artifacts/examples/"+body)
		pod := framework.WaitUpdateCompleted(t, ctx, ns, name, framework.UpdateTimeout)
		for _, c := range []struct {
			name string
			want int32
		}{{"main", mainRestarts}, {"side", sideRestarts}} {
			if got := framework.ContainerStatus(t, pod, c.name).RestartCount - framework.ContainerStatus(t, last, c.name).RestartCount; got != c.want {
				t.Errorf("%s: %s restarted %d times, want %d", body, c.name, got, c.want)
			}
		}
		last = pod
		return pod
	}

	pod := update("inplaceupdate-images.json", 1, 1)
	if got := framework.BatchContainers(framework.StateOf(t, pod)); !slices.EqualFunc(got, [][]string{{"main"}, {"side"}}, slices.Equal) {
		t.Errorf("images: batches %v, want [[main] [side]] (main has the higher launch priority)", got)
	}
	if framework.ContainerStatus(t, pod, "main").Image != framework.AppImageV2 || framework.ContainerStatus(t, pod, "side").Image != framework.AppImageV2 {
		t.Errorf("images: %+v, want both on %s", pod.Status.ContainerStatuses, framework.AppImageV2)
	}

	pod = update("inplaceupdate-metadata.json", 1, 0) // main reads the label
	if pod.Labels["color"] != "blue" || pod.Annotations["example.inplace.dev/note"] == "" {
		t.Errorf("metadata: labels %v, annotations %v", pod.Labels, pod.Annotations)
	}
	framework.WaitLog(t, ctx, ns, name, "main", "color=blue")

	pod = update("inplaceupdate-resources.json", 0, 0)
	if s := framework.ContainerStatus(t, pod, "main"); s.Resources == nil || !sameCPU(s.Resources.Requests, "150m") || !sameCPU(s.Resources.Limits, "300m") {
		t.Errorf("resources: main reports %+v, want cpu 150m/300m", s.Resources)
	}

	pod = update("inplaceupdate-grace.json", 1, 1)
	if framework.ContainerStatus(t, pod, "main").Image != framework.AppImageV3 || framework.ContainerStatus(t, pod, "side").Image != framework.AppImageV3 {
		t.Errorf("grace: %+v, want both on %s", pod.Status.ContainerStatuses, framework.AppImageV3)
	}
	if st := framework.StateOf(t, pod); st.Revision != "demo-v3" || pod.Labels["controller-revision-hash"] != "demo-v3" {
		t.Errorf("grace: state revision %q, label %q, want demo-v3", st.Revision, pod.Labels["controller-revision-hash"])
	}
	if pod.UID != before.UID || pod.Status.PodIP != before.Status.PodIP {
		t.Errorf("after four updates: UID %s IP %s, was %s %s: not the same Pod", pod.UID, pod.Status.PodIP, before.UID, before.Status.PodIP)
	}
}

// TestInPlaceUpdateDryRun: pods/inplaceupdate with dryRun=All answers the state the update would
// start with, after kube-apiserver's admission and validation of every write (dry-run), and
// writes nothing: the Pod keeps its resourceVersion and image; an update kube-apiserver would
// refuse is refused the same in a dry run.
func TestInPlaceUpdateDryRun(t *testing.T) {
	ctx, ns := framework.Start(t, "iu-dryrun")
	before := framework.CreateSettledPod(t, ctx, framework.GatedPod(ns, "target", framework.Container("main", framework.AppImageV1)))
	answer, err := framework.Inplace.AppsV1alpha1().Pods(ns).InPlaceUpdate(ctx, "target", &v1alpha1.InPlaceUpdate{
		Spec: v1alpha1.InPlaceUpdateSpec{Containers: []v1alpha1.InPlaceUpdateContainer{{Name: "main", Image: framework.AppImageV2}}},
	}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if st := answer.Status.State; !st.UpdateImages || len(st.ContainerBatchesRecord) != 1 {
		t.Errorf("answered state %+v, want the images update the request would start", st)
	}
	after, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, "target", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion || framework.SpecImage(after, "main") != framework.AppImageV1 ||
		framework.ConditionStatus(after, pub.InPlaceUpdateReady) != corev1.ConditionTrue {
		t.Errorf("after a dry run: resourceVersion %s (was %s), image %s, InPlaceUpdateReady %s: want the Pod untouched",
			after.ResourceVersion, before.ResourceVersion, framework.SpecImage(after, "main"), framework.ConditionStatus(after, pub.InPlaceUpdateReady))
	}
	// Annotations over 256 KiB: only kube-apiserver knows to refuse it.
	_, err = framework.Inplace.AppsV1alpha1().Pods(ns).InPlaceUpdate(ctx, "target", &v1alpha1.InPlaceUpdate{
		Spec: v1alpha1.InPlaceUpdateSpec{Containers: []v1alpha1.InPlaceUpdateContainer{{Name: "main", Image: framework.AppImageV2}},
			Metadata: &v1alpha1.InPlaceUpdateMetadata{Annotations: map[string]string{"e2e.inplace.dev/big": strings.Repeat("b", 300<<10)}}},
	}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "Too long") {
		t.Errorf("dry run of an update kube-apiserver refuses: %v, want its 422", err)
	}
}
