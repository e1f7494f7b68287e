package imagelistpulljob

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/controllertest"
)

type fixture struct {
	controllertest.Fakes
	listIdx cache.Indexer
	jobIdx  cache.Indexer
	c       *Controller
}

// newFixture builds the controller on a fake client that generates names (as the server does for
// generateName); objects go to both the client and the informer caches (never started).
func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{Fakes: controllertest.NewFakes(nil, objs...)}
	generated := 0
	f.Inplace.PrependReactor("create", "imagepulljobs", func(action k8stesting.Action) (bool, runtime.Object, error) {
		job := action.(k8stesting.CreateAction).GetObject().(*v1alpha1.ImagePullJob)
		if job.Name == "" {
			generated++
			job.Name = fmt.Sprintf("%s%d", job.GenerateName, generated)
			job.UID = types.UID("uid-" + job.Name)
			job.CreationTimestamp = metav1.NewTime(f.Clock.Now())
		}
		return false, nil, nil // the tracker stores it
	})
	apps := f.InplaceInformers.Apps().V1alpha1()
	c, err := New(f.Inplace, apps.ImageListPullJobs(), apps.ImagePullJobs(), f.Recorder, f.Clock)
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	f.listIdx = apps.ImageListPullJobs().Informer().GetIndexer()
	f.jobIdx = apps.ImagePullJobs().Informer().GetIndexer()
	f.reload(t)
	return f
}

// reload replaces the caches with what the client holds, as the informers would.
func (f *fixture) reload(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	lists, err := f.Inplace.AppsV1alpha1().ImageListPullJobs("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := f.Inplace.AppsV1alpha1().ImagePullJobs("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.Replace(t, f.listIdx, lists.Items)
	controllertest.Replace(t, f.jobIdx, jobs.Items)
}

func (f *fixture) sync(t *testing.T, lj *v1alpha1.ImageListPullJob) time.Duration {
	t.Helper()
	requeue := controllertest.Sync(t, f.c.sync, cache.MetaObjectToName(lj))
	f.reload(t)
	return requeue
}

// children are the list job's ImagePullJobs by image.
func (f *fixture) children(t *testing.T) map[string][]*v1alpha1.ImagePullJob {
	t.Helper()
	jobs, err := f.Inplace.AppsV1alpha1().ImagePullJobs("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]*v1alpha1.ImagePullJob{}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if ref := metav1.GetControllerOf(j); ref != nil && ref.UID == "list-uid" {
			out[j.Spec.Image] = append(out[j.Spec.Image], j)
		}
	}
	return out
}

func (f *fixture) listJob(t *testing.T) (*v1alpha1.ImageListPullJob, error) {
	t.Helper()
	return f.Inplace.AppsV1alpha1().ImageListPullJobs("ns").Get(context.Background(), "warm-all", metav1.GetOptions{})
}

func listPullJob(images ...string) *v1alpha1.ImageListPullJob {
	return &v1alpha1.ImageListPullJob{
		ObjectMeta: metav1.ObjectMeta{Name: "warm-all", Namespace: "ns", UID: "list-uid"},
		Spec: v1alpha1.ImageListPullJobSpec{Images: images, ImagePullJobTemplate: v1alpha1.ImagePullJobTemplate{
			CompletionPolicy: v1alpha1.CompletionPolicy{Type: v1alpha1.Always, TTLSecondsAfterFinished: ptr.To[int32](60)},
		}},
	}
}

