package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestCloneSetInPlaceRollout: an image change under InPlaceIfPossible updates every Pod in place:
// same Pod (UID, IP), its container restarted once on the new image, and the status converges.
func TestCloneSetInPlaceRollout(t *testing.T) {
	ctx, ns := framework.Start(t, "clone-upd")
	cs, before := framework.ReadyCloneSet(t, ctx, ns, 3, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})
	old, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	framework.MustKubectl(t, ctx, "", "-n", ns, "patch", "clone/web", "--type=json",
		"-p", `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"`+framework.AppImageV2+`"}]`)
	got, after := framework.WaitRolledOut(t, ctx, cs, 3)
	if got.Status.UpdateRevision == old.Status.UpdateRevision {
		t.Fatalf("update revision %s did not change", got.Status.UpdateRevision)
	}
	framework.CheckSamePods(t, before, after)
	for name, p := range after {
		b, ok := before[name]
		if !ok {
			continue
		}
		if p.Status.PodIP != b.Status.PodIP {
			t.Errorf("pod %s: IP %s, was %s", name, p.Status.PodIP, b.Status.PodIP)
		}
		if framework.SpecImage(p, "main") != framework.AppImageV2 {
			t.Errorf("pod %s: image %s, want %s", name, framework.SpecImage(p, "main"), framework.AppImageV2)
		}
		if cst := framework.ContainerStatus(t, p, "main"); cst.RestartCount != 1 {
			t.Errorf("pod %s: restartCount %d, want 1", name, cst.RestartCount)
		}
		st := framework.StateOf(t, p)
		if st == nil || st.Revision != got.Status.UpdateRevision {
			t.Errorf("pod %s: in-place update state %+v, want revision %s", name, st, got.Status.UpdateRevision)
			continue
		}
		// Updating while it changed, Normal again (no inPlaceUpdate hook), stamped when it got
		// there, as OpenKruise's lifecycle has it: written with the update's completion, so a
		// Pod counted updated and ready is Normal already.
		if s := p.Labels[pub.LifecycleStateKey]; s != string(pub.LifecycleStateNormal) {
			t.Errorf("pod %s: lifecycle state %q after its in-place update, want Normal", name, s)
		}
		if ts, err := time.Parse(time.RFC3339, p.Annotations[pub.LifecycleTimestampKey]); err != nil || ts.Before(st.UpdateTimestamp.Time) {
			t.Errorf("pod %s: lifecycle timestamp %q (%v), want one not before the update began (%s)",
				name, p.Annotations[pub.LifecycleTimestampKey], err, st.UpdateTimestamp.UTC().Format(time.RFC3339))
		}
	}
	framework.WaitCloneSetEvent(t, ctx, got, "SuccessfulUpdatePodInPlace", "in place to revision "+got.Status.UpdateRevision)
}

// TestCloneSetPartition: with partition 2 of 4 (as a count, and as "50%") exactly 2 Pods are
// updated and it stays so; with partition 0 all 4 are, each in place.
func TestCloneSetPartition(t *testing.T) {
	t.Run("count", func(t *testing.T) { testPartition(t, intstr.FromInt32(2)) })
	t.Run("percent", func(t *testing.T) { testPartition(t, intstr.FromString("50%")) })
}

