package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// openKruiseGates is a --feature-gates string of an OpenKruise user (`featureGates` in its
// chart): the two alpha gates OpenKruise's CloneSet specs need, the DaemonSet's image
// pre-download, the Advanced StatefulSet's claim resize, SidecarSet patchPodMetadata without an
// allow-list, workloads resized by recreating their Pods (a gate set off: inplace's default is
// on), spec.ordinals.start, sidecars injected in name order, and a gate of a newer OpenKruise that inplace does not have, which every program must log
// and ignore.
const openKruiseGates = "PreparingUpdateAsUpdate=true,RecreatePodWhenChangeVCTInCloneSetGate=true," +
	"PreDownloadImageForDaemonSetUpdate=true,StatefulSetAutoResizePVCGate=true,SidecarSetPatchPodMetadataDefaultsAllowed=true," +
	"InPlaceWorkloadVerticalScaling=false,StatefulSetStartOrdinal=true,EnableSortSidecarContainerByName=true," +
	"DaemonSetPruneIneligibleNodes=true"

// featureGateHooks restart the three programs, and the variable that gives each its flags.
var featureGateHooks = []struct{ hook, env, program string }{
	{apiserverHook, "INPLACE_APISERVER_FLAGS", "inplace-apiserver"},
	{controllerHook, "INPLACE_CONTROLLER_ARGS", "inplace-controller"},
	{daemonHook, "INPLACE_DAEMON_FLAGS", "inplace-daemon"},
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
		if err := runLocalUpHook(t, h.hook); err != nil {
			t.Fatalf("restarting %s with %q: %v", h.program, flags, err)
		}
	}
}

