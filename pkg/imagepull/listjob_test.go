package imagepull

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

func newListJob(images ...string) *v1alpha1.ImageListPullJob {
	return &v1alpha1.ImageListPullJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "list", UID: "ul"},
		Spec: v1alpha1.ImageListPullJobSpec{Images: images, ImagePullJobTemplate: v1alpha1.ImagePullJobTemplate{
			PullSecrets: []string{"reg"}, CompletionPolicy: v1alpha1.CompletionPolicy{Type: v1alpha1.Always}}},
	}
}

// child is an ImagePullJob of list for image, made at created, labelled with hash ("" = no label).
func child(list *v1alpha1.ImageListPullJob, name, image, hash string, created int) *v1alpha1.ImagePullJob {
	j := NewChild(list, image, hash)
	j.Name, j.CreationTimestamp = name, at(created)
	if hash == "" {
		j.Labels = nil
	}
	return j
}

func names(jobs []*v1alpha1.ImagePullJob) []string {
	var out []string
	for _, j := range jobs {
		if j.Name == "" {
			out = append(out, "new:"+j.Spec.Image)
		} else {
			out = append(out, j.Name)
		}
	}
	return out
}

func TestChildren(t *testing.T) {
	list := newListJob("a", "b", "c", "b")
	hash := TemplateHash(&list.Spec.ImagePullJobTemplate)
	stranger := child(list, "stranger", "a", hash, 0)
	stranger.OwnerReferences[0].UID = "other"
	deleting := child(list, "deleting", "b", hash, 0)
	deleting.DeletionTimestamp = atp(1)
	handEdited := child(list, "hand", "c", "", 0)
	handEdited.Spec.Parallelism = ptr.To(intstrFromInt(4))
	for _, tc := range []struct {
		name                        string
		existing                    []*v1alpha1.ImagePullJob
		current, create, deleteJobs []string
	}{
		{name: "nothing yet: one per image, duplicates once",
			create: []string{"new:a", "new:b", "new:c"}},
		{name: "current children kept",
			existing: []*v1alpha1.ImagePullJob{child(list, "la", "a", hash, 0), child(list, "lb", "b", hash, 0), child(list, "lc", "c", hash, 0)},
			current:  []string{"la", "lb", "lc"}},
		{name: "outdated template replaced, unlabelled same template kept, changed one replaced",
			existing: []*v1alpha1.ImagePullJob{child(list, "la", "a", "old", 0), child(list, "lb", "b", "", 0), handEdited},
			current:  []string{"lb"}, create: []string{"new:a", "new:c"}, deleteJobs: []string{"la", "hand"}},
		{name: "image left the list: deleted, by name",
			existing: []*v1alpha1.ImagePullJob{child(list, "lz", "z", hash, 0), child(list, "ly", "y", hash, 0), child(list, "la", "a", hash, 0)},
			current:  []string{"la"}, create: []string{"new:b", "new:c"}, deleteJobs: []string{"ly", "lz"}},
		{name: "two current children of one image: the older kept",
			existing: []*v1alpha1.ImagePullJob{child(list, "a-new", "a", hash, 5), child(list, "a-old", "a", hash, 1)},
			current:  []string{"a-old"}, create: []string{"new:b", "new:c"}, deleteJobs: []string{"a-new"}},
		{name: "jobs of another owner and jobs being deleted ignored",
			existing: []*v1alpha1.ImagePullJob{stranger, deleting},
			create:   []string{"new:a", "new:b", "new:c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Children(list, tc.existing)
			checkEqual(t, "current", tc.current, names(got.Current))
			checkEqual(t, "create", tc.create, names(got.Create))
			checkEqual(t, "delete", tc.deleteJobs, names(got.Delete))
		})
	}
}

func TestNewChild(t *testing.T) {
	list := newListJob("nginx:1")
	got := NewChild(list, "nginx:1", "h1")
	want := &v1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "list-",
			Labels:      map[string]string{appsv1.ControllerRevisionHashLabelKey: "h1"},
			Annotations: map[string]string{},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "ImageListPullJob", Name: "list", UID: types.UID("ul"),
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: v1alpha1.ImagePullJobSpec{Image: "nginx:1", ImagePullJobTemplate: list.Spec.ImagePullJobTemplate},
	}
	checkEqual(t, "child", want, got)
	got.Spec.PullSecrets[0] = "changed"
	if list.Spec.PullSecrets[0] != "reg" {
		t.Error("NewChild shares the list job's template")
	}
}

