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
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/policy"
)

// charge is one call of the fake Charger.
type charge struct {
	pod    string
	op     policy.PubOperation
	dryRun bool
}

type fakeCharger struct {
	calls  []charge
	answer error
}

func (f *fakeCharger) Charge(_ context.Context, pod *corev1.Pod, op policy.PubOperation, _ time.Time, dryRun bool) error {
	f.calls = append(f.calls, charge{pod.Namespace + "/" + pod.Name, op, dryRun})
	return f.answer
}

func budgetPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
		Annotations: map[string]string{policy.PodRelatedPubAnnotation: "pub"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}}}
}

func withImage(p *corev1.Pod, image string) *corev1.Pod {
	p.Spec.Containers = []corev1.Container{{Name: "main", Image: image}}
	return p
}

func withCPU(p *corev1.Pod, cpu string) *corev1.Pod {
	p.Spec.Containers = []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}
	return p
}

func withLabel(p *corev1.Pod, k, v string) *corev1.Pod {
	p.Labels = map[string]string{k: v}
	return p
}

func raw(t *testing.T, obj any) runtime.RawExtension {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: b}
}

func newBudgetHandler(c Charger) *BudgetHandler {
	return &BudgetHandler{
		Charger: c,
		GetPod: func(_ context.Context, namespace, name string) (*corev1.Pod, error) {
			if name == "gone" {
				return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
			}
			return budgetPod(name), nil
		},
		Now: time.Now,
	}
}

var podsResource = metav1.GroupVersionResource{Version: "v1", Resource: "pods"}

// Which requests charge which operation of which Pod, and which are let through untouched.
func TestBudgetOperations(t *testing.T) {
	eviction := func(opts *metav1.DeleteOptions) *policyv1.Eviction {
		return &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns"}, DeleteOptions: opts}
	}
	for _, tc := range []struct {
		name string
		req  admissionv1.AdmissionRequest
		want []charge
	}{
		{"delete", admissionv1.AdmissionRequest{Operation: admissionv1.Delete, Resource: podsResource, Namespace: "ns", Name: "web-0",
			OldObject: raw(t, budgetPod("web-0"))}, []charge{{"ns/web-0", policy.PubDeleteOperation, false}}},
		{"delete, dry run", admissionv1.AdmissionRequest{Operation: admissionv1.Delete, Resource: podsResource, Namespace: "ns", Name: "web-0",
			OldObject: raw(t, budgetPod("web-0")), DryRun: ptr.To(true)}, []charge{{"ns/web-0", policy.PubDeleteOperation, true}}},
		{"eviction", admissionv1.AdmissionRequest{Operation: admissionv1.Create, Resource: podsResource, SubResource: "eviction",
			Namespace: "ns", Name: "web-1", Object: raw(t, eviction(nil))}, []charge{{"ns/web-1", policy.PubEvictOperation, false}}},
		{"eviction, dry run in its deleteOptions", admissionv1.AdmissionRequest{Operation: admissionv1.Create, Resource: podsResource,
			SubResource: "eviction", Namespace: "ns", Name: "web-1", Object: raw(t, eviction(&metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}))},
			[]charge{{"ns/web-1", policy.PubEvictOperation, true}}},
		{"eviction, dry run of the request", admissionv1.AdmissionRequest{Operation: admissionv1.Create, Resource: podsResource,
			SubResource: "eviction", Namespace: "ns", Name: "web-1", Object: raw(t, eviction(nil)), DryRun: ptr.To(true)},
			[]charge{{"ns/web-1", policy.PubEvictOperation, true}}},
		{"eviction of a Pod gone", admissionv1.AdmissionRequest{Operation: admissionv1.Create, Resource: podsResource,
			SubResource: "eviction", Namespace: "ns", Name: "gone", Object: raw(t, eviction(nil))}, nil},
		{"update of the image", admissionv1.AdmissionRequest{Operation: admissionv1.Update, Resource: podsResource, Namespace: "ns", Name: "web-0",
			OldObject: raw(t, budgetPod("web-0")), Object: raw(t, withImage(budgetPod("web-0"), "app:v2"))},
			[]charge{{"ns/web-0", policy.PubUpdateOperation, false}}},
		{"resize, dry run", admissionv1.AdmissionRequest{Operation: admissionv1.Update, Resource: podsResource, SubResource: "resize",
			Namespace: "ns", Name: "web-0", OldObject: raw(t, budgetPod("web-0")), Object: raw(t, withCPU(budgetPod("web-0"), "2")), DryRun: ptr.To(true)},
			[]charge{{"ns/web-0", policy.PubResizeOperation, true}}},
		{"update of labels", admissionv1.AdmissionRequest{Operation: admissionv1.Update, Resource: podsResource, Namespace: "ns", Name: "web-0",
			OldObject: raw(t, budgetPod("web-0")), Object: raw(t, withLabel(budgetPod("web-0"), "tier", "front"))}, nil},
		{"update of the status", admissionv1.AdmissionRequest{Operation: admissionv1.Update, Resource: podsResource, SubResource: "status",
			Namespace: "ns", Name: "web-0", OldObject: raw(t, budgetPod("web-0")), Object: raw(t, withImage(budgetPod("web-0"), "app:v2"))}, nil},
		{"delete without the old object", admissionv1.AdmissionRequest{Operation: admissionv1.Delete, Resource: podsResource, Namespace: "ns", Name: "web-0"}, nil},
		{"delete of a subresource", admissionv1.AdmissionRequest{Operation: admissionv1.Delete, Resource: podsResource, SubResource: "status",
			Namespace: "ns", Name: "web-0", OldObject: raw(t, budgetPod("web-0"))}, nil},
		{"pod create", admissionv1.AdmissionRequest{Operation: admissionv1.Create, Resource: podsResource, Namespace: "ns", Name: "web-0",
			Object: raw(t, budgetPod("web-0"))}, nil},
		{"delete of another resource", admissionv1.AdmissionRequest{Operation: admissionv1.Delete, Namespace: "ns", Name: "web-0",
			Resource: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, OldObject: raw(t, budgetPod("web-0"))}, nil},
	} {
		c := &fakeCharger{}
		resp := newBudgetHandler(c).Admit(t.Context(), &tc.req)
		if !resp.Allowed {
			t.Errorf("%s: denied %+v, want allowed", tc.name, resp.Result)
		}
		if len(c.calls) != len(tc.want) || (len(tc.want) > 0 && c.calls[0] != tc.want[0]) {
			t.Errorf("%s: charged %+v, want %+v", tc.name, c.calls, tc.want)
		}
	}
}

