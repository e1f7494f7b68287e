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
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// The kinds written at apps.kruise.io/v1beta1 on the real cluster, OpenKruise v1.9's
// test/e2e/apps/v1beta1 scenarios (sidecarset, pullimages): the controllers and the daemon, whose
// informers read v1alpha1, act on them the same.

// TestSidecarSetV1beta1InjectAndUpgrade: a v1beta1 SidecarSet (namespaceSelector, customVersion)
// injects its sidecar into new Pods and then upgrades it in place when its image changes at
// v1beta1: the same Pods, the sidecar restarted once, the app container never; its status is
// read at v1beta1.
func TestSidecarSetV1beta1InjectAndUpgrade(t *testing.T) {
	ctx, ns := framework.Start(t, "ss-beta")
	sets := framework.Inplace.AppsV1beta1().SidecarSets()
	set := &v1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: v1beta1.SidecarSetSpec{
			Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			Containers: []v1beta1.SidecarContainer{{
				Container:       corev1.Container{Name: framework.UpgradeSidecar, Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever},
				PodInjectPolicy: v1beta1.AfterAppContainerType,
			}},
			CustomVersion: "v1",
		},
	}
	if _, err := sets.Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the v1beta1 SidecarSet: %v", err)
	}
	t.Cleanup(func() { _ = sets.Delete(context.Background(), set.Name, metav1.DeleteOptions{}) })

	framework.WaitInjects(t, ctx, ns, set.Spec.Selector.MatchLabels, set.Name)
	cs, before := framework.ReadyCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})
	for name, p := range before {
		if c := framework.FindContainer(p.Spec.Containers, framework.UpgradeSidecar); c == nil || c.Image != framework.AppImageV1 {
			t.Fatalf("pod %s: containers %v, want the sidecar %s on %s", name, framework.ContainerNames(p.Spec.Containers), framework.UpgradeSidecar, framework.AppImageV1)
		}
	}
	u := &framework.SidecarUpgrade{Ns: ns, Set: ns, Cs: cs, Before: before}
	framework.WaitSidecarSetStatus(t, ctx, ns, 2, 2, 2, 2)

	framework.Modify(t, ctx, sets, set.Name, func(cur *v1beta1.SidecarSet) {
		cur.Spec.Containers[0].Image = framework.AppImageV2
		cur.Spec.CustomVersion = "v2"
	})
	after := framework.WaitSidecarsOn(t, ctx, u, framework.AppImageV2, 2)
	framework.CheckSidecarsUpgraded(t, before, after, framework.AppImageV2, 1)
	framework.Poll(t, ctx, framework.RolloutTimeout, "the v1beta1 SidecarSet's status to count 2 updated Pods", func(ctx context.Context) (bool, error) {
		got, err := sets.Get(ctx, set.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := got.Status
		return st.ObservedGeneration == got.Generation && st.MatchedPods == 2 && st.UpdatedPods == 2 && st.UpdatedReadyPods == 2,
			fmt.Errorf("generation %d, status %+v", got.Generation, st)
	})
	// v1alpha1 sees the custom version as OpenKruise's label.
	if a, err := framework.Inplace.AppsV1alpha1().SidecarSets().Get(ctx, set.Name, metav1.GetOptions{}); err != nil || a.Labels[v1alpha1.SidecarSetCustomVersionLabel] != "v2" {
		t.Errorf("at v1alpha1: %v (%v), want the label %s=v2", a, err, v1alpha1.SidecarSetCustomVersionLabel)
	}
}

