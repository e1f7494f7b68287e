package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	kruiseappsv1alpha1 "github.com/openkruise/kruise-api/apps/v1alpha1"
	kruiseclient "github.com/openkruise/kruise-api/client/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/podreadiness"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestCRRRecreateSubresource: `kubectl create --raw .../pods/NAME/recreate -f -` with {} on a
// two-container Pod answers 201 with a ContainerRecreateRequest for all its containers, which
// completes; both containers run again as new instances (restartCount 1), the Pod keeps its UID
// and IP, and `kubectl get crr` shows PHASE POD NODE AGE.
func TestCRRRecreateSubresource(t *testing.T) {
	ctx, ns := framework.Start(t, "crr-raw")
	before := framework.CreateCRRPod(t, ctx, framework.CRRPod(ns, "web", false, framework.Container("main", framework.AppImageV1), framework.Container("side", framework.AppImageV1)))

	resp := postRaw(t, ctx, "/apis/apps.kruise.io/v1alpha1/namespaces/"+ns+"/pods/web/recreate", "{}")
	if resp.Code != 201 {
		t.Fatalf("POST pods/web/recreate: HTTP %d %s %v, want 201", resp.Code, resp.ErrMsg, resp.Err)
	}
	var crr v1alpha1.ContainerRecreateRequest
	if err := json.Unmarshal([]byte(resp.Body), &crr); err != nil {
		t.Fatalf("decoding the answer %q: %v", resp.Body, err)
	}
	if crr.Kind != "ContainerRecreateRequest" || !strings.HasPrefix(crr.Name, "web-") || crr.Spec.PodName != "web" {
		t.Fatalf("answer %s/%s %s for pod %q: want a ContainerRecreateRequest web-... for pod web", crr.Kind, crr.Namespace, crr.Name, crr.Spec.PodName)
	}
	if len(crr.Spec.Containers) != 2 || crr.Spec.Containers[0].Name != "main" || crr.Spec.Containers[1].Name != "side" {
		t.Errorf("containers %+v: {} means every container of the Pod", crr.Spec.Containers)
	}
	for i, c := range crr.Spec.Containers {
		if sc := c.StatusContext; sc == nil || sc.ContainerID != before.Status.ContainerStatuses[i].ContainerID {
			t.Errorf("container %s statusContext %+v, want the running instance %s", c.Name, sc, before.Status.ContainerStatuses[i].ContainerID)
		}
	}
	for k, want := range map[string]string{
		v1alpha1.ContainerRecreateRequestPodUIDKey:   string(before.UID),
		v1alpha1.ContainerRecreateRequestNodeNameKey: before.Spec.NodeName,
		v1alpha1.ContainerRecreateRequestActiveKey:   "true",
	} {
		if crr.Labels[k] != want {
			t.Errorf("label %s=%q, want %q", k, crr.Labels[k], want)
		}
	}
	if s := crr.Spec.Strategy; s == nil || s.FailurePolicy != v1alpha1.ContainerRecreateRequestFailurePolicyFail || ptr.Deref(s.TerminationGracePeriodSeconds, -1) != 1 {
		t.Errorf("strategy %+v: want failurePolicy Fail and the Pod's grace period 1", s)
	}

	done := framework.WaitCRRCompleted(t, ctx, ns, crr.Name, framework.CRRTimeout)
	framework.ExpectStates(t, done, framework.CRRSucceeded("main"), framework.CRRSucceeded("side"))
	if done.Status.CompletionTime == nil || done.Status.Message != "" {
		t.Errorf("status %+v: want a completionTime and no message", done.Status)
	}
	framework.Poll(t, ctx, 10*time.Second, "active label removed", func(ctx context.Context) (bool, error) {
		got, err := framework.Inplace.AppsV1alpha1().ContainerRecreateRequests(ns).Get(ctx, crr.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, active := got.Labels[v1alpha1.ContainerRecreateRequestActiveKey]
		return !active, fmt.Errorf("labels %v", got.Labels)
	})
	after, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	framework.ExpectRecreated(t, before, after, "main", "side")

	rows := framework.TableLines(framework.MustKubectl(t, ctx, "", "get", "crr", "-n", ns))
	if len(rows) != 2 || strings.Join(rows[0], " ") != "NAME PHASE POD NODE AGE" {
		t.Fatalf("kubectl get crr:\n%v\nwant the header NAME PHASE POD NODE AGE and one row", rows)
	}
	if got := rows[1][:4]; got[0] != crr.Name || got[1] != "Completed" || got[2] != "web" || got[3] != before.Spec.NodeName {
		t.Errorf("kubectl get crr row %v, want %s Completed web %s", rows[1], crr.Name, before.Spec.NodeName)
	}

	// An empty body means the same as {}.
	resp = postRaw(t, ctx, "/apis/apps.kruise.io/v1alpha1/namespaces/"+ns+"/pods/web/recreate", "")
	if resp.Code != 201 {
		t.Fatalf("POST pods/web/recreate with an empty body: HTTP %d %s %v, want 201", resp.Code, resp.ErrMsg, resp.Err)
	}
	var second v1alpha1.ContainerRecreateRequest
	if err := json.Unmarshal([]byte(resp.Body), &second); err != nil || len(second.Spec.Containers) != 2 {
		t.Fatalf("answer %q (%v): want a request for both containers", resp.Body, err)
	}
	framework.ExpectStates(t, framework.WaitCRRCompleted(t, ctx, ns, second.Name, framework.CRRTimeout), framework.CRRSucceeded("main"), framework.CRRSucceeded("side"))
	framework.ExpectRecreated(t, after, framework.WaitContainersRecreated(t, ctx, after, "main", "side"), "main", "side")
}

// postRaw is `kubectl create --raw PATH -f -` with body on stdin.
func postRaw(t *testing.T, ctx context.Context, path, body string) framework.RawResponse {
	t.Helper()
	return framework.KubectlCreateRaw(ctx, path, body, "-")
}

// TestCRRDocsManifestAndKruiseClient: a ContainerRecreateRequest written as in OpenKruise's docs
// (kubectl apply) and one created with OpenKruise's own typed client (kruise-api) both complete.
func TestCRRDocsManifestAndKruiseClient(t *testing.T) {
	ctx, ns := framework.Start(t, "crr-compat")
	before := framework.CreateCRRPod(t, ctx, framework.CRRPod(ns, "sample-abcde", false, framework.Container("main", framework.AppImageV1)))

	// The docs' manifest, unchanged but for its namespace (it names Pod sample-abcde).
	out := framework.MustKubectl(t, ctx, "", "apply", "-n", ns, "-f", "artifacts/examples/containerrecreaterequest.yaml")
	if !strings.Contains(out, "sample-recreate created") {
		t.Errorf("kubectl apply: %q", out)
	}
	done := framework.WaitCRRCompleted(t, ctx, ns, "sample-recreate", framework.CRRTimeout)
	framework.ExpectStates(t, done, framework.CRRSucceeded("main"))
	mid := framework.WaitContainersRecreated(t, ctx, before, "main")
	framework.ExpectRecreated(t, before, mid, "main")

	kc, err := kruiseclient.NewForConfig(framework.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	created, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, &kruiseappsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "by-kruise-client"},
		Spec: kruiseappsv1alpha1.ContainerRecreateRequestSpec{
			PodName:    "sample-abcde",
			Containers: []kruiseappsv1alpha1.ContainerRecreateRequestContainer{{Name: "main"}},
			Strategy:   &kruiseappsv1alpha1.ContainerRecreateRequestStrategy{FailurePolicy: kruiseappsv1alpha1.ContainerRecreateRequestFailurePolicyFail},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating with kruise-api's client: %v", err)
	}
	if sc := created.Spec.Containers[0].StatusContext; sc == nil || sc.ContainerID != framework.ContainerStatus(t, mid, "main").ContainerID {
		t.Errorf("statusContext %+v read back through kruise-api, want the running instance", sc)
	}
	var got *kruiseappsv1alpha1.ContainerRecreateRequest
	framework.Poll(t, ctx, framework.CRRTimeout, "the kruise-api request Completed", func(ctx context.Context) (bool, error) {
		got, err = kc.AppsV1alpha1().ContainerRecreateRequests(ns).Get(ctx, "by-kruise-client", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return got.Status.Phase == kruiseappsv1alpha1.ContainerRecreateRequestCompleted, fmt.Errorf("status %+v", got.Status)
	})
	if len(got.Status.ContainerRecreateStates) != 1 || got.Status.ContainerRecreateStates[0].Phase != kruiseappsv1alpha1.ContainerRecreateRequestSucceeded {
		t.Errorf("states %+v read through kruise-api", got.Status.ContainerRecreateStates)
	}
	framework.ExpectRecreated(t, mid, framework.WaitContainersRecreated(t, ctx, mid, "main"), "main")
}

// TestCRROrderedRecreate: with orderedRecreate the second container is stopped only once the
// first runs again and is ready (here 3 s after its start, by its readiness probe, and after a
// 2 s postStart hook, without forceRecreate: OpenKruise's "recreates containers with
// postStartHook" ordered case). minStartedSeconds 2: the request completes only once each new
// container has run that long (OpenKruise: completionTime - startedAt > minStartedSeconds - 1).
func TestCRROrderedRecreate(t *testing.T) {
	ctx, ns := framework.Start(t, "crr-order")
	first := framework.Container("first", framework.AppImageV1)
	first.ReadinessProbe = framework.ReadinessAfter(3)
	first.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "2"}}}}
	before := framework.CreateCRRPod(t, ctx, framework.CRRPod(ns, "ordered", false, first, framework.Container("second", framework.AppImageV1)))
	crr := framework.NewCRR("ordered", "ordered", "first", "second")
	crr.Spec.Strategy.OrderedRecreate = true
	crr.Spec.Strategy.MinStartedSeconds = 2
	finishedAt := framework.WatchCRIFinished(t, ctx, framework.ContainerStatus(t, before, "first").ContainerID, framework.ContainerStatus(t, before, "second").ContainerID)
	framework.CreateCRR(t, ctx, ns, crr)
	done := framework.WaitCRRCompleted(t, ctx, ns, "ordered", framework.CRRTimeout)
	framework.ExpectStates(t, done, framework.CRRSucceeded("first"), framework.CRRSucceeded("second"))
	after := framework.WaitContainersRecreated(t, ctx, before, "first", "second")
	framework.ExpectRecreated(t, before, after, "first", "second")
	finished := finishedAt()
	restarted := framework.ContainerStatus(t, after, "first").State.Running.StartedAt.Time
	if gap := finished[1].Sub(finished[0]); gap < 3*time.Second {
		t.Errorf("second stopped %v after first: want it stopped only once first ran again and was ready (>= 3 s)", gap)
	}
	if finished[1].Before(restarted) {
		t.Errorf("second stopped at %v, before first ran again at %v", finished[1], restarted)
	}
	for _, c := range []string{"first", "second"} {
		started := framework.ContainerStatus(t, after, c).State.Running.StartedAt.Time
		if ran := done.Status.CompletionTime.Sub(started); ran <= time.Second {
			t.Errorf("completed %v after %s started: want minStartedSeconds (2 s) to hold", ran, c)
		}
	}
}

