package integration

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/policy/v1alpha1"
	policyv1beta1 "github.com/inplace-dev/inplace/pkg/apis/policy/v1beta1"
)

func newPUBV1alpha1(name string) *policyv1alpha1.PodUnavailableBudget {
	return &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			MaxUnavailable: ptr.To(intstr.FromString("25%")),
		},
	}
}

// TestPodUnavailableBudgetVersions: a PodUnavailableBudget is one object served at
// policy.kruise.io/v1alpha1 (OpenKruise v1.9) and v1beta1 (OpenKruise master), stored at v1beta1.
// v1alpha1's annotations kruise.io/pub-protect-operations and pub.kruise.io/protect-total-replicas
// are v1beta1's spec.protectOperations and protectTotalReplicas; v1beta1's ignoredPodSelector,
// which OpenKruise's v1alpha1 drops, rides in inplace.dev/v1beta1-fields, so a read-modify-write
// through v1alpha1 keeps it; the status reads the same at both versions.
func TestPodUnavailableBudgetVersions(t *testing.T) {
	s, ctx := parallelServer(t)
	alpha, beta := s.Client.PolicyV1alpha1().PodUnavailableBudgets("default"), s.Client.PolicyV1beta1().PodUnavailableBudgets("default")
	pub := newPUBV1alpha1("web")
	pub.Annotations = map[string]string{
		policyv1alpha1.PubProtectOperationAnnotation:     "DELETE, EVICT",
		policyv1alpha1.PubProtectTotalReplicasAnnotation: "5",
		"team": "payments",
	}
	if _, err := alpha.Create(ctx, pub, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a v1alpha1 PodUnavailableBudget: %v", err)
	}
	b, err := beta.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading it at v1beta1: %v", err)
	}
	if want := []policyv1beta1.PubOperation{"DELETE", "EVICT"}; !slices.Equal(b.Spec.ProtectOperations, want) {
		t.Errorf("v1beta1 protectOperations %v, want %v", b.Spec.ProtectOperations, want)
	}
	if b.Spec.ProtectTotalReplicas == nil || *b.Spec.ProtectTotalReplicas != 5 {
		t.Errorf("v1beta1 protectTotalReplicas %v, want 5", b.Spec.ProtectTotalReplicas)
	}
	if want := map[string]string{"team": "payments"}; !maps.Equal(b.Annotations, want) {
		t.Errorf("v1beta1 annotations %v, want %v (the v1alpha1 ones are fields there)", b.Annotations, want)
	}

	b.Spec.IgnoredPodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
	if _, err := beta.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("v1beta1 update of ignoredPodSelector: %v", err)
	}
	a, err := alpha.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Annotations[policyv1alpha1.PubProtectOperationAnnotation]; got != "DELETE,EVICT" {
		t.Errorf("v1alpha1 protect-operations %q, want the canonical DELETE,EVICT", got)
	}
	if got := a.Annotations[policyv1alpha1.V1beta1FieldsAnnotation]; !strings.Contains(got, `"canary":"true"`) {
		t.Errorf("v1alpha1 %s %q: the ignoredPodSelector is not carried", policyv1alpha1.V1beta1FieldsAnnotation, got)
	}
	a.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	if _, err := alpha.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("v1alpha1 read-modify-write: %v", err)
	}
	b, err = beta.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Spec.IgnoredPodSelector == nil || b.Spec.IgnoredPodSelector.MatchLabels["canary"] != "true" || b.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("after the v1alpha1 update, v1beta1 spec %+v: want maxUnavailable 1 and the ignoredPodSelector kept", b.Spec)
	}

	b.Status = policyv1beta1.PodUnavailableBudgetStatus{ObservedGeneration: b.Generation, UnavailableAllowed: 1, CurrentAvailable: 4,
		DesiredAvailable: 3, TotalReplicas: 5, UnavailablePods: map[string]metav1.Time{"web-0": metav1.Now().Rfc3339Copy()}}
	if _, err := beta.UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("v1beta1 status update: %v", err)
	}
	a, err = alpha.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := a.Status; st.UnavailableAllowed != 1 || st.CurrentAvailable != 4 || st.DesiredAvailable != 3 || st.TotalReplicas != 5 || len(st.UnavailablePods) != 1 {
		t.Errorf("v1alpha1 status %+v, want what v1beta1 wrote", st)
	}
}

