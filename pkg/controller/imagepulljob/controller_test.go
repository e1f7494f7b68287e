package imagepulljob

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/controllertest"
)

type fixture struct {
	controllertest.Fakes
	jobIdx cache.Indexer
	c      *Controller
}

// newFixture builds the controller on fake clients; objects go to both the clients and the
// informer caches (the informers are never started).
func newFixture(t *testing.T, nodes []*corev1.Node, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{Fakes: controllertest.NewFakes(controllertest.RuntimeObjects(nodes), objs...)}
	apps := f.InplaceInformers.Apps().V1alpha1()
	core := f.KubeInformers.Core().V1()
	c, err := New(f.Inplace, apps.ImagePullJobs(), apps.NodeImages(), core.Nodes(), core.Pods(), f.Recorder, f.Clock)
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	f.jobIdx = apps.ImagePullJobs().Informer().GetIndexer()
	for _, n := range nodes {
		controllertest.Add(t, core.Nodes().Informer().GetIndexer(), n)
	}
	f.reload(t)
	return f
}

// reload replaces the caches of jobs and NodeImages with what the client holds, as the informers
// would.
func (f *fixture) reload(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	nis, err := f.Inplace.AppsV1alpha1().NodeImages().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := f.Inplace.AppsV1alpha1().ImagePullJobs("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.Replace(t, f.c.niIndex, nis.Items)
	controllertest.Replace(t, f.jobIdx, jobs.Items)
}

func (f *fixture) sync(t *testing.T, job *v1alpha1.ImagePullJob) time.Duration {
	t.Helper()
	requeue := controllertest.Sync(t, f.c.sync, cache.MetaObjectToName(job))
	f.reload(t)
	return requeue
}

func (f *fixture) job(t *testing.T, job *v1alpha1.ImagePullJob) (*v1alpha1.ImagePullJob, bool) {
	t.Helper()
	got, err := f.Inplace.AppsV1alpha1().ImagePullJobs(job.Namespace).Get(context.Background(), job.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return got, true
}

func (f *fixture) nodeImage(t *testing.T, name string) *v1alpha1.NodeImage {
	t.Helper()
	ni, err := f.Inplace.AppsV1alpha1().NodeImages().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ni
}

// tags are the tags the NodeImage of node asks for, and their owners' UIDs.
func (f *fixture) tags(t *testing.T, node string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for name, image := range f.nodeImage(t, node).Spec.Images {
		for _, tag := range image.Tags {
			for _, r := range tag.OwnerReferences {
				out[name+":"+tag.Tag] = append(out[name+":"+tag.Tag], string(r.UID))
			}
		}
	}
	return out
}

// report plays the node's daemon: every tag of its NodeImage reported with phase.
func (f *fixture) report(t *testing.T, node string, phase v1alpha1.ImagePullPhase) {
	t.Helper()
	ni := f.nodeImage(t, node)
	done := metav1.NewTime(f.Clock.Now())
	ni.Status.ImageStatuses = map[string]v1alpha1.ImageStatus{}
	for name, image := range ni.Spec.Images {
		var tags []v1alpha1.ImageTagStatus
		for _, tag := range image.Tags {
			tags = append(tags, v1alpha1.ImageTagStatus{Tag: tag.Tag, Version: tag.Version, Phase: phase, CompletionTime: &done})
		}
		ni.Status.ImageStatuses[name] = v1alpha1.ImageStatus{Tags: tags}
	}
	if _, err := f.Inplace.AppsV1alpha1().NodeImages().UpdateStatus(context.Background(), ni, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.reload(t)
}

func node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func nodeImage(name string) *v1alpha1.NodeImage {
	return &v1alpha1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("ni-" + name)}}
}

func pullJob() *v1alpha1.ImagePullJob {
	return &v1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Name: "warm", Namespace: "ns", UID: "job-uid"},
		Spec: v1alpha1.ImagePullJobSpec{Image: "nginx:1.25", ImagePullJobTemplate: v1alpha1.ImagePullJobTemplate{
			CompletionPolicy: v1alpha1.CompletionPolicy{Type: v1alpha1.Always, TTLSecondsAfterFinished: ptr.To[int32](60)},
		}},
	}
}

