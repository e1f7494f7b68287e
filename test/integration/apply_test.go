package integration

import (
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	appsac "github.com/inplace-dev/inplace/pkg/generated/applyconfiguration/apps/v1alpha1"
)

const (
	managerA = "manager-a"
	managerB = "manager-b"
)

// webApply is manager A's CloneSet: replicas and the image, with what validation requires.
func webApply(replicas int32, image string) *appsac.CloneSetApplyConfiguration {
	labels := map[string]string{"app": "web"}
	return appsac.CloneSet("web", "default").WithSpec(appsac.CloneSetSpec().
		WithReplicas(replicas).
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
		WithTemplate(corev1ac.PodTemplateSpec().
			WithLabels(labels).
			WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("main").WithImage(image)))))
}

func TestServerSideApply(t *testing.T) {
	s, ctx := parallelServer(t)
	c := s.Client.AppsV1alpha1().CloneSets("default")

	// Manager A creates the CloneSet by applying it; a status in the apply is not stored.
	first := webApply(2, "inplace.local/app:v1").WithStatus(appsac.CloneSetStatus().WithReplicas(9))
	created, err := c.Apply(ctx, first, metav1.ApplyOptions{FieldManager: managerA})
	if err != nil {
		t.Fatalf("apply by %s: %v", managerA, err)
	}
	if *created.Spec.Replicas != 2 || created.Spec.Template.Spec.Containers[0].Image != "inplace.local/app:v1" {
		t.Fatalf("apply by %s: spec not stored: %+v", managerA, created.Spec)
	}
	if created.Status.Replicas != 0 {
		t.Errorf("apply through the main resource stored status.replicas %d", created.Status.Replicas)
	}
	if created.Generation != 1 {
		t.Errorf("apply create: want generation 1, got %d", created.Generation)
	}
	// Defaults are applied to applied objects too.
	if created.Spec.RevisionHistoryLimit == nil || *created.Spec.RevisionHistoryLimit != 10 {
		t.Errorf("apply create: revisionHistoryLimit not defaulted: %v", created.Spec.RevisionHistoryLimit)
	}
	if !ownsField(created.ManagedFields, managerA, metav1.ManagedFieldsOperationApply, "f:spec", "f:replicas") {
		t.Fatalf("%s does not own spec.replicas: %v", managerA, managers(created.ManagedFields))
	}

	// Manager B applies only a label: both managers are recorded, A's fields untouched.
	labelled, err := c.Apply(ctx, appsac.CloneSet("web", "default").WithLabels(map[string]string{"team": "b"}),
		metav1.ApplyOptions{FieldManager: managerB})
	if err != nil {
		t.Fatalf("apply by %s: %v", managerB, err)
	}
	if labelled.Labels["team"] != "b" || *labelled.Spec.Replicas != 2 || labelled.Spec.Template.Spec.Containers[0].Image != "inplace.local/app:v1" {
		t.Fatalf("apply by %s: want label team=b and A's spec kept, got labels %v spec %+v", managerB, labelled.Labels, labelled.Spec)
	}
	if labelled.Generation != 1 {
		t.Errorf("a label apply bumped the generation to %d", labelled.Generation)
	}
	got := managers(labelled.ManagedFields)
	for _, want := range []string{managerA + "/Apply", managerB + "/Apply"} {
		if !slices.Contains(got, want) {
			t.Errorf("managedFields: want %s, got %v", want, got)
		}
	}
	if !ownsField(labelled.ManagedFields, managerB, metav1.ManagedFieldsOperationApply, "f:metadata", "f:labels", "f:team") {
		t.Errorf("%s does not own metadata.labels.team: %s", managerB, managedFieldsOf(labelled.ManagedFields, managerB, metav1.ManagedFieldsOperationApply))
	}
	if ownsField(labelled.ManagedFields, managerB, metav1.ManagedFieldsOperationApply, "f:spec") {
		t.Errorf("%s owns spec fields it never applied", managerB)
	}

	// B applies a different replicas value without force: 409 Conflict naming A and the field.
	conflicting := appsac.CloneSet("web", "default").WithLabels(map[string]string{"team": "b"}).
		WithSpec(appsac.CloneSetSpec().WithReplicas(5))
	_, err = c.Apply(ctx, conflicting, metav1.ApplyOptions{FieldManager: managerB})
	if !apierrors.IsConflict(err) {
		t.Fatalf("conflicting apply without force: want 409 Conflict, got %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, managerA) || !strings.Contains(msg, ".spec.replicas") {
		t.Errorf("the conflict should name %s and .spec.replicas: %s", managerA, msg)
	}
	unchanged, err := c.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *unchanged.Spec.Replicas != 2 || unchanged.ResourceVersion != labelled.ResourceVersion {
		t.Errorf("the refused apply changed the object: replicas %d, resourceVersion %s -> %s",
			*unchanged.Spec.Replicas, labelled.ResourceVersion, unchanged.ResourceVersion)
	}

	// Applying the same value as A is no conflict (shared ownership).
	if _, err := c.Apply(ctx, appsac.CloneSet("web", "default").WithLabels(map[string]string{"team": "b"}).
		WithSpec(appsac.CloneSetSpec().WithReplicas(2)), metav1.ApplyOptions{FieldManager: managerB}); err != nil {
		t.Fatalf("apply of the same replicas value: %v", err)
	}

	// With force, B wins: replicas 5, and the field moves from A to B.
	forced, err := c.Apply(ctx, conflicting, metav1.ApplyOptions{FieldManager: managerB, Force: true})
	if err != nil {
		t.Fatalf("forced apply: %v", err)
	}
	if *forced.Spec.Replicas != 5 {
		t.Errorf("forced apply: want replicas 5, got %d", *forced.Spec.Replicas)
	}
	if forced.Generation != 2 {
		t.Errorf("forced apply: want generation 2, got %d", forced.Generation)
	}
	if !ownsField(forced.ManagedFields, managerB, metav1.ManagedFieldsOperationApply, "f:spec", "f:replicas") {
		t.Errorf("after force, %s does not own spec.replicas: %s", managerB,
			managedFieldsOf(forced.ManagedFields, managerB, metav1.ManagedFieldsOperationApply))
	}
	if ownsField(forced.ManagedFields, managerA, metav1.ManagedFieldsOperationApply, "f:spec", "f:replicas") {
		t.Errorf("after force, %s still owns spec.replicas: %s", managerA,
			managedFieldsOf(forced.ManagedFields, managerA, metav1.ManagedFieldsOperationApply))
	}
	if !ownsField(forced.ManagedFields, managerA, metav1.ManagedFieldsOperationApply, "f:spec", "f:template") {
		t.Errorf("after force, %s lost spec.template, which B never touched", managerA)
	}

	// Now A's own replicas value conflicts with B.
	_, err = c.Apply(ctx, webApply(2, "inplace.local/app:v2"), metav1.ApplyOptions{FieldManager: managerA})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), managerB) {
		t.Errorf("A re-applying replicas 2 after B's force: want 409 Conflict naming %s, got %v", managerB, err)
	}
	// A changes only the image (leaving replicas to B): accepted, generation 3.
	imageOnly := appsac.CloneSet("web", "default").WithSpec(appsac.CloneSetSpec().
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"app": "web"})).
		WithTemplate(corev1ac.PodTemplateSpec().
			WithLabels(map[string]string{"app": "web"}).
			WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("main").WithImage("inplace.local/app:v2")))))
	updated, err := c.Apply(ctx, imageOnly, metav1.ApplyOptions{FieldManager: managerA})
	if err != nil {
		t.Fatalf("image apply by %s: %v", managerA, err)
	}
	if updated.Spec.Template.Spec.Containers[0].Image != "inplace.local/app:v2" || *updated.Spec.Replicas != 5 || updated.Generation != 3 {
		t.Errorf("image apply: want image v2, replicas 5, generation 3; got %s, %d, %d",
			updated.Spec.Template.Spec.Containers[0].Image, *updated.Spec.Replicas, updated.Generation)
	}

	// Status goes through ApplyStatus, and a spec in it is ignored.
	statusApply := appsac.CloneSet("web", "default").
		WithSpec(appsac.CloneSetSpec().WithReplicas(42)).
		WithStatus(appsac.CloneSetStatus().WithReplicas(3).WithReadyReplicas(3).WithObservedGeneration(3))
	withStatus, err := c.ApplyStatus(ctx, statusApply, metav1.ApplyOptions{FieldManager: "controller", Force: true})
	if err != nil {
		t.Fatalf("apply status: %v", err)
	}
	if withStatus.Status.Replicas != 3 || withStatus.Status.ReadyReplicas != 3 || withStatus.Status.ObservedGeneration != 3 {
		t.Errorf("apply status: status not stored: %+v", withStatus.Status)
	}
	if *withStatus.Spec.Replicas != 5 || withStatus.Generation != 3 {
		t.Errorf("apply status changed the spec: replicas %d, generation %d", *withStatus.Spec.Replicas, withStatus.Generation)
	}
	if !slices.Contains(managers(withStatus.ManagedFields), "controller/Apply/status") {
		t.Errorf("managedFields: want controller/Apply/status, got %v", managers(withStatus.ManagedFields))
	}
}