// TestCRRStopsOneAfterAnother: without orderedRecreate the containers are still stopped one after
// the other in the request's order, each after its own preStop hook, as OpenKruise's daemon does:
// a sidecar (a mesh proxy, a log agent) keeps serving while the app drains. app's preStop hook
// takes 4 s: sidecar stops only after that and after app stopped (OpenKruise's scenario asserts
// the sidecar's stop >= the hook's sleep after the request was created). Unordered, sidecar does
// not wait for the new app to be ready (its readiness probe passes 3 s after it starts): it stops
// within 3 s of app (OpenKruise's postStart scenario).
func TestCRRStopsOneAfterAnother(t *testing.T) {
	ctx, ns := framework.Start(t, "crr-seq")
	app := framework.Container("app", framework.AppImageV1)
	app.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "4"}}}}
	app.ReadinessProbe = framework.ReadinessAfter(3)
	pod := framework.CRRPod(ns, "drain", false, app, framework.Container("sidecar", framework.AppImageV1))
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](20)
	before := framework.CreateCRRPod(t, ctx, pod)

	finishedAt := framework.WatchCRIFinished(t, ctx, framework.ContainerStatus(t, before, "app").ContainerID, framework.ContainerStatus(t, before, "sidecar").ContainerID)
	start := time.Now() // the runtime's clock: the cluster runs on this machine
	framework.CreateCRR(t, ctx, ns, framework.NewCRR("drain", "drain", "app", "sidecar"))
	done := framework.WaitCRRCompleted(t, ctx, ns, "drain", framework.CRRTimeout)
	framework.ExpectStates(t, done, framework.CRRSucceeded("app"), framework.CRRSucceeded("sidecar"))
	framework.ExpectRecreated(t, before, framework.WaitContainersRecreated(t, ctx, before, "app", "sidecar"), "app", "sidecar")

	finished := finishedAt()
	appStop, sidecarStop := finished[0].Sub(start), finished[1].Sub(start)
	if appStop < 4*time.Second {
		t.Errorf("app stopped %v after the request was created, before its 4 s preStop hook ended", appStop)
	}
	if sidecarStop < 4*time.Second || finished[1].Before(finished[0]) {
		t.Errorf("sidecar stopped %v after the request was created, app %v: want sidecar stopped only after "+
			"app's 4 s preStop hook ended and app stopped", sidecarStop, appStop)
	}
	if gap := finished[1].Sub(finished[0]); gap >= 3*time.Second {
		t.Errorf("sidecar stopped %v after app: unordered, want it stopped right after app, not once the new app is ready", gap)
	}
}

