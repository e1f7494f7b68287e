package lifecycle

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/podreadiness"
)

const hookLabel = "example.io/hold"

var testNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func holdHook(markNotReady bool) *pub.LifecycleHook {
	return &pub.LifecycleHook{LabelsHandler: map[string]string{hookLabel: "true"}, MarkPodNotReady: markNotReady}
}

// podAt is a scheduled Pod at revision in a lifecycle state.
func podAt(revision string, state pub.LifecycleStateType) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "ns", UID: "web-0-uid", Labels: map[string]string{
			appsv1.ControllerRevisionHashLabelKey: revision, pub.LifecycleStateKey: string(state)}},
		Spec: corev1.PodSpec{NodeName: "node-1"},
	}
}

// An Updating Pod whose update is recorded completed stays Updating until InPlaceUpdateReady is
// True again: the lifecycle patch would otherwise race the condition write.
func TestUpdatingWaitsForInPlaceUpdateReady(t *testing.T) {
	pod := podAt("rev-new", pub.LifecycleStateUpdating)
	inplaceupdate.InjectReadinessGate(pod)
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse})
	if got := Next(nil, pod, "rev-new"); got != "" {
		t.Errorf("next state %q while InPlaceUpdateReady is False, want none", got)
	}
	pod.Status.Conditions[len(pod.Status.Conditions)-1].Status = corev1.ConditionTrue
	if got := Next(nil, pod, "rev-new"); got != pub.LifecycleStateNormal {
		t.Errorf("next state %q once InPlaceUpdateReady is True, want Normal", got)
	}
}

func TestNext(t *testing.T) {
	const upd = "rev-new"
	hook := holdHook(false)
	for _, tc := range []struct {
		name      string
		lifecycle *pub.Lifecycle
		state     pub.LifecycleStateType
		revision  string
		hookLabel bool
		want      pub.LifecycleStateType
		// unscheduled leaves spec.nodeName empty.
		unscheduled bool
	}{
		{"preparing normal without hook", nil, pub.LifecycleStatePreparingNormal, upd, false, pub.LifecycleStateNormal, false},
		{"preparing normal without hook, not scheduled", nil, pub.LifecycleStatePreparingNormal, upd, false, "", true},
		{"preparing normal, hook labels all there, not scheduled", &pub.Lifecycle{PreNormal: hook}, pub.LifecycleStatePreparingNormal, upd, true, pub.LifecycleStateNormal, true},
		{"preparing normal, hook labels missing", &pub.Lifecycle{PreNormal: hook}, pub.LifecycleStatePreparingNormal, upd, false, "", false},
		{"preparing normal, hook labels all there", &pub.Lifecycle{PreNormal: hook}, pub.LifecycleStatePreparingNormal, upd, true, pub.LifecycleStateNormal, false},
		{"updating, done, hook not re-armed", &pub.Lifecycle{InPlaceUpdate: hook}, pub.LifecycleStateUpdating, upd, false, pub.LifecycleStateUpdated, false},
		{"updating, done, hook re-armed", &pub.Lifecycle{InPlaceUpdate: hook}, pub.LifecycleStateUpdating, upd, true, pub.LifecycleStateNormal, false},
		{"updating, done, no hook", nil, pub.LifecycleStateUpdating, upd, false, pub.LifecycleStateNormal, false},
		{"updating, not done", &pub.Lifecycle{InPlaceUpdate: hook}, pub.LifecycleStateUpdating, "rev-old", false, "", false},
		{"preparing update, rolled back", &pub.Lifecycle{InPlaceUpdate: hook}, pub.LifecycleStatePreparingUpdate, upd, true, pub.LifecycleStateNormal, false},
		{"preparing update, old revision", &pub.Lifecycle{InPlaceUpdate: hook}, pub.LifecycleStatePreparingUpdate, "rev-old", false, "", false},
		{"updated, hook back", &pub.Lifecycle{InPlaceUpdate: hook}, pub.LifecycleStateUpdated, upd, true, pub.LifecycleStateNormal, false},
		{"updated, hook still off", &pub.Lifecycle{InPlaceUpdate: hook}, pub.LifecycleStateUpdated, upd, false, "", false},
		{"normal stays", &pub.Lifecycle{InPlaceUpdate: hook}, pub.LifecycleStateNormal, upd, true, "", false},
		{"preparing delete stays", &pub.Lifecycle{PreDelete: hook}, pub.LifecycleStatePreparingDelete, upd, false, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := podAt(tc.revision, tc.state)
			if tc.unscheduled {
				pod.Spec.NodeName = ""
			}
			if tc.hookLabel {
				pod.Labels[hookLabel] = "true"
			}
			if got := Next(tc.lifecycle, pod, upd); got != tc.want {
				t.Errorf("next state %q, want %q", got, tc.want)
			}
		})
	}
}

