package predownload

import (
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/workload/history"
)

// template is the test workload's Pod template: containers name=image, in order.
func template(containers ...string) *corev1.PodTemplateSpec {
	t := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "x"}},
		Spec:       corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}},
	}
	for _, c := range containers {
		name, image, _ := strings.Cut(c, "=")
		t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: name, Image: image})
	}
	return t
}

// revision is a revision of the workload "web" named web-<hash> storing the template.
func revision(t *testing.T, hash string, tmpl *corev1.PodTemplateSpec, labels ...string) *appsv1.ControllerRevision {
	t.Helper()
	data, err := history.TemplateData(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	r := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-" + hash, Namespace: "ns", Labels: map[string]string{"app": "web"}},
		Data: runtime.RawExtension{Raw: data}}
	for _, l := range labels {
		r.Labels[l] = "true"
	}
	return r
}

func owner(annotations map[string]string) *v1alpha1.CloneSet {
	return &v1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "web-uid", Annotations: annotations}}
}

// rollout is a rollout of 5 Pods in place, partition 4, from main=app:v1 to main=app:v2.
func rollout(t *testing.T) Rollout {
	cs := owner(nil)
	newT := template("main=app:v2")
	return Rollout{
		Owner:          cs,
		OwnerRef:       *metav1.NewControllerRef(cs, v1alpha1.SchemeGroupVersion.WithKind("CloneSet")),
		Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template:       newT,
		InPlace:        true,
		Replicas:       5,
		Partition:      4,
		MaxUnavailable: 1,
		UpdatedReady:   1,
		Current:        revision(t, "old", template("main=app:v1")),
		Update:         revision(t, "new", newT),
	}
}

func job(name, hash string) *v1alpha1.ImagePullJob {
	return &v1alpha1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
		Labels: map[string]string{RevisionHashLabel: hash}}}
}

func names(jobs []*v1alpha1.ImagePullJob) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.Name)
	}
	return out
}

// The job of one changed image, field by field, as OpenKruise builds it.
func TestDecideJob(t *testing.T) {
	r := rollout(t)
	r.Owner = owner(map[string]string{v1alpha1.ImagePreDownloadParallelismKey: "2", v1alpha1.ImagePreDownloadTimeoutSecondsKey: "60"})
	plan, err := Decide(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Create) != 1 || plan.Mark != v1alpha1.ImagePreDownloadCreatedKey || len(plan.Delete) != 0 || len(plan.Problems) != 0 {
		t.Fatalf("plan %+v: want one job to create and the revision marked created", plan)
	}
	labels := map[string]string{"app": "web", RevisionHashLabel: "new"}
	want := &v1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Name: "web-new-main", Namespace: "ns", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{r.OwnerRef}},
		Spec: v1alpha1.ImagePullJobSpec{Image: "app:v2", ImagePullJobTemplate: v1alpha1.ImagePullJobTemplate{
			PullSecrets: []string{"regcred"},
			PodSelector: &v1alpha1.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{
				MatchLabels: map[string]string{"app": "web"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "controller-revision-hash",
					Operator: metav1.LabelSelectorOpNotIn, Values: []string{"web-new", "new"}}},
			}},
			Parallelism:      ptr.To(intstr.FromInt32(2)),
			PullPolicy:       &v1alpha1.PullPolicy{BackoffLimit: ptr.To[int32](1), TimeoutSeconds: ptr.To[int32](60)},
			CompletionPolicy: v1alpha1.CompletionPolicy{Type: v1alpha1.Always, TTLSecondsAfterFinished: ptr.To[int32](600)},
			SandboxConfig:    &v1alpha1.SandboxConfig{Labels: labels, Annotations: map[string]string{"note": "x"}},
		}},
	}
	if got := plan.Create[0]; !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("job\n%+v\nwant\n%+v", got, want)
	}
	if r.Selector.MatchExpressions != nil {
		t.Error("the workload's selector was changed")
	}
}

// decideCase is one row of TestDecide and TestDecideDaemonSet: a change to the base rollout, the
// jobs that exist, and the plan Decide must make of them.
type decideCase struct {
	name    string
	change  func(*Rollout)
	jobs    []*v1alpha1.ImagePullJob
	create  []string // names
	images  []string // of the jobs to create
	deleted []string
	mark    string
	why     string // in Plan.Why
}

