// Package updatesort orders the Pods of a workload for an update, as OpenKruise's CloneSet and
// SidecarSet controllers do: not-ready Pods first, then spec.updateStrategy.priorityStrategy, then
// the default order, and scatterStrategy spreads the Pods of each of its terms over that order.
// Pure logic over Pods; the CloneSet and SidecarSet controllers share it.
package updatesort

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// Partition is an updateStrategy.partition as a number of the replicas Pods, as OpenKruise counts
// it (CalculatePartitionReplicas): a percentage rounds up, except that a percentage below 100%
// keeps at least one Pod updated when there are several ("99%" of 4 is 3, not 4); nil is 0.
func Partition(p *intstr.IntOrString, replicas int) int {
	if p == nil {
		return 0
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(p, replicas, true)
	if err != nil {
		return 0
	}
	if replicas > 1 && n == replicas && p.Type == intstr.String && p.StrVal != "100%" {
		n = replicas - 1
	}
	return min(max(n, 0), replicas)
}

// Sort is ByPriority then Scatter.
func Sort(pods []*corev1.Pod, priority *pub.UpdatePriorityStrategy, scatter pub.UpdateScatterStrategy, ready func(*corev1.Pod) bool) {
	ByPriority(pods, priority, ready)
	Scatter(pods, scatter)
}

// podReadyCondition is the Pod's Ready condition, or nil.
func podReadyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// ByPriority orders Pods the first to update first: not ready (ready says which are), then by
// priorityStrategy when set, then as OpenKruise's default (kube's ActivePods order): not on a node,
// pending before running, ready for the shortest time, most restarts, newest, then by name.
func ByPriority(pods []*corev1.Pod, priority *pub.UpdatePriorityStrategy, ready func(*corev1.Pod) bool) {
	weights := weightSelectors(priority)
	slices.SortStableFunc(pods, func(a, b *corev1.Pod) int {
		if d := BoolRank(ready(a)) - BoolRank(ready(b)); d != 0 {
			return d
		}
		if d := comparePriority(a, b, priority, weights); d != 0 {
			return d
		}
		if d := BoolRank(a.Spec.NodeName != "") - BoolRank(b.Spec.NodeName != ""); d != 0 {
			return d
		}
		if d := PhaseRank(a) - PhaseRank(b); d != 0 {
			return d
		}
		if ca, cb := podReadyCondition(a), podReadyCondition(b); ready(a) && ready(b) && ca != nil && cb != nil &&
			!ca.LastTransitionTime.Equal(&cb.LastTransitionTime) {
			if cb.LastTransitionTime.Before(&ca.LastTransitionTime) {
				return -1
			}
			return 1
		}
		if d := restarts(b) - restarts(a); d != 0 {
			return int(d)
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			if b.CreationTimestamp.Before(&a.CreationTimestamp) {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// BoolRank is 1 for true, 0 for false: sorts false first.
func BoolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// PhaseRank orders Pod phases Pending, Unknown, Running.
func PhaseRank(p *corev1.Pod) int {
	switch p.Status.Phase {
	case corev1.PodPending:
		return 0
	case corev1.PodUnknown:
		return 1
	case corev1.PodRunning:
		return 2
	}
	return 0
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n = max(n, s.RestartCount)
	}
	return n
}

type weightTerm struct {
	weight   int64
	selector labels.Selector
}

func weightSelectors(priority *pub.UpdatePriorityStrategy) []weightTerm {
	if priority == nil {
		return nil
	}
	var terms []weightTerm
	for _, w := range priority.WeightPriority {
		sel, err := metav1.LabelSelectorAsSelector(&w.MatchSelector)
		if err != nil {
			continue
		}
		terms = append(terms, weightTerm{weight: int64(w.Weight), selector: sel})
	}
	return terms
}

// comparePriority orders two Pods by priorityStrategy: the larger sum of the weights whose
// selector matches first; or, by orderPriority, the Pod whose value of the earliest key it has is
// the larger integer (the digits its value ends with) first. A Pod with none of the keys comes
// after those with one.
func comparePriority(a, b *corev1.Pod, priority *pub.UpdatePriorityStrategy, weights []weightTerm) int {
	if priority == nil {
		return 0
	}
	if len(priority.WeightPriority) > 0 {
		wa, wb := podWeight(a, weights), podWeight(b, weights)
		switch {
		case wa > wb:
			return -1
		case wa < wb:
			return 1
		}
		return 0
	}
	la, oa := orderPriority(a, priority.OrderPriority)
	lb, ob := orderPriority(b, priority.OrderPriority)
	switch {
	case la != lb:
		return la - lb
	case oa > ob:
		return -1
	case oa < ob:
		return 1
	}
	return 0
}

func podWeight(p *corev1.Pod, weights []weightTerm) int64 {
	var w int64
	for _, t := range weights {
		if t.selector.Matches(labels.Set(p.Labels)) {
			w += t.weight
		}
	}
	return w
}

// orderPriority is the index of the first ordered key the Pod has (len(terms) when none) and the
// integer its value ends with.
func orderPriority(p *corev1.Pod, terms []pub.UpdatePriorityOrderTerm) (int, int64) {
	for i, t := range terms {
		if v, ok := p.Labels[t.OrderedKey]; ok {
			return i, integerSuffix(v)
		}
	}
	return len(terms), 0
}

// integerSuffix is the number the string ends with ("web-12" → 12), 0 when none.
func integerSuffix(s string) int64 {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	var n int64
	for _, ch := range s[i:] {
		if n > (1<<62)/10 {
			break
		}
		n = n*10 + int64(ch-'0')
	}
	return n
}

// Scatter reorders pods so that, for each term of the scatter strategy, the Pods carrying that
// label spread evenly over the order instead of bunching (say, all Pods of one zone first). Each
// Pod gets an ideal place in [0,1): the j-th of k matching Pods (j+0.5)/k, the i-th of the m others
// (i+0.5)/m, and the two lists merge by it; both keep their relative order. A term matched by
// fewer than two Pods, or by all, changes nothing. Terms apply in order, so a later term may
// loosen an earlier one's spread.
func Scatter(pods []*corev1.Pod, terms pub.UpdateScatterStrategy) {
	for _, t := range terms {
		var matched, others []*corev1.Pod
		for _, p := range pods {
			if v, ok := p.Labels[t.Key]; ok && v == t.Value {
				matched = append(matched, p)
			} else {
				others = append(others, p)
			}
		}
		k, m := len(matched), len(others)
		if k < 2 || m == 0 {
			continue
		}
		i, j := 0, 0
		for n := range pods {
			// Compare (j+0.5)/k with (i+0.5)/m without division; a tie goes to the other Pods.
			if i == m || (j < k && (2*j+1)*m < (2*i+1)*k) {
				pods[n] = matched[j]
				j++
			} else {
				pods[n] = others[i]
				i++
			}
		}
	}
}