// TestCRRForceRecreate: forceRecreate stops each container once, and the order holds as without
// it (OpenKruise's "recreates containers by force"): app's postStart hook keeps its new instance
// from running for 3 s; unordered, sidecar is stopped right after app (within 3 s), not once app
// runs again; ordered, only once app runs again and is ready (3 s or more).
func TestCRRForceRecreate(t *testing.T) {
	ctx, ns := framework.Start(t, "crr-force")
	for _, ordered := range []bool{false, true} {
		name := map[bool]string{false: "unordered", true: "ordered"}[ordered]
		t.Run(name, func(t *testing.T) {
			app := framework.Container("app", framework.AppImageV1)
			app.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "3"}}}}
			before := framework.CreateCRRPod(t, ctx, framework.CRRPod(ns, name, false, app, framework.Container("sidecar", framework.AppImageV1)))
			crr := framework.NewCRR(name, name, "app", "sidecar")
			crr.Spec.Strategy.ForceRecreate = true
			crr.Spec.Strategy.OrderedRecreate = ordered
			finishedAt := framework.WatchCRIFinished(t, ctx, framework.ContainerStatus(t, before, "app").ContainerID, framework.ContainerStatus(t, before, "sidecar").ContainerID)
			framework.CreateCRR(t, ctx, ns, crr)
			done := framework.WaitCRRCompleted(t, ctx, ns, name, framework.CRRTimeout)
			framework.ExpectStates(t, done, framework.CRRSucceeded("app"), framework.CRRSucceeded("sidecar"))
			framework.ExpectRecreated(t, before, framework.WaitContainersRecreated(t, ctx, before, "app", "sidecar"), "app", "sidecar")
			finished := finishedAt()
			gap := finished[1].Sub(finished[0])
			switch {
			case gap < 0:
				t.Errorf("sidecar stopped %v before app: want app first, the request's order", -gap)
			case !ordered && gap >= 3*time.Second:
				t.Errorf("sidecar stopped %v after app: unordered, want it stopped right after app, not once app runs again", gap)
			case ordered && gap < 3*time.Second:
				t.Errorf("sidecar stopped %v after app: ordered, want it stopped only once app ran again (its postStart hook takes 3 s)", gap)
			}
		})
	}
}