// decide applies tc's change to base's rollout, runs Decide, checks the jobs to create and
// delete, the mark and the reason against tc, and returns the plan for the caller's own checks.
func decide(t *testing.T, base func(*testing.T) Rollout, tc decideCase) Plan {
	t.Helper()
	r := base(t)
	if tc.change != nil {
		tc.change(&r)
	}
	plan, err := Decide(r, tc.jobs)
	if err != nil {
		t.Fatal(err)
	}
	var images []string
	for _, j := range plan.Create {
		images = append(images, j.Spec.Image)
	}
	if got := names(plan.Create); !slices.Equal(got, tc.create) || !slices.Equal(images, tc.images) {
		t.Errorf("create %v %v, want %v %v", got, images, tc.create, tc.images)
	}
	if got := names(plan.Delete); !slices.Equal(got, tc.deleted) {
		t.Errorf("delete %v, want %v", got, tc.deleted)
	}
	if plan.Mark != tc.mark {
		t.Errorf("mark %q, want %q", plan.Mark, tc.mark)
	}
	if !strings.Contains(plan.Why, tc.why) {
		t.Errorf("why %q, want it to say %q", plan.Why, tc.why)
	}
	return plan
}

func TestDecide(t *testing.T) {
	for _, tc := range []decideCase{
		{name: "image changed", create: []string{"web-new-main"}, images: []string{"app:v2"}, mark: v1alpha1.ImagePreDownloadCreatedKey},
		{name: "two images changed, one kept", change: func(r *Rollout) {
			r.Current = revision(t, "old", template("main=app:v1", "side=log:v1", "keep=k:1"))
			r.Update = revision(t, "new", template("main=app:v2", "side=log:v2", "keep=k:1"))
		}, create: []string{"web-new-main", "web-new-side"}, images: []string{"app:v2", "log:v2"},
			mark: v1alpha1.ImagePreDownloadCreatedKey},
		{name: "a container added cannot go in place", change: func(r *Rollout) {
			r.Update = revision(t, "new", template("main=app:v2", "extra=e:1"))
		}, mark: v1alpha1.ImagePreDownloadIgnoredKey, why: "cannot go in place"},
		{name: "only metadata changed: nothing to pull, decided", change: func(r *Rollout) {
			tmpl := template("main=app:v1")
			tmpl.Labels["v"] = "2"
			r.Update = revision(t, "new", tmpl)
		}, mark: v1alpha1.ImagePreDownloadCreatedKey},
		{name: "job exists already (cache)", jobs: []*v1alpha1.ImagePullJob{job("web-new-main", "new")},
			mark: v1alpha1.ImagePreDownloadCreatedKey},
		{name: "revision marked created", change: func(r *Rollout) {
			r.Update = revision(t, "new", template("main=app:v2"), v1alpha1.ImagePreDownloadCreatedKey)
		}, why: "labelled " + v1alpha1.ImagePreDownloadCreatedKey},
		{name: "revision marked ignored", change: func(r *Rollout) {
			r.Update = revision(t, "new", template("main=app:v2"), v1alpha1.ImagePreDownloadIgnoredKey)
		}, why: "labelled " + v1alpha1.ImagePreDownloadIgnoredKey},
		{name: "ReCreate", change: func(r *Rollout) { r.InPlace = false },
			mark: v1alpha1.ImagePreDownloadIgnoredKey, why: "recreates"},
		{name: "3 replicas", change: func(r *Rollout) { r.Replicas, r.Partition = 3, 2 },
			mark: v1alpha1.ImagePreDownloadIgnoredKey, why: "3 replicas"},
		{name: "all at once", change: func(r *Rollout) { r.Partition, r.MaxUnavailable = 0, 5 },
			mark: v1alpha1.ImagePreDownloadIgnoredKey, why: "at once"},
		{name: "partition 0, maxUnavailable below replicas", change: func(r *Rollout) { r.Partition, r.MaxUnavailable = 0, 4 },
			create: []string{"web-new-main"}, images: []string{"app:v2"}, mark: v1alpha1.ImagePreDownloadCreatedKey},
		{name: "cannot go in place", change: func(r *Rollout) {
			tmpl := template("main=app:v2")
			tmpl.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
			r.Update = revision(t, "new", tmpl)
		}, mark: v1alpha1.ImagePreDownloadIgnoredKey, why: "cannot go in place"},
		{name: "min updated ready not reached", change: func(r *Rollout) {
			r.Owner = owner(map[string]string{v1alpha1.ImagePreDownloadMinUpdatedReadyPods: "2"})
		}, why: "waiting for 2"},
		{name: "min updated ready reached", change: func(r *Rollout) {
			r.Owner = owner(map[string]string{v1alpha1.ImagePreDownloadMinUpdatedReadyPods: "2"})
			r.UpdatedReady = 2
		}, create: []string{"web-new-main"}, images: []string{"app:v2"}, mark: v1alpha1.ImagePreDownloadCreatedKey},
		{name: "min updated ready as a percentage rounds up", change: func(r *Rollout) {
			r.Owner = owner(map[string]string{v1alpha1.ImagePreDownloadMinUpdatedReadyPods: "30%"}) // 1.5 of 5
			r.UpdatedReady = 1
		}, why: "waiting for 2"},
		{name: "the gate comes before the skip decision: nothing marked yet", change: func(r *Rollout) {
			r.Owner = owner(map[string]string{v1alpha1.ImagePreDownloadMinUpdatedReadyPods: "2"})
			r.InPlace = false
		}, why: "waiting for 2"},
		{name: "rollout complete: every job deleted", change: func(r *Rollout) { r.Current = r.Update },
			jobs:    []*v1alpha1.ImagePullJob{job("web-new-main", "new"), job("web-older-main", "older")},
			deleted: []string{"web-new-main", "web-older-main"}},
		{name: "rollout complete: a job being deleted is left alone", change: func(r *Rollout) { r.Current = r.Update },
			jobs: func() []*v1alpha1.ImagePullJob {
				j := job("web-new-main", "new")
				j.DeletionTimestamp = ptr.To(metav1.Now())
				return []*v1alpha1.ImagePullJob{j}
			}()},
		{name: "a newer revision replaces the jobs of the older one", change: func(r *Rollout) {
			r.Update = revision(t, "new", template("main=app:v2"), v1alpha1.ImagePreDownloadCreatedKey)
		}, jobs: []*v1alpha1.ImagePullJob{job("web-new-main", "new"), job("web-mid-main", "mid")},
			deleted: []string{"web-mid-main"}, why: "labelled"},
		{name: "revision hash from kube's label (an OpenKruise revision)", change: func(r *Rollout) {
			r.Update.Labels[RevisionHashLabel] = "h4sh"
		}, jobs: []*v1alpha1.ImagePullJob{job("web-new-main", "h4sh"), job("web-old-main", "old")},
			deleted: []string{"web-old-main"}, mark: v1alpha1.ImagePreDownloadCreatedKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if plan := decide(t, rollout, tc); len(plan.Problems) != 0 {
				t.Errorf("problems %q", plan.Problems)
			}
		})
	}
}

