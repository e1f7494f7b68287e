package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// expandableVolumes is staticVolumes whose StorageClass exists and allows volume expansion: the
// kube-apiserver then accepts a bound claim's larger request. Nothing grows the volume (the local
// cluster has no resizer): a test that needs it grown does what a resizer would (growVolume).
func expandableVolumes(t *testing.T, ctx context.Context, n int) string {
	t.Helper()
	class := staticVolumes(t, ctx, n)
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: "kubernetes.io/no-provisioner",
		AllowVolumeExpansion: ptr.To(true)}
	if _, err := framework.Kube.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating StorageClass %s: %v", class, err)
	}
	t.Cleanup(func() {
		_ = framework.Kube.StorageV1().StorageClasses().Delete(context.Background(), class, metav1.DeleteOptions{})
	})
	return class
}

// resizableStatefulSet creates the Advanced StatefulSet db of one Pod whose claim data (1Mi of
// class) follows its template on the Pod's rolling update (volumeClaimUpdateStrategy
// OnPodRollingUpdate), and waits until it runs.
func resizableStatefulSet(t *testing.T, ctx context.Context, ns, class string) *v1beta1.StatefulSet {
	t.Helper()
	set := framework.CreateAdvancedStatefulSet(t, ctx, framework.NewAdvancedStatefulSet(ns, 1, appsv1.ParallelPodManagement, func(set *v1beta1.StatefulSet) {
		set.Spec.VolumeClaimTemplates[0].Spec.StorageClassName = ptr.To(class)
		set.Spec.VolumeClaimUpdateStrategy.Type = v1beta1.OnPodRollingUpdateVolumeClaimUpdateStrategyType
	}))
	framework.WaitStatefulSet(t, ctx, set, 1, 1)
	return set
}

// askStorage sets the template's request of claim data.
func askStorage(size string) func(*v1beta1.StatefulSet) {
	return func(set *v1beta1.StatefulSet) {
		set.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}
	}
}

// waitVolumeClaims polls until the set's status, for its generation, has these volumeClaims and
// updated Pods, and its claim data-db-0 asks request; it returns the claim.
func waitVolumeClaims(t *testing.T, ctx context.Context, set *v1beta1.StatefulSet, request string, updated int32, want []v1beta1.VolumeClaimStatus) *corev1.PersistentVolumeClaim {
	t.Helper()
	var claim *corev1.PersistentVolumeClaim
	framework.Poll(t, ctx, 30*time.Second, fmt.Sprintf("volumeClaims %+v, %d Pod updated, claim asking %s", want, updated, request), func(ctx context.Context) (bool, error) {
		got, err := framework.Inplace.AppsV1beta1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := got.Status
		if st.ObservedGeneration != got.Generation || st.UpdatedReplicas != updated || !slices.Equal(st.VolumeClaims, want) {
			return false, fmt.Errorf("status %+v (generation %d)", st, got.Generation)
		}
		claim, err = framework.Kube.CoreV1().PersistentVolumeClaims(set.Namespace).Get(ctx, "data-db-0", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		q := claim.Spec.Resources.Requests[corev1.ResourceStorage]
		return q.String() == request, fmt.Errorf("claim asks %s", q.String())
	})
	return claim
}

// growVolume does what a CSI resizer does once the volume grew: the volume's capacity and the
// claim's status say size.
func growVolume(t *testing.T, ctx context.Context, claim *corev1.PersistentVolumeClaim, size string) {
	t.Helper()
	q := resource.MustParse(size)
	pv, err := framework.Kube.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv.Spec.Capacity[corev1.ResourceStorage] = q
	if _, err := framework.Kube.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("growing volume %s: %v", pv.Name, err)
	}
	claim.Status.Capacity[corev1.ResourceStorage] = q
	if _, err := framework.Kube.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("growing claim %s's capacity: %v", claim.Name, err)
	}
}

// testStatefulSetNoResize: with StatefulSetAutoResizePVCGate off (OpenKruise's default), a
// larger claim template applies to claims made afterwards only: the Pod's claim keeps its size,
// though its StorageClass allows expansion, and status.volumeClaims stays empty.
func testStatefulSetNoResize(t *testing.T, ctx context.Context) {
	ns := framework.NewNamespace(t, ctx, "fg-asts-resize-off")
	set := resizableStatefulSet(t, ctx, ns, expandableVolumes(t, ctx, 1))
	set = framework.UpdateAdvancedStatefulSet(t, ctx, set, askStorage("2Mi"))
	waitVolumeClaims(t, ctx, set, "1Mi", 1, nil)
}

