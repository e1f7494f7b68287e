package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// openKruiseGates is a --feature-gates string of an OpenKruise user (`featureGates` in its
// chart): the two alpha gates OpenKruise's CloneSet specs need, the DaemonSet's image
// pre-download, the Advanced StatefulSet's claim resize, SidecarSet patchPodMetadata without an
// allow-list, workloads resized by recreating their Pods (a gate set off: inplace's default is
// on), spec.ordinals.start, sidecars injected in name order, PodUnavailableBudgets guarding in-place
// updates, deletion protection (a CustomResourceDefinition's Cascading too), and a gate of a newer
// OpenKruise that inplace does not have, which every program must log and ignore.
const openKruiseGates = "PreparingUpdateAsUpdate=true,RecreatePodWhenChangeVCTInCloneSetGate=true,PodUnavailableBudgetUpdateGate=true," +
	"PreDownloadImageForDaemonSetUpdate=true,StatefulSetAutoResizePVCGate=true,SidecarSetPatchPodMetadataDefaultsAllowed=true," +
	"InPlaceWorkloadVerticalScaling=false,StatefulSetStartOrdinal=true,EnableSortSidecarContainerByName=true," +
	"ResourcesDeletionProtection=true,DeletionProtectionForCRDCascadingGate=true,DaemonSetPruneIneligibleNodes=true"

// featureGateHooks restart the three programs, and the variable that gives each its flags.
var featureGateHooks = []struct{ hook, env, program string }{
	{framework.ApiserverHook, "INPLACE_APISERVER_FLAGS", "inplace-apiserver"},
	{framework.ControllerHook, "INPLACE_CONTROLLER_ARGS", "inplace-controller"},
	{framework.DaemonHook, "INPLACE_DAEMON_FLAGS", "inplace-daemon"},
}

// restartWithFeatureGates restarts inplace-apiserver, inplace-controller and inplace-daemon with
// --feature-gates=gates ("": none, their defaults).
func restartWithFeatureGates(t *testing.T, gates string) {
	t.Helper()
	for _, h := range featureGateHooks {
		flags := ""
		if gates != "" {
			flags = "--feature-gates=" + gates
		}
		t.Setenv(h.env, flags)
		if err := framework.RunLocalUpHook(t, h.hook); err != nil {
			t.Fatalf("restarting %s with %q: %v", h.program, flags, err)
		}
	}
}

// programLogSinceStart is what a host program logged since it last started (its log file,
// after local_start's "=== " line); "" in-cluster, where the programs log to their Pods.
func programLogSinceStart(t *testing.T, program string) string {
	t.Helper()
	if framework.InClusterMode() {
		return ""
	}
	data, err := os.ReadFile(filepath.Join(framework.Repo, "_output/local/logs", program+".log"))
	if err != nil {
		t.Fatalf("reading the log of %s: %v", program, err)
	}
	s := string(data)
	if i := strings.LastIndex(s, "=== "); i >= 0 {
		s = s[i:]
	}
	return s
}

