package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// cloneSetStatus reads the CloneSet's status once it has observed its generation.
func cloneSetStatus(ctx context.Context, cs *v1alpha1.CloneSet) (*v1alpha1.CloneSetStatus, error) {
	got, err := inplace.AppsV1alpha1().CloneSets(cs.Namespace).Get(ctx, cs.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if got.Status.ObservedGeneration != got.Generation {
		return nil, fmt.Errorf("status of generation %d, want %d", got.Status.ObservedGeneration, got.Generation)
	}
	return &got.Status, nil
}

// TestCloneSetPreparingNormalUntilScheduled (OpenKruise "creates with unschedulable scheduler"):
// a Pod that is not scheduled stays PreparingNormal, with the lifecycle timestamp annotation, and
// is neither ready nor available.
func TestCloneSetPreparingNormalUntilScheduled(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx, "clone-unsched")
	cs := newUpdateCloneSet(t, ctx, ns, 1, v1alpha1.CloneSetUpdateStrategy{}, func(cs *v1alpha1.CloneSet) {
		cs.Spec.Template.Spec.SchedulerName = "no-such-scheduler"
	})
	var pod *corev1.Pod
	poll(t, ctx, 30*time.Second, "the CloneSet's Pod created", func(ctx context.Context) (bool, error) {
		pods, err := cloneSetPods(ctx, cs)
		for _, p := range pods {
			pod = p
		}
		return pod != nil, err
	})
	if _, err := time.Parse(time.RFC3339, pod.Annotations[pub.LifecycleTimestampKey]); err != nil {
		t.Errorf("annotation %s = %q: want an RFC 3339 time", pub.LifecycleTimestampKey, pod.Annotations[pub.LifecycleTimestampKey])
	}
	// It stays so: OpenKruise's scenario watches it for 10 s; 5 s of syncs here.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if s := p.Labels[pub.LifecycleStateKey]; s != string(pub.LifecycleStatePreparingNormal) {
			t.Fatalf("unscheduled Pod in state %q, want PreparingNormal", s)
		}
		if st, err := cloneSetStatus(ctx, cs); err == nil && (st.AvailableReplicas != 0 || st.ReadyReplicas != 0) {
			t.Fatalf("status %+v: an unscheduled Pod counted ready or available", st)
		}
		time.Sleep(500 * time.Millisecond) // an observation window, not a synchronisation
	}
}

// TestCloneSetPreNormalHookHoldsAvailability: a Pod that its preNormal hook still holds
// (PreparingNormal) counts as ready but not as available, so a rollout does not look done; once the
// hook's label is there it is Normal and available.
func TestCloneSetPreNormalHookHoldsAvailability(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx, "clone-prenormal")
	const hook = "example.io/ready-for-traffic"
	cs := newUpdateCloneSet(t, ctx, ns, 1, v1alpha1.CloneSetUpdateStrategy{}, func(cs *v1alpha1.CloneSet) {
		cs.Spec.Lifecycle = &pub.Lifecycle{PreNormal: &pub.LifecycleHook{LabelsHandler: map[string]string{hook: "true"}}}
	})
	var st *v1alpha1.CloneSetStatus
	poll(t, ctx, 60*time.Second, "the Pod ready and held", func(ctx context.Context) (bool, error) {
		var err error
		st, err = cloneSetStatus(ctx, cs)
		return err == nil && st.ReadyReplicas == 1, err
	})
	if st.AvailableReplicas != 0 || st.UpdatedAvailableReplicas != 0 {
		t.Errorf("status %+v: a Pod held in PreparingNormal counted available", st)
	}
	pods, err := cloneSetPods(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range pods {
		if s := p.Labels[pub.LifecycleStateKey]; s != string(pub.LifecycleStatePreparingNormal) {
			t.Errorf("pod %s in state %q, want PreparingNormal while the hook holds it", name, s)
		}
		patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"true"}}}`, hook)
		if _, err := kube.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	poll(t, ctx, 30*time.Second, "the Pod Normal and available", func(ctx context.Context) (bool, error) {
		var err error
		st, err = cloneSetStatus(ctx, cs)
		return err == nil && st.AvailableReplicas == 1, err
	})
}

// TestCloneSetPercentPartitionKeepsOneUpdated: partition "99%" of 4 rounds up to all 4, yet, as in
// OpenKruise, a percentage below 100% keeps one Pod updated: exactly one Pod moves.
func TestCloneSetPercentPartitionKeepsOneUpdated(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx, "clone-pct")
	cs := newUpdateCloneSet(t, ctx, ns, 4, v1alpha1.CloneSetUpdateStrategy{
		Type:           v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
		Partition:      ptr.To(intstr.FromString("99%")),
		MaxUnavailable: ptr.To(intstr.FromString("100%")),
	})
	waitCloneSetReady(t, ctx, cs, 4)
	cs = updateCloneSet(t, ctx, cs, setImage(appImageV2))
	poll(t, ctx, 60*time.Second, "one Pod updated", func(ctx context.Context) (bool, error) {
		st, err := cloneSetStatus(ctx, cs)
		if err != nil {
			return false, err
		}
		if st.ExpectedUpdatedReplicas != 1 {
			return false, fmt.Errorf("expectedUpdatedReplicas %d, want 1", st.ExpectedUpdatedReplicas)
		}
		return st.UpdatedReadyReplicas == 1, fmt.Errorf("status %+v", st)
	})
	pods, err := cloneSetPods(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	updated := 0
	for _, p := range pods {
		if p.Spec.Containers[0].Image == appImageV2 {
			updated++
		}
	}
	if updated != 1 {
		t.Errorf("%d Pods run %s, want exactly 1", updated, appImageV2)
	}
}
