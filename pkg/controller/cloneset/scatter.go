package cloneset

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// scatter reorders pods so that, for each term of the scatter strategy, the Pods carrying that
// label spread evenly over the order instead of bunching (say, all Pods of one zone first). Each
// Pod gets an ideal place in [0,1): the j-th of k matching Pods (j+0.5)/k, the i-th of the m others
// (i+0.5)/m, and the two lists merge by it; both keep their relative order. A term matched by
// fewer than two Pods, or by all, changes nothing. Terms apply in order, so a later term may
// loosen an earlier one's spread.
func scatter(pods []*corev1.Pod, terms pub.UpdateScatterStrategy) {
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
