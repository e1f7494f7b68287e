package deletionwebhook

import (
	"context"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/inplace-dev/inplace/pkg/features"
)

// FuzzDeletionReview: whatever object a review carries (anyone reaching the port may post one),
// the webhook answers: allowed, or refused with a status; it never panics.
func FuzzDeletionReview(f *testing.F) {
	featuregatetesting.SetFeatureGateDuringTest(f, features.DefaultFeatureGate, features.ResourcesDeletionProtection, true)
	featuregatetesting.SetFeatureGateDuringTest(f, features.DefaultFeatureGate, features.DeletionProtectionForCRDCascadingGate, true)
	for _, seed := range []struct{ resource, object string }{
		{"namespaces", `{"metadata":{"name":"shop","labels":{"policy.kruise.io/delete-protection":"Cascading"}}}`},
		{"deployments", `{"metadata":{"name":"d","labels":{"policy.kruise.io/delete-protection":"Cascading"}},"spec":{"replicas":2}}`},
		{"customresourcedefinitions", `{"metadata":{"labels":{"policy.kruise.io/delete-protection":"Cascading"}},"spec":{"group":"example.com","names":{"plural":"widgets"},"versions":[{"name":"v1","storage":true}]}}`},
		{"services", `{"metadata":{"labels":{"policy.kruise.io/delete-protection":"Always"}}}`},
		{"namespaces", `{"spec":{"replicas":"x"}}`},
	} {
		f.Add(seed.resource, []byte(seed.object))
	}
	h := &Handler{Kube: fake.NewClientset(), Metadata: widgetClient()}
	f.Fuzz(func(t *testing.T, resource string, object []byte) {
		group := ""
		switch resource {
		case "deployments", "replicasets", "statefulsets":
			group = "apps"
		case "customresourcedefinitions":
			group = "apiextensions.k8s.io"
		}
		resp := h.Admit(context.Background(), &admissionv1.AdmissionRequest{Operation: admissionv1.Delete, Name: "x",
			Resource: metav1.GroupVersionResource{Group: group, Version: "v1", Resource: resource}, OldObject: runtime.RawExtension{Raw: object}})
		if resp == nil || (!resp.Allowed && (resp.Result == nil || resp.Result.Code < 400 || resp.Result.Message == "")) {
			t.Fatalf("answered %+v, want allowed or a 4xx/5xx with a message", resp)
		}
	})
}
