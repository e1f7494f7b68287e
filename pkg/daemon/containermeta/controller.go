// Package containermeta is the daemon's container meta controller. For every relevant Pod of its
// node it reports what the container runtime runs in the Pod annotation
// apps.kruise.io/runtime-containers-meta (OpenKruise's RuntimeContainerMetaSet), and it restarts
// the containers that must see new label or annotation values through env fieldRefs during an
// in-place update (pkg/inplaceupdate.EnvRestartContainers; for Pods of OpenKruise workloads, as
// in OpenKruise, any container whose env is stale while InPlaceUpdateReady is False), by stopping
// them through the CRI so that the kubelet creates them again with freshly resolved env.
//
// The annotation carries, for each container of the Pod spec that the runtime knows (its running
// instance, else its newest one):
//   - containerID: "<runtime name>://<id>", as the kubelet writes it in the Pod status;
//   - restartCount: the CRI attempt of that instance (the kubelet sets it to the restart count);
//   - hashes.plainHash: the kubelet's container spec hash, read from the container's
//     io.kubernetes.container.hash annotation (0 when absent); plainHashWithoutResources likewise
//     from io.kubernetes.container.hashWithoutResources, which only older kubelets set;
//   - hashes.extractedEnvFromMetadataHash: inplaceupdate.RuntimeEnvFromMetadataHash of the
//     environment the runtime started the container with (0 when it could not be read).
//
// The in-place update engine judges an env-from-metadata restart done when this annotation shows,
// for the containerID the Pod status reports, the hash of the Pod's current labels and
// annotations; and an image update done when it shows every container the status reports with
// plainHash equal to the kubelet's hash of its spec (a new reference to the same image content
// leaves the imageID unchanged, so only this tells).
package containermeta

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
)

// Name is the controller's name in logs, metrics and the workqueue.
const Name = "containermeta"

// Config tunes the controller; DefaultConfig has the defaults.
type Config struct {
	// MaxStopGracePeriod caps the Pod's terminationGracePeriodSeconds when a container is
	// stopped for an env-from-metadata restart (0: killed at once).
	MaxStopGracePeriod time.Duration
	// PendingRequeue is how soon a Pod with a pending env-from-metadata restart is looked at
	// again, besides its own events (0: 2s).
	PendingRequeue time.Duration
	// RetryAfter is how soon a Pod is looked at again when a container's environment could not
	// be read (0: 3s).
	RetryAfter time.Duration
	// EnvRestartDelay is how long this daemon must have seen that a container needs an
	// env-from-metadata restart before it stops the container (0: 2s). The new labels reach the
	// kubelet in an update that may follow another one by milliseconds (pods/inplaceupdate
	// writes the readiness condition first); a container stopped while the kubelet still syncs
	// the older Pod is started again with the old values. Measured on this node's clock only.
	EnvRestartDelay time.Duration
	// Clock gives the time an in-place update this daemon completes is recorded at (nil: the
	// real clock).
	Clock clock.PassiveClock
}

// DefaultConfig is the default Config.
func DefaultConfig() Config {
	return Config{MaxStopGracePeriod: 30 * time.Second, PendingRequeue: 2 * time.Second, RetryAfter: 3 * time.Second,
		EnvRestartDelay: 2 * time.Second}
}

