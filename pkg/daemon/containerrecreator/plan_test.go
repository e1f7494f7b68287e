package containerrecreator

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

const (
	pending    = v1alpha1.ContainerRecreateRequestPending
	recreating = v1alpha1.ContainerRecreateRequestRecreating
	succeeded  = v1alpha1.ContainerRecreateRequestSucceeded
	failed     = v1alpha1.ContainerRecreateRequestFailed
)

// planCase builds a plan input: a request for app (app-0, restart 0) and sidecar (sidecar-0),
// a Pod whose status reports the given instances ready, and the runtime's containers.
type planCase struct {
	name       string
	strategy   v1alpha1.ContainerRecreateRequestStrategy
	noContext  bool
	states     []v1alpha1.ContainerRecreateRequestContainerRecreateState
	phase      v1alpha1.ContainerRecreateRequestPhase
	runtime    []criruntime.Container
	ready      []string // instances the kubelet reports ready
	terminated map[string]int32
	policy     corev1.RestartPolicy
	running    map[string]time.Duration // instance -> seen running for
	stopped    []string
	unready    *time.Duration // annotation seen this long ago

	wantPhase   v1alpha1.ContainerRecreateRequestPhase
	wantStates  []v1alpha1.ContainerRecreateRequestContainerRecreateState
	wantStops   []string
	wantAfter   time.Duration
	wantWaiting bool
}

func run(id, name string, attempt uint32) criruntime.Container {
	return criruntime.Container{ID: id, Name: name, Attempt: attempt, State: criruntime.StateRunning}
}

func exited(id, name string, attempt uint32) criruntime.Container {
	return criruntime.Container{ID: id, Name: name, Attempt: attempt, State: criruntime.StateExited}
}

func st(name string, phase v1alpha1.ContainerRecreateRequestPhase, killed bool, msg ...string) v1alpha1.ContainerRecreateRequestContainerRecreateState {
	s := v1alpha1.ContainerRecreateRequestContainerRecreateState{Name: name, Phase: phase, IsKilled: killed}
	if len(msg) > 0 {
		s.Message = msg[0]
	}
	return s
}

func (tc planCase) input() planInput {
	r := &v1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "r", UID: "uid-r"},
		Spec: v1alpha1.ContainerRecreateRequestSpec{PodName: "web-0", Strategy: &tc.strategy, Containers: []v1alpha1.ContainerRecreateRequestContainer{
			{Name: "app", StatusContext: &v1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://app-0"}},
			{Name: "sidecar", StatusContext: &v1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://sidecar-0"}},
		}},
		Status: v1alpha1.ContainerRecreateRequestStatus{Phase: tc.phase, ContainerRecreateStates: tc.states},
	}
	if tc.noContext {
		for i := range r.Spec.Containers {
			r.Spec.Containers[i].StatusContext = nil
		}
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: tc.policy}}
	if pod.Spec.RestartPolicy == "" {
		pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	for _, id := range tc.ready {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{ContainerID: "containerd://" + id, Ready: true})
	}
	for id, code := range tc.terminated {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{ContainerID: "containerd://" + id,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}})
	}
	containers := append([]criruntime.Container(nil), tc.runtime...)
	criruntime.SortNewestFirst(containers)
	in := planInput{crr: r, pod: pod, containers: containers, runtimeName: "containerd", now: t0,
		runningSince: map[string]time.Time{}, stopped: map[string]bool{}}
	for _, rc := range containers {
		if rc.State == criruntime.StateRunning {
			in.runningSince[rc.ID] = t0.Add(-tc.running[rc.ID])
		}
	}
	for _, id := range tc.stopped {
		in.stopped[id] = true
	}
	if tc.unready != nil {
		in.unreadySince = t0.Add(-*tc.unready)
	}
	return in
}

