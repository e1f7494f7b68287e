package framework

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

func NewAdvancedDaemonSet(t *testing.T, ctx context.Context, ns string, mutate ...func(*v1alpha1.DaemonSet)) *v1alpha1.DaemonSet {
	t.Helper()
	ds := &v1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns},
		Spec: v1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers:                    []corev1.Container{{Name: "main", Image: AppImageV1, ImagePullPolicy: corev1.PullNever}},
					Tolerations:                   []corev1.Toleration{{Key: Node2Taint, Operator: corev1.TolerationOpExists}},
				},
			},
			UpdateStrategy: v1alpha1.DaemonSetUpdateStrategy{RollingUpdate: &v1alpha1.RollingUpdateDaemonSet{
				Type: v1alpha1.InplaceRollingUpdateType,
			}},
		},
	}
	for _, m := range mutate {
		m(ds)
	}
	created, err := Inplace.AppsV1alpha1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating DaemonSet: %v", err)
	}
	return created
}

func DaemonPods(ctx context.Context, ns string) ([]corev1.Pod, error) {
	list, err := Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// WaitDaemonSet waits until the status, for the current generation, wants desired Pods, all
// ready and updated to want of them, and the namespace has exactly that many Pods; it returns them.
func WaitDaemonSet(t *testing.T, ctx context.Context, ns string, desired, updated int32) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	Poll(t, ctx, 2*time.Minute, fmt.Sprintf("DaemonSet agent: %d desired and ready, %d updated", desired, updated), func(ctx context.Context) (bool, error) {
		ds, err := Inplace.AppsV1alpha1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := ds.Status
		if st.ObservedGeneration != ds.Generation || st.DesiredNumberScheduled != desired || st.NumberReady != desired ||
			st.UpdatedNumberScheduled != updated || st.NumberAvailable != desired {
			return false, fmt.Errorf("status %+v", st)
		}
		if pods, err = DaemonPods(ctx, ns); err != nil {
			return false, err
		}
		return len(pods) == int(desired), fmt.Errorf("%d pods", len(pods))
	})
	return pods
}

func UpdateDaemonSet(t *testing.T, ctx context.Context, ns string, mutate func(*v1alpha1.DaemonSet)) {
	t.Helper()
	Modify(t, ctx, Inplace.AppsV1alpha1().DaemonSets(ns), "agent", mutate)
}

// ExpectOnePodPerNode checks that the Pods run on distinct nodes, one on each of the cluster's.
func ExpectOnePodPerNode(t *testing.T, ctx context.Context, pods []corev1.Pod) {
	t.Helper()
	on := map[string]string{}
	for _, p := range pods {
		if other, ok := on[p.Spec.NodeName]; ok {
			t.Errorf("pods %s and %s both on node %q", other, p.Name, p.Spec.NodeName)
		}
		on[p.Spec.NodeName] = p.Name
	}
	nodes, err := Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range nodes.Items {
		if _, ok := on[node.Name]; !ok {
			t.Errorf("no agent on node %s (agents on %v)", node.Name, on)
		}
	}
}

// ReadyNodes counts the cluster's nodes (each should run the agent).
func ReadyNodes(t *testing.T, ctx context.Context) int32 {
	t.Helper()
	nodes, err := Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return int32(len(nodes.Items))
}

// ExpectInPlaceUpdateReadyGate checks that every Pod has the InPlaceUpdateReady readiness gate, as
// OpenKruise's daemon Pods do (an in-place update holds the Pod unready through it).
func ExpectInPlaceUpdateReadyGate(t *testing.T, pods []corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		if !slices.ContainsFunc(p.Spec.ReadinessGates, func(g corev1.PodReadinessGate) bool { return g.ConditionType == pub.InPlaceUpdateReady }) {
			t.Errorf("pod %s has readiness gates %v, want %s", p.Name, p.Spec.ReadinessGates, pub.InPlaceUpdateReady)
		}
	}
}

// ReadyDaemonSet creates the Advanced DaemonSet of NewAdvancedDaemonSet and waits until it runs
// an updated Pod on every Ready node; it returns the number of nodes and the Pods.
func ReadyDaemonSet(t *testing.T, ctx context.Context, ns string, mutate ...func(*v1alpha1.DaemonSet)) (int32, []corev1.Pod) {
	t.Helper()
	n := ReadyNodes(t, ctx)
	NewAdvancedDaemonSet(t, ctx, ns, mutate...)
	return n, WaitDaemonSet(t, ctx, ns, n, n)
}
