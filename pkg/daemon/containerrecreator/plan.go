package containerrecreator

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
)

// Container state messages.
const (
	msgNotFound          = "container not found on the node"
	msgWaitUnready       = "waiting for inplace-controller to take the Pod out of service (unreadyGracePeriodSeconds)"
	msgWaitUnreadyGrace  = "waiting for unreadyGracePeriodSeconds to pass before stopping the container"
	msgNeverRestarted    = "the Pod's restartPolicy Never would not start the container again: not stopping it"
	msgStopFailedPrefix  = "stopping container: "
	msgExitedNotRestartF = "container exited%s and the Pod's restartPolicy %s does not start it again"
)

// planInput is everything one decision about a request needs: the request, its Pod as the
// informer has it, the Pod's containers as the runtime reports them, and what this daemon
// remembers, all on its own clock.
type planInput struct {
	crr *v1alpha1.ContainerRecreateRequest
	pod *corev1.Pod
	// containers are the Pod's containers, newest first (criruntime.ListPodContainers).
	containers []criruntime.Container
	// runtimeName prefixes container ids in the Pod status: "<runtimeName>://<id>".
	runtimeName string
	now         time.Time
	// runningSince is when this daemon first saw each container instance running.
	runningSince map[string]time.Time
	// stopped are the container instances this daemon stopped (or is stopping).
	stopped map[string]bool
	// unreadySince is when this daemon first saw the request's unready-acquired annotation;
	// zero while it has not.
	unreadySince time.Time
}

// stopAction is a container instance to stop.
type stopAction struct {
	// index of the container in crr.spec.containers.
	index int
	name  string
	// id is the runtime's id of the running instance.
	id string
}

// planResult is what to do about a request now.
type planResult struct {
	// status is the status to write: the request's phase (Pending or Recreating) and one state
	// per container of the spec, in its order. The containers to stop are already marked
	// Recreating and isKilled (the intent is written before the stop).
	status v1alpha1.ContainerRecreateRequestStatus
	// stops are the instances to stop now: at most one, the first container of the spec that is
	// due (see plan).
	stops []stopAction
	// after is how soon to look again for a wait measured in time (minStartedSeconds,
	// unreadyGracePeriodSeconds); 0 when nothing waits for time.
	after time.Duration
	// waiting is true while some container waits for the kubelet or the runtime (a stopped
	// container to come back, ready): the Pod's next event, or a fallback recheck, tells.
	waiting bool
}

