package lifecycle

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/workload/expectations"
	"github.com/inplace-dev/inplace/pkg/workload/ownership"
)

// Workload is the object whose Pods move: a CloneSet or an Advanced StatefulSet.
type Workload interface {
	metav1.Object
	runtime.Object
}

// Mover moves a workload's Pods through lifecycle states for its controller (the CloneSet's and
// the Advanced StatefulSet's, alike): each move is expected, so the next sync waits until the
// cache shows it, and, when the workload has hooks, reported as an Event on the workload. Without
// hooks every Pod passes through the states by itself (PreparingNormal to Normal once scheduled,
// Updating to Normal once updated): an Event for each would double the requests of creating or
// updating a Pod and tell nobody anything. With hooks, the states are what users wait on.
type Mover struct {
	Pods     corev1client.PodsGetter
	Exp      *expectations.Expectations
	Recorder record.EventRecorder
	// Kind names the workload in logs: "cloneset", "statefulset".
	Kind string
}

// Move moves pod, of workload w with spec.lifecycle hooks, to state at now, arming rearm again when
// not nil (see Move). It tells whether it patched the state.
func (m Mover) Move(ctx context.Context, w Workload, hooks *pub.Lifecycle, pod *corev1.Pod, state pub.LifecycleStateType,
	rearm *pub.LifecycleHook, now time.Time) (bool, error) {
	moved, err := Move(ctx, m.Pods, pod, state, rearm, now)
	if moved {
		m.Exp.ExpectLifecycle(cache.MetaObjectToName(w).String(), pod.Name, string(state))
		klog.FromContext(ctx).V(2).Info("Pod lifecycle state", m.Kind, klog.KObj(w), "pod", klog.KObj(pod),
			"from", State(pod), "to", state)
		if hooks != nil {
			m.Recorder.Eventf(w, corev1.EventTypeNormal, ownership.ReasonPodLifecyclePrefix+string(state), "pod %s is %s", pod.Name, state)
		}
	}
	return moved, err
}
