package podwebhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics/testutil"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	inplacefake "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned/fake"
	informers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions"
	"github.com/inplace-dev/inplace/pkg/launchpriority"
)

func handler(t testing.TB, nsErr error, sets ...*v1alpha1.SidecarSet) *Handler {
	t.Helper()
	f := informers.NewSharedInformerFactory(inplacefake.NewClientset(), 0)
	for _, s := range sets {
		if err := f.Apps().V1alpha1().SidecarSets().Informer().GetIndexer().Add(s); err != nil {
			t.Fatal(err)
		}
	}
	return &Handler{
		SidecarSets: f.Apps().V1alpha1().SidecarSets().Lister(),
		NamespaceLabels: func(_ context.Context, ns string) (map[string]string, error) {
			return map[string]string{corev1.LabelMetadataName: ns}, nsErr
		},
		Now: func() time.Time { return time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) },
	}
}

func agent() *v1alpha1.SidecarSet {
	return &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: v1alpha1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "agent", Image: "agent:1"},
				PodInjectPolicy: v1alpha1.BeforeAppContainerType}},
		},
	}
}

// admitPod posts a Pod CREATE review and returns the response.
func admitPod(t *testing.T, h *Handler, pod *corev1.Pod) *admissionv1.AdmissionResponse {
	t.Helper()
	raw, _ := json.Marshal(pod)
	body, _ := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID("req-1"), Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Namespace: "ns", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}},
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
	}
	out := &admissionv1.AdmissionReview{}
	if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil || out.Response == nil {
		t.Fatalf("response %s: %v", rec.Body, err)
	}
	if out.Response.UID != "req-1" || !out.Response.Allowed {
		t.Fatalf("response %+v: want allowed, for request req-1", out.Response)
	}
	return out.Response
}

func webPod(labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "app:1"}}}}
}

// applyPatch applies the handler's patch (replace /spec, add /metadata/labels and annotations).
func applyPatch(t *testing.T, pod *corev1.Pod, patch []byte) *corev1.Pod {
	t.Helper()
	var ops []struct {
		Op, Path string
		Value    json.RawMessage
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		t.Fatal(err)
	}
	out := pod.DeepCopy()
	for _, op := range ops {
		var err error
		switch op.Path {
		case "/spec":
			out.Spec = corev1.PodSpec{}
			err = json.Unmarshal(op.Value, &out.Spec)
		case "/metadata/labels":
			err = json.Unmarshal(op.Value, &out.Labels)
		case "/metadata/annotations":
			err = json.Unmarshal(op.Value, &out.Annotations)
		case "/metadata/name":
			err = json.Unmarshal(op.Value, &out.Name)
		default:
			t.Fatalf("unexpected patch op %s %s", op.Op, op.Path)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestInjectsOnCreate(t *testing.T) {
	pod := webPod(map[string]string{"app": "web"})
	resp := admitPod(t, handler(t, nil, agent()), pod)
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("response %+v: want a JSON patch", resp)
	}
	got := applyPatch(t, pod, resp.Patch)
	if len(got.Spec.Containers) != 2 || got.Spec.Containers[0].Name != "agent" || got.Spec.Containers[1].Name != "main" {
		t.Errorf("containers %+v, want agent before main", got.Spec.Containers)
	}
	if got.Annotations["kruise.io/sidecarset-injected-list"] != "agent" || got.Labels["app"] != "web" {
		t.Errorf("labels %v annotations %v", got.Labels, got.Annotations)
	}
}

func TestLeavesOtherPodsAlone(t *testing.T) {
	if resp := admitPod(t, handler(t, nil, agent()), webPod(map[string]string{"app": "db"})); resp.Patch != nil {
		t.Errorf("patch %s for a Pod no SidecarSet selects", resp.Patch)
	}
	if resp := admitPod(t, handler(t, nil), webPod(map[string]string{"app": "web"})); resp.Patch != nil {
		t.Errorf("patch %s with no SidecarSet at all", resp.Patch)
	}
}

// Whatever fails, the Pod is allowed as it came, with a warning.
func TestFailsOpen(t *testing.T) {
	resp := admitPod(t, handler(t, errors.New("namespaces unreachable"), agent()), webPod(map[string]string{"app": "web"}))
	if resp.Patch != nil || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "namespaces unreachable") {
		t.Errorf("response %+v: want allowed without a patch, warning why", resp)
	}
	rec := httptest.NewRecorder()
	handler(t, nil).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, strings.NewReader("not json")))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("a body that is no AdmissionReview: HTTP %d, want 400", rec.Code)
	}
}

