package framework

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

func SetImage(image string) func(*v1alpha1.CloneSet) {
	return func(cs *v1alpha1.CloneSet) { cs.Spec.Template.Spec.Containers[0].Image = image }
}

// CheckKubectlCounts checks the row `kubectl get clone NAME` prints: DESIRED UPDATED UPDATED_READY
// READY TOTAL.
func CheckKubectlCounts(t *testing.T, ctx context.Context, cs *v1alpha1.CloneSet, want ...string) {
	t.Helper()
	lines := TableLines(MustKubectl(t, ctx, "", "get", "clone", cs.Name, "-n", cs.Namespace))
	if len(lines) != 2 || len(lines[1]) < 6 {
		t.Fatalf("kubectl get clone %s: %q", cs.Name, lines)
	}
	if got := lines[1][1:6]; !slices.Equal(got, want) {
		t.Errorf("kubectl get clone %s: DESIRED UPDATED UPDATED_READY READY TOTAL = %v, want %v", cs.Name, got, want)
	}
}

// CloneSetPods are the Pods the CloneSet controls, by name.
func CloneSetPods(ctx context.Context, cs *v1alpha1.CloneSet) (map[string]*corev1.Pod, error) {
	list, err := Kube.CoreV1().Pods(cs.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + cs.Name})
	if err != nil {
		return nil, err
	}
	pods := map[string]*corev1.Pod{}
	for i := range list.Items {
		p := &list.Items[i]
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == cs.UID && p.DeletionTimestamp == nil {
			pods[p.Name] = p
		}
	}
	return pods, nil
}