// TestFeatureGates: OpenKruise's --feature-gates string, one gate inplace lacks included, starts
// all three programs (each logs the unknown gate and ignores it), and OpenKruise's two CloneSet
// specs that need an alpha gate pass with it on: "regard preparing-update pod as update when
// scaling" (PreparingUpdateAsUpdate) and "Update with VolumeClaimTemplate changes"
// (RecreatePodWhenChangeVCTInCloneSetGate); an Advanced DaemonSet's image change pre-downloads
// its image (PreDownloadImageForDaemonSetUpdate), an Advanced StatefulSet's claims grow with
// their template (StatefulSetAutoResizePVCGate), a SidecarSet may patch any Pod annotation
// without OpenKruise's allow-list (SidecarSetPatchPodMetadataDefaultsAllowed), with
// InPlaceWorkloadVerticalScaling set to false a CloneSet resized recreates its Pods, an Advanced
// StatefulSet's Pods start at spec.ordinals.start (StatefulSetStartOrdinal) and a SidecarSet's
// sidecars are injected in name order (EnableSortSidecarContainerByName). Before, with no gate
// set, each scenario shows the default behaviour, which is OpenKruise's default too but for
// InPlaceWorkloadVerticalScaling: the replacement of a Pod takes the update revision while
// another waits in PreparingUpdate, a template change that can go in place does, whatever the
// volumeClaimTemplates, a DaemonSet makes no ImagePullJob, a StatefulSet's claims keep their size,
// a SidecarSet patches only what the allow-list allows, a CloneSet is resized in place
// (inplace's default; OpenKruise's is off), spec.ordinals is not honoured and sidecars keep their
// SidecarSet's order.
func TestFeatureGates(t *testing.T) {
	ctx := framework.Context(t)
	runParallel(t, ctx, "defaults", []scenario{
		{"PreparingUpdateAsUpdate off", func(t *testing.T, ctx context.Context) {
			ns := framework.NewNamespace(t, ctx, "fg-prep-off")
			s := newPreparingUpdateScenario(t, ctx, ns)
			s.rebuildOne(t, ctx)
			// The replacement took the update revision: the partition (1 Pod old) is kept by
			// the held Pod, which stays at its old revision.
			s.wait(t, ctx, "the replacement at the update revision", 1, 1, 1)
		}},
		{"RecreatePodWhenChangeVCTInCloneSetGate off", func(t *testing.T, ctx context.Context) {
			ns := framework.NewNamespace(t, ctx, "fg-vct-off")
			s := newVCTScenario(t, ctx, ns, 2, v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType)
			s.change(t, ctx, "image and volumeClaimTemplates", false, false, "1Gi", "1Gi", func(cs *v1alpha1.CloneSet) {
				cs.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2
				cs.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests = sizeRequest("2Gi")
			})
		}},
		{"PreDownloadImageForDaemonSetUpdate off", testDaemonSetNoPreDownload},
		{"PreparingUpdateAsUpdate off, Advanced StatefulSet", func(t *testing.T, ctx context.Context) {
			testStatefulSetPreparingUpdate(t, ctx, false)
		}},
		{"StatefulSetAutoResizePVCGate off", testStatefulSetNoResize},
		{"SidecarSetPatchPodMetadataDefaultsAllowed off", testPatchPodMetadataAllowList},
		{"InPlaceWorkloadVerticalScaling on, inplace's default", func(t *testing.T, ctx context.Context) {
			testWorkloadVerticalScaling(t, ctx, true)
		}},
		{"StatefulSetStartOrdinal off", func(t *testing.T, ctx context.Context) { testStatefulSetStartOrdinal(t, ctx, false) }},
		{"EnableSortSidecarContainerByName off", func(t *testing.T, ctx context.Context) { testSortSidecarContainersByName(t, ctx, false) }},
		{"ResourcesDeletionProtection off", testNoDeletionProtection},
	})
	if t.Failed() {
		return
	}

	t.Cleanup(func() { restartWithFeatureGates(t, "") })
	restartWithFeatureGates(t, openKruiseGates)
	for _, h := range featureGateHooks {
		if framework.InClusterMode() {
			break
		}
		logged := programLogSinceStart(t, h.program)
		if !strings.Contains(logged, `featureGate="DaemonSetPruneIneligibleNodes"`) || !strings.Contains(logged, "Ignoring a feature gate") {
			t.Errorf("%s did not log that it ignores DaemonSetPruneIneligibleNodes:\n%s", h.program, logged)
		}
		if !strings.Contains(logged, "PreparingUpdateAsUpdate=true") {
			t.Errorf("%s did not log PreparingUpdateAsUpdate=true among its gates:\n%s", h.program, logged)
		}
	}

	runParallel(t, ctx, "gates on", []scenario{
		{"regard preparing-update pod as update when scaling", testPreparingUpdateAsUpdate},
		{"Update with VolumeClaimTemplate changes", testUpdateVolumeClaimTemplates},
		{"DaemonSet pre-downloads the new image", testDaemonSetPreDownload},
		{"Advanced StatefulSet regards a preparing-update Pod as updated", func(t *testing.T, ctx context.Context) {
			testStatefulSetPreparingUpdate(t, ctx, true)
		}},
		{"StatefulSet claims resize with the rolling update", testStatefulSetAutoResizePVC},
		{"SidecarSet patchPodMetadata needs no allow-list", testPatchPodMetadataDefaultsAllowed},
		{"InPlaceWorkloadVerticalScaling off recreates Pods to resize them", func(t *testing.T, ctx context.Context) {
			testWorkloadVerticalScaling(t, ctx, false)
		}},
		{"StatefulSet Pods start at spec.ordinals.start", func(t *testing.T, ctx context.Context) { testStatefulSetStartOrdinal(t, ctx, true) }},
		{"sidecars injected in name order", func(t *testing.T, ctx context.Context) { testSortSidecarContainersByName(t, ctx, true) }},
		{"PodUnavailableBudget blocks an in-place update with a failing image", testBudgetBlocksInPlaceUpdate},
		{"PodUnavailableBudget bounds two CloneSets and a SidecarSet together", testBudgetAcrossUpdaters},
		{"PodUnavailableBudget blocks a recreate update with a failing image", testBudgetBlocksRecreate},
		{"PodUnavailableBudget blocks a SidecarSet upgrade with a failing sidecar image", testBudgetBlocksSidecarUpgrade},
		{"PodUnavailableBudget targetReference pods, update failed image and block", testBudgetTargetRefDeployment},
		{"PodUnavailableBudget two Deployments roll out under one budget", testBudgetTwoDeployments},
		{"PodUnavailableBudget selector no matched pods", testBudgetNoMatchedPods},
		{"PodUnavailableBudget blocks deleting a Deployment's Pods beyond the budget", testBudgetBlocksDeletion},
		{"PodUnavailableBudget blocks eviction, deleting the Deployment is not blocked", testBudgetBlocksEvictionDeleteDeployment},
		{"PodUnavailableBudget does not block scaling a Deployment down", testBudgetScaleDownDeployment},
		{"PodUnavailableBudget blocks a direct Pod image change beyond the budget", testBudgetBlocksDirectUpdate},
		{"deletion protection of a namespace", testDeletionProtectionNamespace},
		{"deletion protection of a CRD", testDeletionProtectionCRD},
		{"deletion protection of a CloneSet and a Deployment", testDeletionProtectionWorkloads},
		{"deletion protection of a Service and an Ingress", testDeletionProtectionServiceIngress},
	})
}

