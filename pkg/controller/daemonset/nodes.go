package daemonset

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/workload/lifecycle"
	"github.com/inplace-dev/inplace/pkg/workload/ownership"
)

// daemonTolerations are the tolerations kube's DaemonSet controller gives every daemon Pod, so that
// a node agent keeps running on a node under pressure, not ready or cordoned.
var daemonTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

func controllerRef(ds *v1alpha1.DaemonSet) *metav1.OwnerReference {
	return metav1.NewControllerRef(ds, v1alpha1.SchemeGroupVersion.WithKind("DaemonSet"))
}

// newPod is the daemon Pod of a node at a revision, as kube's DaemonSet controller builds it: the
// template, the daemon tolerations, and a required node affinity on the node's name (the scheduler
// binds it there, accounting for its resources); plus the InPlaceUpdateReady readiness gate, and
// KruisePodReady when a lifecycle hook marks Pods not ready.
func newPod(ds *v1alpha1.DaemonSet, template *corev1.PodTemplateSpec, revision, node string) *corev1.Pod {
	pod := ownership.NewPod(template, ds.Namespace, controllerRef(ds), revision)
	pod.GenerateName = ds.Name + "-"
	pod.Spec.Tolerations = withDaemonTolerations(pod.Spec.Tolerations)
	setNodeAffinity(pod, node)
	inplaceupdate.InjectReadinessGate(pod)
	if lifecycle.MarksPodNotReady(ds.Spec.Lifecycle) {
		// For preDelete's markPodNotReady; the sync keeps the condition True otherwise.
		lifecycle.InjectKruisePodReadyGate(pod)
	}
	return pod
}

// setNodeAffinity requires the node by name (metadata.name), replacing any matchFields term of the
// template's required node affinity and keeping its label terms, as kube's DaemonSet does.
func setNodeAffinity(pod *corev1.Pod, node string) {
	req := corev1.NodeSelectorRequirement{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := pod.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		terms[i].MatchFields = []corev1.NodeSelectorRequirement{req}
	}
}

// nodeOf is the node a daemon Pod is for: where it is bound, else the node its affinity names.
func nodeOf(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, f := range term.MatchFields {
				if f.Key == metav1.ObjectNameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
					return f.Values[0]
				}
			}
		}
	}
	return ""
}

// withDaemonTolerations is tolerations plus those of daemonTolerations it lacks.
func withDaemonTolerations(tolerations []corev1.Toleration) []corev1.Toleration {
	out := slices.Clone(tolerations)
	for _, t := range daemonTolerations {
		if !slices.ContainsFunc(out, func(have corev1.Toleration) bool { return have.MatchToleration(&t) }) {
			out = append(out, t)
		}
	}
	return out
}

// placement says which nodes should run a DaemonSet's Pod, with kube's scheduling predicates
// (k8s.io/component-helpers): the template's node selector and required node affinity match the
// node, and every NoSchedule and NoExecute taint of the node is tolerated (with the daemon
// tolerations). It is built once per sync and asked for every node.
type placement struct {
	affinity    nodeaffinity.RequiredNodeAffinity
	tolerations []corev1.Toleration
}

// placementOf reads the template. A daemon Pod's affinity terms also require its node by name
// (setNodeAffinity), which that node always passes, so the terms are matched without their
// matchFields.
func placementOf(ds *v1alpha1.DaemonSet) placement {
	spec := &ds.Spec.Template.Spec
	affinity := spec.Affinity
	if affinity != nil && affinity.NodeAffinity != nil && affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		affinity = affinity.DeepCopy()
		for i := range affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[i].MatchFields = nil
		}
	}
	probe := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: spec.NodeSelector, Affinity: affinity}}
	return placement{affinity: nodeaffinity.GetRequiredNodeAffinity(probe), tolerations: withDaemonTolerations(spec.Tolerations)}
}

// shouldRun tells whether the Pod should run on node.
func (pl placement) shouldRun(node *corev1.Node) bool {
	if ok, err := pl.affinity.Match(node); err != nil || !ok {
		return false
	}
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pl.tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
	return !untolerated
}