// WaitCloneSetReady waits until the CloneSet has exactly n Pods, all Ready, and its status says so.
func WaitCloneSetReady(t *testing.T, ctx context.Context, cs *v1alpha1.CloneSet, n int32) map[string]*corev1.Pod {
	t.Helper()
	var pods map[string]*corev1.Pod
	Poll(t, ctx, 90*time.Second, fmt.Sprintf("CloneSet %s: %d Pods Ready and counted in status", cs.Name, n), func(ctx context.Context) (bool, error) {
		var err error
		if pods, err = CloneSetPods(ctx, cs); err != nil {
			return false, err
		}
		if int32(len(pods)) != n {
			return false, fmt.Errorf("%d pods", len(pods))
		}
		for _, p := range pods {
			if !PodReady(p) {
				return false, fmt.Errorf("pod %s not ready", p.Name)
			}
		}
		got, err := Inplace.AppsV1alpha1().CloneSets(cs.Namespace).Get(ctx, cs.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := got.Status
		if st.Replicas != n || st.ReadyReplicas != n || st.ObservedGeneration != got.Generation {
			return false, fmt.Errorf("status %+v (generation %d)", st, got.Generation)
		}
		return true, nil
	})
	return pods
}

// RolloutTimeout bounds a rolling update of a few Pods on the local node (an in-place image
// change takes ~1-3 s per Pod, a recreate a few seconds; maxUnavailable 1 updates one at a time).
const RolloutTimeout = 3 * time.Minute

// NewUpdateCloneSet creates a CloneSet "web" of n Pods on AppImageV1 with the update strategy,
// changed by the mutators before it is sent.
func NewUpdateCloneSet(t *testing.T, ctx context.Context, ns string, n int32, strategy v1alpha1.CloneSetUpdateStrategy, mutate ...func(*v1alpha1.CloneSet)) *v1alpha1.CloneSet {
	t.Helper()
	cs := &v1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1alpha1.CloneSetSpec{
			Replicas: ptr.To(n),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			// Its own map: a mutator adding template labels must not change the selector.
			Template:       PodTemplate(map[string]string{"app": "web"}, Container("main", AppImageV1)),
			UpdateStrategy: strategy,
		},
	}
	for _, m := range mutate {
		m(cs)
	}
	cs, err := Inplace.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// CheckSamePods checks that the Pods after a rollout are the Pods before it (same names and
// UIDs): updated in place, none recreated.
func CheckSamePods(t *testing.T, before, after map[string]*corev1.Pod) {
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

// UpdateCloneSet changes the CloneSet's spec (retrying on conflicts) and returns the result.
func UpdateCloneSet(t *testing.T, ctx context.Context, cs *v1alpha1.CloneSet, change func(*v1alpha1.CloneSet)) *v1alpha1.CloneSet {
	t.Helper()
	return Modify(t, ctx, Inplace.AppsV1alpha1().CloneSets(cs.Namespace), cs.Name, change)
}

// PodRevision is the Pod's controller-revision-hash label.
func PodRevision(p *corev1.Pod) string { return p.Labels["controller-revision-hash"] }

// PodSettledAt tells whether the Pod runs the revision, with no in-place update under way, Ready.
func PodSettledAt(t *testing.T, p *corev1.Pod, revision string) bool {
	st := StateOf(t, p)
	return PodRevision(p) == revision && (st == nil || st.CompletedTimestamp != nil) && PodReady(p)
}

// WaitRolledOut waits until the CloneSet has n Pods, all Ready at the update revision with no
// in-place update under way, and its status says so (currentRevision == updateRevision).
func WaitRolledOut(t *testing.T, ctx context.Context, cs *v1alpha1.CloneSet, n int32) (*v1alpha1.CloneSet, map[string]*corev1.Pod) {
	t.Helper()
	var got *v1alpha1.CloneSet
	var pods map[string]*corev1.Pod
	Poll(t, ctx, RolloutTimeout, fmt.Sprintf("CloneSet %s: %d Pods updated and Ready", cs.Name, n), func(ctx context.Context) (bool, error) {
		var err error
		if got, err = Inplace.AppsV1alpha1().CloneSets(cs.Namespace).Get(ctx, cs.Name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		st := got.Status
		if st.ObservedGeneration != got.Generation || st.Replicas != n || st.UpdatedReplicas != n ||
			st.UpdatedReadyReplicas != n || st.ReadyReplicas != n || st.CurrentRevision != st.UpdateRevision {
			return false, fmt.Errorf("status %+v (generation %d)", st, got.Generation)
		}
		if pods, err = CloneSetPods(ctx, got); err != nil {
			return false, err
		}
		if int32(len(pods)) != n {
			return false, fmt.Errorf("%d pods", len(pods))
		}
		for _, p := range pods {
			if !PodSettledAt(t, p, st.UpdateRevision) {
				return false, fmt.Errorf("pod %s: revision %s, ready %v, state %s", p.Name, PodRevision(p), PodReady(p), p.Annotations["apps.kruise.io/inplace-update-state"])
			}
		}
		return true, nil
	})
	return got, pods
}

// WaitCloneSetEvent waits for an Event about the CloneSet with the reason and a message containing
// want.
func WaitCloneSetEvent(t *testing.T, ctx context.Context, cs *v1alpha1.CloneSet, reason, want string) {
	t.Helper()
	WaitEvent(t, ctx, cs.Namespace, "CloneSet", cs.Name, reason, want)
}

// WaitEvent waits for an Event in ns about the object of the kind and name with the reason and a
// message containing want (the Events of a cluster-scoped object are in namespace default).
func WaitEvent(t *testing.T, ctx context.Context, ns, kind, name, reason, want string) {
	t.Helper()
	Poll(t, ctx, 30*time.Second, fmt.Sprintf("Event %s %q about %s %s", reason, want, kind, name), func(ctx context.Context) (bool, error) {
		list, err := Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var seen []string
		for _, e := range list.Items {
			if e.InvolvedObject.Kind != kind || e.InvolvedObject.Name != name {
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

// ReadyCloneSet creates the CloneSet of NewUpdateCloneSet and waits until its n Pods are Ready
// (WaitCloneSetReady); it returns the CloneSet and its Pods.
func ReadyCloneSet(t *testing.T, ctx context.Context, ns string, n int32, strategy v1alpha1.CloneSetUpdateStrategy, mutate ...func(*v1alpha1.CloneSet)) (*v1alpha1.CloneSet, map[string]*corev1.Pod) {
	t.Helper()
	cs := NewUpdateCloneSet(t, ctx, ns, n, strategy, mutate...)
	return cs, WaitCloneSetReady(t, ctx, cs, n)
}
