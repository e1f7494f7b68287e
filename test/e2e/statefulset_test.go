package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// The Advanced StatefulSet on the real cluster, held to OpenKruise's e2e scenarios
// (test/e2e/apps/statefulset.go in openkruise/kruise): stable names and claims, updates in place
// in reverse ordinal order, partition, maxUnavailable, recreation when the change needs it.

// newAdvancedStatefulSet is a StatefulSet "db" of n Pods of appImageV1 in ns, each with a claim
// "data" of the default StorageClass mounted at /data, updated InPlaceIfPossible.
func newAdvancedStatefulSet(ns string, n int32, policy appsv1.PodManagementPolicyType, mutate ...func(*v1beta1.StatefulSet)) *v1beta1.StatefulSet {
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
					Containers: []corev1.Container{{Name: "main", Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever,
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

func createAdvancedStatefulSet(t *testing.T, ctx context.Context, set *v1beta1.StatefulSet) *v1beta1.StatefulSet {
	t.Helper()
	created, err := framework.Inplace.AppsV1beta1().StatefulSets(set.Namespace).Create(ctx, set, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating StatefulSet %s: %v", set.Name, err)
	}
	return created
}

// stsPods are the Pods of the set by name.
func stsPods(ctx context.Context, set *v1beta1.StatefulSet) (map[string]*corev1.Pod, error) {
	list, err := framework.Kube.CoreV1().Pods(set.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + set.Spec.Template.Labels["app"]})
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

// waitStatefulSet waits until the set's status, for its current generation, has n Pods ready of
// which updated are at the update revision, and its Pods agree; it returns the Pods.
func waitStatefulSet(t *testing.T, ctx context.Context, set *v1beta1.StatefulSet, n, updated int32) map[string]*corev1.Pod {
	t.Helper()
	var pods map[string]*corev1.Pod
	framework.Poll(t, ctx, 3*time.Minute, fmt.Sprintf("StatefulSet %s: %d Pods ready, %d updated", set.Name, n, updated), func(ctx context.Context) (bool, error) {
		got, err := framework.Inplace.AppsV1beta1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := got.Status
		if st.ObservedGeneration != got.Generation || st.Replicas != n || st.ReadyReplicas != n || st.UpdatedReplicas != updated || st.UpdatedReadyReplicas != updated {
			return false, fmt.Errorf("status %+v (generation %d)", st, got.Generation)
		}
		if pods, err = stsPods(ctx, got); err != nil {
			return false, err
		}
		ready := 0
		for _, p := range pods {
			if framework.PodReady(p) && framework.ConditionStatus(p, pub.InPlaceUpdateReady) == corev1.ConditionTrue {
				ready++
			}
		}
		return len(pods) == int(n) && ready == int(n), fmt.Errorf("%d pods, %d ready", len(pods), ready)
	})
	return pods
}

func updateAdvancedStatefulSet(t *testing.T, ctx context.Context, set *v1beta1.StatefulSet, mutate func(*v1beta1.StatefulSet)) *v1beta1.StatefulSet {
	t.Helper()
	var out *v1beta1.StatefulSet
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := framework.Inplace.AppsV1beta1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(cur)
		out, err = framework.Inplace.AppsV1beta1().StatefulSets(set.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("updating StatefulSet %s: %v", set.Name, err)
	}
	return out
}

// claimUIDs are the UIDs of the namespace's claims by name.
func claimUIDs(t *testing.T, ctx context.Context, ns string) map[string]string {
	t.Helper()
	list, err := framework.Kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range list.Items {
		out[c.Name] = string(c.UID)
	}
	return out
}

// rolloutOrder replays the events: the order in which Pods were first touched by the update (their
// image changed in place, or they were deleted), and the most Pods unavailable at once among
// names (missing, not Ready, or InPlaceUpdateReady False).
func rolloutOrder(r *podEvents, events []podEvent, names []string, image string) (order []string, maxUnavailable int) {
	seen := map[string]bool{}
	r.replay(events, func(ev podEvent, pods map[string]*corev1.Pod) {
		name := ev.pod.Name
		touched := ev.typ == watch.Deleted || ev.pod.DeletionTimestamp != nil || framework.SpecImage(ev.pod, "main") == image
		if touched && !seen[name] && slices.Contains(names, name) {
			seen[name] = true
			order = append(order, name)
		}
		unavailable := 0
		for _, n := range names {
			p := pods[n]
			if p == nil || !framework.PodReady(p) || framework.ConditionStatus(p, pub.InPlaceUpdateReady) == corev1.ConditionFalse {
				unavailable++
			}
		}
		maxUnavailable = max(maxUnavailable, unavailable)
	})
	return order, maxUnavailable
}

// TestAdvancedStatefulSetInPlaceRollout: a new image reaches the Pods of an OrderedReady set of 4
// in place, in reverse ordinal order, one at a time: the Pods keep their names, UIDs, IPs and
// claims, each container restarts once, no Pod is created or deleted.
func TestAdvancedStatefulSetInPlaceRollout(t *testing.T) {
	ctx := framework.Context(t)
	ns := framework.NewNamespace(t, ctx, "asts-inplace")
	set := createAdvancedStatefulSet(t, ctx, newAdvancedStatefulSet(ns, 4, appsv1.OrderedReadyPodManagement))
	before := waitStatefulSet(t, ctx, set, 4, 4)
	claimsBefore := claimUIDs(t, ctx, ns)
	for i := range 4 {
		if claimsBefore[fmt.Sprintf("data-db-%d", i)] == "" {
			t.Fatalf("no claim data-db-%d: %v", i, claimsBefore)
		}
	}
	rec := recordPods(t, ctx, ns)
	set = updateAdvancedStatefulSet(t, ctx, set, func(s *v1beta1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2 })
	after := waitStatefulSet(t, ctx, set, 4, 4)
	events := rec.upTo(t, ctx, ns)

	checkSamePods(t, before, after)
	for name, p := range after {
		if p.Status.PodIP != before[name].Status.PodIP {
			t.Errorf("pod %s: IP %s, was %s", name, p.Status.PodIP, before[name].Status.PodIP)
		}
		if s := framework.FindStatus(p, "main"); s == nil || s.RestartCount != 1 || s.Image != framework.AppImageV2 {
			t.Errorf("pod %s: container main %+v, want %s restarted once", name, s, framework.AppImageV2)
		}
	}
	if got := claimUIDs(t, ctx, ns); fmt.Sprint(got) != fmt.Sprint(claimsBefore) {
		t.Errorf("claims changed: %v, were %v", got, claimsBefore)
	}
	if changed := podsAddedOrDeleted(rec, events); len(changed) > 0 {
		t.Errorf("pods created or deleted: %v", changed)
	}
	order, most := rolloutOrder(rec, events, []string{"db-0", "db-1", "db-2", "db-3"}, framework.AppImageV2)
	if want := []string{"db-3", "db-2", "db-1", "db-0"}; !slices.Equal(order, want) {
		t.Errorf("updated in order %v, want reverse ordinal order %v", order, want)
	}
	if most != 1 {
		t.Errorf("at most %d Pods unavailable at once, want 1 (OrderedReady)", most)
	}
}

// TestAdvancedStatefulSetPartitionAndMaxUnavailable: partition 2 keeps db-0 and db-1 at the old
// revision while db-2 and db-3 update; then partition 0 lets the rest go; with Parallel and
// maxUnavailable 2, two Pods update at once and never more.
func TestAdvancedStatefulSetPartitionAndMaxUnavailable(t *testing.T) {
	ctx := framework.Context(t)
	ns := framework.NewNamespace(t, ctx, "asts-partition")
	set := createAdvancedStatefulSet(t, ctx, newAdvancedStatefulSet(ns, 4, appsv1.ParallelPodManagement, func(s *v1beta1.StatefulSet) {
		s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(2))
		s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](2)
	}))
	before := waitStatefulSet(t, ctx, set, 4, 4)
	rec := recordPods(t, ctx, ns)
	set = updateAdvancedStatefulSet(t, ctx, set, func(s *v1beta1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2 })
	mid := waitStatefulSet(t, ctx, set, 4, 2)
	for name, p := range mid {
		want := framework.AppImageV1
		if name == "db-2" || name == "db-3" {
			want = framework.AppImageV2
		}
		if got := framework.SpecImage(p, "main"); got != want {
			t.Errorf("with partition 2, pod %s runs %s, want %s", name, got, want)
		}
	}
	set = updateAdvancedStatefulSet(t, ctx, set, func(s *v1beta1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](0) })
	after := waitStatefulSet(t, ctx, set, 4, 4)
	events := rec.upTo(t, ctx, ns)
	checkSamePods(t, before, after)
	if changed := podsAddedOrDeleted(rec, events); len(changed) > 0 {
		t.Errorf("pods created or deleted: %v", changed)
	}
	_, most := rolloutOrder(rec, events, []string{"db-0", "db-1", "db-2", "db-3"}, framework.AppImageV2)
	if most != 2 {
		t.Errorf("at most %d Pods unavailable at once, want exactly maxUnavailable 2 (two at a time, never more)", most)
	}
}

