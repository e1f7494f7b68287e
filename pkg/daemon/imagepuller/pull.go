package imagepuller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
	"github.com/inplace-dev/inplace/pkg/imagepull"
)

// messageDeadlineExceeded is OpenKruise's message for a pull past activeDeadlineSeconds.
const messageDeadlineExceeded = "pulling exceeds the activeDeadlineSeconds"

// errTimedOut ends an attempt that ran for the tag's timeoutSeconds.
var errTimedOut = errors.New("timed out")

// pull is the pull of one version of one tag.
type pull struct {
	key     tagKey
	spec    v1alpha1.ImageTagSpec
	secrets []v1alpha1.ReferenceObject
	sandbox *v1alpha1.SandboxConfig
	// ctx ends when the pull is cancelled (tag gone or a new version) or the daemon stops.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	status v1alpha1.ImageTagStatus
}

// newPull is a pull of tag t of image, Waiting, under Run's context (c.mu held).
func (c *Controller) newPull(k tagKey, t v1alpha1.ImageTagSpec, image *v1alpha1.ImageSpec) *pull {
	ctx, cancel := context.WithCancel(c.runCtx)
	return &pull{
		key: k, spec: *t.DeepCopy(), secrets: imagepull.TagSecrets(image, &t), sandbox: image.SandboxConfig.DeepCopy(),
		ctx: ctx, cancel: cancel,
		status: v1alpha1.ImageTagStatus{Tag: k.tag, Phase: v1alpha1.ImagePhaseWaiting, Version: t.Version},
	}
}

func (p *pull) snapshot() v1alpha1.ImageTagStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return *p.status.DeepCopy()
}

func (p *pull) update(f func(s *v1alpha1.ImageTagStatus)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(&p.status)
}

// ref is the reference to pull: name:tag, or name@digest when the tag is a digest.
func (p *pull) ref() string {
	if strings.Contains(p.key.tag, ":") {
		return p.key.image + "@" + p.key.tag
	}
	return p.key.image + ":" + p.key.tag
}

// outcome is how a pull ended.
type outcome struct {
	imageID string // the runtime's image id, on success
	present bool   // the runtime had the image: nothing was pulled
	err     error  // why it failed
}

// run carries out the pull: a slot, then the attempts, then the outcome in status. A cancelled
// pull reports nothing more: its status no longer counts.
func (c *Controller) run(p *pull, ni *v1alpha1.NodeImage) {
	defer c.wg.Done()
	defer p.cancel()
	ctx := p.ctx
	logger := klog.FromContext(ctx).WithValues("controller", Name, "image", p.ref(), "version", p.spec.Version)
	ctx = klog.NewContext(ctx, logger)

	if !c.acquire(ctx) {
		return
	}
	defer c.release()
	pullsInProgress.Inc()
	defer pullsInProgress.Dec()
	start := c.cfg.Clock.Now()
	p.update(func(s *v1alpha1.ImageTagStatus) {
		s.Phase = v1alpha1.ImagePhasePulling
		s.StartTime = ptr.To(metav1.NewTime(start).Rfc3339Copy())
	})
	c.notify()

	out := c.pullWithRetries(ctx, p, start)
	if ctx.Err() != nil {
		logger.V(2).Info("Pull cancelled")
		observePull(resultCancelled, c.cfg.Clock.Since(start))
		return
	}
	took := c.cfg.Clock.Since(start)
	switch {
	case out.err != nil:
		observePull(resultFailed, took)
	case out.present:
		observePull(resultPresent, took)
	default:
		observePull(resultSucceeded, took)
	}
	now := metav1.NewTime(c.cfg.Clock.Now()).Rfc3339Copy()
	p.update(func(s *v1alpha1.ImageTagStatus) {
		s.CompletionTime = &now
		if out.err != nil {
			s.Phase, s.Message = v1alpha1.ImagePhaseFailed, out.err.Error()
			return
		}
		s.Phase, s.Progress, s.Message = v1alpha1.ImagePhaseSucceeded, 100, ""
		if out.imageID != "" {
			s.ImageID = p.key.image + "@" + out.imageID
		}
	})
	c.notify()
	if out.err != nil {
		logger.Info("Pull failed", "took", took, "err", out.err)
		c.recorder.Eventf(ni, corev1.EventTypeWarning, ReasonPullFailed, "Image %s: %v", p.ref(), out.err)
		for i := range p.spec.OwnerReferences {
			c.recorder.Eventf(&p.spec.OwnerReferences[i], corev1.EventTypeWarning, ReasonPullFailed, "Image %s on node %s: %v",
				p.ref(), c.cfg.NodeName, out.err)
		}
		return
	}
	logger.Info("Pulled image", "took", took, "imageID", out.imageID)
	c.recorder.Eventf(ni, corev1.EventTypeNormal, ReasonPullSucceeded, "Image %s, elapsed time %s", p.ref(), took.Round(time.Millisecond))
}