// TestJobOverTwoNodes follows a job with parallelism 1 over two nodes from start to deletion.
func TestJobOverTwoNodes(t *testing.T) {
	job := pullJob()
	f := newFixture(t, []*corev1.Node{node("node-a"), node("node-b"), node("no-nodeimage")},
		job, nodeImage("node-a"), nodeImage("node-b"))

	// One node at a time, in name order.
	f.sync(t, job)
	if got := f.tags(t, "node-a"); len(got["nginx:1.25"]) != 1 || got["nginx:1.25"][0] != "job-uid" {
		t.Fatalf("node-a tags = %v, want nginx:1.25 owned by the job", got)
	}
	if got := f.tags(t, "node-b"); len(got) != 0 {
		t.Fatalf("node-b tags = %v, want none yet (parallelism 1)", got)
	}
	got, _ := f.job(t, job)
	if got.Status.Desired != 2 || got.Status.StartTime == nil {
		t.Errorf("status = %+v, want desired 2 (nodes with a NodeImage) and a start time", got.Status)
	}
	if ev := f.Events(); !strings.Contains(ev, "Normal "+ReasonPullStarted) || !strings.Contains(ev, "node-a") {
		t.Errorf("events = %q, want %s on node-a", ev, ReasonPullStarted)
	}

	// node-a pulling: no room for node-b.
	f.sync(t, job)
	if got := f.tags(t, "node-b"); len(got) != 0 {
		t.Fatalf("node-b tags = %v while node-a pulls, want none (parallelism 1)", got)
	}
	if got, _ := f.job(t, job); got.Status.Active != 1 {
		t.Errorf("active = %d, want 1", got.Status.Active)
	}
	// Nothing changed: nothing is written, the status least of all.
	f.Inplace.ClearActions()
	f.sync(t, job)
	for _, a := range f.Inplace.Actions() {
		if a.GetVerb() == "update" {
			t.Errorf("unchanged job synced with a write: %v", a)
		}
	}

	// node-a done: node-b starts.
	f.report(t, "node-a", v1alpha1.ImagePhaseSucceeded)
	f.sync(t, job)
	if got := f.tags(t, "node-b"); len(got["nginx:1.25"]) != 1 {
		t.Fatalf("node-b tags = %v, want the job's tag once node-a succeeded", got)
	}
	if got, _ := f.job(t, job); got.Status.Succeeded != 1 || got.Status.CompletionTime != nil {
		t.Errorf("status = %+v, want 1 succeeded, not completed", got.Status)
	}

	// node-b done: the job completes and waits for its TTL.
	f.report(t, "node-b", v1alpha1.ImagePhaseSucceeded)
	requeue := f.sync(t, job)
	got, _ = f.job(t, job)
	if got.Status.Succeeded != 2 || got.Status.CompletionTime == nil {
		t.Fatalf("status = %+v, want 2 succeeded and completed", got.Status)
	}
	if requeue != 60*time.Second {
		t.Errorf("requeue = %v, want the 60s TTL", requeue)
	}
	if ev := f.Events(); !strings.Contains(ev, "Normal "+ReasonCompleted) {
		t.Errorf("events = %q, want %s", ev, ReasonCompleted)
	}
	// A completed job's status is final and not written again.
	f.Inplace.ClearActions()
	f.sync(t, job)
	for _, a := range f.Inplace.Actions() {
		if a.GetVerb() == "update" {
			t.Errorf("completed job synced with a write: %v", a)
		}
	}

	// TTL passed: the job deletes itself, then its tags leave the NodeImages.
	f.Clock.Step(60 * time.Second)
	f.sync(t, job)
	if _, ok := f.job(t, job); ok {
		t.Fatal("job not deleted after its TTL")
	}
	if ev := f.Events(); !strings.Contains(ev, "Normal "+ReasonTTLExpired) {
		t.Errorf("events = %q, want %s", ev, ReasonTTLExpired)
	}
	f.sync(t, job)
	for _, n := range []string{"node-a", "node-b"} {
		if got := f.tags(t, n); len(got) != 0 {
			t.Errorf("%s tags = %v after the job was deleted, want none", n, got)
		}
	}
}

// TestStaleCacheDoesNotExceedParallelism: until the cache shows the tag the job wrote, the job
// starts no other node.
func TestStaleCacheDoesNotExceedParallelism(t *testing.T) {
	job := pullJob()
	f := newFixture(t, []*corev1.Node{node("node-a"), node("node-b")}, job, nodeImage("node-a"), nodeImage("node-b"))
	if _, err := f.c.sync(context.Background(), cache.MetaObjectToName(job)); err != nil {
		t.Fatal(err)
	}
	// No reload: the NodeImage cache still shows node-a without the tag. The job must wait for
	// it, not write node-a again (a conflict against the server) or start another node.
	f.Inplace.ClearActions()
	if _, err := f.c.sync(context.Background(), cache.MetaObjectToName(job)); err != nil {
		t.Fatal(err)
	}
	for _, a := range f.Inplace.Actions() {
		if a.GetVerb() == "update" && a.GetResource().Resource == "nodeimages" {
			t.Errorf("NodeImage written from a stale cache: %v", a)
		}
	}
	if got := f.tags(t, "node-b"); len(got) != 0 {
		t.Errorf("node-b tags = %v: a stale cache made the job exceed its parallelism", got)
	}
}

