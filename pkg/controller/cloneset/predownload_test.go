package cloneset

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/controllertest"
	"github.com/inplace-dev/inplace/pkg/workload/predownload"
)

// preDownloadFixture is the rollout's fixture with image pre-download on or off.
func (r *rollout) preDownloadFixture(t *testing.T, on bool, extra ...runtime.Object) *fixture {
	t.Helper()
	objs := []runtime.Object{r.old, r.new}
	for _, p := range r.pods {
		objs = append(objs, p)
	}
	f := newFixtureWith(t, on, r.cs, objs...)
	f.Inplace.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return a.GetSubresource() == "inplaceupdate", a.(k8stesting.CreateAction).GetObject(), nil
	})
	for _, o := range extra {
		f.Cache(o)
		if err := f.Inplace.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func createdJobs(f *fixture) []*v1alpha1.ImagePullJob {
	return controllertest.Created[*v1alpha1.ImagePullJob](f.Inplace.Actions(), "imagepulljobs")
}

// partitioned is a rollout of 5 Pods in place, the image changed, partition 4: one Pod updates,
// four wait.
func partitioned(t *testing.T) *rollout {
	r := newRollout(t, 5, v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, newImage)
	r.cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(4))
	r.cs.Annotations = map[string]string{v1alpha1.ImagePreDownloadParallelismKey: "2"}
	return r
}

// While Pods wait for the new revision, the CloneSet creates one ImagePullJob it controls for the
// new image, aimed at its Pods not at the update revision, and labels the revision.
func TestPreDownloadCreatesJob(t *testing.T) {
	r := partitioned(t)
	f := r.preDownloadFixture(t, true)
	f.sync(t)
	jobs := createdJobs(f)
	if len(jobs) != 1 {
		t.Fatalf("%d ImagePullJobs created, want 1", len(jobs))
	}
	j := jobs[0]
	if j.Name != r.new.Name+"-main" || j.Spec.Image != "nginx:2" || j.Spec.Parallelism.IntValue() != 2 {
		t.Errorf("job %s image %s parallelism %v, want %s-main nginx:2 2", j.Name, j.Spec.Image, j.Spec.Parallelism, r.new.Name)
	}
	if ref := metav1.GetControllerOf(j); ref == nil || ref.Kind != "CloneSet" || ref.UID != r.cs.UID {
		t.Errorf("job controller %+v, want the CloneSet", ref)
	}
	want := []metav1.LabelSelectorRequirement{{Key: appsv1.ControllerRevisionHashLabelKey, Operator: metav1.LabelSelectorOpNotIn,
		Values: []string{r.new.Name, strings.TrimPrefix(r.new.Name, "web-")}}}
	if sel := j.Spec.PodSelector; sel == nil || sel.MatchLabels["app"] != "web" || !slices.EqualFunc(sel.MatchExpressions, want,
		func(a, b metav1.LabelSelectorRequirement) bool {
			return a.Key == b.Key && a.Operator == b.Operator && slices.Equal(a.Values, b.Values)
		}) {
		t.Errorf("podSelector %+v, want app=web and %+v", sel, want)
	}
	var labelled bool
	for _, a := range f.Kube.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && a.GetResource().Resource == "controllerrevisions" && p.GetName() == r.new.Name {
			labelled = strings.Contains(string(p.GetPatch()), v1alpha1.ImagePreDownloadCreatedKey)
		}
	}
	if !labelled {
		t.Errorf("revision %s not labelled %s", r.new.Name, v1alpha1.ImagePreDownloadCreatedKey)
	}
	if len(inPlaceUpdates(f)) != 1 {
		t.Errorf("%d Pods updated in place, want 1: pre-download must not hold the rollout", len(inPlaceUpdates(f)))
	}
}

// --cloneset-image-predownload=false: no job, no ImagePullJob informer.
func TestPreDownloadDisabled(t *testing.T) {
	r := partitioned(t)
	f := r.preDownloadFixture(t, false)
	f.sync(t)
	if jobs := createdJobs(f); len(jobs) != 0 {
		t.Errorf("%d ImagePullJobs created with pre-download off", len(jobs))
	}
	if f.c.Predl != nil {
		t.Error("pre-download writer built with pre-download off")
	}
}

