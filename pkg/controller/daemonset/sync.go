package daemonset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/podreadiness"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
	"github.com/inplace-dev/inplace/pkg/workload/availability"
	"github.com/inplace-dev/inplace/pkg/workload/expectations"
	"github.com/inplace-dev/inplace/pkg/workload/history"
	"github.com/inplace-dev/inplace/pkg/workload/inplacerequest"
	"github.com/inplace-dev/inplace/pkg/workload/lifecycle"
	"github.com/inplace-dev/inplace/pkg/workload/ownership"
	"github.com/inplace-dev/inplace/pkg/workload/scaffold"
)

// nodeState is one node as the DaemonSet sees it: whether a Pod should run there, and the
// DaemonSet's Pods there. Pods on their way out are apart: terminating, or in PreparingDelete
// (released ones, which the preDelete hook no longer holds, are to be deleted); a node waits for
// them to go before it gets a new Pod, as it waits for a terminating one.
type nodeState struct {
	name        string
	node        *corev1.Node
	run         bool
	pods        []*corev1.Pod
	terminating int
	released    []*corev1.Pod
}

// sync brings one DaemonSet a step closer to its spec: revisions, then (once the cache shows what
// the last sync did) Pods per node, then the rolling update, then status and history.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	ds, selector, ok, err := c.Load(key)
	if !ok || err != nil {
		return 0, err
	}
	pods, revisions, err := c.claim(ctx, ds, selector)
	if err != nil {
		return 0, err
	}
	pods = withRevisionNames(ds, pods)
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return 0, err
	}
	revs, err := c.manageRevisions(ctx, ds, revisions)
	if err != nil {
		return scaffold.RevisionsFailed(err, ds.Status.CollisionCount, revs, func(count *int32) error {
			st := ds.Status.DeepCopy()
			st.CollisionCount = count
			return c.updateStatus(ctx, ds, st)
		})
	}
	states := nodeStates(ds, nodes, pods)

	var requeue time.Duration
	var actErr error
	var updated bool // the rolling update ran
	if ds.DeletionTimestamp == nil {
		if ok, left := c.Exp.Satisfied(key.String(), podState(pods)); ok {
			var acted bool
			readyErr := c.syncKruisePodReady(ctx, pods)
			// Before the Pods are touched, as OpenKruise: the first batch of an update starts
			// while the other nodes pull.
			preWait, preErr := c.preDownload(ctx, ds, revs, revisions)
			acted, requeue, actErr = c.manage(ctx, ds, states, revs)
			if !acted && actErr == nil {
				actErr = c.rollingUpdate(ctx, ds, states, revs, revisions)
				updated = true
			}
			requeue = reconcile.Soonest(requeue, preWait)
			actErr = errors.Join(readyErr, preErr, actErr)
		} else {
			requeue = left
		}
	}
	status, wait := calculateStatus(ds, states, revs, c.Clock.Now())
	setBudgetCondition(status, updated, actErr, c.Clock.Now())
	return c.Finish(ctx, actErr, func() error { return c.updateStatus(ctx, ds, status) },
		revisions, revs, pods, history.Limit(ds.Spec.RevisionHistoryLimit), requeue, wait)
}

// setBudgetCondition shows in the FailedUpdatePod condition the in-place updates
// PodUnavailableBudgets hold back (inplacerequest.SetBudgetCondition).
func setBudgetCondition(st *v1alpha1.DaemonSetStatus, updated bool, actErr error, now time.Time) {
	st.Conditions = inplacerequest.SetBudgetCondition(st.Conditions, updated, actErr, now,
		func(c appsv1.DaemonSetCondition) (string, corev1.ConditionStatus, string, metav1.Time) {
			return string(c.Type), c.Status, c.Reason, c.LastTransitionTime
		},
		func(message string, since metav1.Time) appsv1.DaemonSetCondition {
			return appsv1.DaemonSetCondition{Type: inplacerequest.ConditionFailedUpdatePod, Status: corev1.ConditionTrue,
				LastTransitionTime: since, Reason: inplacerequest.ReasonBlockedByBudget, Message: message}
		})
}

// withRevisionNames returns the Pods with the controller-revision-hash label as inplace reads it:
// the name of the revision. OpenKruise's DaemonSet (as kube's) labels a Pod with the hash only
// (its revision is named <daemonset>-<hash>); a Pod carried over from OpenKruise
// (kubectl inplace migrate) is read as at that revision, not as at an unknown one (which would
// roll every such Pod). Those Pods are copies: the cache is not written, nor is the Pod, whose
// label changes with its next update.
func withRevisionNames(ds *v1alpha1.DaemonSet, pods []*corev1.Pod) []*corev1.Pod {
	prefix := history.RevisionName(ds.Name, "")
	var out []*corev1.Pod
	for i, p := range pods {
		hash := p.Labels[appsv1.ControllerRevisionHashLabelKey]
		if hash == "" || strings.HasPrefix(hash, prefix) {
			continue
		}
		if out == nil {
			out = slices.Clone(pods)
		}
		c := p.DeepCopy()
		c.Labels[appsv1.ControllerRevisionHashLabelKey] = history.RevisionName(ds.Name, hash)
		out[i] = c
	}
	if out == nil {
		return pods
	}
	return out
}