// Any one label (same value) or finalizer of a hook holds a Pod; all of them re-arm it.
func TestHooked(t *testing.T) {
	hook := &pub.LifecycleHook{LabelsHandler: map[string]string{"a": "1", "b": "2"}, FinalizersHandler: []string{"example.io/f"}}
	for _, tc := range []struct {
		name                string
		hook                *pub.LifecycleHook
		labels              map[string]string
		finalizers          []string
		wantHooked, wantAll bool
	}{
		{"no hook", nil, map[string]string{"a": "1"}, nil, false, false},
		{"nothing", hook, nil, nil, false, false},
		{"one label", hook, map[string]string{"a": "1"}, nil, true, false},
		{"label with another value", hook, map[string]string{"a": "x"}, nil, false, false},
		{"finalizer only", hook, nil, []string{"example.io/f"}, true, false},
		{"all", hook, map[string]string{"a": "1", "b": "2"}, []string{"example.io/f"}, true, true},
		{"empty hook", &pub.LifecycleHook{}, nil, nil, false, true},
	} {
		pod := podAt("r", pub.LifecycleStateNormal)
		for k, v := range tc.labels {
			pod.Labels[k] = v
		}
		pod.Finalizers = tc.finalizers
		if got := Hooked(tc.hook, pod); got != tc.wantHooked {
			t.Errorf("%s: hooked %v, want %v", tc.name, got, tc.wantHooked)
		}
		if got := AllHooked(tc.hook, pod); got != tc.wantAll {
			t.Errorf("%s: all hooked %v, want %v", tc.name, got, tc.wantAll)
		}
	}
}

func TestMarksPodNotReady(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    *pub.Lifecycle
		want bool
	}{
		{"no lifecycle", nil, false},
		{"hooks without markPodNotReady", &pub.Lifecycle{PreDelete: holdHook(false), PreNormal: holdHook(false)}, false},
		{"preDelete", &pub.Lifecycle{PreDelete: holdHook(true)}, true},
		{"inPlaceUpdate", &pub.Lifecycle{InPlaceUpdate: holdHook(true)}, true},
		{"preNormal", &pub.Lifecycle{PreNormal: holdHook(true)}, true},
	} {
		if got := MarksPodNotReady(tc.l); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Out of service in the states before and during a change, Preparing only while a hook holds it.
func TestStatesOutOfService(t *testing.T) {
	for _, tc := range []struct {
		state         pub.LifecycleStateType
		wantReady     corev1.ConditionStatus
		wantPreparing bool
	}{
		{"", corev1.ConditionTrue, false},
		{pub.LifecycleStatePreparingNormal, corev1.ConditionTrue, false},
		{pub.LifecycleStateNormal, corev1.ConditionTrue, false},
		{pub.LifecycleStatePreparingUpdate, corev1.ConditionFalse, true},
		{pub.LifecycleStateUpdating, corev1.ConditionFalse, false},
		{pub.LifecycleStateUpdated, corev1.ConditionTrue, false},
		{pub.LifecycleStatePreparingDelete, corev1.ConditionFalse, true},
	} {
		if got := KruisePodReadyFor(tc.state); got != tc.wantReady {
			t.Errorf("%q: KruisePodReady %s, want %s", tc.state, got, tc.wantReady)
		}
		if got := Preparing(podAt("r", tc.state)); got != tc.wantPreparing {
			t.Errorf("%q: preparing %v, want %v", tc.state, got, tc.wantPreparing)
		}
	}
}

func TestPatch(t *testing.T) {
	hook := &pub.LifecycleHook{LabelsHandler: map[string]string{hookLabel: "true"}, FinalizersHandler: []string{"example.io/f", "example.io/g"}}
	for _, tc := range []struct {
		name  string
		rearm *pub.LifecycleHook
		// oldTimestampLabel puts the timestamp where older inplace versions wrote it.
		oldTimestampLabel bool
		want              string
	}{
		{"state", nil, false,
			`{"metadata":{"annotations":{"lifecycle.apps.kruise.io/timestamp":"2026-01-02T03:04:05Z"},"labels":{"lifecycle.apps.kruise.io/state":"PreparingUpdate"},"uid":"web-0-uid"}}`},
		{"old timestamp label removed", nil, true,
			`{"metadata":{"annotations":{"lifecycle.apps.kruise.io/timestamp":"2026-01-02T03:04:05Z"},"labels":{"lifecycle.apps.kruise.io/state":"PreparingUpdate","lifecycle.apps.kruise.io/timestamp":null},"uid":"web-0-uid"}}`},
		{"hook re-armed, missing finalizers only", hook, false,
			`{"metadata":{"annotations":{"lifecycle.apps.kruise.io/timestamp":"2026-01-02T03:04:05Z"},"finalizers":["example.io/g"],"labels":{"example.io/hold":"true","lifecycle.apps.kruise.io/state":"PreparingUpdate"},"uid":"web-0-uid"}}`},
	} {
		pod := podAt("r", pub.LifecycleStateUpdated)
		pod.Finalizers = []string{"example.io/f"}
		if tc.oldTimestampLabel {
			pod.Labels[pub.LifecycleTimestampKey] = "x"
		}
		got, err := Patch(pod, pub.LifecycleStatePreparingUpdate, tc.rearm, testNow.In(time.FixedZone("x", 3600)))
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: patch %s (%v),\nwant %s", tc.name, got, err, tc.want)
		}
	}
}