// plan decides, with no I/O, the states of a request's containers and which to stop now.
//
// A container counts as recreated when its current instance (the running one, else the newest)
// is not the one the request names (statusContext: another id, or a higher attempt than its
// restartCount), runs, is reported ready by the kubelet under that very id, and (with
// minStartedSeconds) has been seen running that long by this daemon. A request whose instance
// was replaced before the daemon got to it is therefore Succeeded without a stop. Only the
// instance the request names is ever stopped, and only while it runs; forceRecreate (or a
// request without statusContext) stops the running instance once, whichever it is, the
// container state's isKilled recording that it was done.
//
// The containers are stopped one at a time, in the order of the spec, as OpenKruise's daemon
// does: a plan names at most one stop, and the daemon plans again once that stop (preStop hook
// included) is over. Without orderedRecreate the next container is stopped then, whether or
// not the previous one runs again; with it, only once the previous one is recreated
// (Succeeded). So a sidecar listed after the app (a mesh proxy, a log agent) keeps serving
// while the app's preStop hook drains it, and a request that ends meanwhile
// (activeDeadlineSeconds) leaves the containers after it untouched, Pending.
func plan(in planInput) planResult {
	crr := in.crr
	strategy := crr.Spec.Strategy
	if strategy == nil {
		strategy = &v1alpha1.ContainerRecreateRequestStrategy{}
	}
	failFast := strategy.FailurePolicy != v1alpha1.ContainerRecreateRequestFailurePolicyIgnore
	prev := map[string]v1alpha1.ContainerRecreateRequestContainerRecreateState{}
	killedBefore := false
	for _, s := range crr.Status.ContainerRecreateStates {
		prev[s.Name] = s
		killedBefore = killedBefore || s.IsKilled
	}

	var res planResult
	states := make([]v1alpha1.ContainerRecreateRequestContainerRecreateState, len(crr.Spec.Containers))
	var candidates []stopAction
	// blocked: an earlier container is not done yet (orderedRecreate); failed: a container
	// failed (failurePolicy Fail stops no further container).
	blocked, failed := false, false
	for i := range crr.Spec.Containers {
		c := &crr.Spec.Containers[i]
		s, ok := prev[c.Name]
		if !ok {
			s = v1alpha1.ContainerRecreateRequestContainerRecreateState{Name: c.Name, Phase: v1alpha1.ContainerRecreateRequestPending}
		}
		d := in.decide(c, s, strategy)
		states[i] = d.state
		res.waiting = res.waiting || d.waiting
		res.after = minPositive(res.after, d.after)
		if d.stopID != "" && !blocked {
			candidates = append(candidates, stopAction{index: i, name: c.Name, id: d.stopID})
		}
		switch d.state.Phase {
		case v1alpha1.ContainerRecreateRequestSucceeded:
		case v1alpha1.ContainerRecreateRequestFailed:
			failed = true
			if failFast {
				blocked = true
			}
		default:
			if strategy.OrderedRecreate {
				blocked = true
			}
		}
	}
	if failed && failFast {
		candidates = nil
	}

	// unreadyGracePeriodSeconds: the first stop of the request waits until inplace-controller
	// took the Pod out of service (the annotation), then for the grace period from when this
	// daemon saw that.
	if len(candidates) > 0 && strategy.UnreadyGracePeriodSeconds != nil && !killedBefore {
		msg := ""
		switch grace := time.Duration(max(*strategy.UnreadyGracePeriodSeconds, 0)) * time.Second; {
		case in.unreadySince.IsZero():
			msg = msgWaitUnready
		case in.now.Sub(in.unreadySince) < grace:
			msg = msgWaitUnreadyGrace
			res.after = minPositive(res.after, grace-in.now.Sub(in.unreadySince))
		}
		if msg != "" {
			for _, a := range candidates {
				states[a.index].Message = msg
			}
			candidates = nil
		}
	}

	// One stop at a time, in the spec's order: the next one once this one is over.
	candidates = candidates[:min(len(candidates), 1)]
	for _, a := range candidates {
		states[a.index] = v1alpha1.ContainerRecreateRequestContainerRecreateState{
			Name: a.name, Phase: v1alpha1.ContainerRecreateRequestRecreating, IsKilled: true}
	}
	res.stops = candidates
	if len(candidates) > 0 {
		res.waiting = true
	}

	res.status = *crr.Status.DeepCopy()
	res.status.ContainerRecreateStates = states
	res.status.Phase = v1alpha1.ContainerRecreateRequestPending
	if crr.Status.Phase == v1alpha1.ContainerRecreateRequestRecreating {
		res.status.Phase = v1alpha1.ContainerRecreateRequestRecreating
	}
	for _, s := range states {
		if s.Phase != v1alpha1.ContainerRecreateRequestPending || s.IsKilled {
			res.status.Phase = v1alpha1.ContainerRecreateRequestRecreating
		}
	}
	return res
}

// decision is what plan decides for one container.
type decision struct {
	state v1alpha1.ContainerRecreateRequestContainerRecreateState
	// stopID is the running instance to stop (if the request's order and policy allow it now).
	stopID  string
	after   time.Duration
	waiting bool
}