func TestTemplateHash(t *testing.T) {
	a := newListJob("x").Spec.ImagePullJobTemplate
	b := *a.DeepCopy()
	if TemplateHash(&a) != TemplateHash(&b) {
		t.Error("equal templates hash differently")
	}
	b.Parallelism = ptr.To(intstrFromInt(2))
	if TemplateHash(&a) == TemplateHash(&b) {
		t.Error("different templates hash the same")
	}
}

func TestListJobStatus(t *testing.T) {
	list := newListJob("a", "b", "c", "d")
	st := func(c *v1alpha1.ImagePullJob, s v1alpha1.ImagePullJobStatus) *v1alpha1.ImagePullJob {
		c.Status = s
		return c
	}
	running := []*v1alpha1.ImagePullJob{
		st(child(list, "ja", "a", "h", 0), v1alpha1.ImagePullJobStatus{StartTime: atp(0), Desired: 2, Succeeded: 2}),
		st(child(list, "jb", "b", "h", 0), v1alpha1.ImagePullJobStatus{StartTime: atp(0), Desired: 3, Succeeded: 1, Failed: 1, Active: 1}),
		st(child(list, "jc", "c", "h", 0), v1alpha1.ImagePullJobStatus{StartTime: atp(0), Desired: 2, Succeeded: 1, Failed: 1}),
		child(list, "jd", "d", "h", 0), // not started: not counted
	}
	failed := func(names ...string) []v1alpha1.FailedImageStatus {
		var out []v1alpha1.FailedImageStatus
		for _, n := range names {
			out = append(out, v1alpha1.FailedImageStatus{ImagePullJob: "j" + n, Name: n,
				Message: "Please check for details which nodes failed by 'kubectl get ImagePullJob j" + n + "'."})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		list     *v1alpha1.ImageListPullJob
		children []*v1alpha1.ImagePullJob
		want     v1alpha1.ImageListPullJobStatus
	}{
		{name: "running", list: list, children: running,
			want: v1alpha1.ImageListPullJobStatus{StartTime: atp(9), Desired: 4, Active: 1, Completed: 2, Succeeded: 1, FailedImageStatuses: failed("b", "c")}},
		{name: "always: one image still pulling", list: newListJob("a", "b", "c"), children: running[:3],
			want: v1alpha1.ImageListPullJobStatus{StartTime: atp(9), Desired: 3, Active: 1, Completed: 2, Succeeded: 1, FailedImageStatuses: failed("b", "c")}},
		{name: "always: completes", list: newListJob("a", "c"), children: []*v1alpha1.ImagePullJob{running[0], running[2]},
			want: v1alpha1.ImageListPullJobStatus{StartTime: atp(9), CompletionTime: atp(9), Desired: 2, Completed: 2, Succeeded: 1, FailedImageStatuses: failed("c")}},
		{name: "completed is final",
			list: func() *v1alpha1.ImageListPullJob {
				l := newListJob("a")
				l.Status = v1alpha1.ImageListPullJobStatus{StartTime: atp(0), CompletionTime: atp(1), Desired: 1, Completed: 1}
				return l
			}(), children: running,
			want: v1alpha1.ImageListPullJobStatus{StartTime: atp(0), CompletionTime: atp(1), Desired: 1, Completed: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkEqual(t, "status", tc.want, ListJobStatus(tc.list, tc.children, at(9)))
		})
	}
	never := newListJob("a")
	never.Spec.CompletionPolicy.Type = v1alpha1.Never
	never.Status.StartTime = atp(2)
	got := ListJobStatus(never, running[:1], at(9))
	checkEqual(t, "never", v1alpha1.ImageListPullJobStatus{StartTime: atp(2), Desired: 1, Completed: 1, Succeeded: 1}, got)
}