// preparingUpdateHook is the inPlaceUpdate hook's label of OpenKruise's spec.
const preparingUpdateHook = "preparing-update-hook"

// preparingUpdateScenario is OpenKruise's "regard preparing-update pod as update when scaling":
// 2 Pods, partition 99% (one Pod to update), an inPlaceUpdate hook holding it in PreparingUpdate.
type preparingUpdateScenario struct {
	cs *v1alpha1.CloneSet
}

func newPreparingUpdateScenario(t *testing.T, ctx context.Context, ns string) *preparingUpdateScenario {
	t.Helper()
	cs, _ := framework.ReadyCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{
		Type:           v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
		MaxUnavailable: ptr.To(intstr.FromString("50%")),
		Partition:      ptr.To(intstr.FromString("99%")),
	}, func(cs *v1alpha1.CloneSet) {
		cs.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{preparingUpdateHook: "true"}}}
		cs.Spec.Template.Labels[preparingUpdateHook] = "true"
		// OpenKruise's 10 s and 120 s, shorter.
		cs.Spec.MinReadySeconds, cs.Spec.ProgressDeadlineSeconds = 1, ptr.To[int32](10)
	})
	waitProgressing(t, ctx, cs, progressingAvailable)
	s := &preparingUpdateScenario{cs: framework.UpdateCloneSet(t, ctx, cs, framework.SetImage(framework.AppImageV2))}
	s.wait(t, ctx, "one pod held in PreparingUpdate, none updated", 0, 2, 1)
	return s
}

