// Package inplaceready is the daemon's in-place readiness controller: for the Pods of its node
// whose in-place update waits only for new container images (inplaceupdate.ImagesToWatch), it
// sets InPlaceUpdateReady True as soon as the kubelet has taken the new images over.
//
// Why: the kubelet reports a restarted container at its next PLEG relist (once a second), and a
// Pod sync waits for a relist newer than the previous sync. If InPlaceUpdateReady turns True only
// after the kubelet reported the new containers (as inplace-controller does, reading the Pod
// status), the kubelet needs one more relist to turn the Pod Ready: about a second later than a
// plain image patch of the same Pod. The gate must instead be True in the Pod the kubelet syncs
// right after the one that replaced the containers.
//
// When the kubelet has taken over:
//   - it reports status.observedGeneration >= metadata.generation (Kubernetes 1.34+): it writes
//     that from the status it generates at the start of the sync that kills the old containers and
//     starts the new ones, milliseconds after the spec changed. Every later sync of the Pod waits
//     for a relist after that sync ends, so with the gate True the kubelet's Ready follows the new
//     containers and never again the old ones;
//   - with a kubelet that reports no observedGeneration, the runtime runs every new container:
//     an instance whose image id is the id the runtime resolves the Pod spec's image to, different
//     from the one the Pod status reported when the update began (polled every PollInterval; an
//     update that keeps the image id, a new tag of the same image, is left to inplace-controller).
//
// Ready stays the kubelet's alone: a new container that is not ready (readiness probe) keeps the
// Pod unready. inplace-controller still completes the update once the Pod status reports the new
// images; this controller only makes the Pod ready sooner, never differently: a Pod it misses
// (daemon down) is handled there as before.
package inplaceready

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
)

// Name is the controller's name in logs, metrics and the workqueue.
const Name = "inplaceready"

var gateWrites = metrics.NewCounterVec(&metrics.CounterOpts{
	Namespace:      "inplace_daemon",
	Subsystem:      Name,
	Name:           "condition_writes_total",
	Help:           "Writes of InPlaceUpdateReady=True for Pods whose new container images run, by result.",
	StabilityLevel: metrics.ALPHA,
}, []string{"result"})

func init() {
	legacyregistry.MustRegister(gateWrites)
}

// Config tunes the controller; DefaultConfig has the defaults.
type Config struct {
	// PollInterval is how often the runtime is asked about a Pod waiting for its new containers,
	// with a kubelet that reports no observedGeneration. It must stay well under the kubelet's
	// relist period (1 s) for the gate to be there first.
	PollInterval time.Duration
	// PollFor is how long a Pod is polled at PollInterval (an image pull may take a while); after
	// that it is looked at only when it changes, and by inplace-controller.
	PollFor time.Duration
	// ImageIDTTL is how long the id the runtime resolves an image reference to is remembered.
	ImageIDTTL time.Duration
	// Clock gives the time of the condition it writes and of its polling (nil: the real one).
	Clock clock.PassiveClock
}

// DefaultConfig is the default Config.
func DefaultConfig() Config {
	return Config{PollInterval: 100 * time.Millisecond, PollFor: 5 * time.Minute, ImageIDTTL: 10 * time.Second}
}

// Controller is the in-place readiness controller of one node.
type Controller struct {
	cfg        Config
	kubeClient kubernetes.Interface
	pods       corelisters.PodLister
	podsSynced cache.InformerSynced
	runtime    criruntime.Runtime
	queue      reconcile.Queue

	mu sync.Mutex
	// firstSeen is when this daemon first saw each update (Pod UID + batch) waiting, on its own clock.
	firstSeen map[string]time.Time
	// imageIDs caches image reference -> runtime image id.
	imageIDs map[string]cachedImageID
}

type cachedImageID struct {
	id string
	at time.Time
}

