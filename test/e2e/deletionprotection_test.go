package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// The deletion-protection specs of OpenKruise v1.9 (test/e2e/policy/v1alpha1/deletionprotection.go),
// run in TestFeatureGates' "gates on" phase (ResourcesDeletionProtection and
// DeletionProtectionForCRDCascadingGate on): Namespaces, CustomResourceDefinitions and kube's
// objects through inplace-apiserver's webhook, CloneSets through its admission plugin.

const (
	protectionLabel = "policy.kruise.io/delete-protection"
	// deleteForbidden starts every refusal (OpenKruise's specs look for it).
	deleteForbidden = "forbidden by ResourcesProtectionDeletion"
)

// protected is an object whose deletion the specs try, through the dynamic client.
type protected struct {
	gvr             schema.GroupVersionResource
	namespace, name string
}

func (p protected) client() dynamic.ResourceInterface {
	if p.namespace == "" {
		return framework.DynamicClient.Resource(p.gvr)
	}
	return framework.DynamicClient.Resource(p.gvr).Namespace(p.namespace)
}

func (p protected) String() string { return p.gvr.Resource + " " + p.name }

// label sets the protection label to value, or removes it for "".
func (p protected) label(t *testing.T, ctx context.Context, value string) {
	t.Helper()
	var v any = value
	if value == "" {
		v = nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{protectionLabel: v}}})
	if _, err := p.client().Patch(ctx, p.name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("labelling %s %s=%q: %v", p, protectionLabel, value, err)
	}
}

// unprotectOnCleanup removes the label when the test ends, so that its cleanup can delete the
// object whatever state a failure left it in.
func (p protected) unprotectOnCleanup(t *testing.T) {
	t.Cleanup(func() {
		patch := []byte(`{"metadata":{"labels":{"` + protectionLabel + `":null}}}`)
		_, _ = p.client().Patch(context.Background(), p.name, types.MergePatchType, patch, metav1.PatchOptions{})
	})
}

// wantRefused deletes the object and wants OpenKruise's 403, saying want.
func (p protected) wantRefused(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	err := p.client().Delete(ctx, p.name, metav1.DeleteOptions{})
	if err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), deleteForbidden) || !strings.Contains(err.Error(), want) {
		t.Fatalf("deleting %s: %v, want a 403 %q saying %q", p, err, deleteForbidden, want)
	}
}

// eventuallyRefused polls until the deletion is refused saying want (what the refusal counts
// comes from caches: kube-apiserver's for Pods and claims, its authorizer's for RBAC).
func (p protected) eventuallyRefused(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	var last error
	framework.Poll(t, ctx, 30*time.Second, fmt.Sprintf("deleting %s refused saying %q", p, want), func(ctx context.Context) (bool, error) {
		last = p.client().Delete(ctx, p.name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		if last == nil {
			return false, fmt.Errorf("deleting %s (dry run) was allowed", p)
		}
		return apierrors.IsForbidden(last) && strings.Contains(last.Error(), want), nil
	})
	p.wantRefused(t, ctx, want)
}

// deleted deletes the object, which must be allowed now.
func (p protected) deleted(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := p.client().Delete(ctx, p.name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting %s: %v, want it deleted", p, err)
	}
}

var (
	namespacesGVR  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	servicesGVR    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	ingressesGVR   = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}
	crdsGVR        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	clonesetsGVR   = v1alpha1.SchemeGroupVersion.WithResource("clonesets")
)

// create creates obj (unstructured) with the protection label and returns it as protected.
func createProtected(t *testing.T, ctx context.Context, gvr schema.GroupVersionResource, obj map[string]any, value string) protected {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	u.SetLabels(map[string]string{protectionLabel: value})
	p := protected{gvr: gvr, namespace: u.GetNamespace(), name: u.GetName()}
	if _, err := p.client().Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s: %v", p, err)
	}
	p.unprotectOnCleanup(t)
	return p
}

