package framework

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
)

// NewAdvancedStatefulSet is a StatefulSet "db" of n Pods of AppImageV1 in ns, each with a claim
// "data" of the default StorageClass mounted at /data, updated InPlaceIfPossible.
func NewAdvancedStatefulSet(ns string, n int32, policy appsv1.PodManagementPolicyType, mutate ...func(*v1beta1.StatefulSet)) *v1beta1.StatefulSet {
	set := &v1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: v1beta1.StatefulSetSpec{
			Replicas:            ptr.To(n),
			ServiceName:         "db",
			PodManagementPolicy: policy,
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{{Name: "main", Image: AppImageV1, ImagePullPolicy: corev1.PullNever,
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}},
				},
			}},
			UpdateStrategy: v1beta1.StatefulSetUpdateStrategy{RollingUpdate: &v1beta1.RollingUpdateStatefulSetStrategy{
				PodUpdatePolicy: v1beta1.InPlaceIfPossiblePodUpdateStrategyType,
			}},
		},
	}
	for _, m := range mutate {
		m(set)
	}
	return set
}

func CreateAdvancedStatefulSet(t *testing.T, ctx context.Context, set *v1beta1.StatefulSet) *v1beta1.StatefulSet {
	t.Helper()
	created, err := Inplace.AppsV1beta1().StatefulSets(set.Namespace).Create(ctx, set, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating StatefulSet %s: %v", set.Name, err)
	}
	return created
}

// StatefulSetPods are the Pods of the set by name.
func StatefulSetPods(ctx context.Context, set *v1beta1.StatefulSet) (map[string]*corev1.Pod, error) {
	list, err := Kube.CoreV1().Pods(set.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + set.Spec.Template.Labels["app"]})
	if err != nil {
		return nil, err
	}
	pods := map[string]*corev1.Pod{}
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			pods[list.Items[i].Name] = &list.Items[i]
		}
	}
	return pods, nil
}

// WaitStatefulSet waits until the set's status, for its current generation, has n Pods ready of
// which updated are at the update revision, and its Pods agree; it returns the Pods.
func WaitStatefulSet(t *testing.T, ctx context.Context, set *v1beta1.StatefulSet, n, updated int32) map[string]*corev1.Pod {
	t.Helper()
	var pods map[string]*corev1.Pod
	Poll(t, ctx, 3*time.Minute, fmt.Sprintf("StatefulSet %s: %d Pods ready, %d updated", set.Name, n, updated), func(ctx context.Context) (bool, error) {
		got, err := Inplace.AppsV1beta1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := got.Status
		if st.ObservedGeneration != got.Generation || st.Replicas != n || st.ReadyReplicas != n || st.UpdatedReplicas != updated || st.UpdatedReadyReplicas != updated {
			return false, fmt.Errorf("status %+v (generation %d)", st, got.Generation)
		}
		if pods, err = StatefulSetPods(ctx, got); err != nil {
			return false, err
		}
		ready := 0
		for _, p := range pods {
			if PodReady(p) && ConditionStatus(p, pub.InPlaceUpdateReady) == corev1.ConditionTrue {
				ready++
			}
		}
		return len(pods) == int(n) && ready == int(n), fmt.Errorf("%d pods, %d ready", len(pods), ready)
	})
	return pods
}

func UpdateAdvancedStatefulSet(t *testing.T, ctx context.Context, set *v1beta1.StatefulSet, mutate func(*v1beta1.StatefulSet)) *v1beta1.StatefulSet {
	t.Helper()
	return Modify(t, ctx, Inplace.AppsV1beta1().StatefulSets(set.Namespace), set.Name, mutate)
}

// ClaimUIDs are the UIDs of the namespace's claims by name.
func ClaimUIDs(t *testing.T, ctx context.Context, ns string) map[string]string {
	t.Helper()
	list, err := Kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range list.Items {
		out[c.Name] = string(c.UID)
	}
	return out
}

// RolloutOrder replays the events: the order in which Pods were first touched by the update (their
// image changed in place, or they were deleted), and the most Pods unavailable at once among
// names (missing, not Ready, or InPlaceUpdateReady False).
func RolloutOrder(r *PodEvents, events []PodEvent, names []string, image string) (order []string, maxUnavailable int) {
	seen := map[string]bool{}
	r.Replay(events, func(ev PodEvent, pods map[string]*corev1.Pod) {
		name := ev.Pod.Name
		touched := ev.Typ == watch.Deleted || ev.Pod.DeletionTimestamp != nil || SpecImage(ev.Pod, "main") == image
		if touched && !seen[name] && slices.Contains(names, name) {
			seen[name] = true
			order = append(order, name)
		}
		unavailable := 0
		for _, n := range names {
			p := pods[n]
			if p == nil || !PodReady(p) || ConditionStatus(p, pub.InPlaceUpdateReady) == corev1.ConditionFalse {
				unavailable++
			}
		}
		maxUnavailable = max(maxUnavailable, unavailable)
	})
	return order, maxUnavailable
}