// The lifecycle's hold on KruisePodReady follows the state and is written only when it changes.
func TestSyncKruisePodReady(t *testing.T) {
	pod := podAt("r", pub.LifecycleStateNormal)
	InjectKruisePodReadyGate(pod)
	InjectKruisePodReadyGate(pod)
	if len(pod.Spec.ReadinessGates) != 1 {
		t.Fatalf("readiness gates %v, want KruisePodReady once", pod.Spec.ReadinessGates)
	}
	client := fake.NewClientset(pod)
	for i, tc := range []struct {
		state     pub.LifecycleStateType
		wantWrite bool
		want      corev1.ConditionStatus
	}{
		{pub.LifecycleStateNormal, true, corev1.ConditionTrue}, // a new Pod gets it True
		{pub.LifecycleStateNormal, false, corev1.ConditionTrue},
		{pub.LifecycleStatePreparingDelete, true, corev1.ConditionFalse},
		{pub.LifecycleStatePreparingDelete, false, corev1.ConditionFalse},
		{pub.LifecycleStatePreparingNormal, true, corev1.ConditionTrue},
	} {
		wrote, err := SyncKruisePodReady(context.Background(), client.CoreV1(), pod, tc.state, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if pod, err = client.CoreV1().Pods("ns").Get(context.Background(), "web-0", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		c := podreadiness.Condition(pod)
		if wrote != tc.wantWrite || c == nil || c.Status != tc.want {
			t.Errorf("step %d (%s): wrote %v, condition %+v; want wrote %v, %s", i, tc.state, wrote, c, tc.wantWrite, tc.want)
		}
		if tc.want == corev1.ConditionFalse {
			var holders []podreadiness.Holder
			_ = json.Unmarshal([]byte(c.Message), &holders)
			if len(holders) != 1 || holders[0] != (podreadiness.Holder{UserAgent: podreadiness.UserAgentLifecycle, Key: string(tc.state)}) {
				t.Errorf("step %d: holders %v", i, holders)
			}
		}
	}
}

// Move patches only a change of state (or a hook to arm again), and keeps KruisePodReady in line.
func TestMove(t *testing.T) {
	pod := podAt("r", pub.LifecycleStateNormal)
	InjectKruisePodReadyGate(pod)
	client := fake.NewClientset(pod)
	moved, err := Move(context.Background(), client.CoreV1(), pod, pub.LifecycleStatePreparingDelete, nil, testNow)
	if err != nil || !moved {
		t.Fatalf("moved %v (%v), want a move", moved, err)
	}
	got, _ := client.CoreV1().Pods("ns").Get(context.Background(), "web-0", metav1.GetOptions{})
	if State(got) != pub.LifecycleStatePreparingDelete || podreadiness.Condition(got) == nil || podreadiness.Condition(got).Status != corev1.ConditionFalse {
		t.Errorf("pod after the move: state %s, KruisePodReady %+v", State(got), podreadiness.Condition(got))
	}
	client.ClearActions()
	if moved, err := Move(context.Background(), client.CoreV1(), got, pub.LifecycleStatePreparingDelete, nil, testNow); err != nil || moved || len(client.Actions()) != 0 {
		t.Errorf("moved %v (%v) with %d requests, want nothing done for the same state", moved, err, len(client.Actions()))
	}
	if moved, err := Move(context.Background(), client.CoreV1(), podAt("r", pub.LifecycleStateNormal), pub.LifecycleStateNormal, holdHook(false), testNow); err != nil || !moved {
		t.Errorf("moved %v (%v), want a hook armed again", moved, err)
	}
	gone := podAt("r", pub.LifecycleStateNormal)
	gone.Name = "gone"
	if moved, err := Move(context.Background(), client.CoreV1(), gone, pub.LifecycleStatePreparingDelete, nil, testNow); err != nil || moved {
		t.Errorf("a Pod gone: moved %v (%v), want no move and no error", moved, err)
	}
}

func TestWaitsForDeletion(t *testing.T) {
	l := &pub.Lifecycle{PreDelete: holdHook(false)}
	held := podAt("r", pub.LifecycleStatePreparingDelete)
	held.Labels[hookLabel] = "true"
	released := podAt("r", pub.LifecycleStatePreparingDelete)
	normal := podAt("r", pub.LifecycleStateNormal)
	normal.Labels[hookLabel] = "true"
	if !WaitsForDeletion(l, held) || WaitsForDeletion(l, released) || WaitsForDeletion(l, normal) || WaitsForDeletion(nil, held) {
		t.Errorf("held %v released %v normal %v no hook %v; want only held", WaitsForDeletion(l, held),
			WaitsForDeletion(l, released), WaitsForDeletion(l, normal), WaitsForDeletion(nil, held))
	}
}
