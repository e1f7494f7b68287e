package imagepull

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// defaultParallelism is how many nodes a job pulls on at once when spec.parallelism is unset
// (OpenKruise's default).
const defaultParallelism = 1

// TargetNodes returns the sorted names of the nodes an ImagePullJob pulls on, out of nodes.
//
// nodes are the candidates: the caller passes the nodes that have a NodeImage, since a node
// without one cannot be asked to pull (OpenKruise skips such nodes the same way). With
// spec.podSelector the targets are the nodes of the job's namespace's Pods that match and are
// Pending or Running (not terminating, already scheduled); with spec.selector.names the named
// nodes; with a label selector the nodes whose labels match; with neither selector every node.
func TargetNodes(job *v1alpha1.ImagePullJob, nodes []*corev1.Node, pods []*corev1.Pod) ([]string, error) {
	candidates := make(map[string]*corev1.Node, len(nodes))
	for _, n := range nodes {
		candidates[n.Name] = n
	}
	var targets sets.Set[string]
	var err error
	switch spec := &job.Spec; {
	case spec.PodSelector != nil:
		targets, err = nodesOfPods(job.Namespace, &spec.PodSelector.LabelSelector, pods)
	case spec.Selector != nil && len(spec.Selector.Names) > 0:
		targets = sets.New(spec.Selector.Names...)
	case spec.Selector != nil:
		targets, err = nodesMatching(&spec.Selector.LabelSelector, nodes)
	default:
		targets = sets.KeySet(candidates)
	}
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, targets.Len())
	for name := range targets {
		if _, ok := candidates[name]; ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

func nodesOfPods(namespace string, sel *metav1.LabelSelector, pods []*corev1.Pod) (sets.Set[string], error) {
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("invalid podSelector: %w", err)
	}
	out := sets.New[string]()
	for _, p := range pods {
		if p.Namespace == namespace && PodWantsImages(p) && selector.Matches(labels.Set(p.Labels)) {
			out.Insert(p.Spec.NodeName)
		}
	}
	return out, nil
}

// PodWantsImages says whether a Pod's node is worth pulling on (a podSelector job targets it): the
// Pod is placed and is not on its way out.
func PodWantsImages(p *corev1.Pod) bool {
	if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
		return false
	}
	return p.Status.Phase == corev1.PodPending || p.Status.Phase == corev1.PodRunning
}

func nodesMatching(sel *metav1.LabelSelector, nodes []*corev1.Node) (sets.Set[string], error) {
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("invalid selector: %w", err)
	}
	out := sets.New[string]()
	for _, n := range nodes {
		if selector.Matches(labels.Set(n.Labels)) {
			out.Insert(n.Name)
		}
	}
	return out, nil
}

// Parallelism is how many of a job's nodes may pull at the same time: spec.parallelism, 1 when
// unset, 0 (a paused job) for anything that is not a non-negative integer (validation refuses
// those; the guard keeps a bad stored value from starting every node at once).
func Parallelism(job *v1alpha1.ImagePullJob) int {
	p := job.Spec.Parallelism
	if p == nil {
		return defaultParallelism
	}
	return max(p.IntValue(), 0)
}

// NodesToStart returns the nodes, out of notSynced (nodes that do not have the job's tag in their
// NodeImage yet, as JobStatus reports them), whose NodeImage the controller should write now:
// as many as the parallelism leaves room for beside the active pulls, in name order so that
// successive reconciles pick the same ones.
func NodesToStart(job *v1alpha1.ImagePullJob, active int32, notSynced []string) []string {
	room := Parallelism(job) - int(active)
	if room <= 0 {
		return nil
	}
	sorted := slices.Sorted(slices.Values(notSynced))
	return sorted[:min(room, len(sorted))]
}
