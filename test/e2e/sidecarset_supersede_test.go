package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// A SidecarSet upgrade that cannot finish, and patchPodMetadata with an upgrade, on the real
// cluster: OpenKruise's "sidecarSet upgrade cold sidecar container failed image" and "sidecarSet
// patch pod metadata" (test/e2e/apps/v1alpha1/sidecarset.go), and the same failure for a hot
// upgrade.

// unpullableImage is an image no node has; with the sidecars' pull policy Never the kubelet
// refuses it at once (ErrImageNeverPull), as a registry would refuse a tag it lacks.
const unpullableImage = "inplace.local/app:no-such-tag"

// podsSetTo are the names of the Pods whose container runs (or is set to) image in the spec, sorted.
func podsSetTo(pods map[string]*corev1.Pod, container, image string) []string {
	var names []string
	for name, p := range pods {
		if framework.SpecImage(p, container) == image {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// waitNotStarted waits until each named Pod's container waits (the kubelet stopped it and cannot
// pull its new image) and the Pod is not Ready.
func waitNotStarted(t *testing.T, ctx context.Context, cs *v1alpha1.CloneSet, names []string, container string) {
	t.Helper()
	framework.Poll(t, ctx, framework.RolloutTimeout, fmt.Sprintf("container %s of %v waiting for an image that cannot be pulled", container, names), func(ctx context.Context) (bool, error) {
		pods, err := framework.CloneSetPods(ctx, cs)
		if err != nil {
			return false, err
		}
		for _, name := range names {
			p := pods[name]
			if p == nil {
				return false, fmt.Errorf("pod %s is gone", name)
			}
			if s := framework.FindStatus(p, container); s == nil || s.Ready || s.State.Waiting == nil || framework.PodReady(p) {
				return false, fmt.Errorf("pod %s: container %s status %+v, Pod Ready %v", name, container, s, framework.PodReady(p))
			}
		}
		return true, nil
	})
}

// TestSidecarSetUpgradeSupersedesBadImage: the sidecar's image changed to one that cannot be
// pulled, maxUnavailable 50% of 4 Pods: two Pods get it and stop there (4 matched, 2 updated, 2
// ready, 0 updated and ready). The user's fix (a good image) reaches all four, the two broken ones
// included: 4/4/4/4, every sidecar running the good image, in the same Pods, no app container
// restarted.
func TestSidecarSetUpgradeSupersedesBadImage(t *testing.T) {
	ctx := framework.Context(t)
	u := framework.NewSidecarUpgrade(t, ctx, "ss-badimage", 4, func(s *v1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("50%"))
	})

	framework.UpdateSidecarSet(t, ctx, u.Set, framework.SidecarImage(unpullableImage))
	framework.WaitSidecarSetStatus(t, ctx, u.Set, 4, 2, 2, 0)
	pods, err := framework.CloneSetPods(ctx, u.Cs)
	if err != nil {
		t.Fatal(err)
	}
	broken := podsSetTo(pods, framework.UpgradeSidecar, unpullableImage)
	if len(broken) != 2 {
		t.Fatalf("sidecars set to %s: %v, want 2 (maxUnavailable 50%% of 4)", unpullableImage, broken)
	}
	waitNotStarted(t, ctx, u.Cs, broken, framework.UpgradeSidecar)
	framework.WaitSidecarSetStatus(t, ctx, u.Set, 4, 2, 2, 0)

	framework.UpdateSidecarSet(t, ctx, u.Set, framework.SidecarImage(framework.AppImageV2))
	after := framework.WaitSidecarsOn(t, ctx, u, framework.AppImageV2, 4)
	set := framework.WaitSidecarSetStatus(t, ctx, u.Set, 4, 4, 4, 4)
	framework.CheckSamePods(t, u.Before, after)
	for name, p := range after {
		if s := framework.FindStatus(p, "main"); s == nil || s.RestartCount != 0 {
			t.Errorf("pod %s: app container status %+v, want restartCount 0: a sidecar upgrade must not restart it", name, s)
		}
		// As OpenKruise's tests check after an upgrade: each Pod's hash entries follow the
		// SidecarSet's hashes and name its sidecar, the hash entry its latest ControllerRevision;
		// every Pod is marked upgradable.
		if e := framework.SidecarHashes(t, p, v1alpha1.SidecarSetHashAnnotation)[u.Set]; e.ControllerRevision == "" || e.ControllerRevision != set.Status.LatestRevision {
			t.Errorf("pod %s: hash entry controllerRevision %q, want the SidecarSet's latest %q", name, e.ControllerRevision, set.Status.LatestRevision)
		}
		for key, want := range map[string]string{
			v1alpha1.SidecarSetHashAnnotation:             set.Annotations[v1alpha1.SidecarSetHashAnnotation],
			v1alpha1.SidecarSetHashWithoutImageAnnotation: set.Annotations[v1alpha1.SidecarSetHashWithoutImageAnnotation],
		} {
			if e := framework.SidecarHashes(t, p, key)[u.Set]; want == "" || e.Hash != want || e.SidecarSetName != u.Set || !slices.Equal(e.SidecarList, []string{framework.UpgradeSidecar}) {
				t.Errorf("pod %s: %s entry %+v, want hash %q, sidecarSetName %s, sidecarList [%s]", name, key, e, want, u.Set, framework.UpgradeSidecar)
			}
		}
		if got := framework.ConditionStatus(p, pub.SidecarSetUpgradable); got != corev1.ConditionTrue {
			t.Errorf("pod %s: condition %s %s, want True", name, pub.SidecarSetUpgradable, got)
		}
	}
}

// newHotSidecarSet creates the SidecarSet of TestSidecarSetHotUpgrade (the pair mesh-1/mesh-2 on
// framework.AppImageV1, empty image emptyImage, Pods app=web) and a CloneSet of n Pods, and waits until they
// run it and the SidecarSet counts them.
func newHotSidecarSet(t *testing.T, ctx context.Context, prefix string, n int32) (string, *v1alpha1.CloneSet, map[string]*corev1.Pod) {
	t.Helper()
	ns := framework.NewNamespace(t, ctx, prefix)
	set := framework.ScopedSidecarSet(ns, ns, "web")
	mesh := framework.Sidecar(corev1.Container{Name: "mesh", Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever}, v1alpha1.AfterAppContainerType)
	mesh.UpgradeStrategy = v1alpha1.SidecarContainerUpgradeStrategy{UpgradeType: v1alpha1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: emptyImage}
	set.Spec.Containers = []v1alpha1.SidecarContainer{mesh}
	framework.CreateSidecarSet(t, ctx, set)
	framework.WaitInjects(t, ctx, ns, set.Spec.Selector.MatchLabels, set.Name)
	cs, before := framework.ReadyCloneSet(t, ctx, ns, n, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})
	framework.WaitSidecarSetStatus(t, ctx, ns, n, n, n, n)
	return ns, cs, before
}

// TestSidecarSetHotUpgradeSupersedesBadImage: a hot upgrade to an image that cannot be pulled
// puts it into mesh-2 of one Pod (maxUnavailable 1), which never starts (2 matched, 1 updated, 1
// ready, 0 updated and ready); the fix goes into that same mesh-2 and into the other Pod's, and
// both Pods end as a hot upgrade does: mesh-2 working on the good image, mesh-1 back on the empty
// image, 2/2/2/2. A change beyond the image then upgrades neither (2 matched, 0 updated, 2 ready).
func TestSidecarSetHotUpgradeSupersedesBadImage(t *testing.T) {
	ctx := framework.Context(t)
	ns, cs, before := newHotSidecarSet(t, ctx, "ss-hot-bad", 2)
	// As injected (OpenKruise "sidecarSet upgrade hot sidecar container image"): mesh-1 works
	// at version 1, mesh-2 is empty at version 0, each the other's alt.
	for name, p := range before {
		for key, want := range map[string]string{
			"version.sidecarset.kruise.io/mesh-1": "1", "versionalt.sidecarset.kruise.io/mesh-1": "0",
			"version.sidecarset.kruise.io/mesh-2": "0", "versionalt.sidecarset.kruise.io/mesh-2": "1",
		} {
			if got := p.Annotations[key]; got != want {
				t.Errorf("pod %s injected with %s=%q, want %q", name, key, got, want)
			}
		}
	}

	framework.UpdateSidecarSet(t, ctx, ns, framework.SidecarImage(unpullableImage))
	framework.WaitSidecarSetStatus(t, ctx, ns, 2, 1, 1, 0)
	pods, err := framework.CloneSetPods(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	broken := podsSetTo(pods, "mesh-2", unpullableImage)
	if len(broken) != 1 {
		t.Fatalf("mesh-2 set to %s in %v, want 1 Pod (maxUnavailable 1)", unpullableImage, broken)
	}
	waitNotStarted(t, ctx, cs, broken, "mesh-2")
	framework.WaitSidecarSetStatus(t, ctx, ns, 2, 1, 1, 0)
	if hp := hotPairOf(t, pods[broken[0]]); hp.working != "mesh-2" || !slices.Equal(hp.serving, []string{"mesh-1"}) {
		t.Errorf("pod %s: %+v, want mesh-2 recorded as working and mesh-1 still serving", broken[0], hp)
	}

	framework.UpdateSidecarSet(t, ctx, ns, framework.SidecarImage(framework.AppImageV2))
	framework.Poll(t, ctx, framework.RolloutTimeout, "both Pods hot-upgraded to "+framework.AppImageV2+", mesh-2 working, mesh-1 empty", func(ctx context.Context) (bool, error) {
		if pods, err = framework.CloneSetPods(ctx, cs); err != nil {
			return false, err
		}
		for name, p := range pods {
			hp := hotPairOf(t, p)
			if hp.working != "mesh-2" || hp.image2 != framework.AppImageV2 || hp.image1 != emptyImage || !slices.Equal(hp.serving, []string{"mesh-2"}) || !framework.PodReady(p) {
				return false, fmt.Errorf("pod %s: %+v", name, hp)
			}
		}
		return true, nil
	})
	framework.WaitSidecarSetStatus(t, ctx, ns, 2, 2, 2, 2)
	framework.CheckSamePods(t, before, pods)
	for name, p := range pods {
		if s := framework.FindStatus(p, "main"); s == nil || s.RestartCount != 0 {
			t.Errorf("pod %s: app container %+v, want restartCount 0", name, s)
		}
	}

	// A change beyond the image upgrades no Pod, hot or not: 2 matched, none updated, 2 ready.
	framework.UpdateSidecarSet(t, ctx, ns, func(s *v1alpha1.SidecarSet) {
		s.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PROXY", Value: "127.0.0.1"}}
	})
	framework.WaitSidecarSetStatus(t, ctx, ns, 2, 0, 2, 0)
}

// TestSidecarSetPatchPodMetadataFollowsUpgrade (OpenKruise "sidecarSet patch pod metadata"): a
// SidecarSet patching the annotation key (MergePatchJson) injects {"agent":1}; changing only the
// patch to {"agent":2} upgrades no Pod (2/2/2/2, the annotation kept); the next image change
// upgrades the sidecars in place and writes {"agent":2} into the Pods with it.
//
// As with OpenKruise, the key must first be allowed in the kruise-configuration ConfigMap
// (SidecarSet_PatchPodMetadata_WhiteList).
func TestSidecarSetPatchPodMetadataFollowsUpgrade(t *testing.T) {
	ctx := framework.Context(t)
	allowPatchPodMetadata(t, ctx, nil, `^key$`)
	patch := func(value string) func(*v1alpha1.SidecarSet) {
		return func(s *v1alpha1.SidecarSet) {
			s.Spec.PatchPodMetadata = []v1alpha1.SidecarSetPatchPodMetadata{{
				PatchPolicy: v1alpha1.SidecarSetMergePatchJsonPatchPolicy,
				Annotations: map[string]string{"key": value},
			}}
		}
	}
	u := framework.NewSidecarUpgrade(t, ctx, "ss-patchmeta", 2, patch(`{"agent":1}`))
	checkKey := func(pods map[string]*corev1.Pod, want string) {
		t.Helper()
		for name, p := range pods {
			if got := p.Annotations["key"]; got != want {
				t.Errorf("pod %s: annotation key = %q, want %q", name, got, want)
			}
		}
	}
	checkKey(u.Before, `{"agent":1}`)

	framework.UpdateSidecarSet(t, ctx, u.Set, patch(`{"agent":2}`))
	framework.WaitSidecarSetStatus(t, ctx, u.Set, 2, 2, 2, 2)
	// The controller has seen the change; watch that it writes nothing to the Pods.
	framework.Consistently(t, ctx, framework.SettleWindow, 200*time.Millisecond, func(ctx context.Context) error {
		pods, err := framework.CloneSetPods(ctx, u.Cs)
		if err != nil {
			return err
		}
		for name, p := range pods {
			if p.Annotations["key"] != `{"agent":1}` || framework.SpecImage(p, framework.UpgradeSidecar) != framework.AppImageV1 {
				return fmt.Errorf("pod %s changed by a change of patchPodMetadata alone: key %q, sidecar %s", name, p.Annotations["key"], framework.SpecImage(p, framework.UpgradeSidecar))
			}
		}
		return nil
	})

	framework.UpdateSidecarSet(t, ctx, u.Set, framework.SidecarImage(framework.AppImageV2))
	after := framework.WaitSidecarsOn(t, ctx, u, framework.AppImageV2, 2)
	framework.WaitSidecarSetStatus(t, ctx, u.Set, 2, 2, 2, 2)
	framework.CheckSidecarsUpgraded(t, u.Before, after, framework.AppImageV2, 1)
	checkKey(after, `{"agent":2}`)
}