func TestChildPerImage(t *testing.T) {
	lj := listPullJob("nginx:1.25", "redis:7")
	f := newFixture(t, lj)

	f.sync(t, lj)
	children := f.children(t)
	if len(children) != 2 || len(children["nginx:1.25"]) != 1 || len(children["redis:7"]) != 1 {
		t.Fatalf("children = %v, want one per image", children)
	}
	if ev := f.Events(); strings.Count(ev, "Normal "+ReasonCreatedJob) != 2 {
		t.Errorf("events = %q, want two %s", ev, ReasonCreatedJob)
	}
	got, err := f.listJob(t)
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["controller-revision-hash"] == "" || got.Status.Desired != 2 {
		t.Errorf("list job = %+v %+v, want labelled with its template hash and desired 2", got.Labels, got.Status)
	}

	// Stable: a second sync creates nothing.
	f.sync(t, lj)
	if children := f.children(t); len(children["nginx:1.25"]) != 1 || len(children["redis:7"]) != 1 {
		t.Fatalf("children = %v after a second sync, want still one per image", children)
	}

	// redis leaves the list: its child goes, nginx's stays.
	nginx := f.children(t)["nginx:1.25"][0].Name
	got, _ = f.listJob(t)
	got.Spec.Images = []string{"nginx:1.25"}
	if _, err := f.Inplace.AppsV1alpha1().ImageListPullJobs("ns").Update(context.Background(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.reload(t)
	f.sync(t, lj)
	children = f.children(t)
	if len(children) != 1 || len(children["nginx:1.25"]) != 1 || children["nginx:1.25"][0].Name != nginx {
		t.Fatalf("children = %v, want only the original nginx child %s", children, nginx)
	}
	if ev := f.Events(); !strings.Contains(ev, "Normal "+ReasonDeletedJob) {
		t.Errorf("events = %q, want %s", ev, ReasonDeletedJob)
	}
}

// TestStaleCacheCreatesNoDuplicate: until the cache shows the children created, none is created
// again.
func TestStaleCacheCreatesNoDuplicate(t *testing.T) {
	lj := listPullJob("nginx:1.25")
	f := newFixture(t, lj)
	for range 2 {
		if _, err := f.c.sync(context.Background(), cache.MetaObjectToName(lj)); err != nil {
			t.Fatal(err)
		}
		// Only the list job's label is let through to the cache, not the child.
		got, _ := f.listJob(t)
		if err := f.listIdx.Update(got); err != nil {
			t.Fatal(err)
		}
	}
	if children := f.children(t); len(children["nginx:1.25"]) != 1 {
		t.Errorf("children = %v, want one: a stale cache created a duplicate", children)
	}
}

func TestCompletesAndExpires(t *testing.T) {
	lj := listPullJob("nginx:1.25", "redis:7")
	f := newFixture(t, lj)
	f.sync(t, lj)
	// Both children complete: every node succeeded.
	done := metav1.NewTime(f.Clock.Now())
	for _, jobs := range f.children(t) {
		j := jobs[0]
		j.Status = v1alpha1.ImagePullJobStatus{StartTime: &done, CompletionTime: &done, Desired: 2, Succeeded: 2}
		if _, err := f.Inplace.AppsV1alpha1().ImagePullJobs("ns").UpdateStatus(context.Background(), j, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.reload(t)
	if requeue := f.sync(t, lj); requeue != 60*time.Second {
		t.Errorf("requeue = %v, want the 60s TTL", requeue)
	}
	got, _ := f.listJob(t)
	if got.Status.CompletionTime == nil || got.Status.Succeeded != 2 || got.Status.Completed != 2 {
		t.Fatalf("status = %+v, want completed with 2 succeeded", got.Status)
	}
	if ev := f.Events(); !strings.Contains(ev, "Normal "+ReasonCompleted) {
		t.Errorf("events = %q, want %s", ev, ReasonCompleted)
	}
	f.Clock.Step(60 * time.Second)
	f.sync(t, lj)
	if _, err := f.listJob(t); err == nil {
		t.Error("list job not deleted after its TTL")
	}
}

// TestChildEventsReachOwner: an ImagePullJob's change enqueues the list job controlling it.
func TestChildEventsReachOwner(t *testing.T) {
	lj := listPullJob("nginx:1.25")
	f := newFixture(t, lj)
	child := &v1alpha1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: "warm-all-1", Namespace: "ns",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(lj, v1alpha1.SchemeGroupVersion.WithKind("ImageListPullJob"))}}}
	f.c.enqueueOwner(child)
	f.c.enqueueOwner(&v1alpha1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: "alone", Namespace: "ns"}})
	var keys []string
	for f.c.queue.Len() > 0 {
		k, _ := f.c.queue.Get()
		f.c.queue.Done(k)
		keys = append(keys, k.String())
	}
	if !slices.Equal(keys, []string{"ns/warm-all"}) {
		t.Errorf("enqueued %v, want [ns/warm-all]", keys)
	}
}