// An injected sidecar takes part in the launch order; a Pod with only generateName is named, since
// its barrier ConfigMap is named after it.
func TestLaunchPriorityAfterInjection(t *testing.T) {
	pod := webPod(map[string]string{"app": "web"})
	pod.Name, pod.GenerateName = "", "web-"
	pod.Annotations = map[string]string{pub.ContainerLaunchPriorityKey: pub.ContainerLaunchOrdered}
	resp := admitPod(t, handler(t, nil, agent()), pod)
	got := applyPatch(t, pod, resp.Patch)
	if !strings.HasPrefix(got.Name, "web-") || len(got.Name) == len("web-") {
		t.Fatalf("name %q, want one generated from web-", got.Name)
	}
	// The injected sidecar agent comes first: it holds back the app container with the postStart
	// barrier, which names the generated Pod.
	expectHooks(t, got, map[string]string{"agent": launchpriority.HookPath("ns", got.Name, "agent")})

	// Without SidecarSets too, and a priority that is not an integer is a warning.
	pod = webPod(nil)
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "second", Image: "app:1",
		Env: []corev1.EnvVar{{Name: pub.ContainerLaunchPriorityEnvName, Value: "first"}}})
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: pub.ContainerLaunchPriorityEnvName, Value: "5"}}
	resp = admitPod(t, handler(t, nil), pod)
	got = applyPatch(t, pod, resp.Patch)
	expectHooks(t, got, map[string]string{"main": launchpriority.HookPath("ns", "web-1", "main")})
	if len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "spec.containers[1].env[0].value") {
		t.Errorf("warnings %q, want one naming spec.containers[1].env[0].value", resp.Warnings)
	}

	// A container that needs the hook has a postStart hook of its own: OpenKruise's ConfigMap.
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	got = applyPatch(t, pod, admitPod(t, handler(t, nil), pod).Patch)
	if got.Annotations[launchpriority.BarrierAnnotation] != string(launchpriority.BarrierConfigMap) {
		t.Errorf("annotations %v, want the ConfigMap barrier", got.Annotations)
	}
	for i, want := range []string{"p_5", "p_0"} {
		c := got.Spec.Containers[i]
		env := c.Env[len(c.Env)-1]
		if env.Name != pub.ContainerLaunchBarrierEnvName || env.ValueFrom.ConfigMapKeyRef.Key != want ||
			env.ValueFrom.ConfigMapKeyRef.Name != got.Name+"-barrier" {
			t.Errorf("container %s: last env %+v, want %s from %s-barrier", c.Name, env, want, got.Name)
		}
	}
}

// expectHooks checks that the Pod has the postStart barrier and the containers hooks (container:
// path), and no other container a hook or a barrier env.
func expectHooks(t *testing.T, pod *corev1.Pod, hooks map[string]string) {
	t.Helper()
	if pod.Annotations[launchpriority.BarrierAnnotation] != string(launchpriority.BarrierPostStart) {
		t.Errorf("annotations %v, want the PostStart barrier", pod.Annotations)
	}
	for _, c := range pod.Spec.Containers {
		var path string
		if c.Lifecycle != nil && c.Lifecycle.PostStart != nil && c.Lifecycle.PostStart.HTTPGet != nil {
			g := c.Lifecycle.PostStart.HTTPGet
			if g.Host != "127.0.0.1" || g.Port.IntValue() != launchpriority.DefaultHookPort {
				t.Errorf("container %s: hook to %s:%s, want 127.0.0.1:%d", c.Name, g.Host, g.Port.String(), launchpriority.DefaultHookPort)
			}
			path = g.Path
		}
		if path != hooks[c.Name] {
			t.Errorf("container %s: hook path %q, want %q", c.Name, path, hooks[c.Name])
		}
		for _, e := range c.Env {
			if e.Name == pub.ContainerLaunchBarrierEnvName {
				t.Errorf("container %s has %s too", c.Name, e.Name)
			}
		}
	}
}

// Pods of inplace's workloads get the InPlaceUpdateReady readiness gate; others do not.
func TestReadinessGateForWorkloadPods(t *testing.T) {
	yes := true
	pod := webPod(nil)
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "u", Controller: &yes}}
	got := applyPatch(t, pod, admitPod(t, handler(t, nil), pod).Patch)
	if len(got.Spec.ReadinessGates) != 1 || got.Spec.ReadinessGates[0].ConditionType != pub.InPlaceUpdateReady {
		t.Errorf("readiness gates %v, want InPlaceUpdateReady", got.Spec.ReadinessGates)
	}
	if resp := admitPod(t, handler(t, nil), got); resp.Patch != nil {
		t.Errorf("a Pod that has the gate already: patch %s", resp.Patch)
	}
	pod.OwnerReferences[0].APIVersion = "apps/v1"
	if resp := admitPod(t, handler(t, nil), pod); resp.Patch != nil {
		t.Errorf("a ReplicaSet's Pod: patch %s", resp.Patch)
	}
}

// TestDurationByResult: each answer is timed once under its result.
func TestDurationByResult(t *testing.T) {
	duration.Reset()
	admitPod(t, handler(t, nil, agent()), webPod(map[string]string{"app": "web"}))                                  // patched
	admitPod(t, handler(t, nil, agent()), webPod(map[string]string{"app": "db"}))                                   // unchanged
	admitPod(t, handler(t, errors.New("namespaces unreachable"), agent()), webPod(map[string]string{"app": "web"})) // failed
	for _, result := range []string{resultPatched, resultUnchanged, resultFailed} {
		if n, err := testutil.GetHistogramMetricCount(duration.WithLabelValues(result)); err != nil || n != 1 {
			t.Errorf("%s: observed %d times (%v), want once", result, n, err)
		}
	}
}
