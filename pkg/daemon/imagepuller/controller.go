// Package imagepuller is the daemon's side of image pre-pull (pkg/imagepull says who writes
// what): it pulls, through the CRI, the images the NodeImage of its node asks for, and reports
// each pull in that NodeImage's status.
//
// The flow:
//
//  1. An informer sees only this node's NodeImage (field selector metadata.name=<node>, on the
//     server). Every change of it, and every change of a pull, syncs the one key, the node name.
//  2. sync compares the spec with the pulls it runs: for every tag (image name + tag) of the spec
//     whose version has no pull here and no finished status for that version, a pull starts;
//     a pull whose tag left the spec, or whose tag has a new version, is cancelled (its CRI call
//     too) and forgotten.
//  3. A pull waits for a slot (--max-workers-for-pull-image; Waiting), then (Pulling) asks the
//     runtime whether it has the image already (imagePullPolicy IfNotPresent, the default):
//     then it is Succeeded at once. Otherwise it calls CRI PullImage with the credentials the
//     NodeImage's Secrets hold for the image's registry (keyring.go), each attempt bounded by the
//     tag's pullPolicy.timeoutSeconds, up to 1+backoffLimit attempts with a backoff between them
//     (1s doubling up to 30s, as OpenKruise), all within activeDeadlineSeconds from the start.
//  4. sync writes the status: per tag of the spec the phase, progress (0, then 100: CRI PullImage
//     reports no progress), start and completion time, image id ("name@id"), message (the
//     runtime's error for a failed pull) and the version it is for; the counts desired (tags in
//     spec), pulling, waiting, succeeded, failed.
//
// Status writes are batched: a pull's changes only mark the NodeImage for a sync (the workqueue
// folds marks into one key), and a sync writes at most once every StatusInterval (1s), waiting
// out the rest otherwise. So N tags starting at once cost one write, not 2N, while a job still
// sees an outcome within about a second. (OpenKruise's daemon writes through a token bucket of
// 0.5/s, burst 5, and re-syncs every 3-5s while pulling to report progress ticks; the CRI gives
// no ticks, so this daemon writes only on a change.)
//
// Every pull runs under the context Run was given: when it ends, the pulls are cancelled and Run
// returns once they are gone. Every wait (backoff, deadline, timeout) is measured on the daemon's
// clock.
package imagepuller

import (
	"context"
	"fmt"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	appsinformers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions/apps/v1alpha1"
	appslisters "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
)

// Name is the controller's name in logs and the workqueue.
const Name = "imagepuller"

// Event reasons (OpenKruise's), on the NodeImage and, for a failure, on the tag's owners.
const (
	ReasonPullSucceeded = "PullImageSucceed"
	ReasonPullFailed    = "PullImageFailed"
)

// Config tunes the controller; DefaultConfig has the defaults.
type Config struct {
	// NodeName is the node, and the name of its NodeImage.
	NodeName string
	// MaxWorkers is how many pulls run at once; 0 or less: no limit (OpenKruise's default).
	MaxWorkers int
	// StatusInterval is the least time between two status writes (0: 1s).
	StatusInterval time.Duration
	// InitialBackoff and MaxBackoff bound the wait between two attempts of a pull: it starts at
	// InitialBackoff and doubles up to MaxBackoff (0: 1s and 30s).
	InitialBackoff, MaxBackoff time.Duration
	// Clock is the daemon's clock: backoff, deadlines, timeouts and the times in status (nil:
	// the real clock).
	Clock clock.WithTicker
}

// DefaultConfig is the default Config.
func DefaultConfig() Config {
	return Config{StatusInterval: time.Second, InitialBackoff: time.Second, MaxBackoff: 30 * time.Second}
}

// Controller pulls the images of one node's NodeImage.
type Controller struct {
	cfg        Config
	client     clientset.Interface
	kubeClient kubernetes.Interface
	nodeImages appslisters.NodeImageLister
	synced     cache.InformerSynced
	runtime    criruntime.Runtime
	recorder   record.EventRecorder
	queue      reconcile.Queue
	// slots holds one token per running pull when MaxWorkers limits them; nil otherwise.
	slots chan struct{}
	// lastWrite is when status was last written, on the real clock: StatusInterval is a rate
	// limit, not a time the pulls are judged by.
	lastWrite time.Time
	// wg counts running pulls, so Run returns only once every pull is gone.
	wg sync.WaitGroup

	mu sync.Mutex
	// runCtx is Run's context: pulls outlive the sync that started them, not Run.
	runCtx context.Context
	// pulls are the pulls of the spec's tags, running or finished, by tag.
	pulls map[tagKey]*pull
}

// tagKey names one tag of one image of the NodeImage.
type tagKey struct{ image, tag string }

