package podwebhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// FuzzAdmissionReview: whatever kube-apiserver (or anyone reaching the port) posts, the webhook
// answers 200 with a review of the same UID, or 400; it never panics (the server recovers a panic
// but the Pod would then be created without what the webhook adds).
func FuzzAdmissionReview(f *testing.F) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"app": "web"},
		Annotations: map[string]string{"apps.kruise.io/container-launch-priority": "Ordered"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "app:1"}, {Name: "side", Image: "app:1"}}}}
	raw, _ := json.Marshal(pod)
	seed, _ := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID("req-1"), Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: "ns", Operation: admissionv1.Create,
			Object: runtime.RawExtension{Raw: raw}},
	})
	f.Add(seed)
	f.Add([]byte(`{"request":{"uid":"x","object":{"metadata":{"annotations":{"apps.kruise.io/container-launch-priority":"Ordered"}}}}}`))
	f.Add([]byte(`{"request":{"uid":"x","operation":"CREATE","object":{"spec":{"containers":[{"name":"a","env":[{"name":"KRUISE_CONTAINER_PRIORITY","value":"x"}]}]}}}}`))
	f.Add([]byte(`{}`))

	h := handler(f, nil, agent())
	f.Fuzz(func(t *testing.T, body []byte) {
		answersReview(t, h, Path, body)
	})
}

// FuzzBudgetReview: the same for the budget check (which anyone reaching the port may post to):
// 200 with a review of the same UID, or 400; never a panic.
func FuzzBudgetReview(f *testing.F) {
	for _, req := range []admissionv1.AdmissionRequest{
		{UID: "d", Operation: admissionv1.Delete, Resource: podsResource, Namespace: "ns", Name: "web-0",
			OldObject: runtime.RawExtension{Raw: []byte(`{"metadata":{"name":"web-0","annotations":{"pub.kruise.io/related-pub":"pub"}}}`)}},
		{UID: "e", Operation: admissionv1.Create, Resource: podsResource, SubResource: "eviction", Namespace: "ns", Name: "web-0",
			Object: runtime.RawExtension{Raw: []byte(`{"deleteOptions":{"dryRun":["All"]}}`)}},
		{UID: "u", Operation: admissionv1.Update, Resource: podsResource, SubResource: "resize", Namespace: "ns", Name: "web-0",
			OldObject: runtime.RawExtension{Raw: []byte(`{"spec":{"containers":[{"name":"a"}]}}`)},
			Object:    runtime.RawExtension{Raw: []byte(`{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1"}}}]}}`)}},
	} {
		seed, _ := json.Marshal(&admissionv1.AdmissionReview{Request: &req})
		f.Add(seed)
	}
	f.Add([]byte(`{"request":{"uid":"x","operation":"UPDATE","resource":{"version":"v1","resource":"pods"},"object":{"spec":1}}}`))
	f.Add([]byte(`{}`))

	h := newBudgetHandler(&fakeCharger{})
	f.Fuzz(func(t *testing.T, body []byte) {
		answersReview(t, h, BudgetPath, body)
	})
}

// answersReview posts body to h at path and fails unless the answer is a 400, or a 200 whose body
// is a review with the request's UID (when the body had one).
func answersReview(t *testing.T, h http.Handler, path string, body []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
	switch rec.Code {
	case http.StatusBadRequest:
	case http.StatusOK:
		var out admissionv1.AdmissionReview
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
			t.Fatalf("200 with a body that is not a review (%v): %s", err, rec.Body)
		}
		var in admissionv1.AdmissionReview
		if json.Unmarshal(body, &in) == nil && in.Request != nil && out.Response.UID != in.Request.UID {
			t.Fatalf("response UID %q for request UID %q", out.Response.UID, in.Request.UID)
		}
	default:
		t.Fatalf("answered %d: %s", rec.Code, rec.Body)
	}
}
