package ownership

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// PodSelector is a workload's Pod selector as a labels.Selector. An invalid or empty one, which
// validation forbids, is reported as a Warning Event on the workload and ok is false: there is
// nothing to act on until the spec changes (retrying would not help).
func PodSelector(recorder record.EventRecorder, workload runtime.Object, selector *metav1.LabelSelector) (labels.Selector, bool) {
	s, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil || s.Empty() {
		recorder.Eventf(workload, corev1.EventTypeWarning, ReasonInvalidSelector, "invalid selector: %v", err)
		return nil, false
	}
	return s, true
}
