// Package podbudget is the arithmetic of PodUnavailableBudgets (policy.kruise.io), as OpenKruise
// v1.9 counts them (pkg/controller/podunavailablebudget, pkg/control/pubcontrol): which operations
// a budget protects, which Pods it leaves out, how many of its Pods must stay available, how many
// are, and the status that follows; and Charge, which takes one unit of the budget for a Pod about
// to be disrupted. Pure logic over a budget and Pods: the controller, the Pod subresources and the
// Pod webhook call it.
package podbudget

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/inplace-dev/inplace/pkg/apis/policy"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
)

const (
	// DeletionTimeout is how long a Pod charged for a deletion or eviction (status.disruptedPods)
	// counts as gone before the budget has seen it go; after it the entry is dropped.
	DeletionTimeout = 20 * time.Second
	// UpdateTimeout is how long a Pod charged for an in-place change (status.unavailablePods)
	// counts as unavailable whatever its status says, covering the time the change takes to show
	// in the Pod's status.
	UpdateTimeout = 10 * time.Second
	// MaxRecordedPods bounds status.disruptedPods plus status.unavailablePods, as OpenKruise does:
	// past it a budget refuses further charges.
	MaxRecordedPods = 2000
)

// defaultOperations are the operations a budget protects when it lists none.
var defaultOperations = []policy.PubOperation{policy.PubDeleteOperation, policy.PubUpdateOperation, policy.PubEvictOperation}

// Protects tells whether the budget checks op.
func Protects(spec *policy.PodUnavailableBudgetSpec, op policy.PubOperation) bool {
	ops := spec.ProtectOperations
	if len(ops) == 0 {
		ops = defaultOperations
	}
	return slices.Contains(ops, op)
}

// Ignored tells whether the budget leaves the Pod out: annotated pub.kruise.io/no-protect "true",
// or selected by spec.ignoredPodSelector.
func Ignored(spec *policy.PodUnavailableBudgetSpec, pod *corev1.Pod) (bool, error) {
	if pod.Annotations[policy.PodPubNoProtectionAnnotation] == "true" {
		return true, nil
	}
	if spec.IgnoredPodSelector == nil {
		return false, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(spec.IgnoredPodSelector)
	if err != nil {
		return false, fmt.Errorf("spec.ignoredPodSelector: %w", err)
	}
	return sel.Matches(labels.Set(pod.Labels)), nil
}

// DesiredAvailable is how many of total Pods must stay available: total minus maxUnavailable
// (a percentage rounded up), not below 0; or minAvailable (a percentage rounded up).
func DesiredAvailable(spec *policy.PodUnavailableBudgetSpec, total int32) (int32, error) {
	switch {
	case spec.MaxUnavailable != nil:
		maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, int(total), true)
		if err != nil {
			return 0, fmt.Errorf("spec.maxUnavailable: %w", err)
		}
		return max(total-int32(maxUnavailable), 0), nil
	case spec.MinAvailable != nil:
		minAvailable, err := intstr.GetScaledValueFromIntOrPercent(spec.MinAvailable, int(total), true)
		if err != nil {
			return 0, fmt.Errorf("spec.minAvailable: %w", err)
		}
		return int32(minAvailable), nil
	}
	return 0, nil
}

