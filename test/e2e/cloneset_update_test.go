package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// rolloutTimeout bounds a rolling update of a few Pods on the local node (an in-place image
// change takes ~1-3 s per Pod, a recreate a few seconds; maxUnavailable 1 updates one at a time).
const rolloutTimeout = 3 * time.Minute

// newUpdateCloneSet creates a CloneSet "web" of n Pods on appImageV1 with the update strategy,
// changed by the mutators before it is sent.
func newUpdateCloneSet(t *testing.T, ctx context.Context, ns string, n int32, strategy v1alpha1.CloneSetUpdateStrategy, mutate ...func(*v1alpha1.CloneSet)) *v1alpha1.CloneSet {
	t.Helper()
	cs := &v1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1alpha1.CloneSetSpec{
			Replicas: ptr.To(n),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				// Its own map: a mutator adding template labels must not change the selector.
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers:                    []corev1.Container{{Name: "main", Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever}},
				},
			},
			UpdateStrategy: strategy,
		},
	}
	for _, m := range mutate {
		m(cs)
	}
	cs, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// checkSamePods checks that the Pods after a rollout are the Pods before it (same names and
// UIDs): updated in place, none recreated.
func checkSamePods(t *testing.T, before, after map[string]*corev1.Pod) {
	t.Helper()
	if len(after) != len(before) {
		t.Errorf("%d pods after the rollout, %d before", len(after), len(before))
	}
	for name, p := range after {
		if b := before[name]; b == nil || b.UID != p.UID {
			t.Errorf("pod %s was recreated: want an in-place update", name)
		}
	}
}

