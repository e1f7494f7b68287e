package containermeta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate/podwriter"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
)

// Annotations the kubelet sets on the containers it creates.
const (
	kubeletHashAnnotation                 = "io.kubernetes.container.hash"
	kubeletHashWithoutResourcesAnnotation = "io.kubernetes.container.hashWithoutResources"
)

// Event reasons.
const (
	reasonEnvRestart       = "RestartingForEnvFromMetadata"
	reasonEnvRestartFailed = "RestartForEnvFromMetadataFailed"
	reasonEnvRestartPolicy = "EnvFromMetadataRestartSkipped"
)

// sync reconciles one Pod: report the annotation, then restart the containers whose env must
// change. It returns how soon to look at the Pod again (0: on its next event only).
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	pod, ok, err := reconcile.Found(c.pods.Pods(key.Namespace).Get(key.Name))
	if !ok || err != nil {
		return 0, err
	}
	if !relevant(pod) {
		return 0, nil
	}
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod))
	ctx = klog.NewContext(ctx, logger)

	containers, err := c.runtime.ListPodContainers(ctx, string(pod.UID))
	if err != nil {
		return 0, err
	}
	set, complete := c.metaSet(ctx, pod, containers)
	var errs []error
	if done, err := c.completeWithReport(ctx, pod, set); err != nil {
		errs = append(errs, err)
	} else if !done && reportNow(pod, set) {
		if err := c.report(ctx, pod, set); err != nil {
			errs = append(errs, err)
		}
	}
	pending, err := c.restartForEnv(ctx, pod, containers, set)
	if err != nil {
		errs = append(errs, err)
	}

	var requeue time.Duration
	if pending {
		requeue = c.cfg.PendingRequeue
	}
	if !complete && (requeue == 0 || c.cfg.RetryAfter < requeue) {
		requeue = c.cfg.RetryAfter
	}
	return requeue, errors.Join(errs...)
}

// reportNow tells whether to write the annotation set now. Not while the containers of an
// in-place update that changes no env-from-metadata are being replaced (a grace period, when
// nothing changes yet, does not count): the engine needs the annotation only when the Pod status
// cannot show a new image, and a Pod write between the kubelet reporting the new containers and
// InPlaceUpdateReady turning True makes the kubelet take one more PLEG relist (~1 s) to turn the
// Pod Ready. It is written once the update ends. The exception is a new reference to the same
// image content: the status keeps the old imageID (and maybe the old image name), so the update
// could never complete without the annotation. It is written as soon as set shows every
// container the status reports created from its spec image (the kubelet's container hash),
// which is what the engine then checks (inplaceupdate.RunsCurrentSpec).
func reportNow(pod *corev1.Pod, set *pub.RuntimeContainerMetaSet) bool {
	// IsInProgress first: it does not decode the state again on every event of the Pod.
	if inplaceupdate.InGracePeriod(pod) || !inplaceupdate.IsInProgress(pod) {
		return true
	}
	st, ok, err := inplaceupdate.GetState(pod)
	if err != nil || !ok || st == nil || st.UpdateEnvFromMetadata {
		return true
	}
	return len(inplaceupdate.UnconfirmedImages(pod)) > 0 && inplaceupdate.RunsCurrentSpec(pod, set)
}

