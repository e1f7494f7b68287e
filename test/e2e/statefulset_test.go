package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// The Advanced StatefulSet on the real cluster, held to OpenKruise's e2e scenarios
// (test/e2e/apps/statefulset.go in openkruise/kruise): stable names and claims, updates in place
// in reverse ordinal order, partition, maxUnavailable, recreation when the change needs it.

// TestAdvancedStatefulSetInPlaceRollout: a new image reaches the Pods of an OrderedReady set of 4
// in place, in reverse ordinal order, one at a time: the Pods keep their names, UIDs, IPs and
// claims, each container restarts once, no Pod is created or deleted.
func TestAdvancedStatefulSetInPlaceRollout(t *testing.T) {
	ctx, ns := framework.Start(t, "asts-inplace")
	set := framework.CreateAdvancedStatefulSet(t, ctx, framework.NewAdvancedStatefulSet(ns, 4, appsv1.OrderedReadyPodManagement))
	before := framework.WaitStatefulSet(t, ctx, set, 4, 4)
	claimsBefore := framework.ClaimUIDs(t, ctx, ns)
	for i := range 4 {
		if claimsBefore[fmt.Sprintf("data-db-%d", i)] == "" {
			t.Fatalf("no claim data-db-%d: %v", i, claimsBefore)
		}
	}
	rec := framework.RecordPods(t, ctx, ns)
	set = framework.UpdateAdvancedStatefulSet(t, ctx, set, func(s *v1beta1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2 })
	after := framework.WaitStatefulSet(t, ctx, set, 4, 4)
	events := rec.UpTo(t, ctx, ns)

	framework.CheckSamePods(t, before, after)
	for name, p := range after {
		if p.Status.PodIP != before[name].Status.PodIP {
			t.Errorf("pod %s: IP %s, was %s", name, p.Status.PodIP, before[name].Status.PodIP)
		}
		if s := framework.FindStatus(p, "main"); s == nil || s.RestartCount != 1 || s.Image != framework.AppImageV2 {
			t.Errorf("pod %s: container main %+v, want %s restarted once", name, s, framework.AppImageV2)
		}
	}
	if got := framework.ClaimUIDs(t, ctx, ns); fmt.Sprint(got) != fmt.Sprint(claimsBefore) {
		t.Errorf("claims changed: %v, were %v", got, claimsBefore)
	}
	if changed := framework.PodsAddedOrDeleted(rec, events); len(changed) > 0 {
		t.Errorf("pods created or deleted: %v", changed)
	}
	order, most := framework.RolloutOrder(rec, events, []string{"db-0", "db-1", "db-2", "db-3"}, framework.AppImageV2)
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
	ctx, ns := framework.Start(t, "asts-partition")
	set := framework.CreateAdvancedStatefulSet(t, ctx, framework.NewAdvancedStatefulSet(ns, 4, appsv1.ParallelPodManagement, func(s *v1beta1.StatefulSet) {
		s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(2))
		s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](2)
	}))
	before := framework.WaitStatefulSet(t, ctx, set, 4, 4)
	rec := framework.RecordPods(t, ctx, ns)
	set = framework.UpdateAdvancedStatefulSet(t, ctx, set, func(s *v1beta1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2 })
	mid := framework.WaitStatefulSet(t, ctx, set, 4, 2)
	for name, p := range mid {
		want := framework.AppImageV1
		if name == "db-2" || name == "db-3" {
			want = framework.AppImageV2
		}
		if got := framework.SpecImage(p, "main"); got != want {
			t.Errorf("with partition 2, pod %s runs %s, want %s", name, got, want)
		}
	}
	set = framework.UpdateAdvancedStatefulSet(t, ctx, set, func(s *v1beta1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](0) })
	after := framework.WaitStatefulSet(t, ctx, set, 4, 4)
	events := rec.UpTo(t, ctx, ns)
	framework.CheckSamePods(t, before, after)
	if changed := framework.PodsAddedOrDeleted(rec, events); len(changed) > 0 {
		t.Errorf("pods created or deleted: %v", changed)
	}
	_, most := framework.RolloutOrder(rec, events, []string{"db-0", "db-1", "db-2", "db-3"}, framework.AppImageV2)
	if most != 2 {
		t.Errorf("at most %d Pods unavailable at once, want exactly maxUnavailable 2 (two at a time, never more)", most)
	}
}