// TestAdvancedStatefulSetRecreateOnEnvChange: a change that cannot go in place (an env var)
// recreates the Pods, in reverse ordinal order and one at a time, under the same names and with
// the same claims.
func TestAdvancedStatefulSetRecreateOnEnvChange(t *testing.T) {
	ctx := framework.Context(t)
	ns := framework.NewNamespace(t, ctx, "asts-recreate")
	set := createAdvancedStatefulSet(t, ctx, newAdvancedStatefulSet(ns, 3, appsv1.OrderedReadyPodManagement))
	before := waitStatefulSet(t, ctx, set, 3, 3)
	claimsBefore := claimUIDs(t, ctx, ns)
	rec := recordPods(t, ctx, ns)
	set = updateAdvancedStatefulSet(t, ctx, set, func(s *v1beta1.StatefulSet) {
		s.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "new"}}
	})
	after := waitStatefulSet(t, ctx, set, 3, 3)
	events := rec.upTo(t, ctx, ns)
	for name, p := range after {
		if b := before[name]; b == nil || b.UID == p.UID {
			t.Errorf("pod %s was not recreated (the env change cannot go in place)", name)
		}
		if len(p.Spec.Containers[0].Env) != 1 {
			t.Errorf("pod %s: env %v", name, p.Spec.Containers[0].Env)
		}
	}
	if got := claimUIDs(t, ctx, ns); fmt.Sprint(got) != fmt.Sprint(claimsBefore) {
		t.Errorf("claims changed: %v, were %v; recreated Pods keep their claims", got, claimsBefore)
	}
	var deleted []string
	for _, e := range events {
		if (e.typ == watch.Deleted || e.pod.DeletionTimestamp != nil) && !slices.Contains(deleted, e.pod.Name) {
			deleted = append(deleted, e.pod.Name)
		}
	}
	if want := []string{"db-2", "db-1", "db-0"}; !slices.Equal(deleted, want) {
		t.Errorf("recreated in order %v, want %v", deleted, want)
	}
	if _, most := rolloutOrder(rec, events, []string{"db-0", "db-1", "db-2"}, ""); most != 1 {
		t.Errorf("at most %d Pods unavailable at once, want 1", most)
	}
}