// pullWithRetries makes the attempts: an image the runtime has is done at once (unless the tag's
// imagePullPolicy is Always); else up to 1+backoffLimit pulls, each within timeoutSeconds, all
// within activeDeadlineSeconds from start, with a doubling backoff between them.
func (c *Controller) pullWithRetries(ctx context.Context, p *pull, start time.Time) outcome {
	logger := klog.FromContext(ctx)
	ref := p.ref()
	if p.spec.ImagePullPolicy != v1alpha1.PullAlways {
		img, err := c.runtime.ImageStatus(ctx, ref)
		if err != nil {
			logger.Info("Cannot tell whether the runtime has the image; pulling it", "err", err)
		} else if img != nil {
			logger.V(2).Info("The runtime has the image already", "imageID", img.ID)
			return outcome{imageID: img.ID, present: true}
		}
	}
	auths := c.credentials(ctx, p)

	timeout, backoffLimit, deadline := c.limits(p, start)
	backoff := c.cfg.InitialBackoff
	var lastErr error
	for attempt := 0; attempt <= backoffLimit; attempt++ {
		if attempt > 0 {
			wait := backoff
			if deadline != nil {
				wait = min(wait, max(deadline.Sub(c.cfg.Clock.Now()), 0))
			}
			if !c.sleep(ctx, wait) {
				return outcome{err: ctx.Err()}
			}
			backoff = min(2*backoff, c.cfg.MaxBackoff)
		}
		attemptTimeout := timeout
		if deadline != nil {
			left := deadline.Sub(c.cfg.Clock.Now())
			if left <= 0 {
				return outcome{err: deadlineError(lastErr)}
			}
			attemptTimeout = min(attemptTimeout, left)
		}
		id, err := c.pullOnce(ctx, ref, auths, p.sandbox, attemptTimeout)
		if err == nil {
			return outcome{imageID: id}
		}
		if ctx.Err() != nil {
			return outcome{err: ctx.Err()}
		}
		lastErr = err
		logger.Info("Pull attempt failed", "attempt", attempt+1, "attempts", backoffLimit+1, "err", err)
	}
	return outcome{err: lastErr}
}

// deadlineError says the deadline passed, and why the last attempt failed, if one did.
func deadlineError(last error) error {
	if last == nil {
		return errors.New(messageDeadlineExceeded)
	}
	return fmt.Errorf("%s; last attempt: %w", messageDeadlineExceeded, last)
}

// limits are the tag's timeout of one attempt, its backoffLimit (OpenKruise's defaults when
// unset or negative) and its deadline (nil: none).
func (c *Controller) limits(p *pull, start time.Time) (time.Duration, int, *time.Time) {
	timeout := time.Duration(v1alpha1.DefaultImagePullTimeoutSeconds) * time.Second
	backoffLimit := v1alpha1.DefaultImagePullBackoffLimit
	var deadline *time.Time
	if pp := p.spec.PullPolicy; pp != nil {
		if pp.TimeoutSeconds != nil && *pp.TimeoutSeconds > 0 {
			timeout = time.Duration(*pp.TimeoutSeconds) * time.Second
		}
		if pp.BackoffLimit != nil && *pp.BackoffLimit >= 0 {
			backoffLimit = int(*pp.BackoffLimit)
		}
		if pp.ActiveDeadlineSeconds != nil {
			deadline = ptr.To(start.Add(time.Duration(*pp.ActiveDeadlineSeconds) * time.Second))
		}
	}
	return timeout, backoffLimit, deadline
}

// pullOnce is one attempt: with each matching credential in turn until one works, or
// anonymously when none matches, within timeout.
func (c *Controller) pullOnce(ctx context.Context, ref string, auths []criruntime.Auth, sandbox *v1alpha1.SandboxConfig,
	timeout time.Duration) (string, error) {
	ctx, cancel := c.withTimeout(ctx, timeout)
	defer cancel()
	var ps *criruntime.PullSandbox
	if sandbox != nil {
		ps = &criruntime.PullSandbox{Labels: sandbox.Labels, Annotations: sandbox.Annotations}
	}
	if len(auths) == 0 {
		id, err := c.runtime.PullImage(ctx, ref, nil, ps)
		return id, timedOut(ctx, err, ref, timeout)
	}
	var errs []error
	for i := range auths {
		id, err := c.runtime.PullImage(ctx, ref, &auths[i], ps)
		if err == nil {
			return id, nil
		}
		if err := timedOut(ctx, err, ref, timeout); ctx.Err() != nil {
			return "", err
		}
		errs = append(errs, err)
	}
	return "", utilerrors.NewAggregate(errs)
}

// timedOut rewrites the error of a call the attempt's timeout cut short.
func timedOut(ctx context.Context, err error, ref string, timeout time.Duration) error {
	if err != nil && errors.Is(context.Cause(ctx), errTimedOut) {
		return fmt.Errorf("pulling image %s: timed out after %s (pullPolicy.timeoutSeconds)", ref, timeout)
	}
	return err
}

// credentials are the credentials the NodeImage's Secrets hold for the image. A Secret that
// cannot be read is logged and left out: the pull is tried with the others, or anonymously, and
// its error says why it failed.
func (c *Controller) credentials(ctx context.Context, p *pull) []criruntime.Auth {
	logger := klog.FromContext(ctx)
	var secrets []corev1.Secret
	for _, ref := range p.secrets {
		s, err := c.kubeClient.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			logger.Info("Cannot read a pull secret; pulling without it", "secret", klog.KRef(ref.Namespace, ref.Name), "err", err)
			continue
		}
		secrets = append(secrets, *s)
	}
	auths, errs := pullCredentials(secrets, p.ref())
	for _, err := range errs {
		logger.Info("Ignoring a pull secret", "err", err)
	}
	return auths
}

// acquire takes a pull slot (when MaxWorkers limits them); false when ctx ended first.
func (c *Controller) acquire(ctx context.Context) bool {
	if c.slots == nil {
		return ctx.Err() == nil
	}
	select {
	case c.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (c *Controller) release() {
	if c.slots != nil {
		<-c.slots
	}
}

// sleep waits d on the daemon's clock; false when ctx ended first.
func (c *Controller) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := c.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

// withTimeout is ctx ending after d on the daemon's clock, with cause errTimedOut.
func (c *Controller) withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	t := c.cfg.Clock.NewTimer(d)
	go func() {
		defer t.Stop()
		select {
		case <-t.C():
			cancel(errTimedOut)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}