// TestCRRGraceCutsPreStop: the request's terminationGracePeriodSeconds bounds the preStop hook
// and the stop together, as the kubelet's grace period does (OpenKruise's scenario: a hook of 8 s,
// a grace period of 3 s, the container stopped before the hook would have ended).
func TestCRRGraceCutsPreStop(t *testing.T) {
	ctx, ns := framework.Start(t, "crr-grace")
	main := framework.Container("main", framework.AppImageV1)
	main.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "8"}}}}
	pod := framework.CRRPod(ns, "cut", false, main)
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](20)
	before := framework.CreateCRRPod(t, ctx, pod)

	crr := framework.NewCRR("cut", "cut", "main")
	crr.Spec.Strategy.TerminationGracePeriodSeconds = ptr.To[int64](3)
	finishedAt := framework.WatchCRIFinished(t, ctx, framework.ContainerStatus(t, before, "main").ContainerID)
	start := time.Now()
	framework.CreateCRR(t, ctx, ns, crr)
	done := framework.WaitCRRCompleted(t, ctx, ns, "cut", framework.CRRTimeout)
	framework.ExpectStates(t, done, framework.CRRSucceeded("main"))
	framework.ExpectRecreated(t, before, framework.WaitContainersRecreated(t, ctx, before, "main"), "main")
	if stopped := finishedAt()[0].Sub(start); stopped < 3*time.Second || stopped >= 7*time.Second {
		t.Errorf("main stopped %v after the request was created: want its 8 s preStop hook cut at the 3 s grace period "+
			"(then at least the kubelet's 2 s minimum to stop)", stopped)
	}
}

// TestCRRPreStop: the container's preStop hook runs (in the running container) before it is
// stopped: it leaves a mark in a shared volume that the new instance prints when it starts.
func TestCRRPreStop(t *testing.T) {
	ctx, ns := framework.Start(t, "crr-prestop")
	main := framework.ShContainer("main", "echo start: $(cat /mark/stopped 2>/dev/null || echo none); trap 'exit 0' TERM; while true; do sleep 1; done")
	main.VolumeMounts = []corev1.VolumeMount{{Name: "mark", MountPath: "/mark"}}
	main.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
		Command: []string{"/bin/sh", "-c", "echo by-prestop-of-$HOSTNAME > /mark/stopped"}}}}
	pod := framework.CRRPod(ns, "hooked", false, main)
	pod.Spec.Volumes = []corev1.Volume{{Name: "mark", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	before := framework.CreateCRRPod(t, ctx, pod)
	framework.WaitLog(t, ctx, ns, "hooked", "main", "start: none")

	crr := framework.CreateCRR(t, ctx, ns, framework.NewCRR("hooked", "hooked", "main"))
	if p := crr.Spec.Containers[0].PreStop; p == nil || p.Exec == nil {
		t.Fatalf("preStop %+v: want the container's exec hook filled in", p)
	}
	done := framework.WaitCRRCompleted(t, ctx, ns, "hooked", framework.CRRTimeout)
	framework.ExpectStates(t, done, framework.CRRSucceeded("main"))
	framework.ExpectRecreated(t, before, framework.WaitContainersRecreated(t, ctx, before, "main"), "main")
	framework.WaitLog(t, ctx, ns, "hooked", "main", "start: by-prestop-of-hooked")
}

// TestCRRUnreadyGrace: with unreadyGracePeriodSeconds the Pod is taken out of service
// (KruisePodReady False, held by the request, OpenKruise's message) before the container is
// stopped, at least the grace period before; it is back in service afterwards.
func TestCRRUnreadyGrace(t *testing.T) {
	ctx, ns := framework.Start(t, "crr-unready")
	before := framework.CreateCRRPod(t, ctx, framework.CRRPod(ns, "gated", true, framework.Container("main", framework.AppImageV1)))
	rec := framework.RecordPod(t, ctx, ns, "gated")

	crr := framework.NewCRR("drain", "gated", "main")
	crr.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](5)
	stoppedAt := framework.WatchCRIFinished(t, ctx, framework.ContainerStatus(t, before, "main").ContainerID)
	framework.CreateCRR(t, ctx, ns, crr)
	framework.Poll(t, ctx, 10*time.Second, "KruisePodReady False held by the request", func(ctx context.Context) (bool, error) {
		p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, "gated", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := podreadiness.Condition(p)
		return c != nil && c.Status == corev1.ConditionFalse && c.Message == `[{"userAgent":"ContainerRecreateRequest","key":"`+ns+`/drain"}]`,
			fmt.Errorf("KruisePodReady %+v", c)
	})
	done := framework.WaitCRRCompleted(t, ctx, ns, "drain", framework.CRRTimeout)
	framework.ExpectStates(t, done, framework.CRRSucceeded("main"))
	after := framework.WaitContainersRecreated(t, ctx, before, "main")
	framework.Poll(t, ctx, 10*time.Second, "Pod Ready again", func(ctx context.Context) (bool, error) {
		p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, "gated", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return framework.ConditionStatus(p, pub.KruisePodReadyConditionType) == corev1.ConditionTrue && framework.ConditionStatus(p, corev1.PodReady) == corev1.ConditionTrue,
			fmt.Errorf("conditions %+v", p.Status.Conditions)
	})
	got, err := framework.Inplace.AppsV1alpha1().ContainerRecreateRequests(ns).Get(ctx, "drain", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Finalizers) != 0 || got.Annotations[v1alpha1.ContainerRecreateRequestUnreadyAcquiredKey] == "" {
		t.Errorf("finalizers %v annotations %v: want the unready-acquired annotation and no finalizer left", got.Finalizers, got.Annotations)
	}

	// The Pod went NotReady, then the old container stopped at least 2 s later (runtime clock,
	// same node as the kubelet's), then Ready again with the new one.
	stopped := stoppedAt()[0]
	var notReady time.Time
	for _, r := range rec.UpTo(t, ctx, after.ResourceVersion) {
		if c := framework.PodCondition(r.Pod, corev1.PodReady); c != nil && c.Status == corev1.ConditionFalse && notReady.IsZero() {
			notReady = r.At
		}
	}
	if notReady.IsZero() {
		t.Fatal("the Pod was never seen NotReady")
	}
	if gap := stopped.Sub(notReady); gap < 1500*time.Millisecond {
		t.Errorf("container stopped %v after the Pod went NotReady, want the 5 s grace period to cover the kubelet turning the Pod NotReady (it does at its next sync of the Pod)", gap)
	}
}