// A budget with no unit left denies the deletion with the Charger's 429, which names the budget
// (kube-apiserver passes its code, message and causes on to the client); a budget that cannot be
// checked denies it with a 500 (fail closed).
func TestBudgetDenials(t *testing.T) {
	refused := apierrors.NewTooManyRequests("Cannot delete pod web-0 now: PodUnavailableBudget pub allows no more unavailable Pods", 1)
	refused.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: "PodUnavailableBudget", Message: "The PodUnavailableBudget pub needs 2 available pods and has 2 currently"}}
	del := &admissionv1.AdmissionRequest{Operation: admissionv1.Delete, Resource: podsResource, Namespace: "ns", Name: "web-0",
		OldObject: raw(t, budgetPod("web-0"))}

	resp := newBudgetHandler(&fakeCharger{answer: refused}).Admit(t.Context(), del)
	if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusTooManyRequests ||
		resp.Result.Reason != metav1.StatusReasonTooManyRequests || !strings.Contains(resp.Result.Message, "PodUnavailableBudget pub") ||
		resp.Result.Details == nil || len(resp.Result.Details.Causes) != 1 || resp.Result.Details.RetryAfterSeconds != 0 {
		t.Errorf("no unit left: %+v, want denied with a 429 naming the budget, no Retry-After", resp.Result)
	}

	resp = newBudgetHandler(&fakeCharger{answer: errors.New("etcd is down")}).Admit(t.Context(), del)
	if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusInternalServerError || !strings.Contains(resp.Result.Message, "etcd is down") {
		t.Errorf("budget unreadable: %+v, want denied with a 500 that says why", resp.Result)
	}

	bad := *del
	bad.OldObject = runtime.RawExtension{Raw: []byte(`{"metadata": 1}`)}
	resp = newBudgetHandler(&fakeCharger{}).Admit(t.Context(), &bad)
	if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusBadRequest {
		t.Errorf("undecodable Pod: %+v, want denied with a 400", resp.Result)
	}
}

// Over HTTP: the review comes back with the request's UID and the denial.
func TestBudgetServeHTTP(t *testing.T) {
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "u-1", Operation: admissionv1.Delete, Resource: podsResource,
			Namespace: "ns", Name: "web-0", OldObject: raw(t, budgetPod("web-0"))},
	}
	body, _ := json.Marshal(review)
	rec := httptest.NewRecorder()
	h := newBudgetHandler(&fakeCharger{answer: apierrors.NewTooManyRequests("no unit left", 1)})
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, BudgetPath, bytes.NewReader(body)))
	out := admissionv1.AdmissionReview{}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
		t.Fatalf("response %q: %v", rec.Body.String(), err)
	}
	if out.Response.UID != "u-1" || out.Response.Allowed || out.Response.Result.Code != http.StatusTooManyRequests {
		t.Errorf("response %+v, want uid u-1, denied with 429", out.Response)
	}
}