func testPartition(t *testing.T, partition intstr.IntOrString) {
	ctx, ns := framework.Start(t, "clone-part")
	cs, before := framework.ReadyCloneSet(t, ctx, ns, 4, v1alpha1.CloneSetUpdateStrategy{
		Type:      v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
		Partition: &partition,
	})
	oldRevision := framework.PodRevision(before[slices.Sorted(maps.Keys(before))[0]])

	cs = framework.UpdateCloneSet(t, ctx, cs, func(cs *v1alpha1.CloneSet) { cs.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2 })
	var updateRevision string
	// Exactly 2 updated and settled, 2 untouched, and the status says so.
	snapshot := func(ctx context.Context) (map[string]string, error) {
		got, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		updateRevision = got.Status.UpdateRevision
		pods, err := framework.CloneSetPods(ctx, got)
		if err != nil {
			return nil, err
		}
		state := map[string]string{}
		updated := 0
		for name, p := range pods {
			b, ok := before[name]
			if !ok || b.UID != p.UID {
				return nil, fmt.Errorf("pod %s is new: want in-place updates only", name)
			}
			state[name] = fmt.Sprintf("%s/%s", p.UID, framework.PodRevision(p))
			switch {
			case framework.PodSettledAt(t, p, updateRevision):
				updated++
			case framework.PodRevision(p) == oldRevision && framework.SpecImage(p, "main") == framework.AppImageV1 && framework.PodReady(p):
			default:
				return state, fmt.Errorf("pod %s: revision %s, ready %v", name, framework.PodRevision(p), framework.PodReady(p))
			}
		}
		st := got.Status
		if len(pods) != 4 || updated != 2 || st.ObservedGeneration != got.Generation || st.UpdatedReplicas != 2 ||
			st.UpdatedReadyReplicas != 2 || st.ReadyReplicas != 4 || st.ExpectedUpdatedReplicas != 2 || st.CurrentRevision != oldRevision {
			return state, fmt.Errorf("%d pods, %d updated; status %+v", len(pods), updated, st)
		}
		return state, nil
	}
	var settled map[string]string
	framework.Poll(t, ctx, framework.RolloutTimeout, "2 of 4 Pods updated (partition "+partition.String()+")", func(ctx context.Context) (bool, error) {
		var err error
		settled, err = snapshot(ctx)
		return err == nil, err
	})
	// And it stays so: nothing else changes for a while.
	framework.Consistently(t, ctx, 5*time.Second, 200*time.Millisecond, func(ctx context.Context) error {
		now, err := snapshot(ctx)
		if err != nil {
			return fmt.Errorf("with partition %s: %v", partition.String(), err)
		}
		if !maps.Equal(now, settled) {
			return fmt.Errorf("with partition %s the Pods changed: %v, were %v", partition.String(), now, settled)
		}
		return nil
	})

	patch := `{"spec":{"updateStrategy":{"partition":0}}}`
	if _, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Patch(ctx, "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	got, after := framework.WaitRolledOut(t, ctx, cs, 4)
	if got.Status.UpdateRevision != updateRevision {
		t.Errorf("update revision %s, want %s (partition is not part of the template)", got.Status.UpdateRevision, updateRevision)
	}
	framework.CheckSamePods(t, before, after)
}

// TestCloneSetRecreateOnEnvChange: an env change cannot go in place: under InPlaceIfPossible every
// Pod is recreated at the new revision.
func TestCloneSetRecreateOnEnvChange(t *testing.T) {
	ctx, ns := framework.Start(t, "clone-env")
	cs, before := framework.ReadyCloneSet(t, ctx, ns, 3, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})
	uids := map[types.UID]bool{}
	for _, p := range before {
		uids[p.UID] = true
	}

	cs = framework.UpdateCloneSet(t, ctx, cs, func(cs *v1alpha1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "GREETING", Value: "hello"}}
	})
	_, after := framework.WaitRolledOut(t, ctx, cs, 3)
	for name, p := range after {
		if uids[p.UID] {
			t.Errorf("pod %s (UID %s) was kept: an env change must recreate it", name, p.UID)
		}
		if len(p.Spec.Containers[0].Env) != 1 || p.Spec.Containers[0].Env[0].Value != "hello" {
			t.Errorf("pod %s: env %v, want GREETING=hello", name, p.Spec.Containers[0].Env)
		}
	}
	framework.WaitCloneSetEvent(t, ctx, cs, "SuccessfulUpdatePodReCreate", "recreating: spec.containers[0].env")
}