// TestCRRDeadlineAndTTL: activeDeadlineSeconds ends a request that cannot finish in time
// (a preStop hook of 8 s) with OpenKruise's message; ttlSecondsAfterFinished deletes a completed
// request that long after it completed, not before.
func TestCRRDeadlineAndTTL(t *testing.T) {
	ctx, ns := framework.Start(t, "crr-deadline")
	slow := framework.Container("main", framework.AppImageV1)
	slow.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "8"}}}}
	pod := framework.CRRPod(ns, "slow", false, slow, framework.Container("sidecar", framework.AppImageV1))
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](20)
	before := framework.CreateCRRPod(t, ctx, pod)

	crr := framework.NewCRR("deadline", "slow", "main", "sidecar")
	crr.Spec.ActiveDeadlineSeconds = ptr.To[int64](3)
	start := time.Now()
	framework.CreateCRR(t, ctx, ns, crr)
	done := framework.WaitCRRCompleted(t, ctx, ns, "deadline", 15*time.Second)
	took := time.Since(start)
	if done.Status.Message != "recreating has exceeded the activeDeadlineSeconds" {
		t.Errorf("message %q", done.Status.Message)
	}
	if took < 3*time.Second || took > 8*time.Second {
		t.Errorf("completed after %v, want just after the 3 s deadline (the preStop hook alone takes 8 s)", took)
	}
	// main is being stopped (its preStop hook runs); sidecar, next in line, was not touched.
	// OpenKruise reports main Pending until its kill returns (it writes the state after the
	// kill); inplace writes it before the stop, so that a restarted daemon knows.
	framework.ExpectStates(t, done, framework.CRRRecreatingKilled("main"), framework.CRRPending("sidecar"))
	// The stop under way goes on: the container still runs again. The request ended before main
	// stopped, so sidecar is never stopped, and the states stay as they were.
	after := framework.WaitContainersRecreated(t, ctx, before, "main")
	framework.ExpectRecreated(t, before, after, "main")
	if a, b := framework.ContainerStatus(t, after, "sidecar"), framework.ContainerStatus(t, before, "sidecar"); a.ContainerID != b.ContainerID || a.RestartCount != 0 {
		t.Errorf("sidecar is %s (restartCount %d), was %s: want it never stopped after the request ended", a.ContainerID, a.RestartCount, b.ContainerID)
	}
	if st := framework.CRIStatuses(t, ctx, framework.ContainerStatus(t, before, "sidecar").ContainerID)[0]; st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("sidecar's instance is %v in the runtime, want it still running", st.State)
	}
	got, err := framework.Inplace.AppsV1alpha1().ContainerRecreateRequests(ns).Get(ctx, "deadline", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	framework.ExpectStates(t, got, framework.CRRRecreatingKilled("main"), framework.CRRPending("sidecar"))

	ttl := framework.NewCRR("ttl", "slow", "main")
	ttl.Spec.TTLSecondsAfterFinished = ptr.To[int32](3)
	framework.CreateCRR(t, ctx, ns, ttl)
	completed := framework.WaitCRRCompleted(t, ctx, ns, "ttl", framework.CRRTimeout)
	seen := time.Now()
	framework.Poll(t, ctx, 20*time.Second, "the request deleted after its TTL", func(ctx context.Context) (bool, error) {
		_, err := framework.Inplace.AppsV1alpha1().ContainerRecreateRequests(ns).Get(ctx, "ttl", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	if gone := time.Since(seen); gone < 2*time.Second {
		t.Errorf("deleted %v after it was seen Completed (at %v), want about the 3 s TTL", gone, completed.Status.CompletionTime)
	}
}

// TestCRRFailurePolicy: with restartPolicy OnFailure, a container that exits 0 when stopped is not
// started again: its recreation Failed. Ordered, failurePolicy Fail then stops there (the second
// container is left alone); Ignore goes on and recreates it.
func TestCRRFailurePolicy(t *testing.T) {
	ctx, ns := framework.Start(t, "crr-failure")
	for _, policy := range []v1alpha1.ContainerRecreateRequestFailurePolicyType{
		v1alpha1.ContainerRecreateRequestFailurePolicyFail, v1alpha1.ContainerRecreateRequestFailurePolicyIgnore,
	} {
		t.Run(string(policy), func(t *testing.T) {
			name := strings.ToLower(string(policy))
			// app:v1 exits 0 on SIGTERM; "keeps" exits 1, so OnFailure starts it again.
			pod := framework.CRRPod(ns, name, false, framework.Container("quits", framework.AppImageV1), framework.ShContainer("keeps", "trap 'exit 1' TERM; while true; do sleep 1; done"))
			pod.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			before := framework.CreateCRRPod(t, ctx, pod)
			crr := framework.NewCRR(name, name, "quits", "keeps")
			crr.Spec.Strategy.OrderedRecreate = true
			crr.Spec.Strategy.FailurePolicy = policy
			framework.CreateCRR(t, ctx, ns, crr)
			done := framework.WaitCRRCompleted(t, ctx, ns, name, framework.CRRTimeout)
			states := done.Status.ContainerRecreateStates
			if len(states) != 2 || states[0].Phase != v1alpha1.ContainerRecreateRequestFailed || !strings.Contains(states[0].Message, "OnFailure") {
				t.Fatalf("states %+v: want quits Failed saying restartPolicy OnFailure does not start it again", states)
			}
			if !strings.Contains(done.Status.Message, "failurePolicy "+string(policy)+": container quits failed") {
				t.Errorf("message %q", done.Status.Message)
			}
			after, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			keeps := framework.ContainerStatus(t, after, "keeps")
			if policy == v1alpha1.ContainerRecreateRequestFailurePolicyFail {
				if states[1].Phase != v1alpha1.ContainerRecreateRequestPending || keeps.ContainerID != framework.ContainerStatus(t, before, "keeps").ContainerID {
					t.Errorf("keeps: state %+v, container %s (was %s): Fail must leave it alone", states[1], keeps.ContainerID, framework.ContainerStatus(t, before, "keeps").ContainerID)
				}
			} else {
				framework.ExpectStates(t, done, v1alpha1.ContainerRecreateRequestContainerRecreateState{Name: "quits", Phase: v1alpha1.ContainerRecreateRequestFailed, IsKilled: true}, framework.CRRSucceeded("keeps"))
				framework.ExpectRecreated(t, before, framework.WaitContainersRecreated(t, ctx, before, "keeps"), "keeps")
			}
		})
	}
}

// TestCRRRefused: requests that cannot be carried out are refused with a 4xx that names the
// field and says why, and nothing is stored.
func TestCRRRefused(t *testing.T) {
	ctx, ns := framework.Start(t, "crr-refused")
	framework.CreateCRRPod(t, ctx, framework.CRRPod(ns, "web", false, framework.Container("main", framework.AppImageV1)))
	unscheduled := framework.CRRPod(ns, "unscheduled", false, framework.Container("main", framework.AppImageV1))
	unscheduled.Spec.NodeSelector = map[string]string{"inplace.e2e/no-such-node": "true"}
	if _, err := framework.Kube.CoreV1().Pods(ns).Create(ctx, unscheduled, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	done := framework.CRRPod(ns, "done", false, framework.ShContainer("main", "exit 0"))
	done.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	if _, err := framework.Kube.CoreV1().Pods(ns).Create(ctx, done, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Poll(t, ctx, framework.PodTimeout, "Pod done Succeeded", func(ctx context.Context) (bool, error) {
		p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, "done", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == corev1.PodSucceeded, fmt.Errorf("phase %s", p.Status.Phase)
	})

	for _, tc := range []struct {
		name, field, msg string
		crr              *v1alpha1.ContainerRecreateRequest
	}{
		{"pod not found", "spec.podName", "Not found", framework.NewCRR("a", "nope", "main")},
		{"pod not scheduled", "spec.podName", "not scheduled", framework.NewCRR("b", "unscheduled", "main")},
		{"pod terminated", "spec.podName", "has terminated (phase Succeeded)", framework.NewCRR("c", "done", "main")},
		{"unknown container", "spec.containers[0].name", `no container "app"`, framework.NewCRR("d", "web", "app")},
		{"duplicate container", "spec.containers[1].name", "Duplicate", framework.NewCRR("e", "web", "main", "main")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := framework.Inplace.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, tc.crr, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("create: %v, want 422 at %s saying %q", err, tc.field, tc.msg)
			}
			// The same through pods/recreate.
			body := tc.crr.DeepCopy()
			body.Name, body.Spec.PodName = "", ""
			_, err = framework.Inplace.AppsV1alpha1().Pods(ns).Recreate(ctx, tc.crr.Spec.PodName, body, metav1.CreateOptions{})
			if tc.name == "pod not found" {
				if !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
					t.Errorf("pods/nope/recreate: %v, want 404 or 422", err)
				}
			} else if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("pods/%s/recreate: %v, want 422 saying %q", tc.crr.Spec.PodName, err, tc.msg)
			}
		})
	}
	list, err := framework.Inplace.AppsV1alpha1().ContainerRecreateRequests(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Fatalf("requests stored after refusals: %v %v", list, err)
	}

	t.Run("spec update after create", func(t *testing.T) {
		framework.CreateCRR(t, ctx, ns, framework.NewCRR("immutable", "web", "main"))
		// A patch: no resourceVersion to conflict with the daemon's status writes.
		_, err := framework.Inplace.AppsV1alpha1().ContainerRecreateRequests(ns).Patch(ctx, "immutable", types.MergePatchType,
			[]byte(`{"spec":{"strategy":{"orderedRecreate":true}}}`), metav1.PatchOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "cannot be changed after creation") {
			t.Errorf("spec update: %v, want 422 saying the spec cannot change", err)
		}
	})
}

// TestCRRSeveralOnOnePod: three requests created back to back on one Pod all complete, in the
// order they were created, none left Pending (openkruise/kruise#1626, #2474). The third names the
// container instances the first two replace: it completes without stopping the new ones.
func TestCRRSeveralOnOnePod(t *testing.T) {
	ctx, ns := framework.Start(t, "crr-several")
	before := framework.CreateCRRPod(t, ctx, framework.CRRPod(ns, "web", false, framework.Container("main", framework.AppImageV1), framework.Container("side", framework.AppImageV1)))

	w, err := framework.Inplace.AppsV1alpha1().ContainerRecreateRequests(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	var order []string
	go func() {
		for ev := range w.ResultChan() {
			crr, ok := ev.Object.(*v1alpha1.ContainerRecreateRequest)
			if ok && ev.Type == watch.Modified && crr.Status.Phase == v1alpha1.ContainerRecreateRequestCompleted {
				mu.Lock()
				if !slices.Contains(order, crr.Name) {
					order = append(order, crr.Name)
				}
				mu.Unlock()
			}
		}
	}()
	for _, c := range []*v1alpha1.ContainerRecreateRequest{framework.NewCRR("one", "web", "main"), framework.NewCRR("two", "web", "side"), framework.NewCRR("three", "web", "main", "side")} {
		framework.CreateCRR(t, ctx, ns, c)
	}
	for _, n := range []string{"one", "two", "three"} {
		framework.WaitCRRCompleted(t, ctx, ns, n, framework.CRRTimeout)
	}
	framework.Poll(t, ctx, 10*time.Second, "three completions watched", func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(order) == 3, fmt.Errorf("completed: %v", order)
	})
	mu.Lock()
	if strings.Join(order, ",") != "one,two,three" {
		t.Errorf("completed in the order %v, want one,two,three", order)
	}
	mu.Unlock()
	three, _ := framework.Inplace.AppsV1alpha1().ContainerRecreateRequests(ns).Get(ctx, "three", metav1.GetOptions{})
	framework.ExpectStates(t, three,
		v1alpha1.ContainerRecreateRequestContainerRecreateState{Name: "main", Phase: v1alpha1.ContainerRecreateRequestSucceeded},
		v1alpha1.ContainerRecreateRequestContainerRecreateState{Name: "side", Phase: v1alpha1.ContainerRecreateRequestSucceeded})
	after := framework.WaitContainersRecreated(t, ctx, before, "main", "side")
	framework.ExpectRecreated(t, before, after, "main", "side") // once each, not twice
}

// TestCRRDaemonClockSkew: inplace-daemon with its clock 10 minutes behind, then ahead of the
// cluster's still completes requests with unreadyGracePeriodSeconds and minStartedSeconds, and
// the deadline and TTL hold (openkruise/kruise#895: a node clock behind the API server's left
// requests Recreating forever).
func TestCRRDaemonClockSkew(t *testing.T) {
	ctx, ns := framework.Start(t, "crr-skew")
	t.Cleanup(func() {
		t.Setenv("INPLACE_DAEMON_FLAGS", "")
		if err := framework.RunLocalUpHook(t, framework.DaemonHook); err != nil {
			t.Errorf("restarting inplace-daemon without skew: %v", err)
		}
	})
	for _, skew := range []string{"-10m", "10m"} {
		t.Run(skew, func(t *testing.T) {
			t.Setenv("INPLACE_DAEMON_FLAGS", "--clock-skew="+skew)
			if err := framework.RunLocalUpHook(t, framework.DaemonHook); err != nil {
				t.Fatalf("restarting inplace-daemon with --clock-skew=%s: %v", skew, err)
			}
			name := "skew" + strings.TrimPrefix(skew, "-")
			if strings.HasPrefix(skew, "-") {
				name = "skew-behind"
			}
			before := framework.CreateCRRPod(t, ctx, framework.CRRPod(ns, name, true, framework.Container("main", framework.AppImageV1)))
			crr := framework.NewCRR(name, name, "main")
			crr.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](1)
			crr.Spec.Strategy.MinStartedSeconds = 2
			crr.Spec.ActiveDeadlineSeconds = ptr.To[int64](60)
			crr.Spec.TTLSecondsAfterFinished = ptr.To[int32](3)
			start := time.Now()
			framework.CreateCRR(t, ctx, ns, crr)
			done := framework.WaitCRRCompleted(t, ctx, ns, name, framework.CRRTimeout)
			took := time.Since(start)
			framework.ExpectStates(t, done, framework.CRRSucceeded("main"))
			if took < 3*time.Second || took > 30*time.Second {
				t.Errorf("completed after %v: want the 1 s unready grace and the 2 s minStartedSeconds to hold, no more", took)
			}
			framework.ExpectRecreated(t, before, framework.WaitContainersRecreated(t, ctx, before, "main"), "main")
			framework.Poll(t, ctx, 20*time.Second, "the request deleted after its TTL", func(ctx context.Context) (bool, error) {
				_, err := framework.Inplace.AppsV1alpha1().ContainerRecreateRequests(ns).Get(ctx, name, metav1.GetOptions{})
				return apierrors.IsNotFound(err), err
			})
		})
	}
}

