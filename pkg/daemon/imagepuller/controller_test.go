package imagepuller

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime/fakecri"
	inplacefake "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned/fake"
	inplaceinformers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions"
	"github.com/inplace-dev/inplace/pkg/util/informertest"
)

const (
	node = "node-1"
	reg  = "reg.example:5000"
)

// fixture runs the controller against a fake CRI, fake clientsets and a fake clock.
type fixture struct {
	t      *testing.T
	cri    *fakecri.Server
	rt     criruntime.Runtime
	client *inplacefake.Clientset
	clock  *clocktesting.FakeClock
	cancel context.CancelFunc
	done   chan struct{}
}

// tag is a tag of the spec: pullPolicy from the API defaults unless set.
func tag(name string, version int64, mutate ...func(*v1alpha1.ImageTagSpec)) v1alpha1.ImageTagSpec {
	t := v1alpha1.ImageTagSpec{Tag: name, Version: version, PullPolicy: &v1alpha1.ImageTagPullPolicy{
		TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](3), TTLSecondsAfterFinished: ptr.To[int32](300)}}
	for _, m := range mutate {
		m(&t)
	}
	return t
}

func backoffLimit(n int32) func(*v1alpha1.ImageTagSpec) {
	return func(t *v1alpha1.ImageTagSpec) { t.PullPolicy.BackoffLimit = ptr.To(n) }
}

func nodeImage(images map[string][]v1alpha1.ImageTagSpec) *v1alpha1.NodeImage {
	ni := &v1alpha1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: v1alpha1.NodeImageSpec{Images: map[string]v1alpha1.ImageSpec{}}}
	for name, tags := range images {
		ni.Spec.Images[name] = v1alpha1.ImageSpec{Tags: tags}
	}
	return ni
}

// newFixture is a fake runtime and clock; set them up, then run the controller.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	cri, rt := fakecri.Start(t)
	return &fixture{t: t, cri: cri, rt: rt, clock: clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		done: make(chan struct{})}
}

// run runs the controller with cfg (StatusInterval 1ms unless set) on a cluster holding ni and
// objs (Secrets).
func (f *fixture) run(ni *v1alpha1.NodeImage, cfg Config, objs ...runtime.Object) *fixture {
	t := f.t
	t.Helper()
	f.client = inplacefake.NewClientset(ni)
	kube := kubefake.NewClientset(objs...)
	f.client.PrependReactor("update", "nodeimages", statusOnly(f.client.Tracker()))
	informers := inplaceinformers.NewSharedInformerFactory(f.client, 0)
	cfg.NodeName = node
	cfg.Clock = f.clock
	if cfg.StatusInterval == 0 {
		cfg.StatusInterval = time.Millisecond
	}
	c, err := New(informers.Apps().V1alpha1().NodeImages(), f.client, kube, f.rt, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	watches := informertest.Track(f.client)
	informers.Start(ctx.Done())
	// A spec update through the fake before the informer watches would be lost.
	watches.WaitFor(t, "nodeimages", 1)
	go func() {
		defer close(f.done)
		c.Run(ctx, 1)
	}()
	t.Cleanup(f.stop)
	return f
}

// statusOnly makes an update of nodeimages/status change the status alone, as the API server's
// status subresource does (the fake tracker would store the whole object, spec included).
func statusOnly(tracker k8stesting.ObjectTracker) k8stesting.ReactionFunc {
	return func(action k8stesting.Action) (bool, runtime.Object, error) {
		u, ok := action.(k8stesting.UpdateAction)
		if !ok || u.GetSubresource() != "status" {
			return false, nil, nil
		}
		sent := u.GetObject().(*v1alpha1.NodeImage)
		obj, err := tracker.Get(u.GetResource(), "", sent.Name)
		if err != nil {
			return true, nil, err
		}
		stored := obj.(*v1alpha1.NodeImage).DeepCopy()
		stored.Status = sent.Status
		return true, stored, tracker.Update(u.GetResource(), stored, "")
	}
}

// stop ends the controller and waits for Run to return (every pull gone).
func (f *fixture) stop() {
	f.cancel()
	select {
	case <-f.done:
	case <-time.After(10 * time.Second):
		f.t.Fatal("Run did not return after its context ended")
	}
}

func (f *fixture) get() *v1alpha1.NodeImage {
	ni, err := f.client.AppsV1alpha1().NodeImages().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return ni
}

// waitFor polls until cond holds of the stored NodeImage, stepping the fake clock by step
// whenever something waits on it (step 0: never).
func (f *fixture) waitFor(what string, step time.Duration, cond func(*v1alpha1.NodeImage) bool) *v1alpha1.NodeImage {
	f.t.Helper()
	var last *v1alpha1.NodeImage
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		last = f.get()
		if cond(last) {
			return true, nil
		}
		if step > 0 && f.clock.HasWaiters() {
			f.clock.Step(step)
		}
		return false, nil
	})
	if err != nil {
		f.t.Fatalf("waiting for %s: %v; status %+v", what, err, last.Status)
	}
	return last
}