// programLogSinceStart is what a host program logged since it last started (its log file,
// after local_start's "=== " line); "" in-cluster, where the programs log to their Pods.
func programLogSinceStart(t *testing.T, program string) string {
	t.Helper()
	if inClusterMode() {
		return ""
	}
	data, err := os.ReadFile(filepath.Join(repo, "_output/local/logs", program+".log"))
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
// its image (PreDownloadImageForDaemonSetUpdate) and an Advanced StatefulSet's claims grow with
// their template (StatefulSetAutoResizePVCGate), and a SidecarSet may patch any Pod annotation
// without OpenKruise's allow-list (SidecarSetPatchPodMetadataDefaultsAllowed), and, with
// InPlaceWorkloadVerticalScaling set to false, a CloneSet resized recreates its Pods; an Advanced
// StatefulSet's Pods start at spec.ordinals.start (StatefulSetStartOrdinal) and a SidecarSet's
// sidecars are injected in name order (EnableSortSidecarContainerByName). Before,
// with no gate set, each scenario shows the default behaviour, which is OpenKruise's default too
// but for the last: the replacement of a Pod takes the update
// revision while another waits in PreparingUpdate, a template change that can go in place does,
// whatever the volumeClaimTemplates, a DaemonSet makes no ImagePullJob, a StatefulSet's
// claims keep their size, a SidecarSet patches only what the allow-list allows, a CloneSet is
// resized in place (inplace's default; OpenKruise's is off), spec.ordinals is not honoured and
// sidecars keep their SidecarSet's order.
func TestFeatureGates(t *testing.T) {
	ctx := testContext(t)
	t.Run("defaults", func(t *testing.T) {
		t.Run("PreparingUpdateAsUpdate off", func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, ctx, "fg-prep-off")
			s := newPreparingUpdateScenario(t, ctx, ns)
			s.rebuildOne(t, ctx)
			// The replacement took the update revision: the partition (1 Pod old) is kept by
			// the held Pod, which stays at its old revision.
			s.wait(t, ctx, "the replacement at the update revision", 1, 1, 1)
		})
		t.Run("RecreatePodWhenChangeVCTInCloneSetGate off", func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, ctx, "fg-vct-off")
			s := newVCTScenario(t, ctx, ns, 2, v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType)
			s.change(t, ctx, "image and volumeClaimTemplates", false, false, "1Gi", "1Gi", func(cs *v1alpha1.CloneSet) {
				cs.Spec.Template.Spec.Containers[0].Image = appImageV2
				cs.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests = sizeRequest("2Gi")
			})
		})
		t.Run("PreDownloadImageForDaemonSetUpdate off", func(t *testing.T) {
			t.Parallel()
			testDaemonSetNoPreDownload(t, ctx)
		})
		t.Run("PreparingUpdateAsUpdate off, Advanced StatefulSet", func(t *testing.T) {
			t.Parallel()
			testStatefulSetPreparingUpdate(t, ctx, false)
		})
		t.Run("StatefulSetAutoResizePVCGate off", func(t *testing.T) {
			t.Parallel()
			testStatefulSetNoResize(t, ctx)
		})
		t.Run("SidecarSetPatchPodMetadataDefaultsAllowed off", func(t *testing.T) {
			t.Parallel()
			testPatchPodMetadataAllowList(t, ctx)
		})
		t.Run("InPlaceWorkloadVerticalScaling on, inplace's default", func(t *testing.T) {
			t.Parallel()
			testWorkloadVerticalScaling(t, ctx, true)
		})
		t.Run("StatefulSetStartOrdinal off", func(t *testing.T) {
			t.Parallel()
			testStatefulSetStartOrdinal(t, ctx, false)
		})
		t.Run("EnableSortSidecarContainerByName off", func(t *testing.T) {
			t.Parallel()
			testSortSidecarContainersByName(t, ctx, false)
		})
	})
	if t.Failed() {
		return
	}

	t.Cleanup(func() { restartWithFeatureGates(t, "") })
	restartWithFeatureGates(t, openKruiseGates)
	for _, h := range featureGateHooks {
		if inClusterMode() {
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

	t.Run("gates on", func(t *testing.T) {
		t.Run("regard preparing-update pod as update when scaling", func(t *testing.T) {
			t.Parallel()
			testPreparingUpdateAsUpdate(t, ctx)
		})
		t.Run("Update with VolumeClaimTemplate changes", func(t *testing.T) {
			t.Parallel()
			testUpdateVolumeClaimTemplates(t, ctx)
		})
		t.Run("DaemonSet pre-downloads the new image", func(t *testing.T) {
			t.Parallel()
			testDaemonSetPreDownload(t, ctx)
		})
		t.Run("Advanced StatefulSet regards a preparing-update Pod as updated", func(t *testing.T) {
			t.Parallel()
			testStatefulSetPreparingUpdate(t, ctx, true)
		})
		t.Run("StatefulSet claims resize with the rolling update", func(t *testing.T) {
			t.Parallel()
			testStatefulSetAutoResizePVC(t, ctx)
		})
		t.Run("SidecarSet patchPodMetadata needs no allow-list", func(t *testing.T) {
			t.Parallel()
			testPatchPodMetadataDefaultsAllowed(t, ctx)
		})
		t.Run("InPlaceWorkloadVerticalScaling off recreates Pods to resize them", func(t *testing.T) {
			t.Parallel()
			testWorkloadVerticalScaling(t, ctx, false)
		})
		t.Run("StatefulSet Pods start at spec.ordinals.start", func(t *testing.T) {
			t.Parallel()
			testStatefulSetStartOrdinal(t, ctx, true)
		})
		t.Run("sidecars injected in name order", func(t *testing.T) {
			t.Parallel()
			testSortSidecarContainersByName(t, ctx, true)
		})
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
	cs := newUpdateCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{
		Type:           v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
		MaxUnavailable: ptr.To(intstr.FromString("50%")),
		Partition:      ptr.To(intstr.FromString("99%")),
	}, func(cs *v1alpha1.CloneSet) {
		cs.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{preparingUpdateHook: "true"}}}
		cs.Spec.Template.Labels[preparingUpdateHook] = "true"
		// OpenKruise's 10 s and 120 s, shorter.
		cs.Spec.MinReadySeconds, cs.Spec.ProgressDeadlineSeconds = 1, ptr.To[int32](10)
	})
	waitCloneSetReady(t, ctx, cs, 2)
	waitProgressing(t, ctx, cs, progressingAvailable)
	s := &preparingUpdateScenario{cs: updateCloneSet(t, ctx, cs, setImage(appImageV2))}
	s.wait(t, ctx, "one pod held in PreparingUpdate, none updated", 0, 2, 1)
	return s
}