// daemonSetRollout is an Advanced DaemonSet on 2 nodes moving from main=app:v1 to main=app:v2,
// maxUnavailable 1, as OpenKruise's DaemonSet counts it.
func daemonSetRollout(t *testing.T) Rollout {
	ds := &v1alpha1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "web-uid"}}
	newT := template("main=app:v2")
	return Rollout{
		Owner:          ds,
		OwnerRef:       *metav1.NewControllerRef(ds, v1alpha1.SchemeGroupVersion.WithKind("DaemonSet")),
		Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template:       newT,
		DaemonSet:      true,
		Replicas:       2,
		MaxUnavailable: 1,
		Old:            []*appsv1.ControllerRevision{revision(t, "old", template("main=app:v1"))},
		Update:         revision(t, "new", newT),
	}
}

// A DaemonSet follows OpenKruise's DaemonSet rules, not the CloneSet's.
func TestDecideDaemonSet(t *testing.T) {
	for _, tc := range []decideCase{
		{name: "image changed on 2 nodes (a CloneSet needs more than 3 Pods)",
			create: []string{"web-new-main"}, images: []string{"app:v2"}, mark: v1alpha1.ImagePreDownloadCreatedKey},
		{name: "a change that cannot go in place is pre-downloaded too", change: func(r *Rollout) {
			tmpl := template("main=app:v2", "extra=e:1")
			tmpl.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
			r.Update = revision(t, "new", tmpl)
		}, create: []string{"web-new-extra", "web-new-main"}, images: []string{"e:1", "app:v2"}, mark: v1alpha1.ImagePreDownloadCreatedKey},
		{name: "min updated ready is not waited for", change: func(r *Rollout) {
			r.Owner.SetAnnotations(map[string]string{v1alpha1.ImagePreDownloadMinUpdatedReadyPods: "2"})
		}, create: []string{"web-new-main"}, images: []string{"app:v2"}, mark: v1alpha1.ImagePreDownloadCreatedKey},
		{name: "all nodes at once", change: func(r *Rollout) { r.MaxUnavailable = 2 },
			mark: v1alpha1.ImagePreDownloadIgnoredKey, why: "at once"},
		{name: "all at once but for a partition", change: func(r *Rollout) { r.MaxUnavailable, r.Partition = 2, 1 },
			create: []string{"web-new-main"}, images: []string{"app:v2"}, mark: v1alpha1.ImagePreDownloadCreatedKey},
		{name: "no nodes yet (a new DaemonSet's status)", change: func(r *Rollout) { r.Replicas, r.MaxUnavailable = 0, 0 },
			mark: v1alpha1.ImagePreDownloadIgnoredKey, why: "at once"},
		{name: "compared with every older revision", change: func(r *Rollout) {
			r.Update = revision(t, "new", template("main=app:v2", "side=log:v1", "keep=k:1"))
			r.Old = append(r.Old, revision(t, "older", template("main=app:v2", "side=log:v0", "keep=k:1")))
			r.Old[0] = revision(t, "old", template("main=app:v1", "side=log:v1", "keep=k:1"))
		}, create: []string{"web-new-main", "web-new-side"}, images: []string{"app:v2", "log:v1"}, mark: v1alpha1.ImagePreDownloadCreatedKey},
		{name: "not done while Current is Update", change: func(r *Rollout) { r.Current = r.Update },
			create: []string{"web-new-main"}, images: []string{"app:v2"}, mark: v1alpha1.ImagePreDownloadCreatedKey},
		{name: "done: every job deleted", change: func(r *Rollout) { r.Done = true },
			jobs: []*v1alpha1.ImagePullJob{job("web-new-main", "new")}, deleted: []string{"web-new-main"}, why: "no rollout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := decide(t, daemonSetRollout, tc)
			for _, j := range plan.Create {
				if ref := metav1.GetControllerOf(j); ref == nil || ref.Kind != "DaemonSet" || ref.UID != "web-uid" {
					t.Errorf("job %s controller %+v, want the DaemonSet", j.Name, ref)
				}
			}
		})
	}
}