// groups counts the CloneSet's Pods at its update revision, at other revisions, and in
// PreparingUpdate.
func (s *preparingUpdateScenario) groups(ctx context.Context) (updated, current, preparing []*corev1.Pod, err error) {
	got, err := framework.Inplace.AppsV1alpha1().CloneSets(s.cs.Namespace).Get(ctx, s.cs.Name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, nil, err
	}
	if got.Status.ObservedGeneration != got.Generation {
		return nil, nil, nil, fmt.Errorf("status of generation %d, want %d", got.Status.ObservedGeneration, got.Generation)
	}
	pods, err := framework.CloneSetPods(ctx, s.cs)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, p := range pods {
		if framework.PodRevision(p) == got.Status.UpdateRevision {
			updated = append(updated, p)
		} else {
			current = append(current, p)
		}
		if p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingUpdate) {
			preparing = append(preparing, p)
		}
	}
	return updated, current, preparing, nil
}

// wait polls until the counts are these (and stay so for the whole of one poll: all Pods read
// at once).
func (s *preparingUpdateScenario) wait(t *testing.T, ctx context.Context, what string, updated, current, preparing int) (u, c, p []*corev1.Pod) {
	t.Helper()
	framework.Poll(t, ctx, 60*time.Second, what, func(ctx context.Context) (bool, error) {
		var err error
		u, c, p, err = s.groups(ctx)
		if err != nil {
			return false, err
		}
		return len(u) == updated && len(c) == current && len(p) == preparing,
			fmt.Errorf("updated %d, current %d, preparing-update %d; want %d, %d, %d", len(u), len(c), len(p), updated, current, preparing)
	})
	return u, c, p
}

// rebuildOne deletes the Pod that is not held in PreparingUpdate, and waits for its
// replacement.
func (s *preparingUpdateScenario) rebuildOne(t *testing.T, ctx context.Context) {
	t.Helper()
	_, current, _ := s.wait(t, ctx, "two pods at the current revision, one held", 0, 2, 1)
	for _, p := range current {
		if p.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStatePreparingUpdate) {
			if err := framework.Kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}}); err != nil {
				t.Fatal(err)
			}
			framework.Poll(t, ctx, 60*time.Second, "the replacement of "+p.Name, func(ctx context.Context) (bool, error) {
				pods, err := framework.CloneSetPods(ctx, s.cs)
				if err != nil {
					return false, err
				}
				for _, q := range pods {
					if q.UID == p.UID {
						return false, fmt.Errorf("%s not deleted yet", p.Name)
					}
				}
				return len(pods) == 2, fmt.Errorf("%d pods", len(pods))
			})
			return
		}
	}
	t.Fatal("no pod outside PreparingUpdate to delete")
}

// release removes the hook's label from the Pods, which lets their in-place update go on.
func release(t *testing.T, ctx context.Context, pods []*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, preparingUpdateHook)
		if _, err := framework.Kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// testPreparingUpdateAsUpdate restates OpenKruise's "CloneSet regard preparing-update pod as update