// testStatefulSetAutoResizePVC restates OpenKruise's StatefulSetAutoResizePVCGate behaviour on one
// Pod: the claim template grows from 1Mi to 2Mi with an image change; the controller raises the
// claim's request (annotated apps.kruise.io/owned-by-asts) and holds the Pod's in-place update
// while the volume has not grown (status.volumeClaims: compatible 1, ready 0); once it grew (the
// test does the resizer's part) the Pod is updated in place and the claim counts ready.
func testStatefulSetAutoResizePVC(t *testing.T, ctx context.Context) {
	ns := framework.NewNamespace(t, ctx, "fg-asts-resize")
	set := resizableStatefulSet(t, ctx, ns, expandableVolumes(t, ctx, 1))
	waitVolumeClaims(t, ctx, set, "1Mi", 1, []v1beta1.VolumeClaimStatus{{VolumeClaimName: "data", CompatibleReplicas: 1, CompatibleReadyReplicas: 1}})
	before, err := framework.StatefulSetPods(ctx, set)
	if err != nil {
		t.Fatal(err)
	}

	set = framework.UpdateAdvancedStatefulSet(t, ctx, set, func(set *v1beta1.StatefulSet) {
		askStorage("2Mi")(set)
		set.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2
	})
	claim := waitVolumeClaims(t, ctx, set, "2Mi", 0, []v1beta1.VolumeClaimStatus{{VolumeClaimName: "data", CompatibleReplicas: 1}})
	if claim.Annotations["apps.kruise.io/owned-by-asts"] != "db" {
		t.Errorf("claim annotations %v, want apps.kruise.io/owned-by-asts=db", claim.Annotations)
	}

	growVolume(t, ctx, claim, "2Mi")
	after := framework.WaitStatefulSet(t, ctx, set, 1, 1)
	if p := after["db-0"]; p == nil || p.UID != before["db-0"].UID || framework.SpecImage(p, "main") != framework.AppImageV2 {
		t.Errorf("db-0 after the resize: %v, want the same Pod updated in place to %s", p, framework.AppImageV2)
	}
	waitVolumeClaims(t, ctx, set, "2Mi", 1, []v1beta1.VolumeClaimStatus{{VolumeClaimName: "data", CompatibleReplicas: 1, CompatibleReadyReplicas: 1}})
}

// statefulSetReplacementRevision is the PreparingUpdateAsUpdate scenario on an Advanced
// StatefulSet, where OpenKruise applies the gate (unorderedUpdate only): 2 Pods, partition 1, an
// inPlaceUpdate hook holding the Pod the image change picks in PreparingUpdate. The other Pod is
// deleted; it returns the revision its replacement was created at, and the set's current and
// update revisions.
func statefulSetReplacementRevision(t *testing.T, ctx context.Context, prefix string) (replacement, current, update string) {
	t.Helper()
	ns := framework.NewNamespace(t, ctx, prefix)
	set := framework.CreateAdvancedStatefulSet(t, ctx, framework.NewAdvancedStatefulSet(ns, 2, appsv1.ParallelPodManagement, func(set *v1beta1.StatefulSet) {
		set.Spec.VolumeClaimTemplates = nil
		set.Spec.Template.Spec.Containers[0].VolumeMounts = nil
		set.Spec.Template.Labels[preparingUpdateHook] = "true"
		set.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{preparingUpdateHook: "true"}}}
		ru := set.Spec.UpdateStrategy.RollingUpdate
		ru.UnorderedUpdate = &v1beta1.UnorderedUpdateStrategy{}
		ru.Partition = ptr.To[int32](1)
	}))
	framework.WaitStatefulSet(t, ctx, set, 2, 2)
	set = framework.UpdateAdvancedStatefulSet(t, ctx, set, func(set *v1beta1.StatefulSet) { set.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2 })

	var other *corev1.Pod
	framework.Poll(t, ctx, 30*time.Second, "one Pod held in PreparingUpdate", func(ctx context.Context) (bool, error) {
		pods, err := framework.StatefulSetPods(ctx, set)
		if err != nil {
			return false, err
		}
		held := 0
		for _, p := range pods {
			if p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingUpdate) {
				held++
			} else {
				other = p
			}
		}
		return held == 1 && len(pods) == 2, fmt.Errorf("%d of %d pods held", held, len(pods))
	})
	if err := framework.Kube.CoreV1().Pods(ns).Delete(ctx, other.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &other.UID}}); err != nil {
		t.Fatal(err)
	}
	framework.Poll(t, ctx, framework.PodTimeout, "the replacement of "+other.Name, func(ctx context.Context) (bool, error) {
		p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, other.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		replacement = framework.PodRevision(p)
		return p.UID != other.UID && p.DeletionTimestamp == nil, fmt.Errorf("still the deleted pod")
	})
	current, update = setRevisions(t, ctx, set)
	return replacement, current, update
}

// testStatefulSetPreparingUpdate: by default (OpenKruise's too) the Pod held in PreparingUpdate
// is one of those the partition keeps, so the replacement takes the update revision; with
// PreparingUpdateAsUpdate (asUpdate) it counts as updated, and the replacement keeps the
// partition at the current revision.
func testStatefulSetPreparingUpdate(t *testing.T, ctx context.Context, asUpdate bool) {
	prefix, want := "fg-asts-prep-off", "update"
	if asUpdate {
		prefix, want = "fg-asts-prep", "current"
	}
	got, current, update := statefulSetReplacementRevision(t, ctx, prefix)
	if current == update {
		t.Fatalf("current revision %s is the update revision", current)
	}
	if (want == "current" && got != current) || (want == "update" && got != update) {
		t.Errorf("replacement created at %s (current %s, update %s), want the %s revision", got, current, update, want)
	}
}