// testDeletionProtectionNamespace is OpenKruise's "ns should be protected": Always refuses;
// Cascading refuses while a CloneSet's Pod runs in it, then while a bound claim is left, and
// lets it go once both are gone.
func testDeletionProtectionNamespace(t *testing.T, ctx context.Context) {
	ns := framework.NewNamespace(t, ctx, "dp-ns")
	p := protected{gvr: namespacesGVR, name: ns}
	p.unprotectOnCleanup(t)
	p.label(t, ctx, "Always")
	p.wantRefused(t, ctx, protectionLabel+"=Always")

	cs, _ := framework.ReadyCloneSet(t, ctx, ns, 1, v1alpha1.CloneSetUpdateStrategy{})
	p.label(t, ctx, "Cascading")
	p.wantRefused(t, ctx, "active pods 1>0")

	framework.UpdateCloneSet(t, ctx, cs, func(cs *v1alpha1.CloneSet) { cs.Spec.Replicas = ptr.To[int32](0) })
	framework.Poll(t, ctx, time.Minute, "the CloneSet's Pod gone or terminating", func(ctx context.Context) (bool, error) {
		pods, err := framework.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, pod := range pods.Items {
			if pod.DeletionTimestamp == nil {
				return false, nil
			}
		}
		return true, nil
	})

	claim := &corev1.PersistentVolumeClaim{
		// The local cluster's default class binds a claim at once.
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("50Mi")}},
		},
	}
	if _, err := framework.Kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the claim: %v", err)
	}
	p.eventuallyRefused(t, ctx, "bound PersistentVolumeClaims 1>0")

	if err := framework.Kube.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, claim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the claim: %v", err)
	}
	p.deleted(t, ctx)
}

// testDeletionProtectionCRD is OpenKruise's "CRD deletion should be protected": Always refuses;
// Cascading refuses while an object of it exists. inplace-apiserver may list the objects only
// where it is granted: before the grant the refusal says so.
func testDeletionProtectionCRD(t *testing.T, ctx context.Context) {
	group := framework.NewNamespace(t, ctx, "dp-crd") + ".e2e.inplace.dev" // unique per run
	gvr := schema.GroupVersionResource{Group: group, Version: "v1beta1", Resource: "testdeletioncases"}
	crd := createProtected(t, ctx, crdsGVR, map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": gvr.Resource + "." + group},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names": map[string]any{"plural": gvr.Resource, "singular": "testdeletioncase", "kind": "TestDeletionCase"},
			"versions": []any{map[string]any{"name": "v1beta1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}, "Always")
	t.Cleanup(func() { _ = crd.client().Delete(context.Background(), crd.name, metav1.DeleteOptions{}) })
	crd.wantRefused(t, ctx, protectionLabel+"=Always")

	ns := strings.TrimSuffix(group, ".e2e.inplace.dev")
	cr := protected{gvr: gvr, namespace: ns, name: "test-cr"}
	framework.Poll(t, ctx, 30*time.Second, "an object of the new CustomResourceDefinition created", func(ctx context.Context) (bool, error) {
		_, err := cr.client().Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvr.GroupVersion().String(), "kind": "TestDeletionCase",
			"metadata": map[string]any{"name": cr.name, "namespace": ns}}}, metav1.CreateOptions{})
		return err == nil, nil // NotFound until the CRD is established
	})

	crd.label(t, ctx, "Cascading")
	crd.wantRefused(t, ctx, "inplace-apiserver may not list "+gvr.GroupResource().String())
	grantList(t, ctx, gvr.GroupResource())
	crd.eventuallyRefused(t, ctx, "active "+gvr.GroupResource().String()+" 1>0")

	cr.deleted(t, ctx)
	crd.deleted(t, ctx)
}