// updateSpec changes the stored NodeImage's spec.
func (f *fixture) updateSpec(mutate func(*v1alpha1.NodeImageSpec)) {
	f.t.Helper()
	ni := f.get()
	mutate(&ni.Spec)
	if _, err := f.client.AppsV1alpha1().NodeImages().Update(context.Background(), ni, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) pullsOf(ref string) int {
	n := 0
	for _, p := range f.cri.Pulls() {
		if p.Ref == ref {
			n++
		}
	}
	return n
}

func tagOf(ni *v1alpha1.NodeImage, image, tag string) *v1alpha1.ImageTagStatus {
	return tagStatus(&ni.Status, tagKey{image, tag})
}

// phaseIs is a condition: the tag's status reports phase for version.
func phaseIs(image, tag string, version int64, phase v1alpha1.ImagePullPhase) func(*v1alpha1.NodeImage) bool {
	return func(ni *v1alpha1.NodeImage) bool {
		s := tagOf(ni, image, tag)
		return s != nil && s.Version == version && s.Phase == phase
	}
}

// TestPullOncePerVersion: a tag is pulled once per version; its status has the version, phase,
// progress, times and image id, and the counts; a new version pulls again.
func TestPullOncePerVersion(t *testing.T) {
	app := reg + "/app"
	f := newFixture(t)
	f.cri.AddRemoteImage(app+":v1", "sha256:1111")
	f.cri.AddRemoteImage(app+":v2", "sha256:2222")
	f.run(nodeImage(map[string][]v1alpha1.ImageTagSpec{app: {tag("v1", 1)}}), Config{})

	ni := f.waitFor("v1 pulled", 0, phaseIs(app, "v1", 1, v1alpha1.ImagePhaseSucceeded))
	s := tagOf(ni, app, "v1")
	if s.Progress != 100 || s.ImageID != app+"@sha256:1111" || s.StartTime == nil || s.CompletionTime == nil || s.Message != "" {
		t.Errorf("status of v1 %+v: want progress 100, image id %s@sha256:1111, start and completion times", s, app)
	}
	if st := ni.Status; st.Desired != 1 || st.Succeeded != 1 || st.Pulling+st.Waiting+st.Failed != 0 {
		t.Errorf("counts %+v, want desired 1 succeeded 1", st)
	}

	// Another tag, and syncs of every write: v1 is not pulled again.
	f.updateSpec(func(s *v1alpha1.NodeImageSpec) {
		img := s.Images[app]
		img.Tags = append(img.Tags, tag("v2", 1))
		s.Images[app] = img
	})
	f.waitFor("v2 pulled", 0, phaseIs(app, "v2", 1, v1alpha1.ImagePhaseSucceeded))
	if n := f.pullsOf(app + ":v1"); n != 1 {
		t.Errorf("v1 pulled %d times, want once", n)
	}

	// A new version of v1 (another job wants it): pulled again, whatever the node has.
	f.updateSpec(func(s *v1alpha1.NodeImageSpec) {
		s.Images[app].Tags[0].ImagePullPolicy = v1alpha1.PullAlways
		s.Images[app].Tags[0].Version = 2
	})
	ni = f.waitFor("v1 pulled for version 2", 0, phaseIs(app, "v1", 2, v1alpha1.ImagePhaseSucceeded))
	if n := f.pullsOf(app + ":v1"); n != 2 {
		t.Errorf("v1 pulled %d times, want twice (once per version)", n)
	}
	if st := ni.Status; st.Desired != 2 || st.Succeeded != 2 {
		t.Errorf("counts %+v, want desired 2 succeeded 2", st)
	}
}

// TestAlreadyPresent: an image the runtime has is Succeeded without a pull (IfNotPresent and
// the default); with imagePullPolicy Always it is pulled.
func TestAlreadyPresent(t *testing.T) {
	app := reg + "/app"
	f := newFixture(t)
	counts := pullCounts(t)
	for _, v := range []string{"v1", "v2", "v3"} {
		f.cri.AddImage(app+":"+v, "sha256:"+v)
		f.cri.AddRemoteImage(app+":"+v, "sha256:"+v)
	}
	f.run(nodeImage(map[string][]v1alpha1.ImageTagSpec{
		app: {tag("v1", 1), tag("v2", 1, func(t *v1alpha1.ImageTagSpec) { t.ImagePullPolicy = v1alpha1.PullIfNotPresent }),
			tag("v3", 1, func(t *v1alpha1.ImageTagSpec) { t.ImagePullPolicy = v1alpha1.PullAlways })},
	}), Config{})
	ni := f.waitFor("all succeeded", 0, func(ni *v1alpha1.NodeImage) bool { return ni.Status.Succeeded == 3 })
	for _, v := range []string{"v1", "v2"} {
		if n := f.pullsOf(app + ":" + v); n != 0 {
			t.Errorf("%s present and pulled %d times", v, n)
		}
		if s := tagOf(ni, app, v); s.ImageID != app+"@sha256:"+v || s.Progress != 100 {
			t.Errorf("%s status %+v: want the present image's id, progress 100", v, s)
		}
	}
	if n := f.pullsOf(app + ":v3"); n != 1 {
		t.Errorf("v3 (imagePullPolicy Always) pulled %d times, want once", n)
	}
	if got, want := counts(), map[string]float64{resultPresent: 2, resultSucceeded: 1}; !maps.Equal(got, want) {
		t.Errorf("pulls_total grew by %v, want %v", got, want)
	}
}

// pullCounts returns what pulls_total grew by since it was called, by result (the tests of this
// package run one at a time).
func pullCounts(t *testing.T) func() map[string]float64 {
	t.Helper()
	read := func() map[string]float64 {
		m := map[string]float64{}
		for _, r := range []string{resultSucceeded, resultPresent, resultFailed, resultCancelled} {
			v, err := testutil.GetCounterMetricValue(pulls.WithLabelValues(r))
			if err != nil {
				t.Fatal(err)
			}
			m[r] = v
		}
		return m
	}
	before := read()
	return func() map[string]float64 {
		grown := map[string]float64{}
		for r, v := range read() {
			if d := v - before[r]; d != 0 {
				grown[r] = d
			}
		}
		return grown
	}
}

// stamp records the fake clock's time of every pull.
type stamp struct {
	mu    sync.Mutex
	times []time.Time
}

func (s *stamp) add(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.times = append(s.times, t)
}

func (s *stamp) get() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.times...)
}

