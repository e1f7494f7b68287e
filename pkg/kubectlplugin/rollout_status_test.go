package kubectlplugin

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
)

func TestRolloutStatus(t *testing.T) {
	for _, tc := range []struct {
		name    string
		w       *Workload
		stuck   []string
		want    string
		done    bool
		wantErr string
	}{
		{name: "cloneset done", w: newWorkload(Ref{CloneSet, "s"}, cloneSet("s")), want: `cloneset "s" successfully rolled out`, done: true},
		{name: "cloneset spec not observed", w: newWorkload(Ref{CloneSet, "s"}, cloneSet("s", func(c *v1alpha1.CloneSet) { c.Generation = 2 })),
			want: "Waiting for cloneset spec update to be observed..."},
		{name: "cloneset updating", w: newWorkload(Ref{CloneSet, "s"}, cloneSet("s", func(c *v1alpha1.CloneSet) { c.Status.UpdatedReplicas = 1 })),
			want: `Waiting for cloneset "s" rollout to finish: 1 out of 3 new replicas have been updated...`},
		{name: "cloneset updating, paused", w: newWorkload(Ref{CloneSet, "s"}, cloneSet("s", func(c *v1alpha1.CloneSet) {
			c.Status.UpdatedReplicas = 1
			c.Spec.UpdateStrategy.Paused = true
		})), want: "1 out of 3 new replicas have been updated... (paused: kubectl inplace rollout resume clone/s)"},
		{name: "cloneset surge pending termination", w: newWorkload(Ref{CloneSet, "s"}, cloneSet("s", func(c *v1alpha1.CloneSet) { c.Status.Replicas = 4 })),
			want: `Waiting for cloneset "s" rollout to finish: 1 old replicas are pending termination...`},
		{name: "cloneset updated not ready", w: newWorkload(Ref{CloneSet, "s"}, cloneSet("s", func(c *v1alpha1.CloneSet) { c.Status.UpdatedReadyReplicas = 2 })),
			want: `Waiting for cloneset "s" rollout to finish: 2 of 3 updated replicas are ready...`},
		{name: "cloneset partition reached", w: newWorkload(Ref{CloneSet, "s"}, cloneSet("s", func(c *v1alpha1.CloneSet) {
			c.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(2))
			c.Status.ExpectedUpdatedReplicas, c.Status.UpdatedReplicas, c.Status.UpdatedReadyReplicas = 1, 1, 1
		})), want: "partitioned roll out complete: 1 new pods have been updated...", done: true},
		{name: "cloneset partition not reached", w: newWorkload(Ref{CloneSet, "s"}, cloneSet("s", func(c *v1alpha1.CloneSet) {
			c.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("50%"))
			c.Status.ExpectedUpdatedReplicas, c.Status.UpdatedReplicas, c.Status.UpdatedReadyReplicas = 2, 1, 1
		})), want: "1 out of 2 new replicas have been updated"},
		{name: "cloneset InPlaceOnly stuck", w: newWorkload(Ref{CloneSet, "s"}, cloneSet("s", func(c *v1alpha1.CloneSet) {
			c.Status.UpdatedReplicas = 0
			c.Status.Conditions = []v1alpha1.CloneSetCondition{{Type: v1alpha1.CloneSetConditionFailedUpdate, Status: corev1.ConditionTrue,
				Reason: "CannotUpdateInPlace", Message: "updateStrategy.type is InPlaceOnly and the change cannot be made in place: pod s-1: spec.containers[0].ports changed"}}
		})), wantErr: `cloneset "s" rollout is stuck: updateStrategy.type is InPlaceOnly`},
		{name: "cloneset stuck condition of an older generation is not judged", w: newWorkload(Ref{CloneSet, "s"}, cloneSet("s", func(c *v1alpha1.CloneSet) {
			c.Generation = 2
			c.Status.Conditions = []v1alpha1.CloneSetCondition{{Type: v1alpha1.CloneSetConditionFailedUpdate, Status: corev1.ConditionTrue, Reason: "CannotUpdateInPlace"}}
		})), want: "Waiting for cloneset spec update to be observed..."},
		{name: "cloneset update failed (not InPlaceOnly) keeps waiting", w: newWorkload(Ref{CloneSet, "s"}, cloneSet("s", func(c *v1alpha1.CloneSet) {
			c.Status.UpdatedReplicas = 2
			c.Status.Conditions = []v1alpha1.CloneSetCondition{{Type: v1alpha1.CloneSetConditionFailedUpdate, Status: corev1.ConditionTrue, Reason: "UpdateFailed"}}
		})), want: "2 out of 3 new replicas have been updated"},
		{name: "cloneset progress deadline", w: newWorkload(Ref{CloneSet, "s"}, cloneSet("s", func(c *v1alpha1.CloneSet) {
			c.Status.UpdatedReplicas = 1
			c.Status.Conditions = []v1alpha1.CloneSetCondition{{Type: v1alpha1.CloneSetConditionTypeProgressing, Status: corev1.ConditionFalse,
				Reason: string(v1alpha1.CloneSetProgressDeadlineExceeded)}}
		})), wantErr: `cloneset "s" exceeded its progress deadline`},

		{name: "asts done", w: newWorkload(Ref{StatefulSet, "db"}, statefulSet("db")),
			want: "statefulset rolling update complete 3 pods at revision db-2...", done: true},
		{name: "asts updating", w: newWorkload(Ref{StatefulSet, "db"}, statefulSet("db", func(s *v1beta1.StatefulSet) { s.Status.UpdatedReplicas = 1 })),
			want: `Waiting for statefulset "db" rollout to finish: 1 out of 3 new pods have been updated...`},
		{name: "asts updated not ready", w: newWorkload(Ref{StatefulSet, "db"}, statefulSet("db", func(s *v1beta1.StatefulSet) { s.Status.UpdatedReadyReplicas = 2 })),
			want: `Waiting for statefulset "db" rollout to finish: 2 of 3 updated pods are ready...`},
		{name: "asts partition", w: newWorkload(Ref{StatefulSet, "db"}, statefulSet("db", func(s *v1beta1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](2)
			s.Status.UpdatedReplicas, s.Status.UpdatedReadyReplicas = 0, 0
		})), want: "Waiting for partitioned roll out to finish: 0 out of 1 new pods have been updated..."},
		{name: "asts partition done", w: newWorkload(Ref{StatefulSet, "db"}, statefulSet("db", func(s *v1beta1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](2)
			s.Status.UpdatedReplicas, s.Status.UpdatedReadyReplicas = 1, 1
		})), want: "partitioned roll out complete: 1 new pods have been updated...", done: true},
		{name: "asts stuck", w: newWorkload(Ref{StatefulSet, "db"}, statefulSet("db", func(s *v1beta1.StatefulSet) { s.Status.UpdatedReplicas = 0 })),
			stuck:   []string{"pod db-2 cannot be updated in place to revision db-2 (podUpdatePolicy InPlaceOnly): x", "pod db-1 ..."},
			wantErr: `statefulset "db" rollout is stuck: pod db-2 cannot be updated in place to revision db-2 (podUpdatePolicy InPlaceOnly): x (and 1 more)`},
		{name: "asts OnDelete", w: newWorkload(Ref{StatefulSet, "db"}, statefulSet("db", func(s *v1beta1.StatefulSet) { s.Spec.UpdateStrategy.Type = "OnDelete" })),
			wantErr: "only available for RollingUpdate"},

		{name: "ads done", w: newWorkload(Ref{DaemonSet, "agent"}, daemonSet("agent")), want: `daemon set "agent" successfully rolled out`, done: true},
		{name: "ads updating", w: newWorkload(Ref{DaemonSet, "agent"}, daemonSet("agent", func(d *v1alpha1.DaemonSet) { d.Status.UpdatedNumberScheduled = 1 })),
			want: `Waiting for daemon set "agent" rollout to finish: 1 out of 2 new pods have been updated...`},
		{name: "ads not available", w: newWorkload(Ref{DaemonSet, "agent"}, daemonSet("agent", func(d *v1alpha1.DaemonSet) { d.Status.NumberAvailable = 1 })),
			want: `Waiting for daemon set "agent" rollout to finish: 1 of 2 updated pods are available...`},
		{name: "ads spec not observed", w: newWorkload(Ref{DaemonSet, "agent"}, daemonSet("agent", func(d *v1alpha1.DaemonSet) { d.Status.ObservedGeneration = 0 })),
			want: "Waiting for daemon set spec update to be observed..."},
		{name: "ads partition", w: newWorkload(Ref{DaemonSet, "agent"}, daemonSet("agent", func(d *v1alpha1.DaemonSet) {
			d.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(1))
			d.Status.UpdatedNumberScheduled = 1
		})), want: "partitioned roll out complete: 1 new pods have been updated...", done: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, done, err := RolloutStatus(tc.w, tc.stuck)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %q, %v, %v; want error containing %q", msg, done, err, tc.wantErr)
				}
				return
			}
			if err != nil || done != tc.done || !strings.Contains(msg, tc.want) || !strings.HasSuffix(msg, "\n") {
				t.Fatalf("got %q, done %v, %v; want %q, done %v", msg, done, err, tc.want, tc.done)
			}
		})
	}
}