// TestPodUnavailableBudgetValidation: what OpenKruise's webhook refuses is a 422 naming the field
// (at v1alpha1, the annotation that holds it), and selector and targetRef cannot change.
func TestPodUnavailableBudgetValidation(t *testing.T) {
	s, ctx := parallelServer(t)
	alpha := s.Client.PolicyV1alpha1().PodUnavailableBudgets("default")
	expectInvalidCreates(t, ctx, "PodUnavailableBudget", func() *policyv1alpha1.PodUnavailableBudget { return newPUBV1alpha1("bad") }, alpha.Create,
		[]invalidCase[*policyv1alpha1.PodUnavailableBudget]{
			{"unknown operation", func(p *policyv1alpha1.PodUnavailableBudget) {
				p.Annotations = map[string]string{policyv1alpha1.PubProtectOperationAnnotation: "DELETE,REBOOT"}
			}, []string{"metadata.annotations[kruise.io/pub-protect-operations]"}},
			{"total not a number", func(p *policyv1alpha1.PodUnavailableBudget) {
				p.Annotations = map[string]string{policyv1alpha1.PubProtectTotalReplicasAnnotation: "five"}
			}, []string{"metadata.annotations[pub.kruise.io/protect-total-replicas]"}},
			{"total zero", func(p *policyv1alpha1.PodUnavailableBudget) {
				p.Annotations = map[string]string{policyv1alpha1.PubProtectTotalReplicasAnnotation: "0"}
			}, []string{"metadata.annotations[pub.kruise.io/protect-total-replicas]"}},
			{"selector and targetRef", func(p *policyv1alpha1.PodUnavailableBudget) {
				p.Spec.TargetReference = &policyv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web"}
			}, []string{"spec.targetRef"}},
			{"neither selector nor targetRef", func(p *policyv1alpha1.PodUnavailableBudget) { p.Spec.Selector = nil }, []string{"spec.selector"}},
			{"empty selector", func(p *policyv1alpha1.PodUnavailableBudget) { p.Spec.Selector = &metav1.LabelSelector{} }, []string{"spec.selector"}},
			{"targetRef without kind", func(p *policyv1alpha1.PodUnavailableBudget) {
				p.Spec.Selector = nil
				p.Spec.TargetReference = &policyv1alpha1.TargetReference{APIVersion: "apps/v1", Name: "web"}
			}, []string{"spec.targetRef.kind"}},
			{"no budget", func(p *policyv1alpha1.PodUnavailableBudget) { p.Spec.MaxUnavailable = nil }, []string{"spec.maxUnavailable"}},
			{"both budgets", func(p *policyv1alpha1.PodUnavailableBudget) { p.Spec.MinAvailable = ptr.To(intstr.FromInt32(1)) }, []string{"spec.minAvailable"}},
			{"over 100%", func(p *policyv1alpha1.PodUnavailableBudget) {
				p.Spec.MaxUnavailable = ptr.To(intstr.FromString("150%"))
			}, []string{"spec.maxUnavailable"}},
		})

	beta := s.Client.PolicyV1beta1().PodUnavailableBudgets("default")
	dup := &policyv1beta1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Name: "dup"}, Spec: policyv1beta1.PodUnavailableBudgetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "dup"}}, MinAvailable: ptr.To(intstr.FromInt32(1)),
		ProtectOperations: []policyv1beta1.PubOperation{"DELETE", "DELETE"}}}
	_, err := beta.Create(ctx, dup, metav1.CreateOptions{})
	expectInvalid(t, err, "spec.protectOperations[1]")

	created, err := alpha.Create(ctx, newPUBV1alpha1("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Spec.Selector.MatchLabels["app"] = "other"
	_, err = alpha.Update(ctx, created, metav1.UpdateOptions{})
	expectInvalid(t, err, "spec.selector")
	if err != nil && !strings.Contains(err.Error(), "cannot be changed") {
		t.Errorf("the refusal does not say why: %v", err)
	}
	if _, err := alpha.Get(ctx, "bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused create stored something: %v", err)
	}
}

// TestPodUnavailableBudgetConflict: a Pod may be guarded by one budget only, as OpenKruise's
// webhook holds: a budget whose selector overlaps another's of the namespace, or that names the
// same workload, is refused with a 422 naming the other; one in another namespace, or over other
// Pods, is not.
func TestPodUnavailableBudgetConflict(t *testing.T) {
	s, ctx := parallelServer(t)
	pubs := s.Client.PolicyV1alpha1().PodUnavailableBudgets("default")
	if _, err := pubs.Create(ctx, newPUBV1alpha1("web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	byRef := newPUBV1alpha1("by-ref")
	byRef.Spec.Selector = nil
	byRef.Spec.TargetReference = &policyv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web"}
	if _, err := pubs.Create(ctx, byRef, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The plugin reads the budgets from this server's informer: a dry run until it has seen both.
	dup := newPUBV1alpha1("web-again")
	dup.Spec.Selector.MatchLabels["app"] = "web"
	refDup := byRef.DeepCopy()
	refDup.Name = "by-ref-again"
	refDup.Spec.TargetReference.APIVersion = "apps.kruise.io/v1beta1"
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, e1 := pubs.Create(ctx, dup, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		_, e2 := pubs.Create(ctx, refDup, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(e1) && apierrors.IsInvalid(e2), nil
	})
	if err != nil {
		t.Fatalf("the conflicting budgets were never refused: %v", err)
	}
	_, err = pubs.Create(ctx, dup, metav1.CreateOptions{})
	expectInvalid(t, err, "spec.selector")
	if !strings.Contains(err.Error(), "PodUnavailableBudget web,") {
		t.Errorf("the refusal does not name the other budget: %v", err)
	}
	_, err = pubs.Create(ctx, refDup, metav1.CreateOptions{})
	expectInvalid(t, err, "spec.targetRef")

	other := newPUBV1alpha1("db")
	if _, err := pubs.Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Errorf("a budget over other Pods: %v", err)
	}
	elsewhere := newPUBV1alpha1("web")
	if _, err := s.Client.PolicyV1alpha1().PodUnavailableBudgets("kube-public").Create(ctx, elsewhere, metav1.CreateOptions{}); err != nil {
		t.Errorf("the same budget in another namespace: %v", err)
	}
}