// TestImagePullJobV1beta1Pulls: an ImagePullJob written at v1beta1 pulls its image on every node,
// and its status is read at v1beta1.
func TestImagePullJobV1beta1Pulls(t *testing.T) {
	ctx, ns, nodes, image := startImagePull(t, "imagepull-beta", "remote/app:v2")
	job := &v1beta1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "beta"},
		Spec: v1beta1.ImagePullJobSpec{Image: image, ImagePullJobTemplate: v1beta1.ImagePullJobTemplate{
			Parallelism:      ptr.To(intstr.FromInt32(2)),
			PullPolicy:       &v1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](60), BackoffLimit: ptr.To[int32](1)},
			CompletionPolicy: v1beta1.CompletionPolicy{Type: v1beta1.Always},
		}},
	}
	jobs := framework.Inplace.AppsV1beta1().ImagePullJobs(ns)
	if _, err := jobs.Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the v1beta1 ImagePullJob: %v", err)
	}
	want := int32(len(nodes))
	framework.Poll(t, ctx, framework.RolloutTimeout, "the v1beta1 ImagePullJob to complete", func(ctx context.Context) (bool, error) {
		got, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := got.Status
		return s.CompletionTime != nil && s.Desired == want && s.Succeeded == want && s.Failed == 0, fmt.Errorf("status %+v", s)
	})
	expectPulledOnNodes(t, ctx, nodes, image, "the v1beta1 job", nil)
}

// newCloneSetV1beta1 creates, at v1beta1, a CloneSet "web" of n Pods on framework.AppImageV1 with the update
// strategy, and returns its v1alpha1 view (the same object) for the CloneSet helpers.
func newCloneSetV1beta1(t *testing.T, ctx context.Context, ns string, n int32, strategy v1beta1.CloneSetUpdateStrategy) *v1alpha1.CloneSet {
	t.Helper()
	cs := &v1beta1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1beta1.CloneSetSpec{
			Replicas:       ptr.To(n),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template:       framework.PodTemplate(map[string]string{"app": "web"}, framework.Container("main", framework.AppImageV1)),
			UpdateStrategy: strategy,
		},
	}
	if _, err := framework.Inplace.AppsV1beta1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the v1beta1 CloneSet: %v", err)
	}
	alpha, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, cs.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the CloneSet at v1alpha1: %v", err)
	}
	return alpha
}

// setImageV1beta1 changes the CloneSet's image at v1beta1 and returns the generation written.
func setImageV1beta1(t *testing.T, ctx context.Context, ns, image string) int64 {
	t.Helper()
	out := framework.Modify(t, ctx, framework.Inplace.AppsV1beta1().CloneSets(ns), "web", func(cur *v1beta1.CloneSet) {
		cur.Spec.Template.Spec.Containers[0].Image = image
	})
	return out.Generation
}

// TestCloneSetV1beta1InPlaceRollout: a CloneSet written at v1beta1 with rollingUpdate.podUpdatePolicy
// InPlaceIfPossible rolls an image change out in place (OpenKruise's test/e2e/apps/v1beta1
// cloneset scenario): the same Pods on the new image, and the v1beta1 status counts them updated
// and ready.
func TestCloneSetV1beta1InPlaceRollout(t *testing.T) {
	ctx, ns := framework.Start(t, "clone-beta")
	cs := newCloneSetV1beta1(t, ctx, ns, 2, v1beta1.CloneSetUpdateStrategy{
		Type: v1beta1.RollingUpdateCloneSetUpdateStrategyType,
		RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{
			PodUpdatePolicy: v1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType,
			MaxUnavailable:  ptr.To(intstr.FromInt32(2)),
		},
	})
	before := framework.WaitCloneSetReady(t, ctx, cs, 2)
	generation := setImageV1beta1(t, ctx, ns, framework.AppImageV2)
	got, after := framework.WaitRolledOut(t, ctx, cs, 2)
	framework.CheckSamePods(t, before, after)
	for name, p := range after {
		if framework.SpecImage(p, "main") != framework.AppImageV2 || framework.PodRevision(p) != got.Status.UpdateRevision {
			t.Errorf("pod %s: image %s at revision %s, want %s at %s", name, framework.SpecImage(p, "main"), framework.PodRevision(p), framework.AppImageV2, got.Status.UpdateRevision)
		}
	}
	b, err := framework.Inplace.AppsV1beta1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := b.Status; st.ObservedGeneration < generation || st.UpdatedReplicas != 2 || st.UpdatedReadyReplicas != 2 || st.UpdateRevision != got.Status.UpdateRevision {
		t.Errorf("v1beta1 status %+v, want 2 updated and ready at %s", st, got.Status.UpdateRevision)
	}
}