// TestAdvancedStatefulSetDocsManifests: the manifests of OpenKruise's documentation, at v1beta1
// and at v1alpha1, apply with kubectl and run; a new image set through v1alpha1 reaches the Pods in
// place; kubectl prints OpenKruise's columns.
func TestAdvancedStatefulSetDocsManifests(t *testing.T) {
	ctx := framework.Context(t)
	ns := framework.NewNamespace(t, ctx, "asts-docs")
	for _, f := range []string{"statefulset.yaml", "statefulset-v1alpha1.yaml"} {
		framework.MustKubectl(t, ctx, "", "-n", ns, "apply", "-f", "artifacts/examples/"+f)
	}
	var before map[string]*corev1.Pod
	for _, name := range []string{"sample", "sample-alpha"} {
		set, err := framework.Inplace.AppsV1beta1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods := waitStatefulSet(t, ctx, set, 3, 3)
		if name == "sample-alpha" {
			before = pods
		}
	}
	framework.MustKubectl(t, ctx, "", "-n", ns, "patch", "statefulsets.v1alpha1.apps.kruise.io", "sample-alpha", "--type=json",
		"-p", `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"`+framework.AppImageV2+`"}]`)
	set, err := framework.Inplace.AppsV1beta1().StatefulSets(ns).Get(ctx, "sample-alpha", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkSamePods(t, before, waitStatefulSet(t, ctx, set, 3, 3))
	out := framework.MustKubectl(t, ctx, "", "-n", ns, "get", "asts")
	if header := strings.Join(strings.Fields(strings.SplitN(out, "\n", 2)[0]), " "); header != "NAME DESIRED CURRENT UPDATED READY AGE" {
		t.Errorf("kubectl get asts header %q", header)
	}
	// The set is deleted with its Pods; its claims stay (retention Retain, the default).
	framework.MustKubectl(t, ctx, "", "-n", ns, "delete", "statefulsets.apps.kruise.io", "sample", "--wait=true")
	framework.Poll(t, ctx, time.Minute, "the Pods of sample to go", func(ctx context.Context) (bool, error) {
		_, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, "sample-0", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}