// TestBackoff: a missing tag is tried 1+backoffLimit times, 1s, 2s, 4s apart on the daemon's
// clock, then Failed with the runtime's error.
func TestBackoff(t *testing.T) {
	app := reg + "/app"
	f := newFixture(t)
	counts := pullCounts(t)
	var pulls stamp
	f.cri.SetPullHook(func(context.Context, fakecri.Pull) error { pulls.add(f.clock.Now()); return nil })
	f.run(nodeImage(map[string][]v1alpha1.ImageTagSpec{app: {tag("nope", 1, backoffLimit(3))}}), Config{})

	ni := f.waitFor("the pull failed", 10*time.Millisecond, phaseIs(app, "nope", 1, v1alpha1.ImagePhaseFailed))
	s := tagOf(ni, app, "nope")
	if !strings.Contains(s.Message, "not found") || !strings.Contains(s.Message, app+":nope") {
		t.Errorf("message %q: want the runtime's not found error", s.Message)
	}
	if ni.Status.Failed != 1 || ni.Status.Desired != 1 {
		t.Errorf("counts %+v, want desired 1 failed 1", ni.Status)
	}
	if got, want := counts(), map[string]float64{resultFailed: 1}; !maps.Equal(got, want) {
		t.Errorf("pulls_total grew by %v, want %v (one pull, whatever its attempts)", got, want)
	}
	times := pulls.get()
	if len(times) != 4 {
		t.Fatalf("%d pulls, want 4 (backoffLimit 3)", len(times))
	}
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		if gap := times[i+1].Sub(times[i]); gap < want || gap >= want+want/2 {
			t.Errorf("attempt %d came %s after the one before, want %s", i+2, gap, want)
		}
	}
}

