package statefulset

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/features"
)

// reservedOrdinals are the ordinals spec.reserveOrdinals keeps free: single ordinals and ranges
// "a-b" (both ends included). Validation refused anything else.
func reservedOrdinals(set *v1beta1.StatefulSet) sets.Set[int] {
	reserved := sets.New[int]()
	for _, o := range set.Spec.ReserveOrdinals {
		if o.Type == intstr.Int {
			reserved.Insert(int(o.IntVal))
			continue
		}
		if a, b, err := validation.ParseOrdinalRange(o.StrVal); err == nil {
			for i := a; i <= b; i++ {
				reserved.Insert(i)
			}
		}
	}
	return reserved
}

// wantedOrdinals are the ordinals of the Pods the set should have, lowest first: replicas of them
// from ordinals.start up (with StatefulSetStartOrdinal), skipping the reserved ones.
func wantedOrdinals(set *v1beta1.StatefulSet) []int {
	replicas := 1
	if set.Spec.Replicas != nil {
		replicas = int(*set.Spec.Replicas)
	}
	start := 0
	// As OpenKruise: spec.ordinals is honoured only with StatefulSetStartOrdinal on (alpha, off by
	// default), and a set numbers its Pods from 0 otherwise.
	if set.Spec.Ordinals != nil && features.Enabled(features.StatefulSetStartOrdinal) {
		start = int(set.Spec.Ordinals.Start)
	}
	reserved := reservedOrdinals(set)
	out := make([]int, 0, replicas)
	for o := start; len(out) < replicas; o++ {
		if !reserved.Has(o) {
			out = append(out, o)
		}
	}
	return out
}

// podName is <set>-<ordinal>.
func podName(set *v1beta1.StatefulSet, ordinal int) string {
	return fmt.Sprintf("%s-%d", set.Name, ordinal)
}

// ordinalOf parses the ordinal of a Pod named <set>-<ordinal>; -1 for any other name.
func ordinalOf(set *v1beta1.StatefulSet, pod *corev1.Pod) int {
	return parseOrdinal(set, pod.Name)
}

// isMember tells whether a Pod name is <set>-<ordinal>, as kube's StatefulSet tells the Pods it
// may adopt (any ordinal, wanted or not).
func isMember(set *v1beta1.StatefulSet, name string) bool {
	return parseOrdinal(set, name) >= 0
}

func parseOrdinal(set *v1beta1.StatefulSet, name string) int {
	suffix, ok := strings.CutPrefix(name, set.Name+"-")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(suffix)
	if err != nil || n < 0 || strconv.Itoa(n) != suffix {
		return -1
	}
	return n
}

// byOrdinal sorts pods by ordinal, lowest first.
func byOrdinal(set *v1beta1.StatefulSet, pods []*corev1.Pod) {
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return ordinalOf(set, a) - ordinalOf(set, b) })
}