// when scaling" (test/e2e/apps/v1alpha1/cloneset.go), with PreparingUpdateAsUpdate on.
func testPreparingUpdateAsUpdate(t *testing.T, ctx context.Context) {
	ns := framework.NewNamespace(t, ctx, "fg-prep")
	s := newPreparingUpdateScenario(t, ctx, ns)

	// A Pod rebuilt: its replacement is at the current revision, the held Pod counting as updated.
	s.rebuildOne(t, ctx)
	s.wait(t, ctx, "the replacement at the current revision", 0, 2, 1)
	got, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, s.cs.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deadline := fmt.Sprintf("False/ProgressDeadlineExceeded/CloneSet revision %s has timed out progressing", got.Status.UpdateRevision)
	waitProgressing(t, ctx, s.cs, deadline)

	// Scaled to 3: the new Pod at the current revision too.
	s.cs = framework.UpdateCloneSet(t, ctx, s.cs, func(cs *v1alpha1.CloneSet) { cs.Spec.Replicas = ptr.To[int32](3) })
	_, _, held := s.wait(t, ctx, "the scaled Pod at the current revision", 0, 3, 1)

	// The held Pod released: it updates in place.
	release(t, ctx, held)
	s.wait(t, ctx, "the released Pod updated", 1, 2, 0)

	// No partition, maxUnavailable 100%: the two others wait in PreparingUpdate, then update.
	s.cs = framework.UpdateCloneSet(t, ctx, s.cs, func(cs *v1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.Partition = nil
		cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
	})
	_, current, _ := s.wait(t, ctx, "the other two held in PreparingUpdate", 1, 2, 2)
	release(t, ctx, current)
	s.wait(t, ctx, "all three updated", 3, 0, 0)
	if got, err := progressing(ctx, s.cs); err != nil || got != deadline {
		t.Errorf("Progressing %q (%v), want it unchanged: %q", got, err, deadline)
	}
}

func sizeRequest(size string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}
}

// vctScenario is a CloneSet with OpenKruise's two volumeClaimTemplates data-vol1 and data-vol2
// (the local cluster's default StorageClass provisions them), and what its Pods and PVCs were.
type vctScenario struct {
	cs       *v1alpha1.CloneSet
	replicas int
	// pods and pvcs are the UIDs of the last state seen, by name.
	pods, pvcs map[string]types.UID
}

func newVCTScenario(t *testing.T, ctx context.Context, ns string, replicas int, strategy v1alpha1.CloneSetUpdateStrategyType) *vctScenario {
	t.Helper()
	cs := framework.NewUpdateCloneSet(t, ctx, ns, int32(replicas), v1alpha1.CloneSetUpdateStrategy{Type: strategy}, func(cs *v1alpha1.CloneSet) {
		for _, name := range []string{"data-vol1", "data-vol2"} {
			cs.Spec.VolumeClaimTemplates = append(cs.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: sizeRequest("1Gi")},
				},
			})
		}
	})
	s := &vctScenario{cs: cs, replicas: replicas}
	s.settle(t, ctx, "created")
	return s
}