// groups counts the CloneSet's Pods at its update revision, at other revisions, and in
// PreparingUpdate.
func (s *preparingUpdateScenario) groups(ctx context.Context) (updated, current, preparing []*corev1.Pod, err error) {
	got, err := inplace.AppsV1alpha1().CloneSets(s.cs.Namespace).Get(ctx, s.cs.Name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, nil, err
	}
	if got.Status.ObservedGeneration != got.Generation {
		return nil, nil, nil, fmt.Errorf("status of generation %d, want %d", got.Status.ObservedGeneration, got.Generation)
	}
	pods, err := cloneSetPods(ctx, s.cs)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, p := range pods {
		if podRevision(p) == got.Status.UpdateRevision {
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
	poll(t, ctx, 60*time.Second, what, func(ctx context.Context) (bool, error) {
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
			if err := kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}}); err != nil {
				t.Fatal(err)
			}
			poll(t, ctx, 60*time.Second, "the replacement of "+p.Name, func(ctx context.Context) (bool, error) {
				pods, err := cloneSetPods(ctx, s.cs)
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
		if _, err := kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// testPreparingUpdateAsUpdate restates OpenKruise's "CloneSet regard preparing-update pod as update
// when scaling" (test/e2e/apps/v1alpha1/cloneset.go), with PreparingUpdateAsUpdate on.
func testPreparingUpdateAsUpdate(t *testing.T, ctx context.Context) {
	ns := newNamespace(t, ctx, "fg-prep")
	s := newPreparingUpdateScenario(t, ctx, ns)

	// A Pod rebuilt: its replacement is at the current revision, the held Pod counting as updated.
	s.rebuildOne(t, ctx)
	s.wait(t, ctx, "the replacement at the current revision", 0, 2, 1)
	got, err := inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, s.cs.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deadline := fmt.Sprintf("False/ProgressDeadlineExceeded/CloneSet revision %s has timed out progressing", got.Status.UpdateRevision)
	waitProgressing(t, ctx, s.cs, deadline)

	// Scaled to 3: the new Pod at the current revision too.
	s.cs = updateCloneSet(t, ctx, s.cs, func(cs *v1alpha1.CloneSet) { cs.Spec.Replicas = ptr.To[int32](3) })
	_, _, held := s.wait(t, ctx, "the scaled Pod at the current revision", 0, 3, 1)

	// The held Pod released: it updates in place.
	release(t, ctx, held)
	s.wait(t, ctx, "the released Pod updated", 1, 2, 0)

	// No partition, maxUnavailable 100%: the two others wait in PreparingUpdate, then update.
	s.cs = updateCloneSet(t, ctx, s.cs, func(cs *v1alpha1.CloneSet) {
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
	cs := newUpdateCloneSet(t, ctx, ns, int32(replicas), v1alpha1.CloneSetUpdateStrategy{Type: strategy}, func(cs *v1alpha1.CloneSet) {
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
	poll(t, ctx, 120*time.Second, fmt.Sprintf("CloneSet %s %s: all Pods updated and ready with their PVCs", s.cs.Name, what), func(ctx context.Context) (bool, error) {
		got, err := inplace.AppsV1alpha1().CloneSets(s.cs.Namespace).Get(ctx, s.cs.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := got.Status
		if st.ObservedGeneration != got.Generation || st.UpdatedReadyReplicas != int32(s.replicas) || st.Replicas != int32(s.replicas) {
			return false, fmt.Errorf("status %+v (generation %d)", st, got.Generation)
		}
		list, err := cloneSetPods(ctx, s.cs)
		if err != nil {
			return false, err
		}
		pods, pvcs, sizes = map[string]types.UID{}, map[string]types.UID{}, map[string]string{}
		for name, p := range list {
			if podRevision(p) != st.UpdateRevision || !podReady(p) {
				return false, fmt.Errorf("pod %s at %s (ready %t), want %s", name, podRevision(p), podReady(p), st.UpdateRevision)
			}
			pods[name] = p.UID
			for _, tmpl := range []string{"data-vol1", "data-vol2"} {
				claim := tmpl + "-" + s.cs.Name + "-" + p.Labels[v1alpha1.CloneSetInstanceID]
				pvc, err := kube.CoreV1().PersistentVolumeClaims(s.cs.Namespace).Get(ctx, claim, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				pvcs[claim] = pvc.UID
				sizes[claim] = pvc.Spec.Resources.Requests.Storage().String()
			}
		}
		all, err := kube.CoreV1().PersistentVolumeClaims(s.cs.Namespace).List(ctx, metav1.ListOptions{})
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
	s.cs = updateCloneSet(t, ctx, s.cs, change)
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
	ns := newNamespace(t, ctx, "fg-vct")
	s := newVCTScenario(t, ctx, ns, 2, v1alpha1.RecreateCloneSetUpdateStrategyType)
	inPlaceIfPossible := func(cs *v1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy = v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType}
	}
	inPlaceOnly := func(cs *v1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy = v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceOnlyCloneSetUpdateStrategyType}
	}
	s.change(t, ctx, "image and volumeClaimTemplates", true, true, "2Gi", "1Gi", func(cs *v1alpha1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Image = appImageV2
		cs.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests = sizeRequest("2Gi")
		inPlaceIfPossible(cs)
	})
	s.change(t, ctx, "volumeClaimTemplates only", false, false, "2Gi", "1Gi", func(cs *v1alpha1.CloneSet) {
		cs.Spec.VolumeClaimTemplates[1].Spec.Resources.Requests = sizeRequest("2Gi")
		inPlaceIfPossible(cs)
	})
	s.change(t, ctx, "image, after the volumeClaimTemplates changed", true, true, "2Gi", "2Gi", func(cs *v1alpha1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Image = appImageV3
		inPlaceIfPossible(cs)
	})
	s.change(t, ctx, "image under InPlaceOnly", false, false, "2Gi", "2Gi", func(cs *v1alpha1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Image = appImageV1
		inPlaceOnly(cs)
	})
	s.change(t, ctx, "image and volumeClaimTemplates under InPlaceOnly", false, false, "2Gi", "2Gi", func(cs *v1alpha1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Image = appImageV3
		cs.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests = sizeRequest("3Gi")
		cs.Spec.VolumeClaimTemplates[1].Spec.Resources.Requests = sizeRequest("3Gi")
		inPlaceOnly(cs)
	})
}