// TestCRRDaemonKilledMidRecreate: inplace-daemon SIGKILLed while it runs a container's preStop
// hook, and started again: the request completes and the container was recreated exactly once.
func TestCRRDaemonKilledMidRecreate(t *testing.T) {
	ctx, ns := framework.Start(t, "crr-kill")
	framework.StartAgainAfter(t, "inplace-daemon")
	main := framework.Container("main", framework.AppImageV1)
	main.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "3"}}}}
	pod := framework.CRRPod(ns, "web", false, main)
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](10)
	before := framework.CreateCRRPod(t, ctx, pod)

	framework.CreateCRR(t, ctx, ns, framework.NewCRR("interrupted", "web", "main"))
	framework.Poll(t, ctx, framework.CRRTimeout, "the daemon recreating main", func(ctx context.Context) (bool, error) {
		crr, err := framework.Inplace.AppsV1alpha1().ContainerRecreateRequests(ns).Get(ctx, "interrupted", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := crr.Status.ContainerRecreateStates
		return len(s) == 1 && s[0].Phase == v1alpha1.ContainerRecreateRequestRecreating, fmt.Errorf("status %+v", crr.Status)
	})
	framework.CurrentProgram(t, "inplace-daemon").Stop(t, ctx, syscall.SIGKILL, framework.StopTimeout)
	if err := framework.RunLocalUpHook(t, framework.DaemonHook); err != nil {
		t.Fatalf("restarting inplace-daemon: %v", err)
	}
	done := framework.WaitCRRCompleted(t, ctx, ns, "interrupted", framework.CRRTimeout)
	framework.ExpectStates(t, done, framework.CRRSucceeded("main"))
	after := framework.WaitContainersRecreated(t, ctx, before, "main")
	framework.ExpectRecreated(t, before, after, "main") // restartCount exactly one higher
}

