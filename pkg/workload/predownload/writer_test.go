package predownload

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	inplacefake "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned/fake"
	inplaceinformers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions"
	"github.com/inplace-dev/inplace/pkg/workload/expectations"
)

type writerFixture struct {
	w        *Writer
	kube     *kubefake.Clientset
	inplace  *inplacefake.Clientset
	iinf     inplaceinformers.SharedInformerFactory
	recorder *record.FakeRecorder
	now      time.Time
}

// newWriter builds a Writer on fake clients; the informer is never started: tests put what the
// cache shows into its indexer.
func newWriter(t *testing.T, r Rollout) *writerFixture {
	t.Helper()
	f := &writerFixture{kube: kubefake.NewClientset(r.Update), inplace: inplacefake.NewClientset(),
		recorder: record.NewFakeRecorder(100), now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	f.iinf = inplaceinformers.NewSharedInformerFactory(f.inplace, 0)
	w, err := NewWriter(f.inplace, f.kube.AppsV1(), f.iinf.Apps().V1alpha1().ImagePullJobs(), f.recorder,
		expectations.New(testingclock.NewFakePassiveClock(f.now)))
	if err != nil {
		t.Fatal(err)
	}
	f.w = w
	return f
}

func (f *writerFixture) sync(t *testing.T, r Rollout) {
	t.Helper()
	if _, err := f.w.Sync(context.Background(), "ns/web", r); err != nil {
		t.Fatalf("sync: %v", err)
	}
}

func (f *writerFixture) cache(t *testing.T, job *v1alpha1.ImagePullJob) {
	t.Helper()
	if err := f.iinf.Apps().V1alpha1().ImagePullJobs().Informer().GetIndexer().Add(job); err != nil {
		t.Fatal(err)
	}
}

func (f *writerFixture) count(verb, resource string) int {
	n := 0
	for _, a := range append(f.inplace.Actions(), f.kube.Actions()...) {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

func (f *writerFixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// A slow cache never creates a job twice: until the informer shows the job it created, the
// Writer decides nothing; then the revision is labelled and nothing more is written.
func TestWriterCreatesOnce(t *testing.T) {
	r := rollout(t)
	f := newWriter(t, r)
	f.sync(t, r)
	if n := f.count("create", "imagepulljobs"); n != 1 {
		t.Fatalf("%d jobs created, want 1", n)
	}
	created, err := f.inplace.AppsV1alpha1().ImagePullJobs("ns").Get(context.Background(), "web-new-main", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(created); ref == nil || ref.UID != "web-uid" {
		t.Errorf("job controlled by %+v, want the workload", ref)
	}
	rev, err := f.kube.AppsV1().ControllerRevisions("ns").Get(context.Background(), r.Update.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rev.Labels[v1alpha1.ImagePreDownloadCreatedKey] != "true" {
		t.Errorf("revision labels %v, want %s", rev.Labels, v1alpha1.ImagePreDownloadCreatedKey)
	}

	// The cache shows neither the job nor the label yet: nothing is done, and the caller is
	// told when to look again should no event come.
	left, err := f.w.Sync(context.Background(), "ns/web", r)
	if err != nil || left != expectations.Timeout {
		t.Fatalf("sync with the cache behind: look again in %v (%v), want %v", left, err, expectations.Timeout)
	}
	if n := f.count("create", "imagepulljobs"); n != 1 {
		t.Fatalf("%d jobs created with the cache behind, want 1", n)
	}
	// Once the cache shows the job (and not the label yet), the label is written again at most.
	f.cache(t, created)
	f.w.CreationObserved("ns/web", created.Name)
	f.sync(t, r)
	if n := f.count("create", "imagepulljobs"); n != 1 {
		t.Fatalf("%d jobs created once the cache showed the job, want 1", n)
	}
	// And with the revision labelled, nothing at all.
	before := len(f.inplace.Actions()) + len(f.kube.Actions())
	f.sync(t, withUpdate(r, rev))
	if after := len(f.inplace.Actions()) + len(f.kube.Actions()); after != before {
		t.Errorf("%d writes with the revision labelled, want none", after-before)
	}
	if ev := f.events(); len(ev) != 1 || !strings.Contains(ev[0], ReasonCreated) {
		t.Errorf("events %q, want one %s", ev, ReasonCreated)
	}
}

func withUpdate(r Rollout, rev *appsv1.ControllerRevision) Rollout {
	r.Update = rev
	return r
}

// A job that could not be created leaves the revision unlabelled, so the next sync tries again
// (OpenKruise labels it anyway and never does); the workload gets a Warning event.
func TestWriterCreateFails(t *testing.T) {
	r := rollout(t)
	f := newWriter(t, r)
	f.inplace.PrependReactor("create", "imagepulljobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is down")
	})
	if _, err := f.w.Sync(context.Background(), "ns/web", r); err == nil || !strings.Contains(err.Error(), "etcd is down") {
		t.Fatalf("sync error %v, want the create's", err)
	}
	if n := f.count("patch", "controllerrevisions"); n != 0 {
		t.Errorf("revision labelled %d times after a failed create", n)
	}
	if ev := f.events(); len(ev) != 1 || !strings.Contains(ev[0], "Warning "+ReasonFailedCreate) {
		t.Errorf("events %q, want one Warning %s", ev, ReasonFailedCreate)
	}
	f.inplace.ReactionChain = f.inplace.ReactionChain[1:]
	f.sync(t, r) // the failed creation is no expectation: the next sync creates
	if _, err := f.inplace.AppsV1alpha1().ImagePullJobs("ns").Get(context.Background(), "web-new-main", metav1.GetOptions{}); err != nil {
		t.Errorf("job not created on the next sync: %v", err)
	}
}

// An annotation that cannot be read is a Warning event on the workload, not a panic nor a stop.
func TestWriterBadAnnotationEvent(t *testing.T) {
	r := rollout(t)
	r.Owner = owner(map[string]string{v1alpha1.ImagePreDownloadParallelismKey: "lots"})
	f := newWriter(t, r)
	f.sync(t, r)
	ev := f.events()
	var warned bool
	for _, e := range ev {
		warned = warned || strings.HasPrefix(e, "Warning "+ReasonBadAnnotation) && strings.Contains(e, `"lots"`)
	}
	if !warned {
		t.Errorf("events %q, want a Warning %s naming the value", ev, ReasonBadAnnotation)
	}
	if n := f.count("create", "imagepulljobs"); n != 1 {
		t.Errorf("%d jobs created, want 1 (with the default parallelism)", n)
	}
}

// Once the rollout completes, the workload's jobs are deleted, once, and only its own.
func TestWriterDeletesOnCompletion(t *testing.T) {
	r := rollout(t)
	r.Current = r.Update
	f := newWriter(t, r)
	mine := job("web-new-main", "new")
	mine.OwnerReferences = []metav1.OwnerReference{r.OwnerRef}
	other := job("other-new-main", "new")
	for _, j := range []*v1alpha1.ImagePullJob{mine, other} {
		f.cache(t, j)
		if _, err := f.inplace.AppsV1alpha1().ImagePullJobs("ns").Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.sync(t, r)
	if _, err := f.inplace.AppsV1alpha1().ImagePullJobs("ns").Get(context.Background(), mine.Name, metav1.GetOptions{}); err == nil {
		t.Error("the workload's job is still there")
	}
	if _, err := f.inplace.AppsV1alpha1().ImagePullJobs("ns").Get(context.Background(), other.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("another job was deleted: %v", err)
	}
	f.sync(t, r) // the cache still shows the job: the deletion is expected, not repeated
	if n := f.count("delete", "imagepulljobs"); n != 1 {
		t.Errorf("%d deletions, want 1", n)
	}
}