// claim returns the DaemonSet's Pods and its revisions, oldest first. Like kube's DaemonSet, it
// adopts the orphan Pods and revisions its selector matches and releases those it owns but no
// longer matches.
func (c *Controller) claim(ctx context.Context, ds *v1alpha1.DaemonSet, selector labels.Selector) ([]*corev1.Pod, []*appsv1.ControllerRevision, error) {
	owner := ownership.Owner{Object: ds, Ref: controllerRef(ds), Wants: ownership.Selects(selector),
		Fresh: func(ctx context.Context) (metav1.Object, error) {
			return c.Inplace.AppsV1alpha1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
		}}
	return c.Owned.Claim(ctx, owner, c.Kube)
}

// syncKruisePodReady keeps KruisePodReady, on the Pods with that readiness gate, as their
// lifecycle state wants it: False in PreparingDelete (preDelete's markPodNotReady), else True (a
// new Pod gets it here). Nothing else reads it, so the sync goes on.
func (c *Controller) syncKruisePodReady(ctx context.Context, pods []*corev1.Pod) error {
	var errs []error
	for _, p := range pods {
		if p.DeletionTimestamp == nil && podreadiness.HasGate(p) {
			if _, err := lifecycle.SyncKruisePodReady(ctx, c.Kube.CoreV1(), p, lifecycle.State(p), c.Clock.Now()); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// podState is what the expectations see: Pods by name, and whether the DaemonSet has a Pod at a
// revision on a node (a created Pod's name is generated, so its creation is expected under
// creationKey, which tells a surge Pod apart from the old Pod beside it). Both come from the Pods
// this sync listed and acts on, never from the cache as it is a moment later: a Pod whose deletion
// or update reached the cache after the list would settle its expectation while the list still
// showed it as it was, and the sync act on that (the ReplicaSet controller avoids it by checking
// expectations before it lists).
func podState(owned []*corev1.Pod) expectations.Lookup {
	byName := make(map[string]*corev1.Pod, len(owned))
	for _, p := range owned {
		byName[p.Name] = p
	}
	return func(name string) expectations.Cached {
		if pod, ok := byName[name]; ok {
			return expectations.PodCached(pod)
		}
		for _, p := range owned {
			if creationKey(p) == name {
				return expectations.Cached{Exists: true}
			}
		}
		return expectations.Cached{}
	}
}

// creationKey is <node>@<revision>, the name a Pod's creation is expected under.
func creationKey(pod *corev1.Pod) string {
	return nodeOf(pod) + "@" + pod.Labels[appsv1.ControllerRevisionHashLabelKey]
}

func (c *Controller) manageRevisions(ctx context.Context, ds *v1alpha1.DaemonSet, revisions []*appsv1.ControllerRevision) (history.Revisions, error) {
	var collisionCount int32
	if ds.Status.CollisionCount != nil {
		collisionCount = *ds.Status.CollisionCount
	}
	data, err := history.TemplateData(&ds.Spec.Template)
	if err != nil {
		return history.Revisions{CollisionCount: collisionCount}, fmt.Errorf("encoding the template of DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	owner := history.Owner{Object: ds, Ref: controllerRef(ds), Labels: ds.Spec.Template.Labels}
	// The current revision is not tracked in a DaemonSet's status: the update revision is the
	// only one history.Manage needs to find or create.
	return history.Manage(ctx, c.Kube.AppsV1(), owner, data, revisions, "", collisionCount)
}

// nodeStates pairs every node (and every node name a Pod targets) with the DaemonSet's Pods, by
// node name.
func nodeStates(ds *v1alpha1.DaemonSet, nodes []*corev1.Node, pods []*corev1.Pod) []*nodeState {
	byName := map[string]*nodeState{}
	place := placementOf(ds)
	for _, n := range nodes {
		byName[n.Name] = &nodeState{name: n.Name, node: n, run: place.shouldRun(n)}
	}
	for _, p := range pods {
		name := nodeOf(p)
		st := byName[name]
		if st == nil {
			st = &nodeState{name: name}
			byName[name] = st
		}
		switch {
		case p.DeletionTimestamp != nil:
			st.terminating++
		case lifecycle.State(p) == pub.LifecycleStatePreparingDelete:
			st.terminating++
			if !lifecycle.WaitsForDeletion(ds.Spec.Lifecycle, p) {
				st.released = append(st.released, p)
			}
		default:
			st.pods = append(st.pods, p)
		}
	}
	out := make([]*nodeState, 0, len(byName))
	for _, st := range byName {
		slices.SortStableFunc(st.pods, func(a, b *corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b *nodeState) int { return strings.Compare(a.name, b.name) })
	return out
}

// burst is spec.burstReplicas against the desired number: the most Pods created or deleted in one
// sync.
func burst(ds *v1alpha1.DaemonSet, desired int) int {
	n := 250
	if ds.Spec.BurstReplicas != nil {
		if v, err := intstr.GetScaledValueFromIntOrPercent(ds.Spec.BurstReplicas, desired, true); err == nil {
			n = v
		}
	}
	return max(n, 1)
}

// managePlan is what manage does in one sync: the nodes to create a Pod on, the Pods to delete,
// and how long until a surge Pod that is ready becomes available and its node's old Pod is to go
// (0 when none waits): no event marks that moment, so the sync must look again then.
type managePlan struct {
	create []string
	delete []*corev1.Pod
	wait   time.Duration
}

// planManage creates a Pod on every node that should run one and has none, deletes the Pods of
// nodes that should not run one, failed Pods, Pods the preDelete hook released, and extra Pods (keeping, on a node with several, the
// one at the update revision that is available, else the oldest; a surge Pod not yet available
// and the old one beside it both stay, unless the old one is not ready): at most burstReplicas of
// each per sync.
func planManage(ds *v1alpha1.DaemonSet, states []*nodeState, updateRevision string, now time.Time) managePlan {
	var plan managePlan
	desired := 0
	for _, st := range states {
		plan.delete = append(plan.delete, st.released...)
		if !st.run {
			plan.delete = append(plan.delete, st.pods...)
			continue
		}
		desired++
		var alive []*corev1.Pod
		for _, p := range st.pods {
			if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
				plan.delete = append(plan.delete, p)
			} else {
				alive = append(alive, p)
			}
		}
		switch {
		case len(alive) == 0 && st.terminating == 0:
			plan.create = append(plan.create, st.name)
		case len(alive) > 1:
			keep := alive[0]
			for _, p := range alive {
				if ok, _ := availability.Available(p, ds.Spec.MinReadySeconds, now); ok && p.Labels[appsv1.ControllerRevisionHashLabelKey] == updateRevision {
					keep = p
				}
			}
			newest := alive[len(alive)-1]
			if len(alive) == 2 && newest.Labels[appsv1.ControllerRevisionHashLabelKey] == updateRevision && keep != newest {
				// The surge Pod is not available yet: the old one stays while it serves (an old
				// Pod that is not ready is no use to keep, as in kube's DaemonSet). Once ready the
				// surge Pod is available minReadySeconds after it turned Ready, and the old Pod
				// goes then.
				if !availability.Ready(keep) {
					plan.delete = append(plan.delete, keep)
					continue
				}
				_, left := availability.Available(newest, ds.Spec.MinReadySeconds, now)
				plan.wait = reconcile.Soonest(plan.wait, left)
				continue
			}
			for _, p := range alive {
				if p != keep {
					plan.delete = append(plan.delete, p)
				}
			}
		}
	}
	limit := burst(ds, desired)
	plan.create = plan.create[:min(len(plan.create), limit)]
	plan.delete = plan.delete[:min(len(plan.delete), limit)]
	return plan
}

// manage carries out planManage and says whether it did anything, and when to look again for a
// surge Pod about to become available.
func (c *Controller) manage(ctx context.Context, ds *v1alpha1.DaemonSet, states []*nodeState, revs history.Revisions) (bool, time.Duration, error) {
	plan := planManage(ds, states, revs.Update.Name, c.Clock.Now())
	if len(plan.create) == 0 && len(plan.delete) == 0 {
		return false, plan.wait, nil
	}
	var errs []error
	for _, p := range plan.delete {
		errs = append(errs, c.deletePod(ctx, ds, p, "deleting a daemon Pod that should not run or is extra"))
	}
	for _, node := range plan.create {
		errs = append(errs, c.createPod(ctx, ds, revs.Update, node))
	}
	return true, plan.wait, errors.Join(errs...)
}

func (c *Controller) createPod(ctx context.Context, ds *v1alpha1.DaemonSet, rev *appsv1.ControllerRevision, node string) error {
	template, err := history.Template(rev)
	if err != nil {
		return err
	}
	pod := newPod(ds, template, rev.Name, node)
	key := cache.MetaObjectToName(ds).String()
	c.Exp.ExpectCreations(key, creationKey(pod))
	created, err := c.Kube.CoreV1().Pods(ds.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		c.Exp.CreationObserved(key, creationKey(pod))
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		c.Recorder.Eventf(ds, corev1.EventTypeWarning, ownership.ReasonFailedCreate, "failed to create a pod for node %s: %v", node, err)
		return fmt.Errorf("creating the pod of node %s: %w", node, err)
	}
	klog.FromContext(ctx).Info("Created daemon Pod", "daemonset", klog.KObj(ds), "pod", klog.KObj(created), "node", node, "revision", rev.Name)
	c.Recorder.Eventf(ds, corev1.EventTypeNormal, ownership.ReasonSuccessfulCreate, "Created pod: %s on node %s", created.Name, node)
	return nil
}

// deletePod deletes a daemon Pod (that very Pod: a precondition on its UID), expected first. A Pod
// the preDelete hook holds is not deleted: it moves to PreparingDelete and waits there, out of the
// node's Pods, until the hook releases it (as OpenKruise's syncWithPreparingDelete).
func (c *Controller) deletePod(ctx context.Context, ds *v1alpha1.DaemonSet, pod *corev1.Pod, why string) error {
	key := cache.MetaObjectToName(ds).String()
	if lifecycle.Hooked(lifecycle.PreDeleteHook(ds.Spec.Lifecycle), pod) {
		moved, err := lifecycle.Move(ctx, c.Kube.CoreV1(), pod, pub.LifecycleStatePreparingDelete, nil, c.Clock.Now())
		if moved {
			c.Exp.ExpectLifecycle(key, pod.Name, string(pub.LifecycleStatePreparingDelete))
			klog.FromContext(ctx).Info("Daemon Pod held by the preDelete hook", "daemonset", klog.KObj(ds), "pod", klog.KObj(pod), "why", why)
			c.Recorder.Eventf(ds, corev1.EventTypeNormal, ownership.ReasonPodLifecyclePrefix+string(pub.LifecycleStatePreparingDelete), "pod %s is %s", pod.Name, pub.LifecycleStatePreparingDelete)
		}
		return err
	}
	if err := c.DeletePod(ctx, ds, pod); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Deleted daemon Pod", "daemonset", klog.KObj(ds), "pod", klog.KObj(pod), "node", nodeOf(pod), "why", why)
	c.Recorder.Eventf(ds, corev1.EventTypeNormal, ownership.ReasonSuccessfulDelete, "Deleted pod: %s (%s)", pod.Name, why)
	return nil
}

// calculateStatus counts nodes and Pods as OpenKruise's DaemonSet status does.
func calculateStatus(ds *v1alpha1.DaemonSet, states []*nodeState, revs history.Revisions, now time.Time) (*v1alpha1.DaemonSetStatus, time.Duration) {
	st := ds.Status.DeepCopy()
	st.ObservedGeneration = ds.Generation
	st.CollisionCount = &revs.CollisionCount
	st.DaemonSetHash = revs.Update.Name
	st.DesiredNumberScheduled, st.CurrentNumberScheduled, st.NumberMisscheduled = 0, 0, 0
	st.NumberReady, st.NumberAvailable, st.UpdatedNumberScheduled = 0, 0, 0
	var wait time.Duration
	for _, s := range states {
		if s.run {
			st.DesiredNumberScheduled++
		}
		if len(s.pods) == 0 {
			continue
		}
		if !s.run {
			st.NumberMisscheduled++
			continue
		}
		st.CurrentNumberScheduled++
		// The Pod that counts for the node is the oldest, as in kube's and OpenKruise's DaemonSet: a
		// node with a surge Pod beside the old one is updated once the old one is gone.
		p := s.pods[0]
		if availability.Ready(p) {
			st.NumberReady++
		}
		ok, left := availability.Available(p, ds.Spec.MinReadySeconds, now)
		if ok {
			st.NumberAvailable++
		}
		wait = reconcile.Soonest(wait, left)
		if p.Labels[appsv1.ControllerRevisionHashLabelKey] == revs.Update.Name {
			st.UpdatedNumberScheduled++
		}
	}
	st.NumberUnavailable = max(st.DesiredNumberScheduled-st.NumberAvailable, 0)
	return st, wait
}

func (c *Controller) updateStatus(ctx context.Context, ds *v1alpha1.DaemonSet, status *v1alpha1.DaemonSetStatus) error {
	if equality.Semantic.DeepEqual(&ds.Status, status) {
		return nil
	}
	fresh := ds.DeepCopy()
	fresh.Status = *status
	if _, err := c.Inplace.AppsV1alpha1().DaemonSets(ds.Namespace).UpdateStatus(ctx, fresh, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating the status of DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	return nil
}