// TestAdvancedStatefulSetRecreateOnEnvChange: a change that cannot go in place (an env var)
// recreates the Pods, in reverse ordinal order and one at a time, under the same names and with
// the same claims.
func TestAdvancedStatefulSetRecreateOnEnvChange(t *testing.T) {
	ctx, ns := framework.Start(t, "asts-recreate")
	set := framework.CreateAdvancedStatefulSet(t, ctx, framework.NewAdvancedStatefulSet(ns, 3, appsv1.OrderedReadyPodManagement))
	before := framework.WaitStatefulSet(t, ctx, set, 3, 3)
	claimsBefore := framework.ClaimUIDs(t, ctx, ns)
	rec := framework.RecordPods(t, ctx, ns)
	set = framework.UpdateAdvancedStatefulSet(t, ctx, set, func(s *v1beta1.StatefulSet) {
		s.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "new"}}
	})
	after := framework.WaitStatefulSet(t, ctx, set, 3, 3)
	events := rec.UpTo(t, ctx, ns)
	for name, p := range after {
		if b := before[name]; b == nil || b.UID == p.UID {
			t.Errorf("pod %s was not recreated (the env change cannot go in place)", name)
		}
		if len(p.Spec.Containers[0].Env) != 1 {
			t.Errorf("pod %s: env %v", name, p.Spec.Containers[0].Env)
		}
	}
	if got := framework.ClaimUIDs(t, ctx, ns); fmt.Sprint(got) != fmt.Sprint(claimsBefore) {
		t.Errorf("claims changed: %v, were %v; recreated Pods keep their claims", got, claimsBefore)
	}
	var deleted []string
	for _, e := range events {
		if (e.Typ == watch.Deleted || e.Pod.DeletionTimestamp != nil) && !slices.Contains(deleted, e.Pod.Name) {
			deleted = append(deleted, e.Pod.Name)
		}
	}
	if want := []string{"db-2", "db-1", "db-0"}; !slices.Equal(deleted, want) {
		t.Errorf("recreated in order %v, want %v", deleted, want)
	}
	if _, most := framework.RolloutOrder(rec, events, []string{"db-0", "db-1", "db-2"}, ""); most != 1 {
		t.Errorf("at most %d Pods unavailable at once, want 1", most)
	}
}