func (c *Config) defaults() {
	d := DefaultConfig()
	if c.PendingRequeue <= 0 {
		c.PendingRequeue = d.PendingRequeue
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = d.RetryAfter
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.EnvRestartDelay < 0 {
		c.EnvRestartDelay = 0
	}
	c.MaxStopGracePeriod = max(c.MaxStopGracePeriod, 0)
}

// Controller is the container meta controller of one node.
type Controller struct {
	cfg        Config
	kubeClient kubernetes.Interface
	pods       corelisters.PodLister
	podsSynced cache.InformerSynced
	runtime    criruntime.Runtime
	recorder   record.EventRecorder
	queue      reconcile.Queue

	// envHashes caches the env-from-metadata hash of each container instance, per Pod UID: an
	// instance's environment never changes, so the runtime is asked once per instance.
	envHashes *hashCache
	// written remembers, per Pod UID, the last annotation this controller wrote and the
	// resourceVersion of the Pod it was computed from, so that a Pod cache not yet showing the
	// write does not cause the same write again.
	written *writeCache
	// stopped are the container instances this controller stopped: never stopped twice.
	stopped *idSet
	// warned are the container instances it refused to stop (restartPolicy), warned about once.
	warned *idSet
	// needRestart remembers when each container instance was first seen needing an
	// env-from-metadata restart (keyed by instance and wanted hash), for Config.EnvRestartDelay.
	needRestart *idSet
}

// New builds the controller on an informer of the Pods of this node. recorder may be nil (no
// events).
func New(podInformer coreinformers.PodInformer, kubeClient kubernetes.Interface, runtime criruntime.Runtime,
	recorder record.EventRecorder, cfg Config) (*Controller, error) {
	cfg.defaults()
	if recorder == nil {
		recorder = &record.FakeRecorder{} // discards events
	}
	c := &Controller{
		cfg:         cfg,
		kubeClient:  kubeClient,
		pods:        podInformer.Lister(),
		podsSynced:  podInformer.Informer().HasSynced,
		runtime:     runtime,
		recorder:    recorder,
		queue:       reconcile.NewQueue(Name),
		envHashes:   newHashCache(),
		written:     newWriteCache(),
		stopped:     newIDSet(time.Hour, cfg.Clock),
		warned:      newIDSet(time.Hour, cfg.Clock),
		needRestart: newIDSet(time.Hour, cfg.Clock),
	}
	if err := reconcile.Watch(podInformer.Informer(), "pods", reconcile.Handlers[*corev1.Pod]{
		Add: func(pod *corev1.Pod) {
			if relevant(pod) {
				c.queue.Add(cache.MetaObjectToName(pod))
			}
		},
		Update: func(oldPod, pod *corev1.Pod) {
			if relevant(pod) && changed(oldPod, pod) {
				c.queue.Add(cache.MetaObjectToName(pod))
			}
		},
		Delete: func(pod *corev1.Pod) { c.forget(pod.UID) },
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// forget drops what is remembered of a deleted Pod (stopped instances expire on their own).
func (c *Controller) forget(uid types.UID) {
	c.envHashes.forget(uid)
	c.written.forget(uid)
}

// relevant tells which Pods get the annotation: those that an in-place update touched (state or
// grace annotation), those already carrying it, those owned by an apps.kruise.io workload and
// those a SidecarSet injected. Other Pods of the node are left alone, so that the daemon does not
// write to every Pod of the cluster. Terminating and finished Pods are skipped.
func relevant(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	for _, key := range []string{pub.RuntimeContainerMetaKey, pub.InPlaceUpdateStateKey, pub.InPlaceUpdateStateKeyOld,
		pub.InPlaceUpdateGraceKey, pub.InPlaceUpdateGraceKeyOld, v1alpha1.SidecarSetListAnnotation} {
		if _, ok := pod.Annotations[key]; ok {
			return true
		}
	}
	return kruiseManaged(pod)
}

// kruiseManaged is OpenKruise's daemon filter: the Pod's controller is an apps.kruise.io workload,
// or a SidecarSet injected it (annotation kruise.io/sidecarset-hash). Such Pods get every
// container with stale env from metadata restarted during an in-place update (sweepsEnv).
func kruiseManaged(pod *corev1.Pod) bool {
	if _, ok := pod.Annotations[v1alpha1.SidecarSetHashAnnotation]; ok {
		return true
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil && gv.Group == apps.GroupName {
			return true
		}
	}
	return false
}

// changed tells whether an update of a Pod may change what the controller writes or does:
// metadata (env values, update state), or which container instances run. A resync (same
// resourceVersion) counts as a change, so every Pod is checked again once per resync period.
func changed(oldPod, newPod *corev1.Pod) bool {
	if oldPod.ResourceVersion == newPod.ResourceVersion {
		return true
	}
	if !equality.Semantic.DeepEqual(oldPod.Labels, newPod.Labels) ||
		!equality.Semantic.DeepEqual(oldPod.Annotations, newPod.Annotations) {
		return true
	}
	if len(oldPod.Status.ContainerStatuses) != len(newPod.Status.ContainerStatuses) {
		return true
	}
	for i, o := range oldPod.Status.ContainerStatuses {
		n := newPod.Status.ContainerStatuses[i]
		if o.Name != n.Name || o.ContainerID != n.ContainerID || o.RestartCount != n.RestartCount ||
			(o.State.Running == nil) != (n.State.Running == nil) {
			return true
		}
	}
	return false
}

// Run reconciles Pods with the given number of workers until ctx ends, then waits for the
// workers to finish.
func (c *Controller) Run(ctx context.Context, workers int) {
	klog.FromContext(ctx).Info("Starting controller", "controller", Name, "runtime", c.runtime.Name(), "endpoint", c.runtime.Endpoint())
	reconcile.Run(ctx, Name, workers, c.queue, c.sync, c.podsSynced)
}