// Annotations that cannot be read fall back to OpenKruise's defaults and each is a problem to
// report; none stops the jobs.
func TestDecideBadAnnotations(t *testing.T) {
	for _, tc := range []struct {
		annotations map[string]string
		parallelism int32
		timeout     int32
		problems    []string // keys named by the problems
	}{
		{annotations: map[string]string{v1alpha1.ImagePreDownloadParallelismKey: "3"}, parallelism: 3, timeout: 300},
		{annotations: map[string]string{v1alpha1.ImagePreDownloadParallelismKey: " 0 "}, parallelism: 0, timeout: 300},
		{annotations: map[string]string{v1alpha1.ImagePreDownloadParallelismKey: "50%"}, parallelism: 1, timeout: 300,
			problems: []string{v1alpha1.ImagePreDownloadParallelismKey}},
		{annotations: map[string]string{v1alpha1.ImagePreDownloadParallelismKey: "-1"}, parallelism: 1, timeout: 300,
			problems: []string{v1alpha1.ImagePreDownloadParallelismKey}},
		{annotations: map[string]string{v1alpha1.ImagePreDownloadParallelismKey: "two"}, parallelism: 1, timeout: 300,
			problems: []string{v1alpha1.ImagePreDownloadParallelismKey}},
		{annotations: map[string]string{v1alpha1.ImagePreDownloadTimeoutSecondsKey: "0"}, parallelism: 1, timeout: 300,
			problems: []string{v1alpha1.ImagePreDownloadTimeoutSecondsKey}},
		{annotations: map[string]string{v1alpha1.ImagePreDownloadTimeoutSecondsKey: "99999999999"}, parallelism: 1, timeout: 300,
			problems: []string{v1alpha1.ImagePreDownloadTimeoutSecondsKey}},
		{annotations: map[string]string{v1alpha1.ImagePreDownloadMinUpdatedReadyPods: "lots"}, parallelism: 1, timeout: 300,
			problems: []string{v1alpha1.ImagePreDownloadMinUpdatedReadyPods}},
		{annotations: map[string]string{v1alpha1.ImagePreDownloadMinUpdatedReadyPods: "-2"}, parallelism: 1, timeout: 300,
			problems: []string{v1alpha1.ImagePreDownloadMinUpdatedReadyPods}},
		{annotations: map[string]string{v1alpha1.ImagePreDownloadParallelismKey: "x", v1alpha1.ImagePreDownloadTimeoutSecondsKey: "y"},
			parallelism: 1, timeout: 300, problems: []string{v1alpha1.ImagePreDownloadParallelismKey, v1alpha1.ImagePreDownloadTimeoutSecondsKey}},
	} {
		t.Run(strings.Join(slices.Sorted(maps.Values(tc.annotations)), ","), func(t *testing.T) {
			r := rollout(t)
			r.Owner = owner(tc.annotations)
			plan, err := Decide(r, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Create) != 1 {
				t.Fatalf("plan %+v: want one job", plan)
			}
			j := plan.Create[0]
			if got := j.Spec.Parallelism; got == nil || got.IntValue() != int(tc.parallelism) {
				t.Errorf("parallelism %v, want %d", got, tc.parallelism)
			}
			if got := *j.Spec.PullPolicy.TimeoutSeconds; got != tc.timeout {
				t.Errorf("timeout %d, want %d", got, tc.timeout)
			}
			if len(plan.Problems) != len(tc.problems) {
				t.Fatalf("problems %q, want one about each of %v", plan.Problems, tc.problems)
			}
			for i, key := range tc.problems {
				if !strings.Contains(plan.Problems[i], key) {
					t.Errorf("problem %q does not name %s", plan.Problems[i], key)
				}
			}
		})
	}
}