// TestAdvancedStatefulSetDocsManifests: the manifests of OpenKruise's documentation, at v1beta1
// and at v1alpha1, apply with kubectl and run; a new image set through v1alpha1 reaches the Pods in
// place; kubectl prints OpenKruise's columns.
func TestAdvancedStatefulSetDocsManifests(t *testing.T) {
	ctx, ns := framework.Start(t, "asts-docs")
	for _, f := range []string{"statefulset.yaml", "statefulset-v1alpha1.yaml"} {
		framework.MustKubectl(t, ctx, "", "-n", ns, "apply", "-f", "artifacts/examples/"+f)
	}
	var before map[string]*corev1.Pod
	for _, name := range []string{"sample", "sample-alpha"} {
		set, err := framework.Inplace.AppsV1beta1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods := framework.WaitStatefulSet(t, ctx, set, 3, 3)
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
	framework.CheckSamePods(t, before, framework.WaitStatefulSet(t, ctx, set, 3, 3))
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

// TestAdvancedStatefulSetInPlaceResizeAndRollback (OpenKruise InplaceVPA "should perform rolling
// updates(including resources) and roll backs"): with the InPlaceUpdateReady readiness gate and
// InPlaceIfPossible, a change of the resources and of a label main reads through env updates every
// Pod in place (same Pod, the update revision, the new resources in spec and status, the new env
// value); setting both back rolls back to the first revision the same way.
func TestAdvancedStatefulSetInPlaceResizeAndRollback(t *testing.T) {
	ctx, ns := framework.Start(t, "asts-resize")
	set := framework.CreateAdvancedStatefulSet(t, ctx, framework.NewAdvancedStatefulSet(ns, 2, appsv1.OrderedReadyPodManagement, func(s *v1beta1.StatefulSet) {
		s.Spec.Template.Labels["label-k2"] = "hello"
		s.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
		c := &s.Spec.Template.Spec.Containers[0]
		c.Resources = *resizeOld.DeepCopy()
		c.Env = []corev1.EnvVar{{Name: "TEST_ENV", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['label-k2']"}}}}
		c.Command = []string{"sh", "-c", `echo "label-k2=$TEST_ENV"; exec /app.sh`}
	}))
	before := framework.WaitStatefulSet(t, ctx, set, 2, 2)
	first, _ := setRevisions(t, ctx, set)

	change := func(label string, res corev1.ResourceRequirements) func(*v1beta1.StatefulSet) {
		return func(s *v1beta1.StatefulSet) {
			s.Spec.Template.Labels["label-k2"] = label
			s.Spec.Template.Spec.Containers[0].Resources = *res.DeepCopy()
		}
	}
	check := func(pods map[string]*corev1.Pod, revision, label string, res corev1.ResourceRequirements, restarts int32) {
		t.Helper()
		framework.CheckSamePods(t, before, pods)
		for name, p := range pods {
			s := framework.ContainerStatus(t, p, "main")
			spec := p.Spec.Containers[0].Resources
			switch {
			case p.Labels[appsv1.StatefulSetRevisionLabel] != revision:
				t.Errorf("pod %s at revision %s, want %s", name, p.Labels[appsv1.StatefulSetRevisionLabel], revision)
			case framework.SpecImage(p, "main") != framework.AppImageV1:
				t.Errorf("pod %s runs %s, want %s", name, framework.SpecImage(p, "main"), framework.AppImageV1)
			case !sameResources(&spec, &res) || !sameResources(s.Resources, &spec):
				t.Errorf("pod %s resources: spec %+v, status %+v; want both %+v", name, spec, s.Resources, res)
			case s.RestartCount != restarts:
				t.Errorf("pod %s: main restarted %d times, want %d (once per env change)", name, s.RestartCount, restarts)
			}
			if out := framework.PodLog(t, ctx, ns, name, "main"); !strings.Contains(out, "label-k2="+label) {
				t.Errorf("pod %s: main logged %q, want label-k2=%s", name, out, label)
			}
		}
	}

	set = framework.UpdateAdvancedStatefulSet(t, ctx, set, change("test", resizeNew))
	updated := framework.WaitStatefulSet(t, ctx, set, 2, 2)
	current, update := setRevisions(t, ctx, set)
	if update == first {
		t.Fatalf("update revision %s is still the first one", update)
	}
	check(updated, update, "test", resizeNew, 1)
	if current != update {
		t.Errorf("current revision %s, want the update revision %s once every Pod is updated", current, update)
	}

	set = framework.UpdateAdvancedStatefulSet(t, ctx, set, change("hello", resizeOld))
	rolledBack := framework.WaitStatefulSet(t, ctx, set, 2, 2)
	if _, update := setRevisions(t, ctx, set); update != first {
		t.Errorf("rolled back: update revision %s, want the first revision %s again", update, first)
	}
	check(rolledBack, first, "hello", resizeOld, 2)
	if t.Failed() {
		for name, p := range rolledBack {
			t.Logf("pod %s: %s", name, fmt.Sprint(p.Annotations[pub.InPlaceUpdateStateKey]))
		}
	}
}

// More of OpenKruise's Advanced StatefulSet e2e scenarios (test/e2e/apps/v1beta1/statefulset.go
// at v1.9.0): OnDelete, rolling back to an earlier revision, the scale subresource through kubectl,
// OrderedReady scale-up halting on an unready Pod.

// setRevisions reads the set's current and update revision names.
func setRevisions(t *testing.T, ctx context.Context, set *v1beta1.StatefulSet) (current, update string) {
	t.Helper()
	got, err := framework.Inplace.AppsV1beta1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got.Status.CurrentRevision, got.Status.UpdateRevision
}

// TestAdvancedStatefulSetOnDeleteAndRollback: with OnDelete a new image waits until a Pod is
// deleted, which comes back at the new revision; setting the old image again rolls the update
// revision back to the first revision's name (no new revision), and a rolling update then brings
// the Pod back to it in place.
func TestAdvancedStatefulSetOnDeleteAndRollback(t *testing.T) {
	ctx, ns := framework.Start(t, "asts-ondelete")
	set := framework.CreateAdvancedStatefulSet(t, ctx, framework.NewAdvancedStatefulSet(ns, 2, appsv1.ParallelPodManagement, func(s *v1beta1.StatefulSet) {
		s.Spec.UpdateStrategy = v1beta1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	}))
	before := framework.WaitStatefulSet(t, ctx, set, 2, 2)
	first, _ := setRevisions(t, ctx, set)

	set = framework.UpdateAdvancedStatefulSet(t, ctx, set, func(s *v1beta1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2 })
	held := framework.WaitStatefulSet(t, ctx, set, 2, 0)
	for name, p := range held {
		if p.UID != before[name].UID || framework.SpecImage(p, "main") != framework.AppImageV1 {
			t.Errorf("OnDelete: pod %s changed (image %s) before anyone deleted it", name, framework.SpecImage(p, "main"))
		}
	}
	if err := framework.Kube.CoreV1().Pods(ns).Delete(ctx, "db-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := framework.WaitStatefulSet(t, ctx, set, 2, 1)
	if p := pods["db-1"]; p.UID == before["db-1"].UID || framework.SpecImage(p, "main") != framework.AppImageV2 {
		t.Errorf("deleted db-1 came back as %s on %s, want a new Pod on %s", p.UID, framework.SpecImage(p, "main"), framework.AppImageV2)
	}
	if p := pods["db-0"]; p.UID != before["db-0"].UID || framework.SpecImage(p, "main") != framework.AppImageV1 {
		t.Errorf("db-0 (not deleted) changed: image %s", framework.SpecImage(p, "main"))
	}

	// Roll back: the template equals the first revision's again.
	set = framework.UpdateAdvancedStatefulSet(t, ctx, set, func(s *v1beta1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = framework.AppImageV1 })
	framework.WaitStatefulSet(t, ctx, set, 2, 1) // db-0 is at the first revision again, db-1 is not
	if _, update := setRevisions(t, ctx, set); update != first {
		t.Errorf("rolled back: update revision %q, want the first revision %q again", update, first)
	}
	revisions, err := framework.Kube.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(revisions.Items) != 2 {
		t.Errorf("%d ControllerRevisions after a rollback, want 2 (the rollback reuses the first)", len(revisions.Items))
	}
	set = framework.UpdateAdvancedStatefulSet(t, ctx, set, func(s *v1beta1.StatefulSet) {
		s.Spec.UpdateStrategy = v1beta1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &v1beta1.RollingUpdateStatefulSetStrategy{PodUpdatePolicy: v1beta1.InPlaceIfPossiblePodUpdateStrategyType}}
	})
	after := framework.WaitStatefulSet(t, ctx, set, 2, 2)
	if p := after["db-1"]; p.UID != pods["db-1"].UID || framework.SpecImage(p, "main") != framework.AppImageV1 {
		t.Errorf("db-1 after the rolling update: UID %s (was %s), image %s; want the same Pod back on %s in place",
			p.UID, pods["db-1"].UID, framework.SpecImage(p, "main"), framework.AppImageV1)
	}
	framework.Poll(t, ctx, time.Minute, "current revision back to the first", func(ctx context.Context) (bool, error) {
		current, update := setRevisions(t, ctx, set)
		return current == first && update == first, fmt.Errorf("current %q update %q, want %q", current, update, first)
	})
}

// TestAdvancedStatefulSetScaleSubresource: kubectl scale drives the set through /scale; the scale
// object carries the selector (for HPAs); scaling down removes the highest ordinals first and
// keeps their claims (the default retention policy).
func TestAdvancedStatefulSetScaleSubresource(t *testing.T) {
	ctx, ns := framework.Start(t, "asts-scale")
	set := framework.CreateAdvancedStatefulSet(t, ctx, framework.NewAdvancedStatefulSet(ns, 1, appsv1.OrderedReadyPodManagement))
	framework.WaitStatefulSet(t, ctx, set, 1, 1)
	framework.MustKubectl(t, ctx, "", "-n", ns, "scale", "statefulsets.apps.kruise.io/db", "--replicas=3")
	pods := framework.WaitStatefulSet(t, ctx, set, 3, 3)
	if names := slices.Sorted(maps.Keys(pods)); !slices.Equal(names, []string{"db-0", "db-1", "db-2"}) {
		t.Errorf("pods %v after scaling to 3", names)
	}
	raw := framework.MustKubectl(t, ctx, "", "get", "--raw", "/apis/apps.kruise.io/v1beta1/namespaces/"+ns+"/statefulsets/db/scale")
	var scale autoscalingv1.Scale
	if err := json.Unmarshal([]byte(raw), &scale); err != nil {
		t.Fatalf("scale: %v: %s", err, raw)
	}
	if scale.Spec.Replicas != 3 || scale.Status.Replicas != 3 || scale.Status.Selector != "app=db" {
		t.Errorf("scale %+v, want 3 replicas and selector app=db", scale)
	}

	rec := framework.RecordPods(t, ctx, ns)
	framework.MustKubectl(t, ctx, "", "-n", ns, "scale", "asts/db", "--replicas=1")
	pods = framework.WaitStatefulSet(t, ctx, set, 1, 1)
	events := rec.UpTo(t, ctx, ns)
	if _, ok := pods["db-0"]; !ok {
		t.Errorf("pods %v after scaling to 1, want db-0", slices.Sorted(maps.Keys(pods)))
	}
	var deleted []string
	for _, e := range events {
		if (e.Typ == watch.Deleted || e.Pod.DeletionTimestamp != nil) && !slices.Contains(deleted, e.Pod.Name) {
			deleted = append(deleted, e.Pod.Name)
		}
	}
	if want := []string{"db-2", "db-1"}; !slices.Equal(deleted, want) {
		t.Errorf("scale-down deleted %v, want %v (highest ordinal first)", deleted, want)
	}
	claims := framework.ClaimUIDs(t, ctx, ns)
	for i := range 3 {
		if claims[fmt.Sprintf("data-db-%d", i)] == "" {
			t.Errorf("claim data-db-%d gone after the scale-down (whenScaled Retain): %v", i, claims)
		}
	}
}

// TestAdvancedStatefulSetOrderedReadyHaltsOnUnready: with OrderedReady, scaling up waits while a
// Pod is not ready and goes on, in order, once it is ready again.
func TestAdvancedStatefulSetOrderedReadyHaltsOnUnready(t *testing.T) {
	ctx, ns := framework.Start(t, "asts-halt")
	set := framework.CreateAdvancedStatefulSet(t, ctx, framework.NewAdvancedStatefulSet(ns, 1, appsv1.OrderedReadyPodManagement, func(s *v1beta1.StatefulSet) {
		c := &s.Spec.Template.Spec.Containers[0]
		c.Command = []string{"/bin/sh", "-c", "touch /tmp/ready; while true; do sleep 1; done"}
		c.ReadinessProbe = &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 1,
			ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/tmp/ready"}}}}
	}))
	framework.WaitStatefulSet(t, ctx, set, 1, 1)
	framework.MustKubectl(t, ctx, "", "-n", ns, "exec", "db-0", "--", "rm", "/tmp/ready")
	framework.Poll(t, ctx, time.Minute, "db-0 unready", func(ctx context.Context) (bool, error) {
		p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, "db-0", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return !framework.PodReady(p), nil
	})
	rec := framework.RecordPods(t, ctx, ns)
	set = framework.UpdateAdvancedStatefulSet(t, ctx, set, func(s *v1beta1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](3) })
	framework.Consistently(t, ctx, 3*time.Second, 200*time.Millisecond, func(ctx context.Context) error {
		pods, err := framework.StatefulSetPods(ctx, set)
		if err != nil {
			return err
		}
		if len(pods) != 1 {
			return fmt.Errorf("pods %v created while db-0 is unready (OrderedReady halts)", slices.Sorted(maps.Keys(pods)))
		}
		return nil
	})
	framework.MustKubectl(t, ctx, "", "-n", ns, "exec", "db-0", "--", "touch", "/tmp/ready")
	framework.WaitStatefulSet(t, ctx, set, 3, 3)
	events := rec.UpTo(t, ctx, ns)
	var created []string
	for _, e := range events {
		if e.Typ == watch.Added && !slices.Contains(created, e.Pod.Name) {
			created = append(created, e.Pod.Name)
		}
	}
	if want := []string{"db-1", "db-2"}; !slices.Equal(created, want) {
		t.Errorf("created %v, want %v in order", created, want)
	}
}

// TestAdvancedStatefulSetClaimRetention: persistentVolumeClaimRetentionPolicy Delete/Delete: a
// scale-down deletes the claims of the ordinals it removed, and deleting the set lets the garbage
// collector (kube-controller-manager's, following the set's ownerReference through the aggregated
// API) delete the rest; with the default Retain/Retain the claims stay (the scale test).
func TestAdvancedStatefulSetClaimRetention(t *testing.T) {
	ctx, ns := framework.Start(t, "asts-retention")
	set := framework.CreateAdvancedStatefulSet(t, ctx, framework.NewAdvancedStatefulSet(ns, 2, appsv1.ParallelPodManagement, func(s *v1beta1.StatefulSet) {
		s.Spec.PersistentVolumeClaimRetentionPolicy = &v1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenDeleted: v1beta1.DeletePersistentVolumeClaimRetentionPolicyType,
			WhenScaled:  v1beta1.DeletePersistentVolumeClaimRetentionPolicyType,
		}
	}))
	framework.WaitStatefulSet(t, ctx, set, 2, 2)
	if claims := framework.ClaimUIDs(t, ctx, ns); claims["data-db-0"] == "" || claims["data-db-1"] == "" {
		t.Fatalf("claims %v, want data-db-0 and data-db-1", claims)
	}
	set = framework.UpdateAdvancedStatefulSet(t, ctx, set, func(s *v1beta1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
	framework.WaitStatefulSet(t, ctx, set, 1, 1)
	framework.Poll(t, ctx, time.Minute, "claim data-db-1 deleted with its scaled-away Pod", func(ctx context.Context) (bool, error) {
		claims := framework.ClaimUIDs(t, ctx, ns)
		return claims["data-db-1"] == "" && claims["data-db-0"] != "", fmt.Errorf("claims %v", claims)
	})
	if err := framework.Inplace.AppsV1beta1().StatefulSets(ns).Delete(ctx, set.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Poll(t, ctx, 2*time.Minute, "claim data-db-0 deleted with the set", func(ctx context.Context) (bool, error) {
		claims := framework.ClaimUIDs(t, ctx, ns)
		return len(claims) == 0, fmt.Errorf("claims %v", claims)
	})
}
