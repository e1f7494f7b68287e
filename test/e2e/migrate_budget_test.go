package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// The PodUnavailableBudget (policy.kruise.io) of TestMigrateFromOpenKruise: created in OpenKruise
// v1.9's CRD (v1alpha1) protecting the Advanced StatefulSet's Pods from deletion and eviction
// (kruise.io/pub-protect-operations), carried to inplace with its spec, labels, annotations and
// status, served there at v1alpha1 and v1beta1, and carried back.

const (
	budgetName          = "db-pub"
	protectOpsKey       = "kruise.io/pub-protect-operations"
	protectOpsValue     = "DELETE,EVICT"
	budgetCountedInPlan = `podunavailablebudgets\.policy\.kruise\.io\s+1 at v1alpha1`
)

// kruiseBudgetSpec is the budget's spec at v1alpha1: the Advanced StatefulSet db, one Pod at most
// unavailable.
func kruiseBudgetSpec() map[string]any {
	return map[string]any{
		"targetRef":      map[string]any{"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": "db"},
		"maxUnavailable": int64(1),
	}
}

// createKruiseBudget creates the budget in OpenKruise's CRD (installed by buildOpenKruiseState)
// with a status as kruise-manager may have left it (its last sync saw the Pod unready: nothing
// allowed), and returns it.
func createKruiseBudget(t *testing.T, ctx context.Context, ns string) *kruiseObject {
	t.Helper()
	res := framework.DynamicClient.Resource(budgetGVR).Namespace(ns)
	pub := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
		"metadata": map[string]any{"name": budgetName, "labels": map[string]any{"team": "db"},
			"annotations": map[string]any{protectOpsKey: protectOpsValue}},
		"spec": kruiseBudgetSpec(),
	}}
	var created *unstructured.Unstructured
	var err error
	framework.Poll(t, ctx, 60*time.Second, "the PodUnavailableBudget created in the CRD", func(ctx context.Context) (bool, error) {
		created, err = res.Create(ctx, pub, metav1.CreateOptions{})
		return err == nil, err
	})
	status := map[string]any{"observedGeneration": created.GetGeneration(), "unavailableAllowed": int64(0),
		"currentAvailable": int64(0), "desiredAvailable": int64(0), "totalReplicas": int64(1)}
	created.Object["status"] = status
	if _, err := res.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &kruiseObject{gvr: budgetGVR, name: budgetName, status: status, uid: created.GetUID()}
}

// checkBudgetCounted: the plan of a dry run counts the budget at v1alpha1.
func checkBudgetCounted(t *testing.T, out, what string) {
	t.Helper()
	if !regexp.MustCompile(budgetCountedInPlan).MatchString(out) {
		framework.LogLines(t, what, out)
		t.Fatalf("%s: the plan does not count the PodUnavailableBudget (%s; logged above)", what, budgetCountedInPlan)
	}
}

