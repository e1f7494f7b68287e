package launchpriority

import (
	"net/url"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apiserver/pkg/storage/names"
)

// The postStart barrier costs no object per Pod. The kubelet starts a Pod's containers one after
// the other in the order of spec.containers, within one sync of the Pod, and runs each container's
// postStart hook to its end before it starts the next container. So, when the spec order is the
// priority order, a postStart httpGet hook on the last container of a priority that does not
// answer until every container of that priority and above is ready holds back every container of
// a lower priority: inplace-daemon, on the node, answers it (package
// github.com/inplace-dev/inplace/pkg/daemon/launchbarrier). The kubelet publishes nothing of the
// Pod while the hook runs, so the daemon judges readiness itself, running the containers' probes.

// Barrier is how a Pod's containers wait for their turn to start.
type Barrier string

const (
	// BarrierConfigMap is OpenKruise's: env KRUISE_CONTAINER_BARRIER from the Pod's barrier
	// ConfigMap, whose keys inplace-controller adds (Assign, Next).
	BarrierConfigMap Barrier = "ConfigMap"
	// BarrierPostStart is a postStart hook that inplace-daemon answers (AssignPostStart).
	BarrierPostStart Barrier = "PostStart"
)

// BarrierAnnotation names the Barrier the webhook gave the Pod (for the daemon, and for whoever
// wonders why a Pod has no barrier ConfigMap).
const BarrierAnnotation = "inplace.dev/container-launch-barrier"

// HookPathPrefix starts the path of every postStart barrier hook: HookPathPrefix +
// <namespace>/<pod>/<container>.
const HookPathPrefix = "/launch-barrier/v1/"

// HookHost is where the kubelet sends a barrier hook: it makes the request itself, from the
// node's network, where inplace-daemon listens on loopback.
const HookHost = "127.0.0.1"

// DefaultHookPort is the port inplace-daemon answers barrier hooks on, unless told otherwise.
const DefaultHookPort = 10393

// HookPath is the path of the barrier hook of one container.
func HookPath(namespace, pod, container string) string {
	return HookPathPrefix + url.PathEscape(namespace) + "/" + url.PathEscape(pod) + "/" + url.PathEscape(container)
}

// ParseHookPath is the inverse of HookPath; ok is false for any other path.
func ParseHookPath(path string) (namespace, pod, container string, ok bool) {
	rest, found := strings.CutPrefix(path, HookPathPrefix)
	if !found {
		return "", "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 {
		return "", "", "", false
	}
	for i, p := range parts {
		v, err := url.PathUnescape(p)
		if err != nil || v == "" {
			return "", "", "", false
		}
		parts[i] = v
	}
	return parts[0], parts[1], parts[2], true
}

// UsesPostStart is true when the webhook gave the Pod the postStart barrier.
func UsesPostStart(pod *corev1.Pod) bool {
	return pod.Annotations[BarrierAnnotation] == string(BarrierPostStart)
}

// hooked returns the index of the containers that get a barrier hook: the last (in spec order) of
// every priority but the lowest. ok is false when the postStart barrier cannot keep the order
// exactly: the spec order is not the priority order (a priority higher than the one before it),
// or a container that needs the hook has a postStart hook of its own.
func hooked(pod *corev1.Pod, values []int) (idx []int, ok bool) {
	lowest := slices.Min(values)
	for i, v := range values {
		if i > 0 && v > values[i-1] {
			return nil, false
		}
		last := i == len(values)-1 || values[i+1] != v
		if !last || v == lowest {
			continue
		}
		if lc := pod.Spec.Containers[i].Lifecycle; lc != nil && lc.PostStart != nil {
			return nil, false
		}
		idx = append(idx, i)
	}
	return idx, true
}

// AssignBarrier prepares a Pod being created for ordered launch with the barrier wanted: with
// BarrierPostStart, when it keeps the order exactly (see hooked), the last container of every
// priority but the lowest gets a postStart httpGet hook to inplace-daemon at HookHost:hookPort;
// otherwise, and with BarrierConfigMap, the containers get OpenKruise's ConfigMap barrier
// (Assign). The Pod is annotated with the barrier it got (BarrierAnnotation). It returns whether
// it changed the Pod and the warning of Assign; a Pod already prepared is left as it is.
func AssignBarrier(pod *corev1.Pod, want Barrier, hookPort int) (changed bool, warning string) {
	if HasBarrier(pod) || UsesPostStart(pod) {
		return false, ""
	}
	if want == BarrierPostStart {
		values, err := wanted(pod)
		if err != nil {
			warning = err.Error() + "; taken as 0"
		}
		if values == nil {
			return false, warning
		}
		if idx, ok := hooked(pod, values); ok {
			addHooks(pod, idx, hookPort)
			return true, warning
		}
	}
	changed, warning = Assign(pod)
	if changed {
		setAnnotation(pod, BarrierConfigMap)
	}
	return changed, warning
}

// addHooks gives the containers idx their barrier hook, naming the Pod (given a name here when it
// has only generateName, since the hooks' paths hold it).
func addHooks(pod *corev1.Pod, idx []int, hookPort int) {
	if pod.Name == "" && pod.GenerateName != "" {
		pod.Name = names.SimpleNameGenerator.GenerateName(pod.GenerateName)
	}
	for _, i := range idx {
		c := &pod.Spec.Containers[i]
		if c.Lifecycle == nil {
			c.Lifecycle = &corev1.Lifecycle{}
		}
		c.Lifecycle.PostStart = &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{
			Host:   HookHost,
			Port:   intstr.FromInt32(int32(hookPort)),
			Path:   HookPath(pod.Namespace, pod.Name, c.Name),
			Scheme: corev1.URISchemeHTTP,
		}}
	}
	setAnnotation(pod, BarrierPostStart)
}

func setAnnotation(pod *corev1.Pod, b Barrier) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[BarrierAnnotation] = string(b)
}

// Gate is what the barrier hook of one container waits for.
type Gate struct {
	// Wait are the containers that must be ready before the hook answers: every container of the
	// hooked container's priority or a higher one, in spec order.
	Wait []string
	// Later are the containers of a lower priority, which the hook holds back.
	Later []string
}

// GateOf returns the Gate of the barrier hook of container; ok is false when the Pod has no
// postStart barrier or no such prioritised container.
func GateOf(pod *corev1.Pod, container string) (g Gate, ok bool) {
	if !UsesPostStart(pod) {
		return Gate{}, false
	}
	prio := Priorities(pod)
	mine, ok := prio[container]
	if !ok {
		return Gate{}, false
	}
	for _, c := range pod.Spec.Containers {
		p, has := prio[c.Name]
		switch {
		case !has:
		case p >= mine:
			g.Wait = append(g.Wait, c.Name)
		default:
			g.Later = append(g.Later, c.Name)
		}
	}
	return g, true
}
