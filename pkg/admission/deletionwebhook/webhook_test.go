package deletionwebhook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/features"
)

const label = "policy.kruise.io/delete-protection"

func labelled(name, namespace, value string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{label: value}}
}

// deletion is the review kube-apiserver sends for the DELETE of obj.
func deletion(t *testing.T, gr schema.GroupResource, obj runtime.Object) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &admissionv1.AdmissionRequest{Operation: admissionv1.Delete, Name: "x",
		Resource:  metav1.GroupVersionResource{Group: gr.Group, Version: "v1", Resource: gr.Resource},
		OldObject: runtime.RawExtension{Raw: raw}}
}

// crd is a CustomResourceDefinition of widgets.example.com, served and stored at v1beta1.
func crd(value string) map[string]any {
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.example.com", "labels": map[string]any{label: value}},
		"spec": map[string]any{"group": "example.com", "names": map[string]any{"plural": "widgets"},
			"versions": []any{map[string]any{"name": "v1alpha1", "served": true}, map[string]any{"name": "v1beta1", "served": true, "storage": true}}},
	}
}

type unstructuredJSON map[string]any

func (u unstructuredJSON) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (u unstructuredJSON) DeepCopyObject() runtime.Object   { return u }

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "widgets"}

func widget(name string, deleting bool) *metav1.PartialObjectMetadata {
	w := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1beta1", Kind: "Widget"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	if deleting {
		w.DeletionTimestamp = &metav1.Time{}
		w.Finalizers = []string{"x"}
	}
	return w
}

// widgetClient is a metadata client holding these widgets.
func widgetClient(objects ...runtime.Object) *metadatafake.FakeMetadataClient {
	scheme := metadatafake.NewTestScheme()
	metav1.AddMetaToScheme(scheme)
	scheme.AddKnownTypeWithName(widgets.GroupVersion().WithKind("Widget"), &metav1.PartialObjectMetadata{})
	scheme.AddKnownTypeWithName(widgets.GroupVersion().WithKind("WidgetList"), &metav1.PartialObjectMetadataList{})
	return metadatafake.NewSimpleMetadataClient(scheme, objects...)
}