// blocker is a pull hook that holds pulls of one reference until their context ends (or
// release is closed), and reports each cancellation.
type blocker struct {
	ref       string
	release   chan struct{}
	entered   chan string
	cancelled chan string
}

func newBlocker(ref string) *blocker {
	return &blocker{ref: ref, release: make(chan struct{}), entered: make(chan string, 100), cancelled: make(chan string, 100)}
}

// block makes the runtime hold every pull of ref until the blocker releases it.
func (f *fixture) block(ref string) *blocker {
	b := newBlocker(ref)
	f.cri.SetPullHook(b.hook)
	return b
}

// waitEntered waits until the runtime holds a pull of the reference.
func (b *blocker) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-b.entered:
	case <-time.After(10 * time.Second):
		t.Fatalf("the runtime got no pull of %s", b.ref)
	}
}

func (b *blocker) hook(ctx context.Context, p fakecri.Pull) error {
	if p.Ref != b.ref {
		return nil
	}
	b.entered <- p.Ref
	select {
	case <-ctx.Done():
		b.cancelled <- p.Ref
		return status.FromContextError(ctx.Err()).Err()
	case <-b.release:
		return nil
	}
}

func (b *blocker) waitCancelled(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-b.cancelled:
		case <-time.After(10 * time.Second):
			t.Fatalf("the runtime saw no cancellation of the pull of %s", b.ref)
		}
	}
}

// TestTimeout: an attempt that runs for timeoutSeconds (on the daemon's clock) is cancelled in
// the runtime and counts as failed; after 1+backoffLimit of them the tag is Failed.
func TestTimeout(t *testing.T) {
	app := reg + "/slow"
	f := newFixture(t)
	f.cri.AddRemoteImage(app+":v1", "sha256:1111")
	b := f.block(app + ":v1")
	f.run(nodeImage(map[string][]v1alpha1.ImageTagSpec{app: {tag("v1", 1, backoffLimit(1),
		func(t *v1alpha1.ImageTagSpec) { t.PullPolicy.TimeoutSeconds = ptr.To[int32](5) })}}), Config{})

	ni := f.waitFor("the pull timed out", 100*time.Millisecond, phaseIs(app, "v1", 1, v1alpha1.ImagePhaseFailed))
	if s := tagOf(ni, app, "v1"); !strings.Contains(s.Message, "timed out after 5s") {
		t.Errorf("message %q: want timed out after 5s", s.Message)
	}
	b.waitCancelled(t, 2)
	if n := f.pullsOf(app + ":v1"); n != 2 {
		t.Errorf("%d pulls, want 2 (backoffLimit 1)", n)
	}
}

// TestActiveDeadline: retries stop at activeDeadlineSeconds from the pull's start.
func TestActiveDeadline(t *testing.T) {
	app := reg + "/app"
	f := newFixture(t)
	f.run(nodeImage(map[string][]v1alpha1.ImageTagSpec{app: {tag("nope", 1, backoffLimit(10),
		func(t *v1alpha1.ImageTagSpec) { t.PullPolicy.ActiveDeadlineSeconds = ptr.To[int64](3) })}}), Config{})

	ni := f.waitFor("the pull failed", 10*time.Millisecond, phaseIs(app, "nope", 1, v1alpha1.ImagePhaseFailed))
	s := tagOf(ni, app, "nope")
	if !strings.Contains(s.Message, messageDeadlineExceeded) || !strings.Contains(s.Message, "not found") {
		t.Errorf("message %q: want %q and the last error", s.Message, messageDeadlineExceeded)
	}
	// At 0s, 1s; the next backoff (2s) ends at the deadline.
	if n := f.pullsOf(app + ":nope"); n != 2 {
		t.Errorf("%d pulls, want 2 within 3s", n)
	}
	if got := s.CompletionTime.Sub(s.StartTime.Time); got < 3*time.Second || got >= 4*time.Second {
		t.Errorf("failed %s after the start, want at the 3s deadline", got)
	}
}

