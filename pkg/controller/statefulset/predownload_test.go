package statefulset

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/controllertest"
	"github.com/inplace-dev/inplace/pkg/workload/history"
)

// preDownloadRolloutOf is a set of 5 Pods at the revision of image app:v1 whose template now runs
// app:v2, partition 4: one Pod updates, four wait. The fixture has image pre-download on, both
// revisions in the cache and in-place updates answered.
func preDownloadRolloutOf(t *testing.T, mutate func(*v1beta1.StatefulSet)) (*fixture, *v1beta1.StatefulSet, *appsv1.ControllerRevision) {
	t.Helper()
	set := testSet(5, appsv1.ParallelPodManagement)
	set.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](4)
	revision := func(image string, number int64) *appsv1.ControllerRevision {
		s := set.DeepCopy()
		s.Spec.Template.Spec.Containers[0].Image = image
		data, err := history.TemplateData(&s.Spec.Template)
		if err != nil {
			t.Fatal(err)
		}
		return history.Owner{Object: set, Ref: controllerRef(set), Labels: set.Spec.Template.Labels}.NewRevision(data, number, 0)
	}
	old, update := revision("app:v1", 1), revision("app:v2", 2)
	set.Spec.Template.Spec.Containers[0].Image = "app:v2"
	set.Status.CurrentRevision, set.Status.UpdateRevision = old.Name, old.Name
	if mutate != nil {
		mutate(set)
	}
	objs := []runtime.Object{old, update}
	for i := range 5 {
		objs = append(objs, readyPod(set, i, old.Name, true))
	}
	f := newFixture(t, set, objs...)
	if err := f.c.EnableImagePreDownload(f.Kube.AppsV1(), f.InplaceInformers.Apps().V1alpha1().ImagePullJobs()); err != nil {
		t.Fatal(err)
	}
	f.Cache(old)
	f.Cache(update)
	f.Inplace.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return a.GetSubresource() == "inplaceupdate", a.(k8stesting.CreateAction).GetObject(), nil
	})
	return f, set, update
}

func createdJobs(f *fixture) []*v1alpha1.ImagePullJob {
	return controllertest.Created[*v1alpha1.ImagePullJob](f.Inplace.Actions(), "imagepulljobs")
}

// While Pods wait above the partition, the StatefulSet creates one ImagePullJob it controls for
// the new image, aimed at its Pods not at the update revision, and labels the revision created.
func TestPreDownloadCreatesJob(t *testing.T) {
	f, set, update := preDownloadRolloutOf(t, nil)
	f.sync(t, set)
	jobs := createdJobs(f)
	if len(jobs) != 1 {
		t.Fatalf("%d ImagePullJobs created, want 1", len(jobs))
	}
	j := jobs[0]
	if j.Name != update.Name+"-main" || j.Spec.Image != "app:v2" {
		t.Errorf("job %s for %s, want %s-main for app:v2", j.Name, j.Spec.Image, update.Name)
	}
	if ref := j.OwnerReferences; len(ref) != 1 || ref[0].UID != set.UID || !ptr.Deref(ref[0].Controller, false) {
		t.Errorf("job owners %v, want the StatefulSet as controller", ref)
	}
	sel := j.Spec.PodSelector.LabelSelector
	if len(sel.MatchExpressions) != 1 || sel.MatchExpressions[0].Key != appsv1.ControllerRevisionHashLabelKey ||
		sel.MatchExpressions[0].Values[0] != update.Name {
		t.Errorf("job podSelector %v, want the set's selector plus controller-revision-hash NotIn %s", sel, update.Name)
	}
	if p := controllertest.Acted(f.Kube.Actions(), "patch", "controllerrevisions"); !strings.Contains(p[update.Name], v1alpha1.ImagePreDownloadCreatedKey) {
		t.Errorf("revision patches %v, want %s labelled %s", p, update.Name, v1alpha1.ImagePreDownloadCreatedKey)
	}
}

// OpenKruise's StatefulSet rules: no job when the Pods are recreated, with OnDelete, or when every
// Pod updates in the first batch; the revision is labelled ignored.
func TestPreDownloadIgnored(t *testing.T) {
	for name, mutate := range map[string]func(*v1beta1.StatefulSet){
		"ReCreate": func(s *v1beta1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = v1beta1.RecreatePodUpdateStrategyType
		},
		"OnDelete": func(s *v1beta1.StatefulSet) { s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType },
		"all at once": func(s *v1beta1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](0)
			s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("100%"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			f, set, update := preDownloadRolloutOf(t, mutate)
			f.sync(t, set)
			if jobs := createdJobs(f); len(jobs) != 0 {
				t.Errorf("%d ImagePullJobs created, want none", len(jobs))
			}
			if p := controllertest.Acted(f.Kube.Actions(), "patch", "controllerrevisions"); !strings.Contains(p[update.Name], v1alpha1.ImagePreDownloadIgnoredKey) {
				t.Errorf("revision patches %v, want %s labelled %s", p, update.Name, v1alpha1.ImagePreDownloadIgnoredKey)
			}
		})
	}
}

// TestPreDownloadRollout: partition as it is, maxUnavailable (default 1) scaled rounding down, and
// the updated ready Pods of the status only when it is about the update revision.
func TestPreDownloadRollout(t *testing.T) {
	set := testSet(10, appsv1.ParallelPodManagement)
	ru := set.Spec.UpdateStrategy.RollingUpdate
	ru.Partition, ru.MaxUnavailable = ptr.To[int32](3), ptr.To(intstr.FromString("25%"))
	set.Status.UpdateRevision, set.Status.UpdatedReadyReplicas = "db-new", 2
	update := &appsv1.ControllerRevision{}
	update.Name = "db-new"
	r := preDownloadRollout(set, history.Revisions{Current: &appsv1.ControllerRevision{}, Update: update})
	if !r.InPlace || r.Replicas != 10 || r.Partition != 3 || r.MaxUnavailable != 2 || r.UpdatedReady != 2 {
		t.Errorf("rollout in place %v, replicas %d, partition %d, maxUnavailable %d, updated ready %d; want true, 10, 3, 2 (25%% of 10 rounded down), 2",
			r.InPlace, r.Replicas, r.Partition, r.MaxUnavailable, r.UpdatedReady)
	}
	ru.MaxUnavailable = nil
	update.Name = "db-newer"
	if r := preDownloadRollout(set, history.Revisions{Current: &appsv1.ControllerRevision{}, Update: update}); r.MaxUnavailable != 1 || r.UpdatedReady != 0 {
		t.Errorf("maxUnavailable %d, updated ready %d; want the default 1, and 0 for a status about another revision", r.MaxUnavailable, r.UpdatedReady)
	}
}
