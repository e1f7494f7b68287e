package v1beta1

import (
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

const (
	syncKey     = v1alpha1.ContainerRecreateRequestSyncContainerStatusesKey
	acquiredKey = v1alpha1.ContainerRecreateRequestUnreadyAcquiredKey
	fieldsKey   = v1alpha1.StatefulSetV1beta1FieldsAnnotation
)

func crrScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apps.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

func toV1beta1(t *testing.T, scheme *runtime.Scheme, hub *apps.ContainerRecreateRequest) *ContainerRecreateRequest {
	t.Helper()
	out := &ContainerRecreateRequest{}
	if err := scheme.Convert(hub, out, nil); err != nil {
		t.Fatalf("converting to v1beta1: %v", err)
	}
	return out
}

func toHub(t *testing.T, scheme *runtime.Scheme, in *ContainerRecreateRequest) *apps.ContainerRecreateRequest {
	t.Helper()
	out := &apps.ContainerRecreateRequest{}
	if err := scheme.Convert(in, out, nil); err != nil {
		t.Fatalf("converting to the hub: %v", err)
	}
	return out
}

// TestCRRAnnotationsBecomeStatus: what the controller writes at v1alpha1 (the two annotations) is
// status.containerStatusSnapshot and the PreRecreateGrace condition at v1beta1, as OpenKruise
// converts, without the annotations; and it converts back to the very annotations.
func TestCRRAnnotationsBecomeStatus(t *testing.T) {
	scheme := crrScheme(t)
	hub := &apps.ContainerRecreateRequest{ObjectMeta: metav1.ObjectMeta{Name: "r", Annotations: map[string]string{
		syncKey:     `[{"name":"main","ready":true,"restartCount":2,"containerID":"containerd://abc"},{"name":"side","ready":false,"restartCount":0}]`,
		acquiredKey: "2026-11-27T10:00:05Z",
		"other":     "kept",
	}}}
	beta := toV1beta1(t, scheme, hub)
	wantSnapshot := []ContainerRecreateRequestSyncContainerStatus{
		{Name: "main", Ready: true, RestartCount: 2, ContainerID: "containerd://abc"},
		{Name: "side"},
	}
	if !apiequality.Semantic.DeepEqual(beta.Status.ContainerStatusSnapshot, wantSnapshot) {
		t.Errorf("containerStatusSnapshot: %s", diff.Diff(wantSnapshot, beta.Status.ContainerStatusSnapshot))
	}
	wantConditions := []metav1.Condition{{Type: "PreRecreateGrace", Status: metav1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(time.Date(2026, 11, 27, 10, 0, 5, 0, time.UTC)),
		Reason:             "PreRecreateGrace", Message: "Pod has been forced to not-ready for unreadyGracePeriodSeconds drain"}}
	if !apiequality.Semantic.DeepEqual(beta.Status.Conditions, wantConditions) {
		t.Errorf("conditions: %s", diff.Diff(wantConditions, beta.Status.Conditions))
	}
	if want := map[string]string{"other": "kept"}; !apiequality.Semantic.DeepEqual(beta.Annotations, want) {
		t.Errorf("v1beta1 annotations %v, want %v", beta.Annotations, want)
	}
	if back := toHub(t, scheme, beta); !apiequality.Semantic.DeepEqual(back, hub) {
		t.Errorf("back to the hub: %s", diff.Diff(hub, back))
	}
}

// TestCRRForeignAnnotationsStay: annotation values this server does not write (not canonical JSON,
// a time not in UTC) stay annotations at v1beta1, unchanged, and come back as they were.
func TestCRRForeignAnnotationsStay(t *testing.T) {
	scheme := crrScheme(t)
	for _, annotations := range []map[string]string{
		{syncKey: `[ {"name":"main"} ]`},
		{syncKey: `not json`},
		{syncKey: `null`},
		{acquiredKey: "2026-11-27T12:00:05+02:00"},
		{acquiredKey: "yes"},
	} {
		hub := &apps.ContainerRecreateRequest{ObjectMeta: metav1.ObjectMeta{Name: "r", Annotations: annotations}}
		beta := toV1beta1(t, scheme, hub)
		if beta.Status.ContainerStatusSnapshot != nil || beta.Status.Conditions != nil || !apiequality.Semantic.DeepEqual(beta.Annotations, annotations) {
			t.Errorf("%v at v1beta1: annotations %v, snapshot %v, conditions %v; want the annotations alone",
				annotations, beta.Annotations, beta.Status.ContainerStatusSnapshot, beta.Status.Conditions)
		}
		if back := toHub(t, scheme, beta); !apiequality.Semantic.DeepEqual(back, hub) {
			t.Errorf("%v back to the hub: %s", annotations, diff.Diff(hub, back))
		}
	}
}

// TestCRRConditionsRideInV1beta1Fields: conditions the unready-acquired annotation cannot hold
// travel in inplace.dev/v1beta1-fields; the annotation still says when the grace was acquired, and
// where a v1alpha1 writer changed the annotation beside them, the annotation wins for
// PreRecreateGrace while the other conditions stay.
func TestCRRConditionsRideInV1beta1Fields(t *testing.T) {
	scheme := crrScheme(t)
	at := metav1.NewTime(time.Date(2026, 11, 27, 10, 0, 5, 0, time.UTC))
	other := metav1.Condition{Type: "Custom", Status: metav1.ConditionFalse, LastTransitionTime: at, Reason: "Because", Message: "m"}
	grace := metav1.Condition{Type: "PreRecreateGrace", Status: metav1.ConditionTrue, LastTransitionTime: at, Reason: "Mine", ObservedGeneration: 3}
	beta := &ContainerRecreateRequest{ObjectMeta: metav1.ObjectMeta{Name: "r"},
		Status: ContainerRecreateRequestStatus{Conditions: []metav1.Condition{other, grace}}}
	hub := toHub(t, scheme, beta)
	if got := hub.Annotations[acquiredKey]; got != "2026-11-27T10:00:05Z" {
		t.Errorf("unready-acquired annotation %q, want the grace condition's time", got)
	}
	if hub.Annotations[fieldsKey] == "" {
		t.Errorf("no %s annotation for conditions the unready-acquired annotation cannot hold", fieldsKey)
	}
	if back := toV1beta1(t, scheme, hub); !apiequality.Semantic.DeepEqual(back, beta) {
		t.Errorf("back to v1beta1: %s", diff.Diff(beta, back))
	}

	// A v1alpha1 writer removes the annotation: PreRecreateGrace goes, Custom stays.
	removed := hub.DeepCopy()
	delete(removed.Annotations, acquiredKey)
	if got, want := toV1beta1(t, scheme, removed).Status.Conditions, []metav1.Condition{other}; !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("annotation removed at v1alpha1: conditions %s", diff.Diff(want, got))
	}
	// ... or sets another time: the condition is the annotation's.
	moved := hub.DeepCopy()
	moved.Annotations[acquiredKey] = "2026-11-27T11:00:00Z"
	got := toV1beta1(t, scheme, moved).Status.Conditions
	if len(got) != 2 || got[0].Type != "Custom" || got[1].Reason != "PreRecreateGrace" || !got[1].LastTransitionTime.Equal(&metav1.Time{Time: time.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC)}) {
		t.Errorf("annotation changed at v1alpha1: conditions %+v; want Custom and the annotation's PreRecreateGrace", got)
	}
}