func TestAdmit(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, features.DefaultFeatureGate, features.ResourcesDeletionProtection, true)
	featuregatetesting.SetFeatureGateDuringTest(t, features.DefaultFeatureGate, features.DeletionProtectionForCRDCascadingGate, true)
	namespaces := schema.GroupResource{Resource: "namespaces"}
	deployments := schema.GroupResource{Group: "apps", Resource: "deployments"}
	crds := schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}
	running := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "full"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	done := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "done"}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}
	bound := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "claims"}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	pending := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "done"}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}
	h := &Handler{
		Kube:     fake.NewClientset(running, done, bound, pending),
		Metadata: widgetClient(widget("a", true)),
	}
	for _, c := range []struct {
		name string
		gr   schema.GroupResource
		obj  runtime.Object
		want string // substring of the refusal; "" = allowed
	}{
		{"namespace always", namespaces, &corev1.Namespace{ObjectMeta: labelled("empty", "", "Always")}, "policy.kruise.io/delete-protection=Always"},
		{"namespace cascading with a running pod", namespaces, &corev1.Namespace{ObjectMeta: labelled("full", "", "Cascading")}, "active pods 1>0"},
		{"namespace cascading with a bound claim", namespaces, &corev1.Namespace{ObjectMeta: labelled("claims", "", "Cascading")}, "bound PersistentVolumeClaims 1>0"},
		{"namespace cascading, pods done, claim pending", namespaces, &corev1.Namespace{ObjectMeta: labelled("done", "", "Cascading")}, ""},
		{"deployment always", deployments, &appsv1.Deployment{ObjectMeta: labelled("d", "ns", "Always"), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0)}}, "=Always"},
		{"deployment cascading with replicas", deployments, &appsv1.Deployment{ObjectMeta: labelled("d", "ns", "Cascading"), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}}, "replicas 2>0: scale it to 0"},
		{"deployment cascading, replicas unset", deployments, &appsv1.Deployment{ObjectMeta: labelled("d", "ns", "Cascading")}, "replicas 1>0"},
		{"deployment cascading, scaled to 0", deployments, &appsv1.Deployment{ObjectMeta: labelled("d", "ns", "Cascading"), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0)}}, ""},
		{"service always", schema.GroupResource{Resource: "services"}, &corev1.Service{ObjectMeta: labelled("s", "ns", "Always")}, "=Always"},
		{"service cascading (only Always protects it)", schema.GroupResource{Resource: "services"}, &corev1.Service{ObjectMeta: labelled("s", "ns", "Cascading")}, ""},
		{"crd cascading, only deleting objects", crds, unstructuredJSON(crd("Cascading")), ""},
		{"crd always", crds, unstructuredJSON(crd("Always")), "=Always"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := h.Admit(context.Background(), deletion(t, c.gr, c.obj))
			wantRefusal(t, resp, c.want)
		})
	}

	t.Run("crd cascading with an object", func(t *testing.T) {
		h := &Handler{Metadata: widgetClient(widget("a", false), widget("b", true))}
		wantRefusal(t, h.Admit(context.Background(), deletion(t, crds, unstructuredJSON(crd("Cascading")))), "active widgets.example.com 1>0")
	})
	t.Run("crd cascading, may not list", func(t *testing.T) {
		client := widgetClient()
		client.PrependReactor("list", "widgets", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(widgets.GroupResource(), "", errors.New("RBAC"))
		})
		h := &Handler{Metadata: client}
		wantRefusal(t, h.Admit(context.Background(), deletion(t, crds, unstructuredJSON(crd("Cascading")))), "inplace-apiserver may not list widgets.example.com (grant its service account list on them)")
	})
	t.Run("crd cascading without its gate", func(t *testing.T) {
		featuregatetesting.SetFeatureGateDuringTest(t, features.DefaultFeatureGate, features.DeletionProtectionForCRDCascadingGate, false)
		wantRefusal(t, h.Admit(context.Background(), deletion(t, crds, unstructuredJSON(crd("Cascading")))), "needs inplace-apiserver's feature gate DeletionProtectionForCRDCascadingGate")
	})
	t.Run("pods unreadable: refused", func(t *testing.T) {
		kube := fake.NewClientset()
		kube.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("etcd is down")
		})
		h := &Handler{Kube: kube}
		wantRefusal(t, h.Admit(context.Background(), deletion(t, namespaces, &corev1.Namespace{ObjectMeta: labelled("x", "", "Cascading")})), "listing its Pods: etcd is down")
	})
	t.Run("no old object", func(t *testing.T) {
		req := deletion(t, namespaces, &corev1.Namespace{})
		req.OldObject.Raw = nil
		if resp := h.Admit(context.Background(), req); resp.Allowed || resp.Result.Code != http.StatusBadRequest {
			t.Errorf("answered %+v, want a 400 asking for the oldObject", resp)
		}
	})
	t.Run("gate off", func(t *testing.T) {
		featuregatetesting.SetFeatureGateDuringTest(t, features.DefaultFeatureGate, features.ResourcesDeletionProtection, false)
		wantRefusal(t, h.Admit(context.Background(), deletion(t, namespaces, &corev1.Namespace{ObjectMeta: labelled("empty", "", "Always")})), "")
	})
}

func wantRefusal(t *testing.T, resp *admissionv1.AdmissionResponse, want string) {
	t.Helper()
	switch {
	case want == "" && !resp.Allowed:
		t.Errorf("refused: %+v", resp.Result)
	case want != "" && resp.Allowed:
		t.Errorf("allowed, want a refusal saying %q", want)
	case want != "" && (resp.Result.Code != http.StatusForbidden || !strings.HasPrefix(resp.Result.Message, "forbidden by ResourcesProtectionDeletion") || !strings.Contains(resp.Result.Message, want)):
		t.Errorf("refused with %d %q, want a 403 starting %q and saying %q", resp.Result.Code, resp.Result.Message, "forbidden by ResourcesProtectionDeletion", want)
	}
}

func TestServedVersion(t *testing.T) {
	type v = map[string]any
	for _, c := range []struct {
		name     string
		versions []any
		want     string
	}{
		{"storage served", []any{v{"name": "v1alpha1", "served": true}, v{"name": "v1beta1", "served": true, "storage": true}}, "v1beta1"},
		{"storage not served: the first served", []any{v{"name": "v1", "storage": true}, v{"name": "v2", "served": true}, v{"name": "v3", "served": true}}, "v2"},
		{"none served", []any{v{"name": "v1", "storage": true}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := crd("Cascading")
			u["spec"].(map[string]any)["versions"] = c.versions
			raw, err := json.Marshal(u)
			if err != nil {
				t.Fatal(err)
			}
			obj := &object{}
			if err := json.Unmarshal(raw, obj); err != nil {
				t.Fatal(err)
			}
			if got := servedVersion(obj); got != c.want {
				t.Errorf("servedVersion = %q, want %q", got, c.want)
			}
		})
	}
}