// New builds the controller on an informer of this node's NodeImage (filtered on the server by
// name); kubeClient reads pull Secrets. recorder may be nil (no events).
func New(nodeImages appsinformers.NodeImageInformer, client clientset.Interface, kubeClient kubernetes.Interface,
	runtime criruntime.Runtime, recorder record.EventRecorder, cfg Config) (*Controller, error) {
	d := DefaultConfig()
	if cfg.StatusInterval <= 0 {
		cfg.StatusInterval = d.StatusInterval
	}
	if cfg.InitialBackoff <= 0 {
		cfg.InitialBackoff = d.InitialBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = d.MaxBackoff
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if recorder == nil {
		recorder = &record.FakeRecorder{} // discards events
	}
	c := &Controller{
		cfg:        cfg,
		client:     client,
		kubeClient: kubeClient,
		nodeImages: nodeImages.Lister(),
		synced:     nodeImages.Informer().HasSynced,
		runtime:    runtime,
		recorder:   recorder,
		queue:      reconcile.NewQueue(Name),
		pulls:      map[tagKey]*pull{},
	}
	if cfg.MaxWorkers > 0 {
		c.slots = make(chan struct{}, cfg.MaxWorkers)
	}
	// Our own status writes come back too; a sync of them is cheap (nothing to start, an equal
	// status is not written) and catches a status someone else overwrote.
	if err := reconcile.Watch(nodeImages.Informer(), "nodeimages", reconcile.OnChange(c.enqueue)); err != nil {
		return nil, err
	}
	return c, nil
}

// enqueue syncs this node's NodeImage; another node's (an informer not filtered on the server)
// is ignored.
func (c *Controller) enqueue(ni *v1alpha1.NodeImage) {
	if ni.Name == c.cfg.NodeName {
		c.queue.Add(cache.ObjectName{Name: ni.Name})
	}
}

// notify is how a pull reports a change: the status is written by the next sync.
func (c *Controller) notify() { c.queue.Add(cache.ObjectName{Name: c.cfg.NodeName}) }

// Run pulls until ctx ends; then it cancels the pulls and returns once they stopped. One worker
// is enough whatever workers says: there is one key, and a key is never synced twice at once.
func (c *Controller) Run(ctx context.Context, _ int) {
	logger := klog.FromContext(ctx)
	logger.Info("Starting controller", "controller", Name, "node", c.cfg.NodeName, "maxWorkers", c.cfg.MaxWorkers)
	c.mu.Lock()
	c.runCtx = ctx
	c.mu.Unlock()
	reconcile.Run(ctx, Name, 1, c.queue, c.sync, c.synced)
	c.mu.Lock()
	for k, p := range c.pulls {
		p.cancel()
		delete(c.pulls, k)
	}
	c.mu.Unlock()
	c.wg.Wait()
	logger.Info("Stopped controller", "controller", Name)
}

// sync starts and cancels pulls to match the NodeImage's spec and writes its status.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	name := key.Name
	ni, err := c.nodeImages.Get(name)
	if apierrors.IsNotFound(err) {
		c.cancelAll(ctx)
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	if ni.DeletionTimestamp != nil {
		c.cancelAll(ctx)
		return 0, nil
	}
	c.startAndCancel(ctx, ni)
	return c.writeStatus(ctx, ni)
}

// startAndCancel cancels the pulls the spec no longer asks for (tag gone, or a new version) and
// starts those it asks for that have no pull and no finished status of their version.
func (c *Controller) startAndCancel(ctx context.Context, ni *v1alpha1.NodeImage) {
	logger := klog.FromContext(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runCtx == nil || c.runCtx.Err() != nil {
		return
	}
	want := specTags(&ni.Spec)
	for k, p := range c.pulls {
		if t, ok := want[k]; !ok || t.Version != p.spec.Version {
			logger.V(2).Info("Cancelling the pull of an image the NodeImage no longer asks for", "image", k.image, "tag", k.tag,
				"version", p.spec.Version)
			p.cancel()
			delete(c.pulls, k)
		}
	}
	for k, t := range want {
		if _, running := c.pulls[k]; running {
			continue
		}
		if s := tagStatus(&ni.Status, k); s != nil && s.Version == t.Version && s.CompletionTime != nil {
			continue // done before (by an earlier run of this daemon)
		}
		image := ni.Spec.Images[k.image]
		p := c.newPull(k, t, &image)
		c.pulls[k] = p
		logger.V(2).Info("Pulling an image for the NodeImage", "image", k.image, "tag", k.tag, "version", t.Version)
		c.wg.Add(1)
		go c.run(p, ni)
	}
}

// cancelAll cancels every pull (the NodeImage is gone).
func (c *Controller) cancelAll(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pulls) > 0 {
		klog.FromContext(ctx).Info("The node's NodeImage is gone: cancelling its pulls", "pulls", len(c.pulls))
	}
	for k, p := range c.pulls {
		p.cancel()
		delete(c.pulls, k)
	}
}

// writeStatus writes the status the pulls report, unless it is what the NodeImage has, at most
// once every StatusInterval (it asks to be called again when the interval is not over).
func (c *Controller) writeStatus(ctx context.Context, ni *v1alpha1.NodeImage) (time.Duration, error) {
	c.mu.Lock()
	current := make(map[tagKey]v1alpha1.ImageTagStatus, len(c.pulls))
	for k, p := range c.pulls {
		current[k] = p.snapshot()
	}
	c.mu.Unlock()
	status := buildStatus(ni, current)
	// Semantic: nil and empty maps are equal; times are kept to the second (as the server
	// stores them), so a status read back equals the one written.
	if apiequality.Semantic.DeepEqual(ni.Status, status) {
		return 0, nil
	}
	if wait := c.cfg.StatusInterval - time.Since(c.lastWrite); wait > 0 {
		return wait, nil
	}
	updated := ni.DeepCopy()
	updated.Status = status
	c.lastWrite = time.Now()
	if _, err := c.client.AppsV1alpha1().NodeImages().UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			// The informer brings the newer NodeImage (or its deletion) and syncs it again.
			klog.FromContext(ctx).V(4).Info("NodeImage changed while writing its status; waiting for the newer one", "err", err)
			return 0, nil
		}
		return 0, fmt.Errorf("writing the status of nodeimage %s: %w", ni.Name, err)
	}
	klog.FromContext(ctx).V(3).Info("Wrote NodeImage status", "desired", status.Desired, "pulling", status.Pulling,
		"waiting", status.Waiting, "succeeded", status.Succeeded, "failed", status.Failed)
	return 0, nil
}