// TestDeadlineFailsTheRest: at activeDeadlineSeconds the nodes not done count as failed.
func TestDeadlineFailsTheRest(t *testing.T) {
	job := pullJob()
	job.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](30)
	f := newFixture(t, []*corev1.Node{node("node-a"), node("node-b")}, job, nodeImage("node-a"), nodeImage("node-b"))
	if requeue := f.sync(t, job); requeue != 30*time.Second {
		t.Errorf("requeue = %v, want the 30s deadline", requeue)
	}
	f.report(t, "node-a", v1alpha1.ImagePhaseFailed)
	f.Clock.Step(30 * time.Second)
	f.sync(t, job)
	got, _ := f.job(t, job)
	if got.Status.CompletionTime == nil || got.Status.Failed != 2 {
		t.Errorf("status = %+v, want completed with 2 failed", got.Status)
	}
	if ev := f.Events(); !strings.Contains(ev, "Warning "+ReasonDeadlineExceeded) {
		t.Errorf("events = %q, want %s", ev, ReasonDeadlineExceeded)
	}
}

// TestEventsMapToJobs: a NodeImage's change reaches the jobs owning its tags, a Pod's the running
// jobs of its namespace whose podSelector matches it.
func TestEventsMapToJobs(t *testing.T) {
	owned := pullJob()
	selecting := pullJob()
	selecting.Name, selecting.UID = "by-pods", "job-uid-2"
	selecting.Spec.PodSelector = &v1alpha1.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
	f := newFixture(t, nil, owned, selecting)
	drain := func() []string {
		var keys []string
		for f.c.queue.Len() > 0 {
			k, _ := f.c.queue.Get()
			f.c.queue.Done(k)
			keys = append(keys, k.String())
		}
		return keys
	}

	ni := nodeImage("node-a")
	ni.Spec.Images = map[string]v1alpha1.ImageSpec{"nginx": {Tags: []v1alpha1.ImageTagSpec{{Tag: "1.25",
		OwnerReferences: []corev1.ObjectReference{{Kind: "ImagePullJob", Namespace: "ns", Name: "warm", UID: "job-uid"}}}}}}
	updated := ni.DeepCopy()
	updated.Status.Succeeded = 1
	f.c.enqueueOwners(updated)
	if got := drain(); len(got) != 1 || got[0] != "ns/warm" {
		t.Errorf("NodeImage update enqueued %v, want [ns/warm]", got)
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	changed := func(change func(*corev1.Pod)) *corev1.Pod {
		p := pod.DeepCopy()
		change(p)
		return p
	}
	bySelector := []string{"ns/by-pods"}
	for _, tc := range []struct {
		what     string
		old, new *corev1.Pod
		want     []string
	}{
		{"Pod added", nil, pod, bySelector},
		// A label the selector does not look at: the job targets the node through the Pod either way.
		{"a label change that keeps the Pod selected", pod,
			changed(func(p *corev1.Pod) { p.Labels["lifecycle.apps.kruise.io/state"] = "Updating" }), nil},
		{"Pod on another node", pod, changed(func(p *corev1.Pod) { p.Spec.NodeName = "node-b" }), bySelector},
		{"Pod leaving the selector", pod, changed(func(p *corev1.Pod) { p.Labels["app"] = "db" }), bySelector},
		{"Pod deleted", pod, nil, bySelector},
		{"a Pod not placed yet", nil, changed(func(p *corev1.Pod) { p.Spec.NodeName = "" }), nil},
		{"Pod of another namespace", nil, changed(func(p *corev1.Pod) { p.Namespace = "other" }), nil},
	} {
		f.c.enqueuePodChange(tc.old, tc.new)
		if got := drain(); !slices.Equal(got, tc.want) {
			t.Errorf("%s enqueued %v, want %v", tc.what, got, tc.want)
		}
	}
}

// Only a Pod update that can change a job's target nodes looks the jobs up: labels, the node, or
// whether the Pod wants images; a status write does not.
func TestPodTargetChanged(t *testing.T) {
	base := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{NodeName: "n1"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	cases := map[string]struct {
		change func(*corev1.Pod)
		want   bool
	}{
		"a status write": {func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
			p.ResourceVersion = "2"
		}, false},
		"an annotation":   {func(p *corev1.Pod) { p.Annotations = map[string]string{"a": "b"} }, false},
		"a label":         {func(p *corev1.Pod) { p.Labels["controller-revision-hash"] = "r2" }, true},
		"the node":        {func(p *corev1.Pod) { p.Spec.NodeName = "n2" }, true},
		"deleting":        {func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }, true},
		"finished":        {func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, true},
		"pending running": {func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			updated := base.DeepCopy()
			tc.change(updated)
			if got := podTargetChanged(base, updated); got != tc.want {
				t.Errorf("podTargetChanged = %v, want %v", got, tc.want)
			}
		})
	}
}