// The min-updated-ready gate counts the CloneSet's updated ready Pods: none yet, no job.
func TestPreDownloadWaitsForUpdatedReady(t *testing.T) {
	r := partitioned(t)
	r.cs.Annotations[v1alpha1.ImagePreDownloadMinUpdatedReadyPods] = "1"
	f := r.preDownloadFixture(t, true)
	f.sync(t)
	if jobs := createdJobs(f); len(jobs) != 0 {
		t.Errorf("%d ImagePullJobs created before any updated Pod is ready", len(jobs))
	}
	// One Pod at the new revision, ready: the gate opens.
	r.pods[0].Labels[appsv1.ControllerRevisionHashLabelKey] = r.new.Name
	r.pods[0].Labels[podTemplateHashLabel] = r.new.Name
	r.cs.Status.UpdateRevision = r.new.Name
	f = r.preDownloadFixture(t, true)
	f.sync(t)
	if jobs := createdJobs(f); len(jobs) != 1 {
		t.Errorf("%d ImagePullJobs created with 1 updated ready Pod, want 1", len(jobs))
	}
}

// Once every Pod is at the update revision, the CloneSet's jobs are deleted.
func TestPreDownloadDeletesOnCompletion(t *testing.T) {
	r := partitioned(t)
	r.cs.Spec.UpdateStrategy.Partition = nil
	for _, p := range r.pods {
		p.Labels[appsv1.ControllerRevisionHashLabelKey] = r.new.Name
		p.Labels[podTemplateHashLabel] = r.new.Name
	}
	job := &v1alpha1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: r.new.Name + "-main", Namespace: "ns", UID: "job-uid",
		Labels:          map[string]string{predownload.RevisionHashLabel: strings.TrimPrefix(r.new.Name, "web-")},
		OwnerReferences: []metav1.OwnerReference{*controllerRef(r.cs)}}}
	f := r.preDownloadFixture(t, true, job)
	f.sync(t)
	if _, err := f.Inplace.AppsV1alpha1().ImagePullJobs("ns").Get(context.Background(), job.Name, metav1.GetOptions{}); err == nil {
		t.Error("the CloneSet's ImagePullJob survived the end of the rollout")
	}
	if st := lastStatus(t, f); st.CurrentRevision != r.new.Name {
		t.Errorf("current revision %s, want %s", st.CurrentRevision, r.new.Name)
	}
}

// A job's creation seen by the informer settles the expectation and brings the CloneSet back.
func TestPreDownloadJobEventRequeues(t *testing.T) {
	r := partitioned(t)
	f := r.preDownloadFixture(t, true)
	job := &v1alpha1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns",
		OwnerReferences: []metav1.OwnerReference{*controllerRef(r.cs)}}}
	jobEvents := f.c.Predl.Handler(f.c.Router.OwnerKey, f.c.Queue.Add)
	jobEvents.Add(job)
	if n := f.c.Queue.Len(); n != 1 {
		t.Fatalf("queue length %d, want the CloneSet", n)
	}
	if key, _ := f.c.Queue.Get(); key != (cache.ObjectName{Namespace: "ns", Name: "web"}) {
		t.Errorf("queued %v", key)
	}
	jobEvents.Add(&v1alpha1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: "k", Namespace: "ns"}})
	if n := f.c.Queue.Len(); n != 0 {
		t.Errorf("a job of no CloneSet queued something")
	}
}

func TestPreDownloadMaxUnavailable(t *testing.T) {
	for _, tc := range []struct {
		mu   *intstr.IntOrString
		want int
	}{
		{nil, 1}, // 20% of 5
		{ptr.To(intstr.FromString("100%")), 5},
		{ptr.To(intstr.FromString("99%")), 4}, // rounded down, as OpenKruise here
		{ptr.To(intstr.FromInt32(7)), 7},
	} {
		cs := newCloneSet(5)
		cs.Spec.UpdateStrategy.MaxUnavailable = tc.mu
		if got := preDownloadMaxUnavailable(cs); got != tc.want {
			t.Errorf("maxUnavailable %v of 5: %d, want %d", tc.mu, got, tc.want)
		}
	}
}