// TestCancelOnRemoval: a pull whose tag leaves the spec is cancelled in the runtime and its
// status dropped.
func TestCancelOnRemoval(t *testing.T) {
	app := reg + "/slow"
	f := newFixture(t)
	f.cri.AddRemoteImage(reg+"/other:v1", "sha256:2222")
	b := f.block(app + ":v1")
	f.run(nodeImage(map[string][]v1alpha1.ImageTagSpec{app: {tag("v1", 1)}, reg + "/other": {tag("v1", 1)}}), Config{})

	f.waitFor("pulling", 0, phaseIs(app, "v1", 1, v1alpha1.ImagePhasePulling))
	b.waitEntered(t)
	f.updateSpec(func(s *v1alpha1.NodeImageSpec) { delete(s.Images, app) })
	b.waitCancelled(t, 1)
	ni := f.waitFor("the status without the tag", 0, func(ni *v1alpha1.NodeImage) bool {
		_, ok := ni.Status.ImageStatuses[app]
		return !ok && ni.Status.Desired == 1 && ni.Status.Succeeded == 1
	})
	if ni.Status.Pulling != 0 || ni.Status.Failed != 0 {
		t.Errorf("counts %+v after the removal", ni.Status)
	}
}

// TestStopCancelsPulls: when the daemon stops, its pulls are cancelled and Run returns.
func TestStopCancelsPulls(t *testing.T) {
	app := reg + "/slow"
	f := newFixture(t)
	b := f.block(app + ":v1")
	f.run(nodeImage(map[string][]v1alpha1.ImageTagSpec{app: {tag("v1", 1)}}), Config{})
	f.waitFor("pulling", 0, phaseIs(app, "v1", 1, v1alpha1.ImagePhasePulling))
	b.waitEntered(t)
	f.stop()
	b.waitCancelled(t, 1)
}