// Active is a Pod that is not terminating and has not ended.
func Active(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// Available is a Pod that counts as available to a budget, as OpenKruise judges it: running and
// Ready, no unavailable-pod.kruise.io/ label, and no in-place update or sidecar upgrade under way
// (its containers run the spec it has).
func Available(pod *corev1.Pod) bool {
	if !Active(pod) || pod.Status.Phase != corev1.PodRunning || !ready(pod) {
		return false
	}
	for k := range pod.Labels {
		if strings.HasPrefix(k, policy.PubUnavailablePodLabelPrefix) {
			return false
		}
	}
	return !inplaceupdate.AnyInProgress(pod)
}

func ready(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Operation is what an in-place update spec does to a Pod, as a budget protects it: UPDATE when
// a container restarts (a new image, new env-from-metadata values) or an unavailable-pod.kruise.io/
// label is added; RESIZE for a resize alone whose containers all resize without a restart;
// nothing (false) for a change of labels and annotations alone, which leaves the Pod available.
func Operation(pod *corev1.Pod, spec *inplaceupdate.UpdateSpec) (policy.PubOperation, bool) {
	if len(spec.ContainerImages) > 0 || spec.UpdateEnvFromMetadata {
		return policy.PubUpdateOperation, true
	}
	if spec.Metadata != nil {
		for k := range spec.Metadata.Labels {
			if strings.HasPrefix(k, policy.PubUnavailablePodLabelPrefix) && pod.Labels[k] == "" {
				return policy.PubUpdateOperation, true
			}
		}
	}
	if len(spec.ContainerResources) == 0 {
		return "", false
	}
	for name, res := range spec.ContainerResources {
		c := inplaceupdate.FindContainer(pod.Spec.Containers, name)
		if c == nil {
			continue
		}
		for _, p := range c.ResizePolicy {
			if p.RestartPolicy == corev1.RestartContainer && resourceChanges(c.Resources, res, p.ResourceName) {
				return policy.PubUpdateOperation, true
			}
		}
	}
	return policy.PubResizeOperation, true
}

func resourceChanges(old, new corev1.ResourceRequirements, name corev1.ResourceName) bool {
	return !old.Requests[name].Equal(new.Requests[name]) || !old.Limits[name].Equal(new.Limits[name])
}

// UpdateOperation is what a write of a Pod from old to new does, as a budget protects it, when the
// write does not come through pods/inplaceupdate (OpenKruise's webhook: IsPodUnavailableChanged,
// CanResizeInplace): nothing (false) when the spec stays and no unavailable-pod.kruise.io/ label
// is added; RESIZE when only containers' cpu and memory change and every changed resource resizes
// without a restart; UPDATE otherwise.
func UpdateOperation(old, new *corev1.Pod) (policy.PubOperation, bool) {
	for k := range new.Labels {
		if _, had := old.Labels[k]; strings.HasPrefix(k, policy.PubUnavailablePodLabelPrefix) && !had {
			return policy.PubUpdateOperation, true
		}
	}
	if equality.Semantic.DeepEqual(old.Spec, new.Spec) {
		return "", false
	}
	if resizesInPlace(old, new) {
		return policy.PubResizeOperation, true
	}
	return policy.PubUpdateOperation, true
}

// resizesInPlace: the two specs differ only in their containers' resources, each changed resource
// is cpu or memory (what the kubelet resizes in place), and no changed one has the resize policy
// RestartContainer.
func resizesInPlace(old, new *corev1.Pod) bool {
	if len(old.Spec.Containers) != len(new.Spec.Containers) {
		return false
	}
	oldBare, newBare := old.Spec.DeepCopy(), new.Spec.DeepCopy()
	for i := range oldBare.Containers {
		oldBare.Containers[i].Resources = corev1.ResourceRequirements{}
		newBare.Containers[i].Resources = corev1.ResourceRequirements{}
	}
	if !equality.Semantic.DeepEqual(oldBare, newBare) {
		return false
	}
	for i, c := range new.Spec.Containers {
		was := old.Spec.Containers[i].Resources
		for _, list := range []corev1.ResourceList{was.Requests, was.Limits, c.Resources.Requests, c.Resources.Limits} {
			for name := range list {
				if !resourceSetChanges(was, c.Resources, name) {
					continue
				}
				if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
					return false
				}
				for _, p := range c.ResizePolicy {
					if p.ResourceName == name && p.RestartPolicy == corev1.RestartContainer {
						return false
					}
				}
			}
		}
	}
	return true
}

// resourceSetChanges: the resource is set in one and not the other, or to another value.
func resourceSetChanges(old, new corev1.ResourceRequirements, name corev1.ResourceName) bool {
	changed := func(a, b corev1.ResourceList) bool {
		x, inA := a[name]
		y, inB := b[name]
		return inA != inB || !x.Equal(y)
	}
	return changed(old.Requests, new.Requests) || changed(old.Limits, new.Limits)
}

// Related is the name of the budget a Pod is annotated with (either key), "" when none.
func Related(pod *corev1.Pod) string {
	if name := pod.Annotations[policy.PodRelatedPubAnnotation]; name != "" {
		return name
	}
	return pod.Annotations[policy.DeprecatedPodRelatedPubAnnotation]
}

// Status is the budget's status for its Pods at now: the recorded Pods that still count (their
// timeouts not passed, the Pods still there and active; a Pod recorded for an in-place change no
// longer once it shows that change began, see inplaceupdate.LatestUpdateStart), the available Pods among the others
// (Available tells), and the number that may be made unavailable. recheck is when the next
// recorded entry times out (nil when none is left): the status changes then without any event.
func Status(pub *policy.PodUnavailableBudget, pods []*corev1.Pod, total, desired int32, now time.Time) (st policy.PodUnavailableBudgetStatus, recheck *time.Time) {
	st = policy.PodUnavailableBudgetStatus{ObservedGeneration: pub.Generation, TotalReplicas: total, DesiredAvailable: desired}
	keep := func(recorded map[string]metav1.Time, name string, timeout time.Duration) (metav1.Time, bool) {
		at, ok := recorded[name]
		if !ok {
			return metav1.Time{}, false
		}
		until := at.Add(timeout)
		if !until.After(now) {
			return metav1.Time{}, false
		}
		if recheck == nil || until.Before(*recheck) {
			recheck = &until
		}
		return at, true
	}
	for _, pod := range pods {
		if !Active(pod) {
			continue
		}
		disrupted, d := keep(pub.Status.DisruptedPods, pod.Name, DeletionTimeout)
		if d {
			st.DisruptedPods = setTime(st.DisruptedPods, pod.Name, disrupted)
		}
		unavailable, u := keep(pub.Status.UnavailablePods, pod.Name, UpdateTimeout)
		if u && !inplaceupdate.LatestUpdateStart(pod).Before(unavailable.Time) {
			// The Pod shows the in-place change charged (its state began at the charge, as
			// pods/inplaceupdate writes both with one time): from here its own state says whether
			// it is available, and the unit comes back as soon as it is again, not at the timeout.
			u = false
		}
		if u {
			st.UnavailablePods = setTime(st.UnavailablePods, pod.Name, unavailable)
		}
		if !d && !u && Available(pod) {
			st.CurrentAvailable++
		}
	}
	st.UnavailableAllowed = max(st.CurrentAvailable-desired, 0)
	return st, recheck
}

func setTime(m map[string]metav1.Time, name string, at metav1.Time) map[string]metav1.Time {
	if m == nil {
		m = map[string]metav1.Time{}
	}
	m[name] = at
	return m
}

// ErrNoBudget is returned by Charge when the budget allows no more unavailable Pods.
type ErrNoBudget struct {
	Name    string
	Status  policy.PodUnavailableBudgetStatus
	Message string
}

func (e *ErrNoBudget) Error() string { return e.Message }

// Charge takes one unit of the budget for pod, about to be disrupted by op at now: the status
// the budget must be written with (compare-and-swap on its resourceVersion, so that two
// concurrent charges cannot both take the last unit), or an *ErrNoBudget saying why not. A Pod
// already recorded for op is not charged twice (the status comes back unchanged, charged false).
func Charge(pub *policy.PodUnavailableBudget, pod string, op policy.PubOperation, now time.Time) (st policy.PodUnavailableBudgetStatus, charged bool, err error) {
	st = *pub.Status.DeepCopy()
	recorded := &st.UnavailablePods
	if op == policy.PubDeleteOperation || op == policy.PubEvictOperation {
		recorded = &st.DisruptedPods
	}
	if _, ok := (*recorded)[pod]; ok {
		return st, false, nil
	}
	switch {
	case pub.Status.ObservedGeneration < pub.Generation:
		return st, false, &ErrNoBudget{Name: pub.Name, Status: st, Message: fmt.Sprintf(
			"PodUnavailableBudget %s is being updated (generation %d not yet counted): try again", pub.Name, pub.Generation)}
	case st.UnavailableAllowed <= 0:
		return st, false, &ErrNoBudget{Name: pub.Name, Status: st, Message: fmt.Sprintf(
			"PodUnavailableBudget %s allows no more unavailable Pods: %d available, %d must stay available", pub.Name, st.CurrentAvailable, st.DesiredAvailable)}
	case len(st.DisruptedPods)+len(st.UnavailablePods) >= MaxRecordedPods:
		return st, false, &ErrNoBudget{Name: pub.Name, Status: st, Message: fmt.Sprintf(
			"PodUnavailableBudget %s records %d Pods being disrupted, its most: try again once they are done", pub.Name, MaxRecordedPods)}
	}
	st.UnavailableAllowed--
	*recorded = setTime(*recorded, pod, metav1.NewTime(now))
	return st, true, nil
}

// Conflict names the budget among others that protects the same Pods as pub, as OpenKruise's
// webhook judges it (a Pod may be guarded by one budget only): the same workload (targetRef of
// the same group, kind and name), or selectors that overlap loosely — the same label keys, whose
// requirements can all be met at once (OpenKruise's util.IsSelectorLooseOverlap: {app: web} and
// {app: web, tier: db} do not conflict). field is the path to name in the refusal; "" when none
// conflicts. pub itself (same name) is skipped.
func Conflict(pub *policy.PodUnavailableBudget, others []*policy.PodUnavailableBudget) (name, field string) {
	for _, o := range others {
		if o.Name == pub.Name || o.Namespace != pub.Namespace {
			continue
		}
		a, b := pub.Spec, o.Spec
		switch {
		case a.TargetReference != nil && b.TargetReference != nil:
			if sameWorkload(a.TargetReference, b.TargetReference) {
				return o.Name, "spec.targetRef"
			}
		case a.Selector != nil && b.Selector != nil:
			if looseOverlap(a.Selector, b.Selector) {
				return o.Name, "spec.selector"
			}
		}
	}
	return "", ""
}

func sameWorkload(a, b *policy.TargetReference) bool {
	ga, _ := schema.ParseGroupVersion(a.APIVersion)
	gb, _ := schema.ParseGroupVersion(b.APIVersion)
	return ga.Group == gb.Group && a.Kind == b.Kind && a.Name == b.Name
}

// looseOverlap: both selectors require the same keys, and for each key the two requirements can
// be met by one value.
func looseOverlap(s1, s2 *metav1.LabelSelector) bool {
	r1, r2 := requirements(s1), requirements(s2)
	if len(r1) != len(r2) {
		return false
	}
	for k, a := range r1 {
		b, ok := r2[k]
		if !ok || !requirementsOverlap(a, b) || !requirementsOverlap(b, a) {
			return false
		}
	}
	return true
}

// requirements are a selector's requirements by key, matchLabels as In (one per key, the
// matchLabels entry winning, as OpenKruise's convertSelectorToMatchExpressions).
func requirements(s *metav1.LabelSelector) map[string]metav1.LabelSelectorRequirement {
	out := map[string]metav1.LabelSelectorRequirement{}
	for _, r := range s.MatchExpressions {
		out[r.Key] = r
	}
	for k, v := range s.MatchLabels {
		out[k] = metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{v}}
	}
	return out
}

