package cloneset

import (
	"encoding/json"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/features"
)

// vctHashAnnotation on a CloneSet's ControllerRevision is the hash of the CloneSet's
// volumeClaimTemplates when the revision was made (OpenKruise's key). A revision's name is the
// hash of the Pod template only, so a change of the templates alone makes no new revision (and
// updates no Pod); a revision made after such a change carries another hash. With
// RecreatePodWhenChangeVCTInCloneSetGate, a Pod whose revision's hash differs from the update
// revision's is recreated instead of updated in place, so it comes back with PVCs of the new
// templates.
const vctHashAnnotation = "kruise.io/cloneset-volumeclaimtemplate-hash"

// vctHash is the hash of the templates' names and specs, in name order ("" for none, as
// OpenKruise writes it). It is compared only with the hashes inplace wrote (OpenKruise hashes the
// same JSON through another printer, so its values differ).
func vctHash(templates []corev1.PersistentVolumeClaim) string {
	if len(templates) == 0 {
		return ""
	}
	named := make([]corev1.PersistentVolumeClaim, 0, len(templates))
	for _, t := range templates {
		named = append(named, corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: t.Name}, Spec: t.Spec})
	}
	slices.SortStableFunc(named, func(a, b corev1.PersistentVolumeClaim) int { return strings.Compare(a.Name, b.Name) })
	data, _ := json.Marshal(named) // plain API types: cannot fail
	h := fnv.New32a()
	_, _ = h.Write(data)
	return strconv.FormatUint(uint64(h.Sum32()), 10)
}

// revisionAnnotations are what a CloneSet's revisions carry beside its template.
func revisionAnnotations(cs *v1alpha1.CloneSet) map[string]string {
	return map[string]string{vctHashAnnotation: vctHash(cs.Spec.VolumeClaimTemplates)}
}

// vctChanged tells whether moving a Pod from revision from to revision to must recreate it for
// its volumeClaimTemplates: RecreatePodWhenChangeVCTInCloneSetGate is on, the update strategy
// may recreate (InPlaceOnly never does: it updates in place and keeps the PVCs, as OpenKruise),
// and both revisions have a hash and they differ. A revision without one (made before the hash
// was written) never forces a recreation, as in OpenKruise.
func vctChanged(cs *v1alpha1.CloneSet, from, to *appsv1.ControllerRevision) bool {
	if !features.Enabled(features.RecreatePodWhenChangeVCTInCloneSetGate) ||
		cs.Spec.UpdateStrategy.Type == v1alpha1.InPlaceOnlyCloneSetUpdateStrategyType || from == nil || to == nil {
		return false
	}
	a, okA := from.Annotations[vctHashAnnotation]
	b, okB := to.Annotations[vctHashAnnotation]
	return okA && okB && a != b
}