// TestRolloutStatusWatch: the command prints each new status as the workload changes and ends
// once the rollout is done.
func TestRolloutStatusWatch(t *testing.T) {
	cs := cloneSet("s", func(c *v1alpha1.CloneSet) { c.Status.UpdatedReplicas, c.Status.UpdatedReadyReplicas = 0, 0 })
	f, kruise, _ := newFakeFactory([]runtime.Object{cs})
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	o := &StatusOptions{Watch: true, Timeout: 10 * time.Second, PollInterval: time.Hour, streams: streams}
	if err := o.Complete(f, []string{"clone/s"}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	errc := make(chan error, 1)
	go func() { errc <- o.Run(ctx) }()
	// The steps of a rollout, each written once the previous one was printed.
	steps := []func(*v1alpha1.CloneSet){
		func(c *v1alpha1.CloneSet) { c.Status.UpdatedReplicas = 3 },
		func(c *v1alpha1.CloneSet) { c.Status.UpdatedReadyReplicas = 3 },
	}
	for i, step := range steps {
		waitFor(t, func() bool { return strings.Count(out.String(), "\n") == i+1 })
		cur, err := kruise.AppsV1alpha1().CloneSets("default").Get(ctx, "s", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		step(cur)
		if _, err := kruise.AppsV1alpha1().CloneSets("default").UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v\n%s", err, out)
	}
	want := `Waiting for cloneset "s" rollout to finish: 0 out of 3 new replicas have been updated...
Waiting for cloneset "s" rollout to finish: 0 of 3 updated replicas are ready...
cloneset "s" successfully rolled out
`
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
}

func TestRolloutStatusTimeout(t *testing.T) {
	cs := cloneSet("s", func(c *v1alpha1.CloneSet) { c.Status.UpdatedReplicas = 1 })
	f, _, _ := newFakeFactory([]runtime.Object{cs})
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	o := &StatusOptions{Watch: true, Timeout: 300 * time.Millisecond, PollInterval: 50 * time.Millisecond, streams: streams}
	if err := o.Complete(f, []string{"clone/s"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := o.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "timed out after 300ms waiting for the rollout of cloneset.apps.kruise.io/s to finish: Waiting for") {
		t.Fatalf("Run = %v; want a timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run took %s", d)
	}
	if strings.Count(out.String(), "\n") != 1 {
		t.Errorf("the same status printed more than once:\n%s", out)
	}
}

// TestRolloutStatusStuckStatefulSet: the CannotUpdateInPlace events of the update revision end the
// watch with an error; those of another revision or another object do not count.
func TestRolloutStatusStuckStatefulSet(t *testing.T) {
	sts := statefulSet("db", func(s *v1beta1.StatefulSet) { s.Status.UpdatedReplicas = 2 })
	event := func(name, uid, message string) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: "StatefulSet", Name: "db", Namespace: "default", UID: types.UID(uid)},
			Reason:         "CannotUpdateInPlace", Message: message, Type: corev1.EventTypeWarning,
		}
	}
	old := event("e1", "uid-db", "pod db-0 cannot be updated in place to revision db-1 (podUpdatePolicy InPlaceOnly): old")
	other := event("e2", "uid-other", "pod db-0 cannot be updated in place to revision db-2 (podUpdatePolicy InPlaceOnly): other object")
	f, _, kube := newFakeFactory([]runtime.Object{sts}, old, other)
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	o := &StatusOptions{Watch: true, Timeout: 5 * time.Second, PollInterval: 20 * time.Millisecond, streams: streams}
	if err := o.Complete(f, []string{"asts/db"}); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- o.Run(context.Background()) }()
	time.Sleep(100 * time.Millisecond)
	if _, err := kube.CoreV1().Events("default").Create(context.Background(),
		event("e3", "uid-db", "pod db-0 cannot be updated in place to revision db-2 (podUpdatePolicy InPlaceOnly): spec.containers[0].ports changed"),
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := <-errc
	if err == nil || !strings.Contains(err.Error(), `statefulset "db" rollout is stuck: pod db-0 cannot be updated in place to revision db-2`) ||
		strings.Contains(err.Error(), "more") {
		t.Fatalf("Run = %v; want stuck on e3 alone", err)
	}
}

func TestRolloutStatusNoWatch(t *testing.T) {
	f, _, _ := newFakeFactory([]runtime.Object{daemonSet("agent", func(d *v1alpha1.DaemonSet) { d.Status.UpdatedNumberScheduled = 1 })})
	out, _, err := run(t, f, "rollout", "status", "ads/agent", "--watch=false")
	if err != nil || out != "Waiting for daemon set \"agent\" rollout to finish: 1 out of 2 new pods have been updated...\n" {
		t.Fatalf("got %q, %v", out, err)
	}
	if _, _, err := run(t, f, "rollout", "status", "ads/missing"); err == nil {
		t.Fatalf("a missing workload: no error")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
