package e2e

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os/exec"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// cloneSetStatus reads the CloneSet's status once it has observed its generation.
func cloneSetStatus(ctx context.Context, cs *v1alpha1.CloneSet) (*v1alpha1.CloneSetStatus, error) {
	got, err := framework.Inplace.AppsV1alpha1().CloneSets(cs.Namespace).Get(ctx, cs.Name, metav1.GetOptions{})
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
	ctx, ns := framework.Start(t, "clone-unsched")
	cs := framework.NewUpdateCloneSet(t, ctx, ns, 1, v1alpha1.CloneSetUpdateStrategy{}, func(cs *v1alpha1.CloneSet) {
		cs.Spec.Template.Spec.SchedulerName = "no-such-scheduler"
	})
	var pod *corev1.Pod
	framework.Poll(t, ctx, 30*time.Second, "the CloneSet's Pod created", func(ctx context.Context) (bool, error) {
		pods, err := framework.CloneSetPods(ctx, cs)
		for _, p := range pods {
			pod = p
		}
		return pod != nil, err
	})
	if _, err := time.Parse(time.RFC3339, pod.Annotations[pub.LifecycleTimestampKey]); err != nil {
		t.Errorf("annotation %s = %q: want an RFC 3339 time", pub.LifecycleTimestampKey, pod.Annotations[pub.LifecycleTimestampKey])
	}
	// It stays so: OpenKruise's scenario watches it for 10 s; 5 s of syncs here.
	framework.Consistently(t, ctx, 5*time.Second, 500*time.Millisecond, func(ctx context.Context) error {
		p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s := p.Labels[pub.LifecycleStateKey]; s != string(pub.LifecycleStatePreparingNormal) {
			return fmt.Errorf("unscheduled Pod in state %q, want PreparingNormal", s)
		}
		if st, err := cloneSetStatus(ctx, cs); err == nil && (st.AvailableReplicas != 0 || st.ReadyReplicas != 0) {
			return fmt.Errorf("status %+v: an unscheduled Pod counted ready or available", st)
		}
		return nil
	})
}