// updateCloneSet changes the CloneSet's spec (retrying on conflicts) and returns the result.
func updateCloneSet(t *testing.T, ctx context.Context, cs *v1alpha1.CloneSet, change func(*v1alpha1.CloneSet)) *v1alpha1.CloneSet {
	t.Helper()
	var out *v1alpha1.CloneSet
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := framework.Inplace.AppsV1alpha1().CloneSets(cs.Namespace).Get(ctx, cs.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(cur)
		out, err = framework.Inplace.AppsV1alpha1().CloneSets(cs.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("updating CloneSet %s/%s: %v", cs.Namespace, cs.Name, err)
	}
	return out
}

// podRevision is the Pod's controller-revision-hash label.
func podRevision(p *corev1.Pod) string { return p.Labels["controller-revision-hash"] }

// podSettledAt tells whether the Pod runs the revision, with no in-place update under way, Ready.
func podSettledAt(t *testing.T, p *corev1.Pod, revision string) bool {
	st := framework.StateOf(t, p)
	return podRevision(p) == revision && (st == nil || st.CompletedTimestamp != nil) && framework.PodReady(p)
}

// waitRolledOut waits until the CloneSet has n Pods, all Ready at the update revision with no
// in-place update under way, and its status says so (currentRevision == updateRevision).
func waitRolledOut(t *testing.T, ctx context.Context, cs *v1alpha1.CloneSet, n int32) (*v1alpha1.CloneSet, map[string]*corev1.Pod) {
	t.Helper()
	var got *v1alpha1.CloneSet
	var pods map[string]*corev1.Pod
	framework.Poll(t, ctx, rolloutTimeout, fmt.Sprintf("CloneSet %s: %d Pods updated and Ready", cs.Name, n), func(ctx context.Context) (bool, error) {
		var err error
		if got, err = framework.Inplace.AppsV1alpha1().CloneSets(cs.Namespace).Get(ctx, cs.Name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		st := got.Status
		if st.ObservedGeneration != got.Generation || st.Replicas != n || st.UpdatedReplicas != n ||
			st.UpdatedReadyReplicas != n || st.ReadyReplicas != n || st.CurrentRevision != st.UpdateRevision {
			return false, fmt.Errorf("status %+v (generation %d)", st, got.Generation)
		}
		if pods, err = cloneSetPods(ctx, got); err != nil {
			return false, err
		}
		if int32(len(pods)) != n {
			return false, fmt.Errorf("%d pods", len(pods))
		}
		for _, p := range pods {
			if !podSettledAt(t, p, st.UpdateRevision) {
				return false, fmt.Errorf("pod %s: revision %s, ready %v, state %s", p.Name, podRevision(p), framework.PodReady(p), p.Annotations["apps.kruise.io/inplace-update-state"])
			}
		}
		return true, nil
	})
	return got, pods
}

// waitCloneSetEvent waits for an Event about the CloneSet with the reason and a message containing
// want.
func waitCloneSetEvent(t *testing.T, ctx context.Context, cs *v1alpha1.CloneSet, reason, want string) {
	t.Helper()
	framework.Poll(t, ctx, 30*time.Second, fmt.Sprintf("Event %s %q about CloneSet %s", reason, want, cs.Name), func(ctx context.Context) (bool, error) {
		list, err := framework.Kube.CoreV1().Events(cs.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var seen []string
		for _, e := range list.Items {
			if e.InvolvedObject.Kind != "CloneSet" || e.InvolvedObject.Name != cs.Name {
				continue
			}
			if e.Reason == reason && strings.Contains(e.Message, want) {
				return true, nil
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, fmt.Errorf("events %q", seen)
	})
}

// TestCloneSetInPlaceRollout: an image change under InPlaceIfPossible updates every Pod in place:
// same Pod (UID, IP), its container restarted once on the new image, and the status converges.
func TestCloneSetInPlaceRollout(t *testing.T) {
	ctx := framework.Context(t)
	ns := framework.NewNamespace(t, ctx, "clone-upd")
	cs := newUpdateCloneSet(t, ctx, ns, 3, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})
	before := waitCloneSetReady(t, ctx, cs, 3)
	old, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	framework.MustKubectl(t, ctx, "", "-n", ns, "patch", "clone/web", "--type=json",
		"-p", `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"`+framework.AppImageV2+`"}]`)
	got, after := waitRolledOut(t, ctx, cs, 3)
	if got.Status.UpdateRevision == old.Status.UpdateRevision {
		t.Fatalf("update revision %s did not change", got.Status.UpdateRevision)
	}
	checkSamePods(t, before, after)
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
	waitCloneSetEvent(t, ctx, got, "SuccessfulUpdatePodInPlace", "in place to revision "+got.Status.UpdateRevision)
}

// TestCloneSetPartition: with partition 2 of 4 (as a count, and as "50%") exactly 2 Pods are
// updated and it stays so; with partition 0 all 4 are, each in place.
func TestCloneSetPartition(t *testing.T) {
	t.Run("count", func(t *testing.T) { testPartition(t, intstr.FromInt32(2)) })
	t.Run("percent", func(t *testing.T) { testPartition(t, intstr.FromString("50%")) })
}

func testPartition(t *testing.T, partition intstr.IntOrString) {
	ctx := framework.Context(t)
	ns := framework.NewNamespace(t, ctx, "clone-part")
	cs := newUpdateCloneSet(t, ctx, ns, 4, v1alpha1.CloneSetUpdateStrategy{
		Type:      v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
		Partition: &partition,
	})
	before := waitCloneSetReady(t, ctx, cs, 4)
	oldRevision := podRevision(before[slices.Sorted(maps.Keys(before))[0]])

	cs = updateCloneSet(t, ctx, cs, func(cs *v1alpha1.CloneSet) { cs.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2 })
	var updateRevision string
	// Exactly 2 updated and settled, 2 untouched, and the status says so.
	snapshot := func(ctx context.Context) (map[string]string, error) {
		got, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		updateRevision = got.Status.UpdateRevision
		pods, err := cloneSetPods(ctx, got)
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
			state[name] = fmt.Sprintf("%s/%s", p.UID, podRevision(p))
			switch {
			case podSettledAt(t, p, updateRevision):
				updated++
			case podRevision(p) == oldRevision && framework.SpecImage(p, "main") == framework.AppImageV1 && framework.PodReady(p):
			default:
				return state, fmt.Errorf("pod %s: revision %s, ready %v", name, podRevision(p), framework.PodReady(p))
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
	framework.Poll(t, ctx, rolloutTimeout, "2 of 4 Pods updated (partition "+partition.String()+")", func(ctx context.Context) (bool, error) {
		var err error
		settled, err = snapshot(ctx)
		return err == nil, err
	})
	// And it stays so: nothing else changes for a while.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		now, err := snapshot(ctx)
		if err != nil {
			t.Fatalf("with partition %s: %v", partition.String(), err)
		}
		if !maps.Equal(now, settled) {
			t.Fatalf("with partition %s the Pods changed: %v, were %v", partition.String(), now, settled)
		}
		time.Sleep(200 * time.Millisecond)
	}

	patch := `{"spec":{"updateStrategy":{"partition":0}}}`
	if _, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Patch(ctx, "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	got, after := waitRolledOut(t, ctx, cs, 4)
	if got.Status.UpdateRevision != updateRevision {
		t.Errorf("update revision %s, want %s (partition is not part of the template)", got.Status.UpdateRevision, updateRevision)
	}
	checkSamePods(t, before, after)
}

// TestCloneSetRecreateOnEnvChange: an env change cannot go in place: under InPlaceIfPossible every
// Pod is recreated at the new revision.
func TestCloneSetRecreateOnEnvChange(t *testing.T) {
	ctx := framework.Context(t)
	ns := framework.NewNamespace(t, ctx, "clone-env")
	cs := newUpdateCloneSet(t, ctx, ns, 3, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})
	before := waitCloneSetReady(t, ctx, cs, 3)
	uids := map[types.UID]bool{}
	for _, p := range before {
		uids[p.UID] = true
	}

	cs = updateCloneSet(t, ctx, cs, func(cs *v1alpha1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "GREETING", Value: "hello"}}
	})
	_, after := waitRolledOut(t, ctx, cs, 3)
	for name, p := range after {
		if uids[p.UID] {
			t.Errorf("pod %s (UID %s) was kept: an env change must recreate it", name, p.UID)
		}
		if len(p.Spec.Containers[0].Env) != 1 || p.Spec.Containers[0].Env[0].Value != "hello" {
			t.Errorf("pod %s: env %v, want GREETING=hello", name, p.Spec.Containers[0].Env)
		}
	}
	waitCloneSetEvent(t, ctx, cs, "SuccessfulUpdatePodReCreate", "recreating: spec.containers[0].env")
}