// requirementsOverlap is OpenKruise's isMatchExpOverlap(a, b).
func requirementsOverlap(a, b metav1.LabelSelectorRequirement) bool {
	switch a.Operator {
	case metav1.LabelSelectorOpIn:
		switch b.Operator {
		case metav1.LabelSelectorOpExists:
			return true
		case metav1.LabelSelectorOpIn:
			return slices.ContainsFunc(a.Values, func(v string) bool { return slices.Contains(b.Values, v) })
		case metav1.LabelSelectorOpNotIn:
			return !containsAll(b.Values, a.Values)
		}
	case metav1.LabelSelectorOpExists:
		return b.Operator != metav1.LabelSelectorOpDoesNotExist
	case metav1.LabelSelectorOpNotIn:
		switch b.Operator {
		case metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist, metav1.LabelSelectorOpNotIn:
			return true
		case metav1.LabelSelectorOpIn:
			return !containsAll(a.Values, b.Values)
		}
	case metav1.LabelSelectorOpDoesNotExist:
		return b.Operator == metav1.LabelSelectorOpDoesNotExist || b.Operator == metav1.LabelSelectorOpNotIn
	}
	return false
}

// containsAll: every value of sub is in set.
func containsAll(set, sub []string) bool {
	for _, v := range sub {
		if !slices.Contains(set, v) {
			return false
		}
	}
	return true
}