func (in *planInput) decide(c *v1alpha1.ContainerRecreateRequestContainer, s v1alpha1.ContainerRecreateRequestContainerRecreateState,
	strategy *v1alpha1.ContainerRecreateRequestStrategy) decision {
	if s.Phase == v1alpha1.ContainerRecreateRequestSucceeded || s.Phase == v1alpha1.ContainerRecreateRequestFailed {
		return decision{state: s}
	}
	cur := criruntime.Current(in.containers, c.Name)
	if cur == nil {
		return decision{state: state(c.Name, v1alpha1.ContainerRecreateRequestPending, msgNotFound, s.IsKilled), waiting: true}
	}
	ctxID, ctxRestarts := "", int64(0)
	if sc := c.StatusContext; sc != nil {
		ctxID, ctxRestarts = trimRuntime(sc.ContainerID), int64(sc.RestartCount)
	}
	forced := strategy.ForceRecreate || ctxID == ""
	original := ctxID != "" && cur.ID == ctxID && int64(cur.Attempt) <= ctxRestarts
	// inProgress: the state the container is in while the daemon waits on it.
	inProgress := v1alpha1.ContainerRecreateRequestPending
	if s.IsKilled || s.Phase == v1alpha1.ContainerRecreateRequestRecreating {
		inProgress = v1alpha1.ContainerRecreateRequestRecreating
	}
	running := cur.State == criruntime.StateRunning

	// The instance to stop: the one the request names, or under forceRecreate whichever runs,
	// once.
	if original || (forced && !s.IsKilled) {
		switch {
		case running && in.stopped[cur.ID]:
			return decision{state: state(c.Name, v1alpha1.ContainerRecreateRequestRecreating, "", true), waiting: true}
		case running && in.pod.Spec.RestartPolicy == corev1.RestartPolicyNever:
			return decision{state: state(c.Name, v1alpha1.ContainerRecreateRequestFailed, msgNeverRestarted, false)}
		case running:
			return decision{state: state(c.Name, inProgress, "", s.IsKilled), stopID: cur.ID}
		}
		// Not running (crashed, or stopped by this daemon): the kubelet starts the next one.
		if msg, ok := in.notRestarted(cur); ok {
			return decision{state: state(c.Name, v1alpha1.ContainerRecreateRequestFailed, msg, s.IsKilled)}
		}
		return decision{state: state(c.Name, inProgress, "", s.IsKilled), waiting: true}
	}

	// Any other instance replaced the one the request names, unless it is one this daemon
	// stopped (forceRecreate) and the kubelet did not create the next one yet.
	if in.stopped[cur.ID] || !running {
		if !running {
			if msg, ok := in.notRestarted(cur); ok {
				return decision{state: state(c.Name, v1alpha1.ContainerRecreateRequestFailed, msg, s.IsKilled)}
			}
		}
		return decision{state: state(c.Name, v1alpha1.ContainerRecreateRequestRecreating, "", s.IsKilled), waiting: true}
	}
	if !in.ready(cur) {
		return decision{state: state(c.Name, v1alpha1.ContainerRecreateRequestRecreating, "", s.IsKilled), waiting: true}
	}
	if minStarted := time.Duration(strategy.MinStartedSeconds) * time.Second; minStarted > 0 {
		since, ok := in.runningSince[cur.ID]
		if !ok {
			since = in.now
		}
		if left := minStarted - in.now.Sub(since); left > 0 {
			return decision{state: state(c.Name, v1alpha1.ContainerRecreateRequestRecreating, "", s.IsKilled), after: left}
		}
	}
	return decision{state: state(c.Name, v1alpha1.ContainerRecreateRequestSucceeded, "", s.IsKilled)}
}

func state(name string, phase v1alpha1.ContainerRecreateRequestPhase, msg string, killed bool) v1alpha1.ContainerRecreateRequestContainerRecreateState {
	return v1alpha1.ContainerRecreateRequestContainerRecreateState{Name: name, Phase: phase, Message: msg, IsKilled: killed}
}

// ready tells whether the kubelet reports this very instance ready.
func (in *planInput) ready(rc *criruntime.Container) bool {
	id := in.runtimeName + "://" + rc.ID
	for _, cs := range in.pod.Status.ContainerStatuses {
		if cs.ContainerID == id {
			return cs.Ready
		}
	}
	return false
}

// notRestarted tells whether the kubelet will not start an exited container again, because of
// the Pod's restartPolicy, and says why: Never, or OnFailure when the kubelet reports that
// instance terminated with exit code 0.
func (in *planInput) notRestarted(rc *criruntime.Container) (string, bool) {
	if rc.State != criruntime.StateExited {
		return "", false
	}
	var terminated *corev1.ContainerStateTerminated
	id := in.runtimeName + "://" + rc.ID
	for _, cs := range in.pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && (cs.ContainerID == id || t.ContainerID == id) {
			terminated = t
		}
	}
	switch policy := in.pod.Spec.RestartPolicy; {
	case policy == corev1.RestartPolicyNever:
		code := ""
		if terminated != nil {
			code = fmt.Sprintf(" with code %d", terminated.ExitCode)
		}
		return fmt.Sprintf(msgExitedNotRestartF, code, policy), true
	case policy == corev1.RestartPolicyOnFailure && terminated != nil && terminated.ExitCode == 0:
		return fmt.Sprintf(msgExitedNotRestartF, " with code 0", policy), true
	}
	return "", false
}

// trimRuntime is the runtime's id in a Pod status container id "<runtime>://<id>".
func trimRuntime(containerID string) string {
	if _, id, ok := strings.Cut(containerID, "://"); ok {
		return id
	}
	return containerID
}

func minPositive(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}