// metaSet builds the annotation from what the runtime reports, in the order of the Pod spec.
// complete is false when some container's environment could not be read (its hash is then 0).
func (c *Controller) metaSet(ctx context.Context, pod *corev1.Pod, containers []criruntime.Container) (*pub.RuntimeContainerMetaSet, bool) {
	logger := klog.FromContext(ctx)
	set := &pub.RuntimeContainerMetaSet{Containers: []pub.RuntimeContainerMeta{}}
	complete := true
	ids := map[string]bool{}
	for i := range pod.Spec.Containers {
		spec := &pod.Spec.Containers[i]
		rc := criruntime.Current(containers, spec.Name)
		if rc == nil {
			continue
		}
		ids[rc.ID] = true
		meta := pub.RuntimeContainerMeta{
			Name:         spec.Name,
			ContainerID:  c.containerID(rc.ID),
			RestartCount: int32(rc.Attempt),
			Hashes: pub.RuntimeContainerHashes{
				PlainHash:                 hexAnnotation(rc.Annotations, kubeletHashAnnotation),
				PlainHashWithoutResources: hexAnnotation(rc.Annotations, kubeletHashWithoutResourcesAnnotation),
			},
		}
		if h, ok := c.envHashes.get(pod.UID, rc.ID); ok {
			meta.Hashes.ExtractedEnvFromMetadataHash = h
		} else if env, err := c.runtime.ContainerEnv(ctx, rc.ID); err != nil {
			logger.Error(err, "Reading the environment of a container failed", "container", spec.Name, "containerID", meta.ContainerID)
			complete = false
		} else {
			h := inplaceupdate.RuntimeEnvFromMetadataHash(spec, env)
			c.envHashes.set(pod.UID, rc.ID, h)
			meta.Hashes.ExtractedEnvFromMetadataHash = h
			logger.V(4).Info("Hashed the env from metadata of a container", "container", spec.Name, "containerID", meta.ContainerID, "hash", h)
		}
		set.Containers = append(set.Containers, meta)
	}
	c.envHashes.retain(pod.UID, ids)
	return set, complete
}

// containerID is a runtime id in the Pod status form "<runtime>://<id>".
func (c *Controller) containerID(id string) string {
	return c.runtime.Name() + "://" + id
}

// hexAnnotation parses a hexadecimal hash annotation of the kubelet; 0 when absent or malformed.
func hexAnnotation(annotations map[string]string, key string) uint64 {
	v, err := strconv.ParseUint(annotations[key], 16, 64)
	if err != nil {
		return 0
	}
	return v
}

// decodeMetaSet reads the Pod's annotation; nil when absent or malformed (it is then rewritten).
func decodeMetaSet(pod *corev1.Pod) *pub.RuntimeContainerMetaSet {
	raw, ok := pod.Annotations[pub.RuntimeContainerMetaKey]
	if !ok {
		return nil
	}
	set := &pub.RuntimeContainerMetaSet{}
	if err := json.Unmarshal([]byte(raw), set); err != nil {
		return nil
	}
	if set.Containers == nil {
		set.Containers = []pub.RuntimeContainerMeta{}
	}
	return set
}

// report writes the annotation with a merge patch on pods/status, only when it changed. The
// status subresource keeps metadata changes and needs a narrower permission than pods patch.
func (c *Controller) report(ctx context.Context, pod *corev1.Pod, set *pub.RuntimeContainerMetaSet) error {
	if len(set.Containers) == 0 {
		return nil
	}
	if old := decodeMetaSet(pod); old != nil && equality.Semantic.DeepEqual(old, set) {
		return nil
	}
	value, err := json.Marshal(set)
	if err != nil {
		return err
	}
	if c.written.pending(pod, string(value)) {
		// Written already from this very version of the Pod: the cache has not seen it yet.
		return nil
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{pub.RuntimeContainerMetaKey: string(value)}},
	})
	if err != nil {
		return err
	}
	if _, err := c.kubeClient.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch,
		metav1.PatchOptions{}, "status"); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("writing annotation %s: %w", pub.RuntimeContainerMetaKey, err)
	}
	c.written.record(pod, string(value))
	annotationWrites.Inc()
	klog.FromContext(ctx).V(2).Info("Reported runtime container meta", "meta", string(value))
	return nil
}