// TestCloneSetV1beta1OnDelete: under updateStrategy.type OnDelete (v1beta1) an image change moves
// the update revision and updates no Pod, in place or by recreation; a Pod the user deletes comes
// back at the new revision, the other stays on the old one (OpenKruise master's OnDelete).
func TestCloneSetV1beta1OnDelete(t *testing.T) {
	ctx, ns := framework.Start(t, "clone-ondelete")
	cs := newCloneSetV1beta1(t, ctx, ns, 2, v1beta1.CloneSetUpdateStrategy{Type: v1beta1.OnDeleteCloneSetUpdateStrategyType})
	before := framework.WaitCloneSetReady(t, ctx, cs, 2)
	oldRevision := framework.PodRevision(before[slices.Sorted(maps.Keys(before))[0]])
	generation := setImageV1beta1(t, ctx, ns, framework.AppImageV2)

	var updateRevision string
	framework.Poll(t, ctx, 30*time.Second, "the v1beta1 status to move to the new revision", func(ctx context.Context) (bool, error) {
		b, err := framework.Inplace.AppsV1beta1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := b.Status
		updateRevision = st.UpdateRevision
		return st.ObservedGeneration >= generation && st.UpdateRevision != "" && st.UpdateRevision != oldRevision, fmt.Errorf("status %+v", st)
	})
	// No Pod is touched: the same two, on the old revision and image, none counted updated, for
	// several of the controller's syncs.
	untouched := func(ctx context.Context) error {
		pods, err := framework.CloneSetPods(ctx, cs)
		if err != nil {
			return err
		}
		if len(pods) != 2 {
			return fmt.Errorf("%d pods, want the 2 of before", len(pods))
		}
		for name, p := range pods {
			if b := before[name]; b == nil || b.UID != p.UID || framework.PodRevision(p) != oldRevision || framework.SpecImage(p, "main") != framework.AppImageV1 ||
				p.Annotations["apps.kruise.io/inplace-update-state"] != "" {
				return fmt.Errorf("pod %s (uid %s) changed: revision %s, image %s, state %q", name, p.UID, framework.PodRevision(p),
					framework.SpecImage(p, "main"), p.Annotations["apps.kruise.io/inplace-update-state"])
			}
		}
		b, err := framework.Inplace.AppsV1beta1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if st := b.Status; st.UpdatedReplicas != 0 || st.UpdateRevision != updateRevision {
			return fmt.Errorf("status %+v, want 0 updated at %s", st, updateRevision)
		}
		return nil
	}
	framework.Consistently(t, ctx, 5*time.Second, 250*time.Millisecond, func(ctx context.Context) error {
		if err := untouched(ctx); err != nil {
			return fmt.Errorf("under OnDelete: %w", err)
		}
		return nil
	})

	victim := slices.Sorted(maps.Keys(before))[0]
	if err := framework.Kube.CoreV1().Pods(ns).Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting pod %s: %v", victim, err)
	}
	framework.Poll(t, ctx, 90*time.Second, "the deleted Pod's replacement at the new revision", func(ctx context.Context) (bool, error) {
		pods, err := framework.CloneSetPods(ctx, cs)
		if err != nil {
			return false, err
		}
		var fresh, kept int
		for name, p := range pods {
			switch b := before[name]; {
			case b != nil && b.UID == p.UID && name != victim && framework.PodRevision(p) == oldRevision && framework.SpecImage(p, "main") == framework.AppImageV1:
				kept++
			case b == nil && framework.PodRevision(p) == updateRevision && framework.SpecImage(p, "main") == framework.AppImageV2 && framework.PodReady(p):
				fresh++
			default:
				return false, fmt.Errorf("pod %s: revision %s, image %s, ready %v", name, framework.PodRevision(p), framework.SpecImage(p, "main"), framework.PodReady(p))
			}
		}
		b, err := framework.Inplace.AppsV1beta1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := b.Status
		return len(pods) == 2 && kept == 1 && fresh == 1 && st.UpdatedReplicas == 1 && st.UpdatedReadyReplicas == 1 && st.ReadyReplicas == 2,
			fmt.Errorf("%d pods, %d kept, %d new; status %+v", len(pods), kept, fresh, st)
	})
}