// TestCountsAndWorkerLimit: with two workers the third pull waits (Waiting) until one ends; the
// counts follow every phase.
func TestCountsAndWorkerLimit(t *testing.T) {
	app := reg + "/slow"
	f := newFixture(t)
	for _, v := range []string{"a", "b", "c"} {
		f.cri.AddRemoteImage(app+":"+v, "sha256:"+v)
	}
	release := make(chan struct{})
	f.cri.SetPullHook(func(ctx context.Context, p fakecri.Pull) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	f.run(nodeImage(map[string][]v1alpha1.ImageTagSpec{app: {tag("a", 1), tag("b", 1), tag("c", 1)}}), Config{MaxWorkers: 2})
	// The third waits as long as two pulls are held in the runtime.
	ni := f.waitFor("two pulling, one waiting", 0, func(ni *v1alpha1.NodeImage) bool {
		return ni.Status.Pulling == 2 && ni.Status.Waiting == 1 && len(f.cri.Pulls()) == 2
	})
	if ni.Status.Desired != 3 {
		t.Errorf("counts %+v: want desired 3", ni.Status)
	}
	close(release)
	f.waitFor("all succeeded", 0, func(ni *v1alpha1.NodeImage) bool { return ni.Status.Succeeded == 3 })

	// Every phase at once: present (Succeeded), missing (Failed), held (Pulling).
	f.block(app + ":held")
	f.cri.AddImage(reg+"/present:v1", "sha256:cccc")
	f.updateSpec(func(s *v1alpha1.NodeImageSpec) {
		*s = nodeImage(map[string][]v1alpha1.ImageTagSpec{
			reg + "/present": {tag("v1", 1)}, reg + "/missing": {tag("v1", 1, backoffLimit(0))}, app: {tag("held", 1)},
		}).Spec
	})
	ni = f.waitFor("one of each", 0, func(ni *v1alpha1.NodeImage) bool {
		st := ni.Status
		return st.Desired == 3 && st.Succeeded == 1 && st.Failed == 1 && st.Pulling == 1 && st.Waiting == 0
	})
	if len(ni.Status.ImageStatuses) != 3 {
		t.Errorf("image statuses %v, want the three of the spec only", ni.Status.ImageStatuses)
	}
}

// TestSecrets: the pull uses the credentials the NodeImage's Secret holds for the registry; a
// registry that refuses anonymous pulls fails without them, and so does a tag of the same image
// owned by a job of another namespace: a pull uses its owners' namespaces' Secrets only.
func TestSecrets(t *testing.T) {
	app := reg + "/private"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "pull"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths": {"` + reg + `": {"username": "robot", "password": "s3cret"}}}`)}}
	ownedIn := func(ns string) func(*v1alpha1.ImageTagSpec) {
		return func(t *v1alpha1.ImageTagSpec) {
			t.OwnerReferences = []corev1.ObjectReference{{Kind: "ImagePullJob", Namespace: ns, Name: "job", UID: types.UID(ns + "-job")}}
		}
	}
	ni := nodeImage(map[string][]v1alpha1.ImageTagSpec{
		app:             {tag("v1", 1, ownedIn("team")), tag("v2", 1, ownedIn("other"), backoffLimit(0))},
		reg + "/public": {tag("v1", 1, backoffLimit(0))},
	})
	img := ni.Spec.Images[app]
	img.PullSecrets = []v1alpha1.ReferenceObject{{Namespace: "team", Name: "pull"}, {Namespace: "team", Name: "missing"}}
	img.SandboxConfig = &v1alpha1.SandboxConfig{Labels: map[string]string{"job": "j1"}}
	ni.Spec.Images[app] = img
	f := newFixture(t)
	f.cri.AddRemoteImage(app+":v1", "sha256:1111")
	f.cri.AddRemoteImage(app+":v2", "sha256:3333")
	f.cri.AddRemoteImage(reg+"/public:v1", "sha256:2222")
	f.cri.SetPullHook(func(_ context.Context, p fakecri.Pull) error {
		if p.Auth.GetUsername() != "robot" || p.Auth.GetPassword() != "s3cret" {
			return status.Error(codes.Unauthenticated, "pull access denied")
		}
		return nil
	})
	f.run(ni, Config{}, secret)
	ni = f.waitFor("all done", 0, func(ni *v1alpha1.NodeImage) bool { return ni.Status.Succeeded+ni.Status.Failed == 3 })
	if s := tagOf(ni, app, "v1"); s.Phase != v1alpha1.ImagePhaseSucceeded {
		t.Errorf("private image: %+v, want Succeeded with the secret's credentials", s)
	}
	if s := tagOf(ni, app, "v2"); s.Phase != v1alpha1.ImagePhaseFailed || !strings.Contains(s.Message, "pull access denied") {
		t.Errorf("private image's tag of a job in another namespace: %+v, want Failed, pulled without team's secret", s)
	}
	if s := tagOf(ni, reg+"/public", "v1"); s.Phase != v1alpha1.ImagePhaseFailed || !strings.Contains(s.Message, "pull access denied") {
		t.Errorf("image without secrets: %+v, want Failed, pulled anonymously", s)
	}
	for _, p := range f.cri.Pulls() {
		if p.Ref == app+":v1" && p.SandboxLabels["job"] != "j1" {
			t.Errorf("pull %+v: want the NodeImage's sandbox labels", p)
		}
	}
}

// TestStatusBatched: pulls that change together are reported in few writes, not one per change.
func TestStatusBatched(t *testing.T) {
	tags := map[string][]v1alpha1.ImageTagSpec{}
	f0 := func(i int) string { return fmt.Sprintf("%s/app%d", reg, i) }
	for i := range 10 {
		tags[f0(i)] = []v1alpha1.ImageTagSpec{tag("v1", 1)}
	}
	f := newFixture(t)
	for i := range 10 {
		f.cri.AddImage(f0(i)+":v1", "sha256:1111")
	}
	f.run(nodeImage(tags), Config{StatusInterval: 300 * time.Millisecond})
	f.waitFor("all succeeded", 0, func(ni *v1alpha1.NodeImage) bool { return ni.Status.Succeeded == 10 })
	writes := 0
	for _, a := range f.client.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && u.GetSubresource() == "status" {
			writes++
		}
	}
	// Unbatched: 30 (Waiting, Pulling, Succeeded per tag).
	if writes > 4 {
		t.Errorf("%d status writes for 10 tags, want a few", writes)
	}
}