// checkBudgetMigrated: inplace serves policy.kruise.io (its APIServices), and through
// kube-apiserver the budget, a new object, at v1alpha1 with OpenKruise's spec, labels,
// annotation and status (inplace's controller does not run yet), and at v1beta1 with the
// annotation as spec.protectOperations.
func checkBudgetMigrated(t *testing.T, ctx context.Context, ns string, o *kruiseObject) {
	t.Helper()
	for _, name := range []string{framework.PolicyAPIServiceName, framework.PolicyBetaAPIServiceName} {
		s, err := framework.DynamicClient.Resource(framework.APIServiceGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("after the migration: APIService %s: %v", name, err)
		}
		if svc, _, _ := unstructured.NestedMap(s.Object, "spec", "service"); svc == nil {
			t.Fatalf("after the migration: APIService %s is kube-apiserver's, want inplace's", name)
		}
	}
	got, err := framework.DynamicClient.Resource(budgetGVR).Namespace(ns).Get(ctx, o.name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("after the migration: PodUnavailableBudget %s at v1alpha1: %v", o.name, err)
	}
	if got.GetUID() == o.uid {
		t.Errorf("PodUnavailableBudget %s: OpenKruise's UID %s, want a new object", o.name, o.uid)
	}
	if spec := got.Object["spec"]; !equality.Semantic.DeepEqual(spec, kruiseBudgetSpec()) {
		t.Errorf("PodUnavailableBudget %s at v1alpha1: spec %v, want OpenKruise's %v", o.name, spec, kruiseBudgetSpec())
	}
	if got.GetAnnotations()[protectOpsKey] != protectOpsValue || got.GetLabels()["team"] != "db" {
		t.Errorf("PodUnavailableBudget %s at v1alpha1: annotations %v labels %v, want %s=%s and team=db", o.name, got.GetAnnotations(), got.GetLabels(), protectOpsKey, protectOpsValue)
	}
	if status := got.Object["status"]; !equality.Semantic.DeepEqual(status, o.status) {
		t.Errorf("PodUnavailableBudget %s: status %v, want OpenKruise's %v", o.name, status, o.status)
	}
	beta, err := framework.DynamicClient.Resource(budgetBetaGVR).Namespace(ns).Get(ctx, o.name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("after the migration: PodUnavailableBudget %s at v1beta1: %v", o.name, err)
	}
	ops, _, _ := unstructured.NestedStringSlice(beta.Object, "spec", "protectOperations")
	target, _, _ := unstructured.NestedMap(beta.Object, "spec", "targetRef")
	if !slices.Equal(ops, []string{"DELETE", "EVICT"}) || !equality.Semantic.DeepEqual(target, kruiseBudgetSpec()["targetRef"]) {
		t.Errorf("PodUnavailableBudget %s at v1beta1: protectOperations %v targetRef %v, want [DELETE EVICT] and OpenKruise's", o.name, ops, target)
	}
	if _, found := beta.GetAnnotations()[protectOpsKey]; found {
		t.Errorf("PodUnavailableBudget %s at v1beta1: annotation %s kept beside spec.protectOperations", o.name, protectOpsKey)
	}
}

// checkBudgetLive: inplace's controller takes the carried budget over: it counts the Advanced
// StatefulSet's ready Pod available and allows one disruption (OpenKruise's status said none).
func checkBudgetLive(t *testing.T, ctx context.Context, ns string, o *kruiseObject) {
	t.Helper()
	framework.Poll(t, ctx, 60*time.Second, "the carried PodUnavailableBudget synced by inplace", func(ctx context.Context) (bool, error) {
		got, err := framework.DynamicClient.Resource(budgetBetaGVR).Namespace(ns).Get(ctx, o.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st, _, _ := unstructured.NestedMap(got.Object, "status")
		if !equality.Semantic.DeepEqual(st["currentAvailable"], int64(1)) || !equality.Semantic.DeepEqual(st["unavailableAllowed"], int64(1)) || !equality.Semantic.DeepEqual(st["totalReplicas"], int64(1)) {
			return false, fmt.Errorf("status %v, want 1 available of 1, 1 disruption allowed", st)
		}
		return true, nil
	})
}

// checkBudgetBack: after the way back the budget is in OpenKruise's CRD (a new object) with the
// spec, labels and protect-operations annotation it had.
func checkBudgetBack(t *testing.T, ctx context.Context, ns string, o *kruiseObject, inplaceUID types.UID) {
	t.Helper()
	got, err := framework.DynamicClient.Resource(budgetGVR).Namespace(ns).Get(ctx, o.name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("after the way back: PodUnavailableBudget %s in the CRD: %v", o.name, err)
	}
	if got.GetUID() == inplaceUID {
		t.Errorf("PodUnavailableBudget %s: the UID inplace had, want a new object", o.name)
	}
	if spec := got.Object["spec"]; !equality.Semantic.DeepEqual(spec, kruiseBudgetSpec()) {
		t.Errorf("PodUnavailableBudget %s in the CRD: spec %v, want %v", o.name, spec, kruiseBudgetSpec())
	}
	if got.GetAnnotations()[protectOpsKey] != protectOpsValue || got.GetLabels()["team"] != "db" {
		t.Errorf("PodUnavailableBudget %s in the CRD: annotations %v labels %v", o.name, got.GetAnnotations(), got.GetLabels())
	}
}
