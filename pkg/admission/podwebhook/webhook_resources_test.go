package podwebhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

func policyAgent(regex string) *v1alpha1.SidecarSet {
	s := agent()
	s.Spec.Containers[0].ResourcesPolicy = &v1alpha1.ResourcesPolicy{TargetContainersMode: v1alpha1.TargetContainersModeSum,
		TargetContainersNameRegex: regex, ResourcesExpr: v1alpha1.ResourcesExpr{Limits: &v1alpha1.ResourceExprLimits{CPU: "cpu/2"}}}
	return s
}

func admit(t *testing.T, h *Handler, pod *corev1.Pod) *admissionv1.AdmissionResponse {
	t.Helper()
	raw, _ := json.Marshal(pod)
	body, _ := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "req-1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Namespace: "ns", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}},
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)))
	out := &admissionv1.AdmissionReview{}
	if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil || out.Response == nil {
		t.Fatalf("HTTP %d %s: %v", rec.Code, rec.Body, err)
	}
	return out.Response
}

// A sidecar's resourcesPolicy is computed from the Pod's containers; a Pod with no target
// container is refused, saying why, as OpenKruise refuses it (other failures are admitted).
func TestResourcesPolicy(t *testing.T) {
	pod := webPod(map[string]string{"app": "web"})
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}

	resp := admit(t, handler(t, nil, policyAgent("^main$")), pod)
	if !resp.Allowed {
		t.Fatalf("response %+v: want allowed", resp)
	}
	got := applyPatch(t, pod, resp.Patch)
	if c := got.Spec.Containers[0]; c.Name != "agent" || c.Resources.Limits.Cpu().String() != "500m" {
		t.Errorf("container %s limits %v, want agent with cpu 500m", c.Name, c.Resources.Limits)
	}

	resp = admit(t, handler(t, nil, policyAgent("^db$")), pod)
	if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusBadRequest ||
		!strings.Contains(resp.Result.Message, `no container of the Pod matches targetContainersNameRegex "^db$"`) {
		t.Errorf("response %+v: want refused with 400, naming the regex", resp)
	}
}