// settle waits until every Pod runs the CloneSet's update revision, ready, with its two PVCs, and
// returns the Pods' and PVCs' UIDs by name.
func (s *vctScenario) settle(t *testing.T, ctx context.Context, what string) (pods, pvcs map[string]types.UID, sizes map[string]string) {
	t.Helper()
	framework.Poll(t, ctx, 120*time.Second, fmt.Sprintf("CloneSet %s %s: all Pods updated and ready with their PVCs", s.cs.Name, what), func(ctx context.Context) (bool, error) {
		got, err := framework.Inplace.AppsV1alpha1().CloneSets(s.cs.Namespace).Get(ctx, s.cs.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := got.Status
		if st.ObservedGeneration != got.Generation || st.UpdatedReadyReplicas != int32(s.replicas) || st.Replicas != int32(s.replicas) {
			return false, fmt.Errorf("status %+v (generation %d)", st, got.Generation)
		}
		list, err := framework.CloneSetPods(ctx, s.cs)
		if err != nil {
			return false, err
		}
		pods, pvcs, sizes = map[string]types.UID{}, map[string]types.UID{}, map[string]string{}
		for name, p := range list {
			if framework.PodRevision(p) != st.UpdateRevision || !framework.PodReady(p) {
				return false, fmt.Errorf("pod %s at %s (ready %t), want %s", name, framework.PodRevision(p), framework.PodReady(p), st.UpdateRevision)
			}
			pods[name] = p.UID
			for _, tmpl := range []string{"data-vol1", "data-vol2"} {
				claim := tmpl + "-" + s.cs.Name + "-" + p.Labels[v1alpha1.CloneSetInstanceID]
				pvc, err := framework.Kube.CoreV1().PersistentVolumeClaims(s.cs.Namespace).Get(ctx, claim, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				pvcs[claim] = pvc.UID
				sizes[claim] = pvc.Spec.Resources.Requests.Storage().String()
			}
		}
		all, err := framework.Kube.CoreV1().PersistentVolumeClaims(s.cs.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		live := 0
		for _, c := range all.Items {
			if c.DeletionTimestamp == nil {
				live++
			}
		}
		return len(pods) == s.replicas && live == 2*s.replicas, fmt.Errorf("%d pods, %d PVCs", len(pods), live)
	})
	return pods, pvcs, sizes
}

// change applies change to the CloneSet, waits until it settles, and checks, as OpenKruise's
// checkPodsDoRecreate, checkPVCsDoRecreate and checkPVCSize do: every Pod recreated or none,
// every PVC new or none, and the sizes of data-vol1's and data-vol2's PVCs.
func (s *vctScenario) change(t *testing.T, ctx context.Context, what string, podsRecreated, pvcsRecreated bool, size1, size2 string, change func(*v1alpha1.CloneSet)) {
	t.Helper()
	if s.pods == nil {
		s.pods, s.pvcs, _ = s.settle(t, ctx, "before "+what)
	}
	s.cs = framework.UpdateCloneSet(t, ctx, s.cs, change)
	pods, pvcs, sizes := s.settle(t, ctx, "after "+what)
	for name, uid := range pods {
		if kept := s.pods[name] == uid; kept == podsRecreated {
			t.Errorf("%s: pod %s kept %t, want %t", what, name, kept, !podsRecreated)
		}
	}
	for name, uid := range pvcs {
		if kept := s.pvcs[name] == uid; kept == pvcsRecreated {
			t.Errorf("%s: pvc %s kept %t, want %t", what, name, kept, !pvcsRecreated)
		}
		want := size2
		if strings.HasPrefix(name, "data-vol1-") {
			want = size1
		}
		if sizes[name] != want {
			t.Errorf("%s: pvc %s asks %s, want %s", what, name, sizes[name], want)
		}
	}
	s.pods, s.pvcs = pods, pvcs
}

// testUpdateVolumeClaimTemplates restates OpenKruise's "CloneSet Update with VolumeClaimTemplate
// changes" (testUpdateVolumeClaimTemplates), with RecreatePodWhenChangeVCTInCloneSetGate on; 2
// Pods where OpenKruise has 4.
func testUpdateVolumeClaimTemplates(t *testing.T, ctx context.Context) {
	ns := framework.NewNamespace(t, ctx, "fg-vct")
	s := newVCTScenario(t, ctx, ns, 2, v1alpha1.RecreateCloneSetUpdateStrategyType)
	inPlaceIfPossible := func(cs *v1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy = v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType}
	}
	inPlaceOnly := func(cs *v1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy = v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceOnlyCloneSetUpdateStrategyType}
	}
	s.change(t, ctx, "image and volumeClaimTemplates", true, true, "2Gi", "1Gi", func(cs *v1alpha1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2
		cs.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests = sizeRequest("2Gi")
		inPlaceIfPossible(cs)
	})
	s.change(t, ctx, "volumeClaimTemplates only", false, false, "2Gi", "1Gi", func(cs *v1alpha1.CloneSet) {
		cs.Spec.VolumeClaimTemplates[1].Spec.Resources.Requests = sizeRequest("2Gi")
		inPlaceIfPossible(cs)
	})
	s.change(t, ctx, "image, after the volumeClaimTemplates changed", true, true, "2Gi", "2Gi", func(cs *v1alpha1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Image = framework.AppImageV3
		inPlaceIfPossible(cs)
	})
	s.change(t, ctx, "image under InPlaceOnly", false, false, "2Gi", "2Gi", func(cs *v1alpha1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Image = framework.AppImageV1
		inPlaceOnly(cs)
	})
	s.change(t, ctx, "image and volumeClaimTemplates under InPlaceOnly", false, false, "2Gi", "2Gi", func(cs *v1alpha1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Image = framework.AppImageV3
		cs.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests = sizeRequest("3Gi")
		cs.Spec.VolumeClaimTemplates[1].Spec.Resources.Requests = sizeRequest("3Gi")
		inPlaceOnly(cs)
	})
}

// scenario is one subtest of TestFeatureGates.
type scenario struct {
	name string
	run  func(t *testing.T, ctx context.Context)
}

// runParallel runs the scenarios as parallel subtests of a group named name, and returns when all
// have ended.
func runParallel(t *testing.T, ctx context.Context, name string, scenarios []scenario) {
	t.Run(name, func(t *testing.T) {
		for _, sc := range scenarios {
			t.Run(sc.name, func(t *testing.T) {
				t.Parallel()
				sc.run(t, ctx)
			})
		}
	})
}

// heldDaemonSetUpdate creates the Advanced DaemonSet agent on every node running image, its
// partition holding every Pod back, and changes its image to newImage; it returns the DaemonSet
// once its status is about the new revision (the sync that would create a pre-download job is
// done by then: it comes before the status), and the revision's name.
func heldDaemonSetUpdate(t *testing.T, ctx context.Context, ns, image, newImage string) (*v1alpha1.DaemonSet, string) {
	t.Helper()
	n := framework.ReadyNodes(t, ctx)
	ds := framework.NewAdvancedDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(n))
		c := &ds.Spec.Template.Spec.Containers[0]
		c.Image, c.ImagePullPolicy = image, corev1.PullIfNotPresent
	})
	framework.WaitDaemonSet(t, ctx, ns, n, n)
	framework.UpdateDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = newImage })
	framework.WaitDaemonSet(t, ctx, ns, n, 0)
	got, err := framework.Inplace.AppsV1alpha1().DaemonSets(ns).Get(ctx, ds.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got, got.Status.DaemonSetHash
}