func TestPlan(t *testing.T) {
	originals := []criruntime.Container{run("app-0", "app", 0), run("sidecar-0", "sidecar", 0)}
	// after a stop of app-0: app-0 exited, app-1 runs.
	appBack := []criruntime.Container{exited("app-0", "app", 0), run("app-1", "app", 1), run("sidecar-0", "sidecar", 0)}
	bothBack := []criruntime.Container{exited("app-0", "app", 0), run("app-1", "app", 1), exited("sidecar-0", "sidecar", 0), run("sidecar-1", "sidecar", 1)}
	killed := []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", recreating, true), st("sidecar", recreating, true)}
	// appFirst: app is being stopped; sidecar waits for its turn.
	appFirst := []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", recreating, true), st("sidecar", pending, false)}
	d := func(d time.Duration) *time.Duration { return &d }

	for _, tc := range []planCase{
		{
			name: "unordered: one container at a time, the spec's first one first", runtime: originals, ready: []string{"app-0", "sidecar-0"},
			wantPhase: recreating, wantStates: appFirst, wantStops: []string{"app-0"}, wantWaiting: true,
		},
		{
			name:  "unordered: the next once the previous one stopped, not waiting for it to run again",
			phase: recreating, states: appFirst, stopped: []string{"app-0"},
			runtime: []criruntime.Container{exited("app-0", "app", 0), run("sidecar-0", "sidecar", 0)}, ready: []string{"sidecar-0"},
			wantPhase: recreating, wantStates: killed, wantStops: []string{"sidecar-0"}, wantWaiting: true,
		},
		{
			name:  "unordered: the next while the previous one runs again, not ready yet",
			phase: recreating, states: appFirst, stopped: []string{"app-0"},
			runtime: appBack, ready: []string{"sidecar-0"},
			wantPhase: recreating, wantStates: killed, wantStops: []string{"sidecar-0"}, wantWaiting: true,
		},
		{
			name: "ordered: the first container only", strategy: v1alpha1.ContainerRecreateRequestStrategy{OrderedRecreate: true},
			runtime: originals, ready: []string{"app-0", "sidecar-0"},
			wantPhase: recreating, wantStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", recreating, true), st("sidecar", pending, false)},
			wantStops: []string{"app-0"}, wantWaiting: true,
		},
		{
			name: "ordered: the second once the first is back and ready", strategy: v1alpha1.ContainerRecreateRequestStrategy{OrderedRecreate: true},
			phase: recreating, states: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", recreating, true), st("sidecar", pending, false)},
			runtime: appBack, ready: []string{"app-1", "sidecar-0"}, stopped: []string{"app-0"},
			wantPhase: recreating, wantStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", succeeded, true), st("sidecar", recreating, true)},
			wantStops: []string{"sidecar-0"}, wantWaiting: true,
		},
		{
			name: "ordered: not while the first is back but not ready", strategy: v1alpha1.ContainerRecreateRequestStrategy{OrderedRecreate: true},
			phase: recreating, states: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", recreating, true), st("sidecar", pending, false)},
			runtime: appBack, ready: []string{"sidecar-0"}, stopped: []string{"app-0"},
			wantPhase: recreating, wantStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", recreating, true), st("sidecar", pending, false)},
			wantWaiting: true,
		},
		{
			name:  "stopped containers back and ready: succeeded, killed by this daemon",
			phase: recreating, states: killed, runtime: bothBack, ready: []string{"app-1", "sidecar-1"}, stopped: []string{"app-0", "sidecar-0"},
			wantPhase: recreating, wantStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", succeeded, true), st("sidecar", succeeded, true)},
		},
		{
			name:  "a stopped instance still running (grace period): not stopped again",
			phase: recreating, states: killed, runtime: originals, ready: []string{"app-0", "sidecar-0"}, stopped: []string{"app-0", "sidecar-0"},
			wantPhase: recreating, wantStates: killed, wantWaiting: true,
		},
		{
			name:    "coalesced: instances replaced before the daemon got there succeed without a stop",
			runtime: []criruntime.Container{run("app-1", "app", 1), run("sidecar-7", "sidecar", 0)}, ready: []string{"app-1", "sidecar-7"},
			wantPhase: recreating, wantStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", succeeded, false), st("sidecar", succeeded, false)},
		},
		{
			name:    "coalesced but the new instance not ready yet: waiting",
			runtime: []criruntime.Container{run("app-1", "app", 1), run("sidecar-0", "sidecar", 0)}, ready: []string{"sidecar-0"},
			wantPhase: recreating, wantStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", recreating, false), st("sidecar", recreating, true)},
			wantStops: []string{"sidecar-0"}, wantWaiting: true,
		},
		{
			name:  "restarted daemon (no memory): a replaced instance is never stopped again",
			phase: recreating, states: killed, runtime: bothBack, ready: []string{"app-1"},
			wantPhase: recreating, wantStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", succeeded, true), st("sidecar", recreating, true)},
			wantWaiting: true,
		},
		{
			name:  "restarted daemon: intent written, instance named by the request still runs: stopped",
			phase: recreating, states: appFirst, runtime: originals, ready: []string{"app-0", "sidecar-0"},
			wantPhase: recreating, wantStates: appFirst, wantStops: []string{"app-0"}, wantWaiting: true,
		},
		{
			name: "forceRecreate: a replaced instance is stopped once", strategy: v1alpha1.ContainerRecreateRequestStrategy{ForceRecreate: true},
			runtime: []criruntime.Container{exited("app-0", "app", 0), run("app-1", "app", 1), run("sidecar-0", "sidecar", 0)}, ready: []string{"app-1", "sidecar-0"},
			wantPhase: recreating, wantStates: appFirst, wantStops: []string{"app-1"}, wantWaiting: true,
		},
		{
			name: "forceRecreate: once killed, the next instance counts", strategy: v1alpha1.ContainerRecreateRequestStrategy{ForceRecreate: true},
			phase: recreating, states: killed, stopped: []string{"app-1", "sidecar-0"},
			runtime:   []criruntime.Container{exited("app-0", "app", 0), exited("app-1", "app", 1), run("app-2", "app", 2), run("sidecar-1", "sidecar", 1)},
			ready:     []string{"app-2", "sidecar-1"},
			wantPhase: recreating, wantStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", succeeded, true), st("sidecar", succeeded, true)},
		},
		{
			name: "forceRecreate: a stopped instance not replaced yet is waited for", strategy: v1alpha1.ContainerRecreateRequestStrategy{ForceRecreate: true},
			phase: recreating, states: killed, stopped: []string{"app-1", "sidecar-0"},
			runtime:   []criruntime.Container{exited("app-0", "app", 0), exited("app-1", "app", 1), exited("sidecar-0", "sidecar", 0)},
			wantPhase: recreating, wantStates: killed, wantWaiting: true,
		},
		{
			name: "forceRecreate: a container not running is stopped once it runs", strategy: v1alpha1.ContainerRecreateRequestStrategy{ForceRecreate: true},
			runtime: []criruntime.Container{exited("app-0", "app", 0), run("sidecar-0", "sidecar", 0)}, ready: []string{"sidecar-0"},
			wantPhase: recreating, wantStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", pending, false), st("sidecar", recreating, true)},
			wantStops: []string{"sidecar-0"}, wantWaiting: true,
		},
		{
			name: "no statusContext: stopped once, like forceRecreate", noContext: true, runtime: originals, ready: []string{"app-0", "sidecar-0"},
			wantPhase: recreating, wantStates: appFirst, wantStops: []string{"app-0"}, wantWaiting: true,
		},
		{
			name: "minStartedSeconds: not yet", strategy: v1alpha1.ContainerRecreateRequestStrategy{MinStartedSeconds: 5},
			phase: recreating, states: killed, runtime: bothBack, ready: []string{"app-1", "sidecar-1"}, stopped: []string{"app-0", "sidecar-0"},
			running:   map[string]time.Duration{"app-1": 3 * time.Second, "sidecar-1": 4 * time.Second},
			wantPhase: recreating, wantStates: killed, wantAfter: time.Second,
		},
		{
			name: "minStartedSeconds: passed for one", strategy: v1alpha1.ContainerRecreateRequestStrategy{MinStartedSeconds: 5},
			phase: recreating, states: killed, runtime: bothBack, ready: []string{"app-1", "sidecar-1"}, stopped: []string{"app-0", "sidecar-0"},
			running:   map[string]time.Duration{"app-1": 5 * time.Second, "sidecar-1": 1 * time.Second},
			wantPhase: recreating, wantStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", succeeded, true), st("sidecar", recreating, true)},
			wantAfter: 4 * time.Second,
		},
		{
			name: "unreadyGracePeriodSeconds: waits for the annotation", strategy: v1alpha1.ContainerRecreateRequestStrategy{UnreadyGracePeriodSeconds: ptr.To[int64](3)},
			runtime: originals, ready: []string{"app-0", "sidecar-0"},
			wantPhase: pending, wantStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", pending, false, msgWaitUnready), st("sidecar", pending, false, msgWaitUnready)},
		},
		{
			name: "unreadyGracePeriodSeconds: then for the grace period", strategy: v1alpha1.ContainerRecreateRequestStrategy{UnreadyGracePeriodSeconds: ptr.To[int64](3)},
			runtime: originals, ready: []string{"app-0", "sidecar-0"}, unready: d(time.Second),
			wantPhase: pending, wantStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", pending, false, msgWaitUnreadyGrace), st("sidecar", pending, false, msgWaitUnreadyGrace)},
			wantAfter: 2 * time.Second,
		},
		{
			name: "unreadyGracePeriodSeconds: passed", strategy: v1alpha1.ContainerRecreateRequestStrategy{UnreadyGracePeriodSeconds: ptr.To[int64](3)},
			runtime: originals, ready: []string{"app-0", "sidecar-0"}, unready: d(3 * time.Second),
			wantPhase: recreating, wantStates: appFirst, wantStops: []string{"app-0"}, wantWaiting: true,
		},
		{
			name: "unreadyGracePeriodSeconds: nothing to stop, nothing to wait for", strategy: v1alpha1.ContainerRecreateRequestStrategy{UnreadyGracePeriodSeconds: ptr.To[int64](3)},
			runtime: []criruntime.Container{run("app-1", "app", 1), run("sidecar-1", "sidecar", 1)}, ready: []string{"app-1", "sidecar-1"},
			wantPhase: recreating, wantStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", succeeded, false), st("sidecar", succeeded, false)},
		},
		{
			name:     "unreadyGracePeriodSeconds: waited once per request (ordered, second container)",
			strategy: v1alpha1.ContainerRecreateRequestStrategy{OrderedRecreate: true, UnreadyGracePeriodSeconds: ptr.To[int64](3)},
			phase:    recreating, states: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", succeeded, true), st("sidecar", pending, false)},
			runtime: appBack, ready: []string{"app-1", "sidecar-0"},
			wantPhase: recreating, wantStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", succeeded, true), st("sidecar", recreating, true)},
			wantStops: []string{"sidecar-0"}, wantWaiting: true,
		},
		{
			name:  "failurePolicy Fail: no further stop after a failure",
			phase: recreating, states: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", failed, false, "x"), st("sidecar", pending, false)},
			runtime: originals, ready: []string{"app-0", "sidecar-0"},
			wantPhase: recreating, wantStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", failed, false, "x"), st("sidecar", pending, false)},
		},
		{
			name: "failurePolicy Ignore: the others go on", strategy: v1alpha1.ContainerRecreateRequestStrategy{FailurePolicy: v1alpha1.ContainerRecreateRequestFailurePolicyIgnore},
			phase: recreating, states: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", failed, false, "x"), st("sidecar", pending, false)},
			runtime: originals, ready: []string{"app-0", "sidecar-0"},
			wantPhase: recreating, wantStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", failed, false, "x"), st("sidecar", recreating, true)},
			wantStops: []string{"sidecar-0"}, wantWaiting: true,
		},
		{
			name:     "failurePolicy Ignore, ordered: a failed container does not hold the next",
			strategy: v1alpha1.ContainerRecreateRequestStrategy{OrderedRecreate: true, FailurePolicy: v1alpha1.ContainerRecreateRequestFailurePolicyIgnore},
			phase:    recreating, states: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", failed, false, "x"), st("sidecar", pending, false)},
			runtime: originals, ready: []string{"app-0", "sidecar-0"},
			wantPhase: recreating, wantStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", failed, false, "x"), st("sidecar", recreating, true)},
			wantStops: []string{"sidecar-0"}, wantWaiting: true,
		},
		{
			name: "restartPolicy OnFailure, exit 0: failed", policy: corev1.RestartPolicyOnFailure,
			phase: recreating, states: killed, stopped: []string{"app-0", "sidecar-0"},
			runtime:    []criruntime.Container{exited("app-0", "app", 0), exited("sidecar-0", "sidecar", 0)},
			terminated: map[string]int32{"app-0": 0, "sidecar-0": 143},
			wantPhase:  recreating, wantStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{
				st("app", failed, true, "container exited with code 0 and the Pod's restartPolicy OnFailure does not start it again"),
				st("sidecar", recreating, true)},
			wantWaiting: true,
		},
		{
			name: "restartPolicy Never: not stopped", policy: corev1.RestartPolicyNever,
			strategy: v1alpha1.ContainerRecreateRequestStrategy{FailurePolicy: v1alpha1.ContainerRecreateRequestFailurePolicyIgnore},
			runtime:  originals, ready: []string{"app-0", "sidecar-0"},
			wantPhase: recreating, wantStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{
				st("app", failed, false, msgNeverRestarted), st("sidecar", failed, false, msgNeverRestarted)},
		},
		{
			name: "restartPolicy Never, exited: failed", policy: corev1.RestartPolicyNever,
			runtime: []criruntime.Container{exited("app-0", "app", 0), run("sidecar-1", "sidecar", 1)}, terminated: map[string]int32{"app-0": 1},
			ready:     []string{"sidecar-1"},
			wantPhase: recreating, wantStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{
				st("app", failed, false, "container exited with code 1 and the Pod's restartPolicy Never does not start it again"), st("sidecar", succeeded, false)},
		},
		{
			name:    "container unknown to the runtime: pending, retried",
			runtime: []criruntime.Container{run("sidecar-0", "sidecar", 0)}, ready: []string{"sidecar-0"},
			wantPhase: recreating, wantStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", pending, false, msgNotFound), st("sidecar", recreating, true)},
			wantStops: []string{"sidecar-0"}, wantWaiting: true,
		},
		{
			name:    "a crashed instance the kubelet starts again: waited for, not stopped",
			runtime: []criruntime.Container{exited("app-0", "app", 0), run("sidecar-0", "sidecar", 0)}, ready: []string{"sidecar-0"},
			terminated: map[string]int32{"app-0": 0},
			wantPhase:  recreating, wantStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", pending, false), st("sidecar", recreating, true)},
			wantStops: []string{"sidecar-0"}, wantWaiting: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.input()
			before := in.crr.DeepCopy()
			got := plan(in)
			if !reflect.DeepEqual(in.crr, before) {
				t.Error("plan modified the request")
			}
			if got.status.Phase != tc.wantPhase {
				t.Errorf("phase %q, want %q", got.status.Phase, tc.wantPhase)
			}
			if !reflect.DeepEqual(got.status.ContainerRecreateStates, tc.wantStates) {
				t.Errorf("states\n%+v\nwant\n%+v", got.status.ContainerRecreateStates, tc.wantStates)
			}
			var stops []string
			for _, s := range got.stops {
				stops = append(stops, s.id)
				if in.crr.Spec.Containers[s.index].Name != s.name {
					t.Errorf("stop %+v: index and name differ", s)
				}
			}
			if !reflect.DeepEqual(stops, tc.wantStops) {
				t.Errorf("stops %v, want %v", stops, tc.wantStops)
			}
			if got.after != tc.wantAfter || got.waiting != tc.wantWaiting {
				t.Errorf("after %v waiting %v, want %v %v", got.after, got.waiting, tc.wantAfter, tc.wantWaiting)
			}
		})
	}
}

func TestTrimRuntime(t *testing.T) {
	for in, want := range map[string]string{"containerd://abc": "abc", "abc": "abc", "cri-o://x://y": "x://y", "": ""} {
		if got := trimRuntime(in); got != want {
			t.Errorf("trimRuntime(%q) = %q, want %q", in, got, want)
		}
	}
}