// Images are compared by container name, whatever the order; a new container's image counts.
func TestChangedImages(t *testing.T) {
	got := ChangedImages(template("a=x:1", "b=y:1", "c=z:1"), template("c=z:1", "b=y:2", "d=w:1"))
	want := map[string]string{"b": "y:2", "d": "w:1"}
	if !maps.Equal(got, want) {
		t.Errorf("ChangedImages = %v, want %v", got, want)
	}
}

func TestMinUpdatedReady(t *testing.T) {
	for _, tc := range []struct {
		value    string
		replicas int
		want     int
		problem  bool
	}{
		{"", 10, 0, true},
		{"0", 10, 0, false},
		{"3", 10, 3, false},
		{"50%", 5, 3, false},
		{"100%", 4, 4, false},
		{"1.5", 4, 0, true},
	} {
		got, problem := MinUpdatedReady(map[string]string{v1alpha1.ImagePreDownloadMinUpdatedReadyPods: tc.value}, tc.replicas)
		if got != tc.want || (problem != "") != tc.problem {
			t.Errorf("%q of %d: %d (problem %q), want %d (problem %v)", tc.value, tc.replicas, got, problem, tc.want, tc.problem)
		}
	}
	if got, problem := MinUpdatedReady(nil, 5); got != 0 || problem != "" {
		t.Errorf("without the annotation: %d %q, want 0", got, problem)
	}
}

func TestRevisionHash(t *testing.T) {
	long := strings.Repeat("a", 300)
	for _, tc := range []struct {
		owner string
		rev   *appsv1.ControllerRevision
		want  string
	}{
		{"web", &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-5d4f8"}}, "5d4f8"},
		{"web", &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-5d4f8", Labels: map[string]string{RevisionHashLabel: "77"}}}, "77"},
		{long, &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: history.RevisionName(long, "9c")}}, "9c"},
	} {
		if got := RevisionHash(tc.owner, tc.rev); got != tc.want {
			t.Errorf("RevisionHash(%.10s, %s) = %q, want %q", tc.owner, tc.rev.Name, got, tc.want)
		}
	}
}