// grantList lets inplace-apiserver's ServiceAccount list a resource, as docs/deletion-protection.md
// tells users to for a Cascading CustomResourceDefinition.
func grantList(t *testing.T, ctx context.Context, gr schema.GroupResource) {
	t.Helper()
	name := "e2e-protect-" + gr.String()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{gr.Group}, Resources: []string{gr.Resource}, Verbs: []string{"list"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "inplace-system", Name: "inplace-apiserver"}}}
	rbac := framework.Kube.RbacV1()
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ClusterRole %s: %v", name, err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ClusterRoleBinding %s: %v", name, err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// testDeletionProtectionWorkloads is OpenKruise's "CloneSet should be protected" and
// "Deployment should be protected": Always refuses at 0 replicas; Cascading refuses at 2 and lets
// the workload go at 0.
func testDeletionProtectionWorkloads(t *testing.T, ctx context.Context) {
	ns := framework.NewNamespace(t, ctx, "dp-workloads")
	for _, w := range []struct {
		gvr    schema.GroupVersionResource
		object map[string]any
	}{
		{deploymentsGVR, appWorkload(t, "apps/v1", "Deployment", ns, "deploy")},
		{clonesetsGVR, appWorkload(t, v1alpha1.SchemeGroupVersion.String(), "CloneSet", ns, "clone")},
	} {
		p := createProtected(t, ctx, w.gvr, w.object, "Always")
		p.wantRefused(t, ctx, protectionLabel+"=Always")
		scale := func(replicas int32) {
			patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"Cascading"}},"spec":{"replicas":%d}}`, protectionLabel, replicas)
			if _, err := p.client().Patch(ctx, p.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatalf("scaling %s to %d: %v", p, replicas, err)
			}
			framework.Poll(t, ctx, time.Minute, fmt.Sprintf("%s at %d replicas", p, replicas), func(ctx context.Context) (bool, error) {
				obj, err := p.client().Get(ctx, p.name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				n, _, err := unstructured.NestedInt64(obj.Object, "status", "replicas")
				return n == int64(replicas), err
			})
		}
		scale(2)
		p.wantRefused(t, ctx, "replicas 2>0")
		scale(0)
		p.deleted(t, ctx)
	}
}

// appWorkload is a workload (Deployment, CloneSet) of 0 replicas of the app's Pods, labelled
// owner=name, as unstructured content.
func appWorkload(t *testing.T, apiVersion, kind, ns, name string) map[string]any {
	t.Helper()
	pod := framework.AppPod(ns, name, framework.AppImageV1)
	raw, err := json.Marshal(corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"owner": name}}, Spec: pod.Spec})
	if err != nil {
		t.Fatal(err)
	}
	template := map[string]any{}
	if err := json.Unmarshal(raw, &template); err != nil {
		t.Fatal(err)
	}
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"replicas": int64(0), "selector": map[string]any{"matchLabels": map[string]any{"owner": name}}, "template": template}}
}

// testDeletionProtectionServiceIngress is OpenKruise's "Service deletion should be protected" and
// "Ingress deletion should be protected": Always refuses; without the label the deletion goes.
func testDeletionProtectionServiceIngress(t *testing.T, ctx context.Context) {
	ns := framework.NewNamespace(t, ctx, "dp-svc")
	for _, p := range []protected{
		createProtected(t, ctx, servicesGVR, map[string]any{"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": "svc", "namespace": ns},
			"spec": map[string]any{"selector": map[string]any{"owner": "foo"},
				"ports": []any{map[string]any{"name": "http", "port": int64(80), "protocol": "TCP"}}}}, "Always"),
		createProtected(t, ctx, ingressesGVR, map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
			"metadata": map[string]any{"name": "ing", "namespace": ns},
			"spec": map[string]any{"rules": []any{map[string]any{"host": "foo.bar.com", "http": map[string]any{"paths": []any{
				map[string]any{"path": "/", "pathType": "Prefix", "backend": map[string]any{"service": map[string]any{"name": "test", "port": map[string]any{"number": int64(80)}}}},
			}}}}}}, "Always"),
	} {
		p.wantRefused(t, ctx, protectionLabel+"=Always")
		p.label(t, ctx, "")
		p.deleted(t, ctx)
	}
}

// testNoDeletionProtection: with ResourcesDeletionProtection off (the default) the label does
// nothing: a Service and a CloneSet labelled Always are deleted.
func testNoDeletionProtection(t *testing.T, ctx context.Context) {
	ns := framework.NewNamespace(t, ctx, "dp-off")
	createProtected(t, ctx, servicesGVR, map[string]any{"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "svc", "namespace": ns},
		"spec":     map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}}, "Always").deleted(t, ctx)
	createProtected(t, ctx, clonesetsGVR, appWorkload(t, v1alpha1.SchemeGroupVersion.String(), "CloneSet", ns, "clone"), "Always").deleted(t, ctx)
}
