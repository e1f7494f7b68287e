package statefulset

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/controllertest"
	"github.com/inplace-dev/inplace/pkg/features"
)

// unorderedSet is a Parallel set of 4 Pods updated with unorderedUpdate, partition 2,
// maxUnavailable 4.
func unorderedSet() *v1beta1.StatefulSet {
	set := testSet(4, appsv1.ParallelPodManagement)
	ru := set.Spec.UpdateStrategy.RollingUpdate
	ru.UnorderedUpdate = &v1beta1.UnorderedUpdateStrategy{}
	ru.Partition = ptr.To[int32](2)
	ru.MaxUnavailable = ptr.To(intstr.FromInt32(4))
	return set
}

// preparingUpdate is a Pod held in PreparingUpdate by the inPlaceUpdate hook at the old revision.
func preparingUpdate(set *v1beta1.StatefulSet, ordinal int) *corev1.Pod {
	p := readyPod(set, ordinal, "old", true)
	p.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingUpdate)
	return p
}

// With unorderedUpdate, partition is how many Pods keep an older revision, whichever they are
// (OpenKruise's sortPodsToUpdate): with db-3 updated already, one more may go, any of them (the
// first in inplace's priority order, which ends by name: db-0, below the partition's positions).
func TestUnorderedPartitionCountsPods(t *testing.T) {
	set := unorderedSet()
	ps := []*corev1.Pod{readyPod(set, 0, "old", true), readyPod(set, 1, "old", true), readyPod(set, 2, "old", true), readyPod(set, 3, "new", true)}
	if got, _ := candidatesOf(set, ps, "new", now); !slices.Equal(controllertest.Names(got), []string{"db-0"}) {
		t.Errorf("candidates %v, want db-0", controllertest.Names(got))
	}
	// Partition 2 of 4 reached: none more, even below position 2.
	ps[2].Labels[appsv1.ControllerRevisionHashLabelKey] = "new"
	if got, _ := candidatesOf(set, ps, "new", now); len(got) != 0 {
		t.Errorf("candidates %v, want none", controllertest.Names(got))
	}
	// db-3 updated while db-0 and db-1 are missing: the partition keeps 2 Pods old, positions
	// apart, so db-0's creation takes the update revision only once 2 others are old.
	pods := []*corev1.Pod{readyPod(set, 1, "old", true), readyPod(set, 2, "old", true), readyPod(set, 3, "new", true)}
	if currentRevisionNeeded(set, pods, 0, 0, 2, "new") {
		t.Error("db-0 created at the current revision although db-1 and db-2 keep the partition")
	}
	if !currentRevisionNeeded(set, pods[1:], 0, 0, 2, "new") {
		t.Error("db-0 created at the update revision although only db-2 is old")
	}
	// Without unorderedUpdate: positions.
	set.Spec.UpdateStrategy.RollingUpdate.UnorderedUpdate = nil
	if !currentRevisionNeeded(set, pods, 0, 0, 2, "new") || currentRevisionNeeded(set, pods, 3, 3, 2, "new") {
		t.Error("ordered: want the first partition positions at the current revision")
	}
}

// PreparingUpdateAsUpdate, as OpenKruise's Advanced StatefulSet applies it (unorderedUpdate
// only): a Pod held in PreparingUpdate counts as updated. A Pod created meanwhile keeps the
// current revision, and the update takes no other Pod beyond the partition; the held Pod stays a
// candidate, to be updated once its hook lets it.
func TestPreparingUpdateAsUpdateUnordered(t *testing.T) {
	set := unorderedSet()
	held := preparingUpdate(set, 3)
	others := []*corev1.Pod{readyPod(set, 1, "old", true), readyPod(set, 2, "new", true), held}

	// Off: the held Pod is one of the old ones, so db-0 is created at the update revision; the
	// update may take 2 Pods, db-2 is one, and the other is the first waiting one in priority
	// order (db-0), the held db-3 left for later.
	if currentRevisionNeeded(set, others, 0, 0, 2, "new") {
		t.Error("gate off: db-0 created at the current revision, want the update revision (db-1 and db-3 keep the partition)")
	}
	ps := append([]*corev1.Pod{readyPod(set, 0, "old", true)}, others...)
	if got, _ := candidatesOf(set, ps, "new", now); !slices.Equal(controllertest.Names(got), []string{"db-0"}) {
		t.Errorf("gate off: candidates %v, want db-0", controllertest.Names(got))
	}

	featuregatetesting.SetFeatureGateDuringTest(t, features.DefaultFeatureGate, features.PreparingUpdateAsUpdate, true)
	if !currentRevisionNeeded(set, others, 0, 0, 2, "new") {
		t.Error("gate on: db-0 created at the update revision, want the current one (db-3 counts as updated)")
	}
	if got, _ := candidatesOf(set, ps, "new", now); !slices.Equal(controllertest.Names(got), []string{"db-3"}) {
		t.Errorf("gate on: candidates %v, want the held db-3 only", controllertest.Names(got))
	}
	// Partition 1: room for one more beside db-2 and the held db-3.
	set.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](1)
	if got, _ := candidatesOf(set, ps, "new", now); !slices.Equal(controllertest.Names(got), []string{"db-3", "db-0"}) {
		t.Errorf("gate on, partition 1: candidates %v, want db-3 then db-0", controllertest.Names(got))
	}
}