// testDaemonSetNoPreDownload: with PreDownloadImageForDaemonSetUpdate off (OpenKruise's default),
// an image change held back by the partition makes no ImagePullJob, and its revision carries no
// pre-download label.
func testDaemonSetNoPreDownload(t *testing.T, ctx context.Context) {
	ns := framework.NewNamespace(t, ctx, "fg-ads-predl-off")
	_, revision := heldDaemonSetUpdate(t, ctx, ns, framework.AppImageV1, framework.AppImageV2)
	if n := listJobs(t, ctx, ns); n != 0 {
		t.Errorf("%d ImagePullJobs with the gate off, want none", n)
	}
	rev, err := framework.Kube.AppsV1().ControllerRevisions(ns).Get(ctx, revision, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{v1alpha1.ImagePreDownloadCreatedKey, v1alpha1.ImagePreDownloadIgnoredKey} {
		if _, ok := rev.Labels[k]; ok {
			t.Errorf("revision %s labelled %s with the gate off", revision, k)
		}
	}
}

// testDaemonSetPreDownload: with PreDownloadImageForDaemonSetUpdate on, an Advanced DaemonSet's
// image change held back by its partition gets OpenKruise's ImagePullJob <revision>-<container>,
// controlled by the DaemonSet, aimed at its Pods not at the new revision, which pulls the new image
// (from the local registry, on no node before) onto every node; the revision is labelled
// apps.kruise.io/image-predownload-created. Once the partition is lifted the Pods update in place
// and, the rollout over, the job is deleted.
func testDaemonSetPreDownload(t *testing.T, ctx context.Context) {
	reg, nodes := framework.RegistryNodes(t)
	oldImage, newImage := reg+"/remote/app:v1", reg+"/remote/app:v2"
	removeFromNodes(t, ctx, nodes, newImage)
	ns := framework.NewNamespace(t, ctx, "fg-ads-predl")
	ds, revision := heldDaemonSetUpdate(t, ctx, ns, oldImage, newImage)
	n := int32(len(nodes))

	jobName := revision + "-main"
	job := waitPullJobCompleted(t, ctx, ns, jobName)
	if ref := metav1.GetControllerOf(job); ref == nil || ref.Kind != "DaemonSet" || ref.UID != ds.UID {
		t.Errorf("job controller %+v, want DaemonSet %s (%s)", ref, ds.Name, ds.UID)
	}
	if s := job.Status; job.Spec.Image != newImage || s.Desired != n || s.Succeeded != n || s.Failed != 0 {
		t.Errorf("job image %s status %+v, want %s succeeded on %d nodes", job.Spec.Image, s, newImage, n)
	}
	if p := job.Spec.Parallelism; p == nil || p.IntValue() != 1 {
		t.Errorf("job parallelism %v, want OpenKruise's 1", p)
	}
	sel := job.Spec.PodSelector
	if sel == nil || sel.MatchLabels["app"] != "agent" || len(sel.MatchExpressions) != 1 ||
		sel.MatchExpressions[0].Key != appsv1.ControllerRevisionHashLabelKey || sel.MatchExpressions[0].Operator != metav1.LabelSelectorOpNotIn ||
		!slices.Contains(sel.MatchExpressions[0].Values, revision) {
		t.Errorf("job podSelector %+v, want app=agent and controller-revision-hash NotIn [%s ...]", sel, revision)
	}
	for _, node := range nodes {
		if framework.CRIImage(t, ctx, node, newImage) == nil {
			t.Errorf("node %s has no %s after the job", node.Name, newImage)
		}
	}
	rev, err := framework.Kube.AppsV1().ControllerRevisions(ns).Get(ctx, revision, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rev.Labels[v1alpha1.ImagePreDownloadCreatedKey] != "true" {
		t.Errorf("revision %s labels %v, want %s=true", revision, rev.Labels, v1alpha1.ImagePreDownloadCreatedKey)
	}

	framework.UpdateDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.Partition = nil })
	framework.WaitDaemonSet(t, ctx, ns, n, n)
	framework.Poll(t, ctx, preDownloadTimeout, "ImagePullJob "+jobName+" deleted once every Pod is updated", func(ctx context.Context) (bool, error) {
		_, err := framework.Inplace.AppsV1alpha1().ImagePullJobs(ns).Get(ctx, jobName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("still there (%v)", err)
	})
}

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
// though its StorageClass allows expansion, and status.volumeClaims counts it as not compatible
// (as OpenKruise, which counts the claims whatever the gate says).
func testStatefulSetNoResize(t *testing.T, ctx context.Context) {
	ns := framework.NewNamespace(t, ctx, "fg-asts-resize-off")
	set := resizableStatefulSet(t, ctx, ns, expandableVolumes(t, ctx, 1))
	waitVolumeClaims(t, ctx, set, "1Mi", 1, []v1beta1.VolumeClaimStatus{{VolumeClaimName: "data", CompatibleReplicas: 1, CompatibleReadyReplicas: 1}})
	set = framework.UpdateAdvancedStatefulSet(t, ctx, set, askStorage("2Mi"))
	waitVolumeClaims(t, ctx, set, "1Mi", 1, []v1beta1.VolumeClaimStatus{{VolumeClaimName: "data"}})
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
