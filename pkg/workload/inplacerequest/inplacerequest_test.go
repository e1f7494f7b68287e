package inplacerequest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/workload/history"
)

func revision(t *testing.T, name, image string) *appsv1.ControllerRevision {
	t.Helper()
	data, err := history.TemplateData(&corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}}})
	if err != nil {
		t.Fatal(err)
	}
	return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: runtime.RawExtension{Raw: data}}
}

func TestDecideAndBody(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: "r1", "pod-template-hash": "r1"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "app:v1"}}},
	}
	revisions := map[string]*appsv1.ControllerRevision{"r1": revision(t, "r1", "app:v1")}
	spec, reason, err := Decide(pod, revisions, revision(t, "r2", "app:v2"))
	if err != nil || spec == nil || reason != "" {
		t.Fatalf("image change: %v %q %v, want an in-place spec", spec, reason, err)
	}
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	body := Body(pod, spec, "r2", Options{GracePeriodSeconds: 5, RevisionLabels: []string{"pod-template-hash"}, Now: now})
	if body.Spec.Revision != "r2" || body.Spec.GracePeriodSeconds != 5 || len(body.Spec.Containers) != 1 || body.Spec.Containers[0].Image != "app:v2" ||
		body.Spec.Metadata.Labels["pod-template-hash"] != "r2" || body.Spec.Metadata.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateUpdating) {
		t.Errorf("body %+v %+v", body.Spec, body.Spec.Metadata)
	}
	if body.Spec.CompletionLabels != nil {
		t.Errorf("no state after the update asked for, completion labels %v", body.Spec.CompletionLabels)
	}
	if b := Body(pod, spec, "r2", Options{Now: now, StateAfterUpdate: pub.LifecycleStateNormal}); b.Spec.CompletionLabels[pub.LifecycleStateKey] != string(pub.LifecycleStateNormal) {
		t.Errorf("StateAfterUpdate Normal: completion labels %v", b.Spec.CompletionLabels)
	}
	if b := Body(pod, spec, "r2", Options{NoLifecycle: true, StateAfterUpdate: pub.LifecycleStateNormal}); b.Spec.Metadata != nil || b.Spec.CompletionLabels != nil {
		t.Errorf("NoLifecycle body has metadata %+v, completion labels %v", b.Spec.Metadata, b.Spec.CompletionLabels)
	}
	pod.Labels[appsv1.ControllerRevisionHashLabelKey] = "gone"
	if spec, reason, err := Decide(pod, revisions, revision(t, "r2", "app:v2")); spec != nil || !strings.Contains(reason, "unknown") || err != nil {
		t.Errorf("unknown revision: %v %q %v, want a reason", spec, reason, err)
	}
}

// A change of the stay-in-service containers alone is sent to stay in service, without the grace
// period; a change that also touches another container is not.
func TestBodyStaysInService(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "app:v1"}, {Name: "logger", Image: "log:v1"}}},
	}
	o := Options{GracePeriodSeconds: 5, NoLifecycle: true, StayInServiceContainers: []string{"logger"}}
	for _, tc := range []struct {
		name  string
		spec  inplaceupdate.UpdateSpec
		stays bool
	}{
		{"logger image", inplaceupdate.UpdateSpec{ContainerImages: map[string]string{"logger": "log:v2"}}, true},
		{"logger env from metadata", inplaceupdate.UpdateSpec{ContainerRefMetadata: map[string]metav1.ObjectMeta{"logger": {Labels: map[string]string{"a": "b"}}}}, true},
		{"logger and main images", inplaceupdate.UpdateSpec{ContainerImages: map[string]string{"logger": "log:v2", "main": "app:v2"}}, false},
		{"main resources", inplaceupdate.UpdateSpec{ContainerImages: map[string]string{"logger": "log:v2"},
			ContainerResources: map[string]corev1.ResourceRequirements{"main": {}}}, false},
		{"labels only", inplaceupdate.UpdateSpec{Metadata: &inplaceupdate.MetadataChange{Labels: map[string]string{"a": "b"}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := Body(pod, &tc.spec, "r2", o)
			if body.Spec.StayInService != tc.stays {
				t.Errorf("stayInService %v, want %v", body.Spec.StayInService, tc.stays)
			}
			if want := map[bool]int32{true: 0, false: 5}[tc.stays]; body.Spec.GracePeriodSeconds != want {
				t.Errorf("gracePeriodSeconds %d, want %d", body.Spec.GracePeriodSeconds, want)
			}
		})
	}
}

// A 429 from pods/inplaceupdate is a budget wait; BudgetWaits tells it from the other errors of a
// sync, nested joins too.
func TestBudgetWaits(t *testing.T) {
	refused := apierrors.NewTooManyRequests("Cannot update pod a now: PodUnavailableBudget pub allows no more unavailable Pods", 1)
	other := errors.New("boom")
	err := errors.Join(fmt.Errorf("updating pod a in place: %w", AsBudgetWait("a", refused)),
		errors.Join(other, AsBudgetWait("b", apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "b", other))))
	waits, rest := BudgetWaits(err)
	if len(waits) != 1 || waits[0].Pod != "a" || !strings.Contains(waits[0].Message, "PodUnavailableBudget pub") {
		t.Errorf("waits %v, want pod a's", waits)
	}
	if rest == nil || !strings.Contains(rest.Error(), "boom") || strings.Contains(rest.Error(), "PodUnavailableBudget") {
		t.Errorf("rest %v, want the two other errors", rest)
	}
	if waits, rest := BudgetWaits(nil); waits != nil || rest != nil {
		t.Errorf("BudgetWaits(nil) = %v, %v", waits, rest)
	}
}

// BudgetCondition holds while budgets hold updates back, names the first Pod and counts the
// others; it drops only after a rolling update ran with nothing held back.
func TestBudgetCondition(t *testing.T) {
	refused := func(pod string) error {
		return AsBudgetWait(pod, apierrors.NewTooManyRequests("PodUnavailableBudget pub allows no more unavailable Pods", 1))
	}
	for _, tc := range []struct {
		name       string
		updated    bool
		err        error
		hold, drop bool
		message    string
	}{
		{"two held back", true, errors.Join(refused("a"), refused("b")), true, false, "pod a: PodUnavailableBudget pub allows no more unavailable Pods (and 1 more pods)"},
		{"one held back, another error", true, errors.Join(errors.New("boom"), refused("a")), true, false, "pod a: PodUnavailableBudget pub allows no more unavailable Pods"},
		{"update ran, nothing held back", true, errors.New("boom"), false, true, ""},
		{"update did not run", false, nil, false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			message, hold, drop := BudgetCondition(tc.updated, tc.err)
			if message != tc.message || hold != tc.hold || drop != tc.drop {
				t.Errorf("BudgetCondition = %q, %v, %v; want %q, %v, %v", message, hold, drop, tc.message, tc.hold, tc.drop)
			}
		})
	}
}