// A job's podSelector is parsed once per version of the job: the same version is served from the
// cache, a new version is parsed again, and a deleted job is forgotten.
func TestPodSelectorsCache(t *testing.T) {
	var s podSelectors
	job := &v1alpha1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{UID: "u", ResourceVersion: "1"}}
	job.Spec.PodSelector = &v1alpha1.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}}
	matches := func(app string) bool {
		t.Helper()
		sel, err := s.get(job)
		if err != nil {
			t.Fatal(err)
		}
		return sel.Matches(labels.Set{"app": app})
	}
	if !matches("a") {
		t.Fatal("selector app=a does not match app=a")
	}
	// The same version (a cache never sees a changed object under the same resourceVersion): the
	// parsed selector is reused, so this in-place edit is not seen.
	job.Spec.PodSelector.MatchLabels["app"] = "b"
	if !matches("a") {
		t.Error("the selector was parsed again for the same resourceVersion")
	}
	job.ResourceVersion = "2"
	if !matches("b") || matches("a") {
		t.Error("a new resourceVersion did not parse the selector again")
	}
	s.forget(cache.DeletedFinalStateUnknown{Obj: job})
	if len(s.byUID) != 0 {
		t.Errorf("a deleted job's selector is still cached: %v", s.byUID)
	}
	bad := job.DeepCopy()
	bad.UID, bad.Spec.PodSelector.MatchLabels = "bad", map[string]string{"not a key!": "x"}
	if _, err := s.get(bad); err == nil {
		t.Error("an invalid selector parsed without an error")
	}
}

// A podSelector job targets the nodes of the Pods its whole selector picks in its namespace,
// whether the Pods are found through the label index (matchLabels) or by listing the namespace
// (matchExpressions only).
func TestPodSelectorTargets(t *testing.T) {
	nodes := []*corev1.Node{node("node-a"), node("node-b"), node("node-c")}
	f := newFixture(t, nodes, nodeImage("node-a"), nodeImage("node-b"), nodeImage("node-c"))
	pod := func(ns, name, nodeName string, lbls map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
			Spec: corev1.PodSpec{NodeName: nodeName}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	for _, p := range []*corev1.Pod{
		pod("ns", "web-1", "node-a", map[string]string{"app": "web", "tier": "front", "rev": "r1"}),
		pod("ns", "web-2", "node-b", map[string]string{"app": "web", "tier": "front", "rev": "r2"}),
		pod("ns", "db-1", "node-c", map[string]string{"app": "db", "tier": "front", "rev": "r1"}),
		pod("other", "web-3", "node-c", map[string]string{"app": "web", "tier": "front", "rev": "r1"}),
	} {
		if err := f.c.podIndex.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	notR2 := []metav1.LabelSelectorRequirement{{Key: "rev", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"r2"}}}
	cases := map[string]struct {
		selector   metav1.LabelSelector
		candidates int
		want       string
	}{
		"matchLabels and expressions": {metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front", "app": "web"}, MatchExpressions: notR2}, 2, "node-a"},
		"matchLabels only":            {metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, 2, "node-a,node-b"},
		"expressions only":            {metav1.LabelSelector{MatchExpressions: notR2}, 3, "node-a,node-c"},
		"no Pod has the label":        {metav1.LabelSelector{MatchLabels: map[string]string{"app": "cache"}}, 0, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := pullJob()
			job.Spec.PodSelector = &v1alpha1.ImagePullJobPodSelector{LabelSelector: tc.selector}
			candidates, err := f.c.candidatePods(job)
			if err != nil {
				t.Fatal(err)
			}
			if len(candidates) != tc.candidates {
				t.Errorf("%d candidate Pods, want %d", len(candidates), tc.candidates)
			}
			targets, err := f.c.targets(job)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, ni := range targets {
				names = append(names, ni.Name)
			}
			slices.Sort(names)
			if got := strings.Join(names, ","); got != tc.want {
				t.Errorf("targets %q, want %q", got, tc.want)
			}
		})
	}
}
