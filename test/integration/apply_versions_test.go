package integration

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	betaac "github.com/inplace-dev/inplace/pkg/generated/applyconfiguration/apps/v1beta1"
	"github.com/inplace-dev/inplace/test/integration/framework"
)

// TestServerSideApplyResetFieldsAtV1beta1: an apply at v1beta1, the version a DaemonSet is
// stored and read at, owns only what it may write: the main resource's apply does not own the
// status it sent (the server drops it), nor the /status apply the spec. Reset fields are declared
// per served version; a version left out lets the manager own fields the server then resets, and
// a later apply of them by their real owner conflicts.
func TestServerSideApplyResetFieldsAtV1beta1(t *testing.T) {
	t.Parallel()
	s := framework.StartServer(t)
	ctx := testContext(t)
	c := s.Client.AppsV1beta1().DaemonSets("default")
	labels := map[string]string{"app": "agent"}
	apply := betaac.DaemonSet("agent", "default").
		WithSpec(betaac.DaemonSetSpec().
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).
				WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("main").WithImage("inplace.local/app:v1"))))).
		WithStatus(betaac.DaemonSetStatus().WithNumberReady(9))
	created, err := c.Apply(ctx, apply, metav1.ApplyOptions{FieldManager: managerA})
	if err != nil {
		t.Fatalf("apply by %s: %v", managerA, err)
	}
	if created.Status.NumberReady != 0 {
		t.Errorf("apply through the main resource stored status.numberReady %d", created.Status.NumberReady)
	}
	if !ownsField(created.ManagedFields, managerA, metav1.ManagedFieldsOperationApply, "f:spec", "f:selector") {
		t.Fatalf("%s does not own spec.selector: %s", managerA, managedFieldsOf(created.ManagedFields, managerA, metav1.ManagedFieldsOperationApply))
	}
	if ownsField(created.ManagedFields, managerA, metav1.ManagedFieldsOperationApply, "f:status") {
		t.Errorf("%s owns the status the server dropped: %s", managerA, managedFieldsOf(created.ManagedFields, managerA, metav1.ManagedFieldsOperationApply))
	}

	statusApply := betaac.DaemonSet("agent", "default").
		WithSpec(betaac.DaemonSetSpec().WithMinReadySeconds(7)).
		WithStatus(betaac.DaemonSetStatus().WithObservedGeneration(1))
	withStatus, err := c.ApplyStatus(ctx, statusApply, metav1.ApplyOptions{FieldManager: "controller", Force: true})
	if err != nil {
		t.Fatalf("apply status: %v", err)
	}
	if withStatus.Spec.MinReadySeconds != 0 || withStatus.Status.ObservedGeneration != 1 {
		t.Errorf("apply status: minReadySeconds %d (want the stored 0), observedGeneration %d (want 1)",
			withStatus.Spec.MinReadySeconds, withStatus.Status.ObservedGeneration)
	}
	if ownsField(withStatus.ManagedFields, "controller", metav1.ManagedFieldsOperationApply, "f:spec") {
		t.Errorf("the /status apply owns the spec the server kept: %s", managedFieldsOf(withStatus.ManagedFields, "controller", metav1.ManagedFieldsOperationApply))
	}
}