// TestCloneSetPreNormalHookHoldsAvailability: a Pod that its preNormal hook still holds
// (PreparingNormal) counts as ready but not as available, so a rollout does not look done; once the
// hook's label is there it is Normal and available.
func TestCloneSetPreNormalHookHoldsAvailability(t *testing.T) {
	ctx, ns := framework.Start(t, "clone-prenormal")
	const hook = "example.io/ready-for-traffic"
	cs := framework.NewUpdateCloneSet(t, ctx, ns, 1, v1alpha1.CloneSetUpdateStrategy{}, func(cs *v1alpha1.CloneSet) {
		cs.Spec.Lifecycle = &pub.Lifecycle{PreNormal: &pub.LifecycleHook{LabelsHandler: map[string]string{hook: "true"}}}
	})
	var st *v1alpha1.CloneSetStatus
	framework.Poll(t, ctx, 60*time.Second, "the Pod ready and held", func(ctx context.Context) (bool, error) {
		var err error
		st, err = cloneSetStatus(ctx, cs)
		return err == nil && st.ReadyReplicas == 1, err
	})
	if st.AvailableReplicas != 0 || st.UpdatedAvailableReplicas != 0 {
		t.Errorf("status %+v: a Pod held in PreparingNormal counted available", st)
	}
	pods, err := framework.CloneSetPods(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range pods {
		if s := p.Labels[pub.LifecycleStateKey]; s != string(pub.LifecycleStatePreparingNormal) {
			t.Errorf("pod %s in state %q, want PreparingNormal while the hook holds it", name, s)
		}
		patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"true"}}}`, hook)
		if _, err := framework.Kube.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	framework.Poll(t, ctx, 30*time.Second, "the Pod Normal and available", func(ctx context.Context) (bool, error) {
		var err error
		st, err = cloneSetStatus(ctx, cs)
		return err == nil && st.AvailableReplicas == 1, err
	})
}

// TestCloneSetPercentPartitionKeepsOneUpdated: partition "99%" of 4 rounds up to all 4, yet, as in
// OpenKruise, a percentage below 100% keeps one Pod updated: exactly one Pod moves.
func TestCloneSetPercentPartitionKeepsOneUpdated(t *testing.T) {
	ctx, ns := framework.Start(t, "clone-pct")
	cs, _ := framework.ReadyCloneSet(t, ctx, ns, 4, v1alpha1.CloneSetUpdateStrategy{
		Type:           v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
		Partition:      ptr.To(intstr.FromString("99%")),
		MaxUnavailable: ptr.To(intstr.FromString("100%")),
	})
	cs = framework.UpdateCloneSet(t, ctx, cs, framework.SetImage(framework.AppImageV2))
	framework.Poll(t, ctx, 60*time.Second, "one Pod updated", func(ctx context.Context) (bool, error) {
		st, err := cloneSetStatus(ctx, cs)
		if err != nil {
			return false, err
		}
		if st.ExpectedUpdatedReplicas != 1 {
			return false, fmt.Errorf("expectedUpdatedReplicas %d, want 1", st.ExpectedUpdatedReplicas)
		}
		return st.UpdatedReadyReplicas == 1, fmt.Errorf("status %+v", st)
	})
	pods, err := framework.CloneSetPods(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	updated := 0
	for _, p := range pods {
		if p.Spec.Containers[0].Image == framework.AppImageV2 {
			updated++
		}
	}
	if updated != 1 {
		t.Errorf("%d Pods run %s, want exactly 1", updated, framework.AppImageV2)
	}
}

// TestCloneSetScaleUpPacedByMinReadySeconds (OpenKruise "scales with minReadySeconds and
// scaleStrategy"): with scaleStrategy.maxUnavailable 1 and minReadySeconds 3, a Pod that is ready
// but not yet available for 3 s holds the next creation back: each Pod is created 3 s (and not
// much more) after the one before it turned Ready.
func TestCloneSetScaleUpPacedByMinReadySeconds(t *testing.T) {
	ctx, ns := framework.Start(t, "clone-pace")
	const replicas, minReady = 3, 3
	cs := framework.NewUpdateCloneSet(t, ctx, ns, replicas, v1alpha1.CloneSetUpdateStrategy{}, func(cs *v1alpha1.CloneSet) {
		cs.Spec.MinReadySeconds = minReady
		cs.Spec.ScaleStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	})
	var pods []*corev1.Pod
	framework.Poll(t, ctx, 90*time.Second, fmt.Sprintf("%d Pods available", replicas), func(ctx context.Context) (bool, error) {
		st, err := cloneSetStatus(ctx, cs)
		if err != nil {
			return false, err
		}
		got, err := framework.CloneSetPods(ctx, cs)
		pods = slices.SortedFunc(maps.Values(got), func(a, b *corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
		return st.AvailableReplicas == replicas && len(pods) == replicas, fmt.Errorf("status %+v, %d pods (%v)", st, len(pods), err)
	})
	framework.WaitCloneSetEvent(t, ctx, cs, "ScaleUpLimited", "scaleUp is limited because of scaleStrategy.maxUnavailable, limit: 0")
	// Creation timestamps have whole seconds, Ready's transition time too: allow 1 s either way,
	// plus 2 s of sync as OpenKruise's scenario does.
	for i := 1; i < len(pods); i++ {
		prev := podConditionOf(pods[i-1], corev1.PodReady)
		if prev == nil {
			t.Fatalf("pod %s has no Ready condition", pods[i-1].Name)
		}
		gap := pods[i].CreationTimestamp.Sub(prev.LastTransitionTime.Time)
		t.Logf("pod %s created %v after %s turned Ready", pods[i].Name, gap, pods[i-1].Name)
		if gap < (minReady-1)*time.Second || gap > (minReady+3)*time.Second {
			t.Errorf("pod %s created %v after %s turned Ready, want about minReadySeconds (%ds)", pods[i].Name, gap, pods[i-1].Name, minReady)
		}
	}
}

func podConditionOf(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// TestCloneSetSpecifiedDeleteWaitsInPreparingDelete (OpenKruise "specific delete a Pod, when
// scalingExcludePreparingDelete is disabled"): a Pod labelled specified-delete that the preDelete
// hook holds waits in PreparingDelete and still counts: no replacement meanwhile. Released, it is
// deleted, and then replaced; the two other Pods stay.
func TestCloneSetSpecifiedDeleteWaitsInPreparingDelete(t *testing.T) {
	ctx, ns := framework.Start(t, "clone-specdel")
	cs, before := framework.ReadyCloneSet(t, ctx, ns, 3, v1alpha1.CloneSetUpdateStrategy{}, func(cs *v1alpha1.CloneSet) {
		cs.Spec.Template.Labels["lifecycle-hook"] = "true"
		cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"lifecycle-hook": "true"}}}
	})
	victim := slices.Sorted(maps.Keys(before))[0]
	framework.MustKubectl(t, ctx, "", "-n", ns, "label", "pod", victim, v1alpha1.SpecifiedDeleteKey+"=true")
	framework.Poll(t, ctx, 30*time.Second, "the Pod in PreparingDelete", func(ctx context.Context) (bool, error) {
		p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, victim, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingDelete), fmt.Errorf("state %q", p.Labels[pub.LifecycleStateKey])
	})
	// OpenKruise's scenario watches 5 s for a replacement that must not come.
	framework.Consistently(t, ctx, 5*time.Second, 500*time.Millisecond, func(ctx context.Context) error {
		pods, err := framework.CloneSetPods(ctx, cs)
		if err != nil {
			return err
		}
		if len(pods) != 3 {
			return fmt.Errorf("%d Pods while %s waits in PreparingDelete, want 3 (it still counts)", len(pods), victim)
		}
		return nil
	})

	framework.MustKubectl(t, ctx, "", "-n", ns, "label", "pod", victim, "lifecycle-hook-")
	framework.Poll(t, ctx, 60*time.Second, victim+" deleted", func(ctx context.Context) (bool, error) {
		_, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, victim, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("still there (%v)", err)
	})
	after := framework.WaitCloneSetReady(t, ctx, cs, 3)
	kept := 0
	for name := range after {
		if before[name] != nil {
			kept++
		}
	}
	if kept != 2 || after[victim] != nil {
		t.Errorf("pods after %v, before %v: want the two others kept and one new", slices.Sorted(maps.Keys(after)), slices.Sorted(maps.Keys(before)))
	}
}

// progressing is the CloneSet's Progressing condition as status, reason and message (OpenKruise's
// scenarios compare it without its times); "" when it has none.
func progressing(ctx context.Context, cs *v1alpha1.CloneSet) (string, error) {
	st, err := cloneSetStatus(ctx, cs)
	if err != nil {
		return "", err
	}
	for _, c := range st.Conditions {
		if c.Type == v1alpha1.CloneSetConditionTypeProgressing {
			if c.LastUpdateTime.IsZero() || c.LastTransitionTime.IsZero() {
				return "", fmt.Errorf("condition %+v without its times", c)
			}
			return fmt.Sprintf("%s/%s/%s", c.Status, c.Reason, c.Message), nil
		}
	}
	return "", nil
}

func waitProgressing(t *testing.T, ctx context.Context, cs *v1alpha1.CloneSet, want string) {
	t.Helper()
	framework.Poll(t, ctx, 60*time.Second, fmt.Sprintf("CloneSet %s Progressing %q", cs.Name, want), func(ctx context.Context) (bool, error) {
		got, err := progressing(ctx, cs)
		return err == nil && got == want, fmt.Errorf("Progressing %q (%v)", got, err)
	})
}

const (
	progressingAvailable = "True/CloneSetAvailable/CloneSet is available"
	progressingUpdated   = "True/CloneSetUpdated/CloneSet is progressing"
	progressingPaused    = "True/CloneSetPaused/CloneSet is paused"
)

// TestCloneSetProgressDeadline (OpenKruise "creates with lifecycle preNormal finalizer", "creates
// with maxInt32 progressDeadlineSeconds", "pods should be ready when paused=true"): a Pod its
// preNormal hook holds makes no progress, and after progressDeadlineSeconds the condition is False
// with ProgressDeadlineExceeded; once the hook's finalizer is there the Pod is Normal and the
// CloneSet available. MaxInt32 means no deadline and no condition; a paused CloneSet says so.
func TestCloneSetProgressDeadline(t *testing.T) {
	ctx, ns := framework.Start(t, "clone-pds")
	const finalizer = "finalizers.sigs.k8s.io/test"
	cs := framework.NewUpdateCloneSet(t, ctx, ns, 1, v1alpha1.CloneSetUpdateStrategy{}, func(cs *v1alpha1.CloneSet) {
		cs.Name = "held"
		cs.Spec.Selector.MatchLabels = map[string]string{"app": "held"}
		cs.Spec.Template.Labels = map[string]string{"app": "held"}
		cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](5)
		cs.Spec.Lifecycle = &pub.Lifecycle{PreNormal: &pub.LifecycleHook{FinalizersHandler: []string{finalizer}}}
	})
	framework.Poll(t, ctx, 60*time.Second, "the Pod ready", func(ctx context.Context) (bool, error) {
		st, err := cloneSetStatus(ctx, cs)
		return err == nil && st.ReadyReplicas == 1, fmt.Errorf("status %+v (%v)", st, err)
	})
	got, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, cs.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitProgressing(t, ctx, cs, fmt.Sprintf("False/ProgressDeadlineExceeded/CloneSet revision %s has timed out progressing", got.Status.UpdateRevision))
	pods, err := framework.CloneSetPods(ctx, cs)
	if err != nil || len(pods) != 1 {
		t.Fatalf("pods %v (%v)", pods, err)
	}
	for name, p := range pods {
		if s := p.Labels[pub.LifecycleStateKey]; s != string(pub.LifecycleStatePreparingNormal) {
			t.Errorf("pod %s in state %q while its preNormal hook waits, want PreparingNormal", name, s)
		}
		framework.MustKubectl(t, ctx, "", "-n", ns, "patch", "pod", name, "--type=json", "-p",
			fmt.Sprintf(`[{"op":"add","path":"/metadata/finalizers","value":[%q]}]`, finalizer))
		t.Cleanup(func() {
			_, _, _ = framework.Kubectl(context.WithoutCancel(ctx), "", "-n", ns, "patch", "pod", name, "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
		})
	}
	waitProgressing(t, ctx, cs, progressingAvailable)

	// MaxInt32: no deadline, no condition; then 600 s: available.
	unbounded := framework.NewUpdateCloneSet(t, ctx, ns, 1, v1alpha1.CloneSetUpdateStrategy{}, func(cs *v1alpha1.CloneSet) {
		cs.Name = "unbounded"
		cs.Spec.Selector.MatchLabels = map[string]string{"app": "unbounded"}
		cs.Spec.Template.Labels = map[string]string{"app": "unbounded"}
		cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](math.MaxInt32)
	})
	framework.WaitCloneSetReady(t, ctx, unbounded, 1)
	if got, err := progressing(ctx, unbounded); err != nil || got != "" {
		t.Errorf("Progressing %q (%v) with progressDeadlineSeconds MaxInt32, want none", got, err)
	}
	unbounded = framework.UpdateCloneSet(t, ctx, unbounded, func(cs *v1alpha1.CloneSet) { cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](600) })
	waitProgressing(t, ctx, unbounded, progressingAvailable)

	// Paused from the start: created and ready, the condition says paused... unless available,
	// which wins: so watch it while the Pods start.
	paused := framework.NewUpdateCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{Paused: true}, func(cs *v1alpha1.CloneSet) {
		cs.Name = "paused"
		cs.Spec.Selector.MatchLabels = map[string]string{"app": "paused"}
		cs.Spec.Template.Labels = map[string]string{"app": "paused"}
		cs.Spec.MinReadySeconds = 60
		cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	})
	waitProgressing(t, ctx, paused, progressingPaused)
	framework.WaitCloneSetReady(t, ctx, paused, 2)
	if got, err := progressing(ctx, paused); err != nil || got != progressingPaused {
		t.Errorf("Progressing %q (%v) with Pods ready but not available, want %q", got, err, progressingPaused)
	}
}

// TestCloneSetInPlaceSameImageID (OpenKruise "in-place update images with the same imageID"): a
// new reference to the same image content is applied in place: same Pod, a new container, the
// same image id, and the update completes; Progressing goes from CloneSetUpdated back to
// CloneSetAvailable.
func TestCloneSetInPlaceSameImageID(t *testing.T) {
	ctx := framework.Context(t)
	alias := "inplace.local/app:v1-same-" + rand.String(5)
	out, err := exec.CommandContext(ctx, "ctr", "-n", "k8s.io", "images", "tag", "--force", framework.AppImageV1, alias).CombinedOutput()
	if err != nil {
		t.Fatalf("ctr images tag %s %s: %v: %s", framework.AppImageV1, alias, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ctr", "-n", "k8s.io", "images", "rm", alias).Run() })

	ns := framework.NewNamespace(t, ctx, "clone-sameid")
	cs, before := framework.ReadyCloneSet(t, ctx, ns, 1, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType},
		func(cs *v1alpha1.CloneSet) { cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](600) })
	waitProgressing(t, ctx, cs, progressingAvailable)
	cs = framework.UpdateCloneSet(t, ctx, cs, framework.SetImage(alias))
	waitProgressing(t, ctx, cs, progressingUpdated)
	_, after := framework.WaitRolledOut(t, ctx, cs, 1)
	framework.CheckSamePods(t, before, after)
	for name, p := range after {
		old, now := framework.ContainerStatus(t, before[name], "main"), framework.ContainerStatus(t, p, "main")
		if now.ContainerID == old.ContainerID || now.RestartCount != 1 {
			t.Errorf("pod %s: main %s restarts %d (was %s): want a new container", name, now.ContainerID, now.RestartCount, old.ContainerID)
		}
		if now.ImageID != old.ImageID {
			t.Errorf("pod %s: image id %s, was %s: the same content must keep its id", name, now.ImageID, old.ImageID)
		}
		if img := framework.SpecImage(p, "main"); img != alias {
			t.Errorf("pod %s: spec image %s, want %s", name, img, alias)
		}
	}
	waitProgressing(t, ctx, cs, progressingAvailable)
}

// TestCloneSetEnvFromHandEditedAnnotation (issue 19 point 9, as OpenKruise's daemon behaves): a
// container reads an annotation through env; the annotation is edited by hand on the Pod (nothing
// restarts then); the template then changes the annotation to the same value: the in-place update
// restarts the container so that it runs with the value the Pod has.
func TestCloneSetEnvFromHandEditedAnnotation(t *testing.T) {
	ctx, ns := framework.Start(t, "clone-envedit")
	cs, before := framework.ReadyCloneSet(t, ctx, ns, 1, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType},
		func(cs *v1alpha1.CloneSet) {
			cs.Spec.Template.Annotations = map[string]string{"test-env": "foo"}
			c := &cs.Spec.Template.Spec.Containers[0]
			c.Command = []string{"sh", "-c", `echo "test-env=$TEST_ENV"; exec /app.sh`}
			c.Env = []corev1.EnvVar{{Name: "TEST_ENV", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['test-env']"}}}}
		})
	var name string
	for n := range before {
		name = n
	}
	framework.WaitLog(t, ctx, ns, name, "main", "test-env=foo")
	framework.MustKubectl(t, ctx, "", "-n", ns, "annotate", "--overwrite", "pod", name, "test-env=bar")
	cs = framework.UpdateCloneSet(t, ctx, cs, func(cs *v1alpha1.CloneSet) { cs.Spec.Template.Annotations["test-env"] = "bar" })
	_, after := framework.WaitRolledOut(t, ctx, cs, 1)
	framework.CheckSamePods(t, before, after)
	if s := framework.ContainerStatus(t, after[name], "main"); s.RestartCount != 1 {
		t.Errorf("main restarted %d times, want once to read the new value", s.RestartCount)
	}
	framework.WaitLog(t, ctx, ns, name, "main", "test-env=bar")
}