// completeWithReport writes set together with the completion of the Pod's in-place update, when
// the Pod with set reported is one whose update the engine completes through pods/status
// (inplaceupdate.CompletesThroughStatus: the state marked completed, InPlaceUpdateReady True if it
// is not yet): one write where the completion and the report were two, each a Pod write that
// every watcher of Pods decodes. The report follows the kubelet's status that shows the new
// containers, which is also what completes an image or env update, so the two are due together;
// inplace-controller leaves such a completion to this daemon for a while (see
// inplaceprogress). It says whether it wrote (or finds its write on the way).
func (c *Controller) completeWithReport(ctx context.Context, pod *corev1.Pod, set *pub.RuntimeContainerMetaSet) (bool, error) {
	if len(set.Containers) == 0 || !inplaceupdate.AnyInProgress(pod) {
		return false, nil
	}
	if old := decodeMetaSet(pod); old != nil && equality.Semantic.DeepEqual(old, set) {
		// Nothing new to report: the controller completes the update on its own.
		return false, nil
	}
	value, err := json.Marshal(set)
	if err != nil {
		return false, err
	}
	if c.written.pending(pod, string(value)) {
		return true, nil
	}
	reported := pod.DeepCopy()
	reported.Annotations[pub.RuntimeContainerMetaKey] = string(value)
	step, err := inplaceupdate.Progress(reported, c.cfg.Clock.Now())
	if err != nil || !inplaceupdate.CompletesThroughStatus(reported, step) {
		// Not done, or done with more than the engine's records to write (a user's labels, a
		// resize): the controller's. A state that does not decode is its to report too.
		return false, nil
	}
	if _, err := podwriter.CompleteThroughStatus(ctx, c.kubeClient.CoreV1().Pods(pod.Namespace), step); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
	c.written.record(pod, string(value))
	annotationWrites.Inc()
	completions.Inc()
	c.recorder.Event(pod, corev1.EventTypeNormal, inplaceupdate.ReasonInPlaceUpdateCompleted, step.Message)
	klog.FromContext(ctx).V(2).Info("Completed the in-place update with the runtime container meta report", "meta", string(value), "message", step.Message)
	return true, nil
}

// restartForEnv stops running containers whose env from metadata does not have the Pod's current
// values; the kubelet then creates them again, resolving the env fieldRefs from the current Pod.
// Which containers:
//   - those an in-place update lists for an env-from-metadata restart
//     (inplaceupdate.EnvRestartContainers), for any Pod;
//   - as in OpenKruise, any other container of a Pod owned by an apps.kruise.io workload or
//     injected by a SidecarSet while its InPlaceUpdateReady condition is False (an in-place
//     update is under way and the Pod is out of service anyway), e.g. a container reading a label
//     edited by hand before the template changed. Not during a grace period (no container may
//     change yet), and not a container whose image the update changes (the kubelet replaces it
//     anyway, and the replacement reads the current values) until its running instance is the one
//     the kubelet created from the new spec image.
//
// Each instance is stopped at most once, only after this daemon has seen it need the restart for
// EnvRestartDelay, and only with restartPolicy Always. pending is true while the Pod has
// containers to restart (restarted or not yet), or the update lists some.
func (c *Controller) restartForEnv(ctx context.Context, pod *corev1.Pod, containers []criruntime.Container,
	set *pub.RuntimeContainerMetaSet) (pending bool, err error) {
	names := inplaceupdate.EnvRestartContainers(pod)
	listed := map[string]bool{}
	for _, name := range names {
		listed[name] = true
	}
	sweep := sweepsEnv(pod)
	if len(names) == 0 && !sweep {
		return false, nil
	}
	pending = len(names) > 0
	current, later := imageChanges(pod)
	candidates := names
	if sweep {
		candidates = nil
		for i := range pod.Spec.Containers {
			candidates = append(candidates, pod.Spec.Containers[i].Name)
		}
	}
	logger := klog.FromContext(ctx)
	type stop struct {
		spec *corev1.Container
		rc   *criruntime.Container
		id   string
	}
	var stops []stop
	for _, name := range candidates {
		spec := findContainer(pod.Spec.Containers, name)
		meta := findMeta(set, name)
		if spec == nil || meta == nil {
			continue
		}
		rc := criruntime.Current(containers, name)
		if rc == nil || rc.State != criruntime.StateRunning {
			continue // the kubelet is creating the next instance
		}
		have := meta.Hashes.ExtractedEnvFromMetadataHash
		if have == 0 {
			continue // environment unknown: sync retries
		}
		want := inplaceupdate.EnvFromMetadataHash(spec, pod)
		if have == want {
			continue
		}
		if !listed[name] && (later[name] || current[name] && meta.Hashes.PlainHash != inplaceupdate.KubeletContainerHash(spec)) {
			// The kubelet replaces this instance for its new image (now, or in a later batch of
			// the update), and the new one reads the Pod's values then: restarting it first
			// would restart it twice (OpenKruise issue #1239).
			continue
		}
		pending = true
		if c.stopped.has(rc.ID) {
			continue
		}
		if pod.Spec.RestartPolicy != "" && pod.Spec.RestartPolicy != corev1.RestartPolicyAlways {
			// Stopped, the container would not be started again (Never), or maybe not (OnFailure
			// with a clean exit on SIGTERM): leave it and say why, once per instance.
			if c.warned.add(rc.ID) {
				c.recorder.Eventf(pod, corev1.EventTypeWarning, reasonEnvRestartPolicy,
					"Not restarting container %s for new env from metadata: restartPolicy is %s", name, pod.Spec.RestartPolicy)
			}
			continue
		}
		if seen := c.needRestart.age(fmt.Sprintf("%s/%d", rc.ID, want)); seen < c.cfg.EnvRestartDelay {
			continue // pending: looked at again after PendingRequeue
		}
		stops = append(stops, stop{spec: spec, rc: rc, id: meta.ContainerID})
	}

	grace := c.gracePeriod(pod)
	errs := make([]error, len(stops))
	var wg sync.WaitGroup
	for i, s := range stops {
		wg.Go(func() {
			logger.Info("Stopping container so that it restarts with new env from metadata",
				"container", s.spec.Name, "containerID", s.id, "gracePeriod", grace, "listedByUpdate", listed[s.spec.Name])
			c.recorder.Eventf(pod, corev1.EventTypeNormal, reasonEnvRestart,
				"Stopping container %s (%s) so that the kubelet starts it again with the new label/annotation values it reads through env", s.spec.Name, s.id)
			if err := c.runtime.StopContainer(ctx, s.rc.ID, grace); err != nil {
				containerStops.WithLabelValues("error").Inc()
				c.recorder.Eventf(pod, corev1.EventTypeWarning, reasonEnvRestartFailed, "Stopping container %s (%s) failed: %v", s.spec.Name, s.id, err)
				errs[i] = fmt.Errorf("container %s: %w", s.spec.Name, err)
				return
			}
			c.stopped.add(s.rc.ID)
			containerStops.WithLabelValues("success").Inc()
		})
	}
	wg.Wait()
	return pending, errors.Join(errs...)
}

