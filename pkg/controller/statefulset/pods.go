package statefulset

import (
	"maps"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/workload/lifecycle"
	"github.com/inplace-dev/inplace/pkg/workload/ownership"
)

func controllerRef(set *v1beta1.StatefulSet) *metav1.OwnerReference {
	return metav1.NewControllerRef(set, v1beta1.SchemeGroupVersion.WithKind("StatefulSet"))
}

// claimName is <template>-<set>-<ordinal>, as kube's StatefulSet names the claims of its Pods.
func claimName(set *v1beta1.StatefulSet, template string, ordinal int) string {
	return template + "-" + podName(set, ordinal)
}

// newPod is the Pod of an ordinal at a revision, as kube's StatefulSet builds it: named
// <set>-<ordinal>, its hostname the same under the governing Service's subdomain, labelled with
// its revision, name and index, its claims mounted where the template names them; plus the
// InPlaceUpdateReady readiness gate, which OpenKruise asks users to write into the template and
// inplace adds itself (and KruisePodReady when a lifecycle hook marks Pods not ready), and its
// lifecycle state.
func newPod(set *v1beta1.StatefulSet, template *corev1.PodTemplateSpec, revision string, ordinal int) *corev1.Pod {
	name := podName(set, ordinal)
	pod := ownership.NewPod(template, set.Namespace, controllerRef(set), revision)
	pod.Name = name
	pod.Labels[appsv1.StatefulSetPodNameLabel] = name
	pod.Labels[appsv1.PodIndexLabel] = strconv.Itoa(ordinal)
	pod.Spec.Hostname = name
	pod.Spec.Subdomain = set.Spec.ServiceName
	for _, t := range set.Spec.VolumeClaimTemplates {
		claim := corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(set, t.Name, ordinal)}}
		if i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == t.Name }); i >= 0 {
			pod.Spec.Volumes[i].VolumeSource = claim
		} else {
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: t.Name, VolumeSource: claim})
		}
	}
	inplaceupdate.InjectReadinessGate(pod)
	// As OpenKruise's StatefulSet: a new Pod is Normal at once unless a preNormal hook has yet to
	// see all its labels and finalizers on it.
	state := pub.LifecycleStateNormal
	if h := lifecycle.PreNormalHook(set.Spec.Lifecycle); h != nil && !lifecycle.AllHooked(h, pod) {
		state = pub.LifecycleStatePreparingNormal
	}
	pod.Labels[pub.LifecycleStateKey] = string(state)
	if lifecycle.MarksPodNotReady(set.Spec.Lifecycle) {
		lifecycle.InjectKruisePodReadyGate(pod)
	}
	return pod
}

// newClaim is the claim of a volumeClaimTemplate for an ordinal, labelled with the set's selector
// labels (as kube's StatefulSet does). With whenDeleted Delete the set owns it, so the garbage
// collector deletes it with the set.
func newClaim(set *v1beta1.StatefulSet, t *corev1.PersistentVolumeClaim, ordinal int) *corev1.PersistentVolumeClaim {
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:        claimName(set, t.Name, ordinal),
			Namespace:   set.Namespace,
			Labels:      maps.Clone(t.Labels),
			Annotations: maps.Clone(t.Annotations),
		},
		Spec: *t.Spec.DeepCopy(),
	}
	if claim.Labels == nil {
		claim.Labels = map[string]string{}
	}
	if set.Spec.Selector != nil {
		maps.Copy(claim.Labels, set.Spec.Selector.MatchLabels)
	}
	if p := set.Spec.PersistentVolumeClaimRetentionPolicy; p != nil && p.WhenDeleted == v1beta1.DeletePersistentVolumeClaimRetentionPolicyType {
		ref := *controllerRef(set)
		ref.Controller, ref.BlockOwnerDeletion = nil, nil
		claim.OwnerReferences = []metav1.OwnerReference{ref}
	}
	return claim
}
