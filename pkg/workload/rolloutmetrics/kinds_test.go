package rolloutmetrics

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
)

// reading is a new gauge (not the process's: the test's registry takes its own) reading one
// workload.
func reading[T metav1.Object](c *Collector[T], w T) metrics.StableCollector {
	c.Read(func(labels.Selector) ([]T, error) { return []T{w}, nil })
	return c
}

// TestKinds: with --rollout-metrics each workload in the cache has its Pods by state, under the
// names, labels and help texts dashboards read.
func TestKinds(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		c          metrics.StableCollector
	}{{
		name: "inplace_controller_cloneset_pods",
		c: reading(newCloneSets(), &v1alpha1.CloneSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
			Spec:       v1alpha1.CloneSetSpec{Replicas: ptr.To[int32](5)},
			Status:     v1alpha1.CloneSetStatus{UpdatedReplicas: 3, UpdatedReadyReplicas: 2, ReadyReplicas: 4, AvailableReplicas: 4},
		}),
		want: `
# HELP inplace_controller_cloneset_pods [ALPHA] Pods of each CloneSet by state (desired: spec.replicas; the others from its status), with --rollout-metrics.
# TYPE inplace_controller_cloneset_pods gauge
inplace_controller_cloneset_pods{cloneset="web",namespace="shop",state="available"} 4
inplace_controller_cloneset_pods{cloneset="web",namespace="shop",state="desired"} 5
inplace_controller_cloneset_pods{cloneset="web",namespace="shop",state="ready"} 4
inplace_controller_cloneset_pods{cloneset="web",namespace="shop",state="updated"} 3
inplace_controller_cloneset_pods{cloneset="web",namespace="shop",state="updated_ready"} 2
`,
	}, {
		name: "inplace_controller_statefulset_pods",
		c: reading(newStatefulSets(), &v1beta1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"},
			Spec:       v1beta1.StatefulSetSpec{Replicas: ptr.To[int32](3)},
			Status:     v1beta1.StatefulSetStatus{UpdatedReplicas: 2, UpdatedReadyReplicas: 1, ReadyReplicas: 3, AvailableReplicas: 2},
		}),
		want: `
# HELP inplace_controller_statefulset_pods [ALPHA] Pods of each Advanced StatefulSet by state (desired: spec.replicas; the others from its status), with --rollout-metrics.
# TYPE inplace_controller_statefulset_pods gauge
inplace_controller_statefulset_pods{namespace="shop",state="available",statefulset="db"} 2
inplace_controller_statefulset_pods{namespace="shop",state="desired",statefulset="db"} 3
inplace_controller_statefulset_pods{namespace="shop",state="ready",statefulset="db"} 3
inplace_controller_statefulset_pods{namespace="shop",state="updated",statefulset="db"} 2
inplace_controller_statefulset_pods{namespace="shop",state="updated_ready",statefulset="db"} 1
`,
	}, {
		name: "inplace_controller_daemonset_pods",
		c: reading(newDaemonSets(), &v1alpha1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "agent"},
			Status: v1alpha1.DaemonSetStatus{DesiredNumberScheduled: 5, CurrentNumberScheduled: 4, NumberMisscheduled: 1,
				UpdatedNumberScheduled: 3, NumberReady: 4, NumberAvailable: 2},
		}),
		want: `
# HELP inplace_controller_daemonset_pods [ALPHA] Pods of each Advanced DaemonSet by state (its status: desired, scheduled and misscheduled nodes, updated, ready, available Pods), with --rollout-metrics.
# TYPE inplace_controller_daemonset_pods gauge
inplace_controller_daemonset_pods{daemonset="agent",namespace="kube-system",state="available"} 2
inplace_controller_daemonset_pods{daemonset="agent",namespace="kube-system",state="desired"} 5
inplace_controller_daemonset_pods{daemonset="agent",namespace="kube-system",state="misscheduled"} 1
inplace_controller_daemonset_pods{daemonset="agent",namespace="kube-system",state="ready"} 4
inplace_controller_daemonset_pods{daemonset="agent",namespace="kube-system",state="scheduled"} 4
inplace_controller_daemonset_pods{daemonset="agent",namespace="kube-system",state="updated"} 3
`,
	}} {
		if err := testutil.CustomCollectAndCompare(tc.c, strings.NewReader(tc.want), tc.name); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