// TestCRRV1beta1: a ContainerRecreateRequest written at apps.kruise.io/v1beta1 (OpenKruise's
// master) with unreadyGracePeriodSeconds recreates the container (a new instance, restartCount
// one higher, phase Completed), and read through v1beta1 it reports the new instance in
// status.containerStatusSnapshot and the PreRecreateGrace condition, where v1alpha1 has the
// controller's annotations.
func TestCRRV1beta1(t *testing.T) {
	ctx, ns := framework.Start(t, "crr-v1beta1")
	before := framework.CreateCRRPod(t, ctx, framework.CRRPod(ns, "gated", true, framework.Container("main", framework.AppImageV1)))
	beta := framework.Inplace.AppsV1beta1().ContainerRecreateRequests(ns)
	if _, err := beta.Create(ctx, &v1beta1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "drain"},
		Spec: v1beta1.ContainerRecreateRequestSpec{PodName: "gated",
			Containers: []v1beta1.ContainerRecreateRequestContainer{{Name: "main"}},
			Strategy:   &v1beta1.ContainerRecreateRequestStrategy{UnreadyGracePeriodSeconds: ptr.To[int64](1)}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a v1beta1 ContainerRecreateRequest: %v", err)
	}
	var crr *v1beta1.ContainerRecreateRequest
	framework.Poll(t, ctx, framework.CRRTimeout, "v1beta1 ContainerRecreateRequest drain Completed", func(ctx context.Context) (bool, error) {
		var err error
		if crr, err = beta.Get(ctx, "drain", metav1.GetOptions{}); err != nil {
			return false, err
		}
		return crr.Status.Phase == v1beta1.ContainerRecreateRequestCompleted, fmt.Errorf("status %+v", crr.Status)
	})
	if s := crr.Status.ContainerRecreateStates; len(s) != 1 || s[0].Name != "main" || s[0].Phase != v1beta1.ContainerRecreateRequestSucceeded || crr.Status.Message != "" {
		t.Errorf("status %+v: want main Succeeded and no message", crr.Status)
	}
	after := framework.WaitContainersRecreated(t, ctx, before, "main")
	framework.ExpectRecreated(t, before, after, "main")
	now := framework.ContainerStatus(t, after, "main")

	// The kubelet's report of the new instance may reach the controller after the daemon's.
	want := v1beta1.ContainerRecreateRequestSyncContainerStatus{Name: "main", Ready: true, RestartCount: now.RestartCount, ContainerID: now.ContainerID}
	framework.Poll(t, ctx, 10*time.Second, "containerStatusSnapshot of the new instance", func(ctx context.Context) (bool, error) {
		var err error
		if crr, err = beta.Get(ctx, "drain", metav1.GetOptions{}); err != nil {
			return false, err
		}
		s := crr.Status.ContainerStatusSnapshot
		return len(s) == 1 && s[0] == want, fmt.Errorf("containerStatusSnapshot %+v, want [%+v]", s, want)
	})
	grace := apimeta.FindStatusCondition(crr.Status.Conditions, v1beta1.ContainerRecreateRequestPreRecreateGraceType)
	if grace == nil || grace.Status != metav1.ConditionTrue || grace.Reason != "PreRecreateGrace" || grace.LastTransitionTime.IsZero() {
		t.Errorf("conditions %+v: want PreRecreateGrace True", crr.Status.Conditions)
	}
	for _, key := range []string{v1alpha1.ContainerRecreateRequestSyncContainerStatusesKey, v1alpha1.ContainerRecreateRequestUnreadyAcquiredKey} {
		if v, ok := crr.Annotations[key]; ok {
			t.Errorf("v1beta1 annotation %s=%q: it is status at v1beta1", key, v)
		}
	}
	alpha, err := framework.Inplace.AppsV1alpha1().ContainerRecreateRequests(ns).Get(ctx, "drain", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := alpha.Annotations[v1alpha1.ContainerRecreateRequestUnreadyAcquiredKey]; grace != nil && got != grace.LastTransitionTime.UTC().Format(time.RFC3339) {
		t.Errorf("v1alpha1 unready-acquired %q, want the condition's time %v", got, grace.LastTransitionTime)
	}
}