// New builds the controller on an informer of the Pods of this node.
func New(podInformer coreinformers.PodInformer, kubeClient kubernetes.Interface, runtime criruntime.Runtime, cfg Config) (*Controller, error) {
	d := DefaultConfig()
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = d.PollInterval
	}
	if cfg.PollFor <= 0 {
		cfg.PollFor = d.PollFor
	}
	if cfg.ImageIDTTL <= 0 {
		cfg.ImageIDTTL = d.ImageIDTTL
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	c := &Controller{
		cfg:        cfg,
		kubeClient: kubeClient,
		pods:       podInformer.Lister(),
		podsSynced: podInformer.Informer().HasSynced,
		runtime:    runtime,
		queue:      reconcile.NewQueue(Name),
		firstSeen:  map[string]time.Time{},
		imageIDs:   map[string]cachedImageID{},
	}
	if err := reconcile.Watch(podInformer.Informer(), "pods", reconcile.Handlers[*corev1.Pod]{
		Add:    c.enqueue,
		Update: func(_, pod *corev1.Pod) { c.enqueue(pod) },
		Delete: func(pod *corev1.Pod) { c.forget(pod.UID) },
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) enqueue(pod *corev1.Pod) {
	if _, watch := inplaceupdate.ImagesToWatch(pod); watch {
		c.queue.Add(cache.MetaObjectToName(pod))
	}
}

// Run reconciles Pods with the given number of workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	klog.FromContext(ctx).Info("Starting controller", "controller", Name, "pollInterval", c.cfg.PollInterval)
	reconcile.Run(ctx, Name, workers, c.queue, c.sync, c.podsSynced)
}

// sync looks at one Pod: once the kubelet took the new images of its update over, it sets
// InPlaceUpdateReady True; with a kubelet that reports no observedGeneration it polls the runtime
// every PollInterval while the update is young.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	pod, ok, err := reconcile.Found(c.pods.Pods(key.Namespace).Get(key.Name))
	if !ok || err != nil {
		return 0, err
	}
	waits, watch := inplaceupdate.ImagesToWatch(pod)
	if !watch {
		c.forget(pod.UID)
		return 0, nil
	}
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod))

	reason := inplaceupdate.ReasonNewSpecObserved
	switch {
	case inplaceupdate.KubeletObservedSpec(pod):
	case pod.Status.ObservedGeneration > 0:
		// This kubelet reports observedGeneration: its next status write says when it took over.
		return 0, nil
	default:
		running, err := c.newImagesRunning(ctx, pod, waits)
		if err != nil {
			return 0, err
		}
		if !running {
			if c.age(watchKey(pod)) > c.cfg.PollFor {
				return 0, nil
			}
			return c.cfg.PollInterval, nil
		}
		reason = inplaceupdate.ReasonNewImagesRunning
	}

	patch, err := statusPatch(pod, inplaceupdate.HandedOverConditions(pod, c.cfg.Clock.Now(), reason))
	if err != nil {
		return 0, err
	}
	if _, err := c.kubeClient.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{}, "status"); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return 0, nil
		case apierrors.IsConflict(err):
			// The Pod changed since the cache showed it (maybe another update began): look again
			// at the version the informer brings.
			gateWrites.WithLabelValues("conflict").Inc()
			return c.cfg.PollInterval, nil
		}
		gateWrites.WithLabelValues("error").Inc()
		return 0, fmt.Errorf("setting InPlaceUpdateReady True on pod %s: %w", key, err)
	}
	gateWrites.WithLabelValues("success").Inc()
	c.forget(pod.UID)
	logger.V(2).Info("The kubelet took the new images over: set InPlaceUpdateReady True", "reason", reason,
		"containers", strings.Join(slices.Sorted(maps.Keys(waits)), ","))
	return 0, nil
}

// newImagesRunning tells whether the runtime runs, for every container in waits, an instance on
// the image id of the Pod spec's image, different from the id the container had before.
func (c *Controller) newImagesRunning(ctx context.Context, pod *corev1.Pod, waits map[string]inplaceupdate.ImageWait) (bool, error) {
	containers, err := c.runtime.ListPodContainers(ctx, string(pod.UID))
	if err != nil {
		return false, err
	}
	for name, w := range waits {
		want, err := c.imageID(ctx, w.Image)
		if err != nil || want == "" {
			return false, err // not pulled yet: the kubelet has not started it either
		}
		if w.PreviousImageID != "" {
			before, err := c.imageID(ctx, w.PreviousImageID)
			if err != nil {
				return false, err
			}
			if before == want {
				return false, nil // same image under a new reference: inplace-controller's case
			}
		}
		if !runsImage(containers, name, want) {
			return false, nil
		}
	}
	return true, nil
}

// runsImage is true when a running instance of the named container runs image id.
func runsImage(containers []criruntime.Container, name, id string) bool {
	for _, rc := range containers {
		if rc.Name == name && rc.State == criruntime.StateRunning && rc.ImageID == id {
			return true
		}
	}
	return false
}

// imageID resolves an image reference through the runtime, cached for ImageIDTTL.
func (c *Controller) imageID(ctx context.Context, ref string) (string, error) {
	now := c.cfg.Clock.Now()
	c.mu.Lock()
	cached, ok := c.imageIDs[ref]
	c.mu.Unlock()
	if ok && now.Sub(cached.at) < c.cfg.ImageIDTTL {
		return cached.id, nil
	}
	id, err := c.runtime.ImageID(ctx, ref)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for r, e := range c.imageIDs {
		if now.Sub(e.at) >= c.cfg.ImageIDTTL {
			delete(c.imageIDs, r)
		}
	}
	if id != "" {
		c.imageIDs[ref] = cachedImageID{id: id, at: now}
	}
	return id, nil
}

// watchKey names one batch of one Pod's update: a new update or batch starts a new poll period.
func watchKey(pod *corev1.Pod) string {
	st, ok, err := inplaceupdate.GetState(pod)
	if !ok || err != nil || len(st.ContainerBatchesRecord) == 0 {
		return string(pod.UID)
	}
	last := st.ContainerBatchesRecord[len(st.ContainerBatchesRecord)-1]
	return fmt.Sprintf("%s/%s/%d", pod.UID, last.Timestamp.UTC().Format(time.RFC3339), len(st.ContainerBatchesRecord))
}

// age is how long ago this daemon first saw the update waiting.
func (c *Controller) age(key string) time.Duration {
	now := c.cfg.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	first, ok := c.firstSeen[key]
	if !ok {
		c.firstSeen[key] = now
		return 0
	}
	return now.Sub(first)
}

// forget drops the poll periods of a Pod's updates.
func (c *Controller) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.firstSeen {
		if k == string(uid) || strings.HasPrefix(k, string(uid)+"/") {
			delete(c.firstSeen, k)
		}
	}
}

// statusPatch is a strategic merge patch of pods/status setting conds, with the Pod's
// resourceVersion as a precondition: a Pod that changed meanwhile (another update began) is not
// marked ready by a judgement made on its older version.
func statusPatch(pod *corev1.Pod, conds []corev1.PodCondition) ([]byte, error) {
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": pod.ResourceVersion},
		"status":   map[string]any{"conditions": conds},
	})
}