// sweepsEnv tells whether every container of the Pod is checked for stale env from metadata, as
// OpenKruise's daemon does: the Pod is owned by an apps.kruise.io workload or injected by a
// SidecarSet, its InPlaceUpdateReady condition is False, and no grace period runs.
func sweepsEnv(pod *corev1.Pod) bool {
	if !kruiseManaged(pod) {
		return false
	}
	if inplaceupdate.InGracePeriod(pod) {
		return false
	}
	for i := range pod.Status.Conditions {
		if cond := &pod.Status.Conditions[i]; cond.Type == pub.InPlaceUpdateReady {
			return cond.Status == corev1.ConditionFalse
		}
	}
	return false
}

// imageChanges are the containers whose image the Pod's in-place update changes: in the batches
// begun so far (LastContainerStatuses; their running instance may be the new one already) and in
// later batches (NextContainerImages).
func imageChanges(pod *corev1.Pod) (begun, later map[string]bool) {
	st, ok, err := inplaceupdate.GetState(pod)
	if !ok || err != nil || !inplaceupdate.IsInProgress(pod) {
		return nil, nil
	}
	begun, later = map[string]bool{}, map[string]bool{}
	for name := range st.LastContainerStatuses {
		begun[name] = true
	}
	for name := range st.NextContainerImages {
		later[name] = true
	}
	return begun, later
}

// gracePeriod is the Pod's terminationGracePeriodSeconds (default 30s), capped.
func (c *Controller) gracePeriod(pod *corev1.Pod) time.Duration {
	grace := 30 * time.Second
	if s := pod.Spec.TerminationGracePeriodSeconds; s != nil && *s >= 0 {
		grace = time.Duration(*s) * time.Second
	}
	return min(grace, c.cfg.MaxStopGracePeriod)
}

func findContainer(containers []corev1.Container, name string) *corev1.Container {
	for i := range containers {
		if containers[i].Name == name {
			return &containers[i]
		}
	}
	return nil
}

func findMeta(set *pub.RuntimeContainerMetaSet, name string) *pub.RuntimeContainerMeta {
	for i := range set.Containers {
		if set.Containers[i].Name == name {
			return &set.Containers[i]
		}
	}
	return nil
}
