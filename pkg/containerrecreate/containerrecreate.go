package containerrecreate

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// Finished tells whether a request needs nothing more from the daemon: the controller completed
// it, it is being deleted, or every container reached its end (Done).
func Finished(crr *v1alpha1.ContainerRecreateRequest) bool {
	if crr.DeletionTimestamp != nil || crr.Status.Phase == v1alpha1.ContainerRecreateRequestCompleted {
		return true
	}
	done, _ := Done(crr)
	return done
}

// Done tells whether the daemon's work on a request is over, from its container states: every
// container Succeeded or Failed, or (failurePolicy Fail) one Failed. message says what failed, ""
// when all succeeded. A request with no states yet is not done.
func Done(crr *v1alpha1.ContainerRecreateRequest) (bool, string) {
	states := crr.Status.ContainerRecreateStates
	if len(states) == 0 || len(states) < len(crr.Spec.Containers) {
		return false, ""
	}
	failFast := crr.Spec.Strategy == nil || crr.Spec.Strategy.FailurePolicy != v1alpha1.ContainerRecreateRequestFailurePolicyIgnore
	var failed []string
	terminal := 0
	for _, s := range states {
		switch s.Phase {
		case v1alpha1.ContainerRecreateRequestSucceeded:
			terminal++
		case v1alpha1.ContainerRecreateRequestFailed:
			terminal++
			failed = append(failed, describeFailure(s))
			if failFast {
				return true, "failurePolicy Fail: " + failed[0]
			}
		}
	}
	if terminal < len(states) {
		return false, ""
	}
	if len(failed) > 0 {
		return true, "failurePolicy Ignore: " + strings.Join(failed, "; ")
	}
	return true, ""
}

func describeFailure(s v1alpha1.ContainerRecreateRequestContainerRecreateState) string {
	if s.Message == "" {
		return fmt.Sprintf("container %s failed", s.Name)
	}
	return fmt.Sprintf("container %s failed: %s", s.Name, s.Message)
}

// AdmittedAtAnnotation is when admission accepted a request (RFC 3339 with nanoseconds, the API
// server's clock). creationTimestamp has whole seconds: requests made back to back in one second
// are ordered by this instead of by name.
const AdmittedAtAnnotation = "crr.apps.kruise.io/admitted-at"

// admittedAt is the request's AdmittedAtAnnotation, false when it has none (or a bad one).
func admittedAt(crr *v1alpha1.ContainerRecreateRequest) (time.Time, bool) {
	v, ok := crr.Annotations[AdmittedAtAnnotation]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	return t, err == nil
}

// Order sorts the requests of one Pod into the order the daemon handles them: a request already
// Recreating first (it was started and must finish), then the oldest (see Compare).
func Order(crrs []*v1alpha1.ContainerRecreateRequest) {
	slices.SortStableFunc(crrs, func(a, b *v1alpha1.ContainerRecreateRequest) int {
		ar := a.Status.Phase == v1alpha1.ContainerRecreateRequestRecreating
		br := b.Status.Phase == v1alpha1.ContainerRecreateRequestRecreating
		if ar != br {
			if ar {
				return -1
			}
			return 1
		}
		return Compare(a, b)
	})
}

// Compare orders two requests of one Pod by age: creation time, then admission time (the API
// server's timestamps have only seconds), then name.
func Compare(a, b *v1alpha1.ContainerRecreateRequest) int {
	if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	at, aok := admittedAt(a)
	bt, bok := admittedAt(b)
	if aok && bok {
		if c := at.Compare(bt); c != 0 {
			return c
		}
	}
	return cmp.Compare(a.Name, b.Name)
}

// PodKey is the key of the Pod a request is for: "<namespace>/<spec.podName>".
func PodKey(crr *v1alpha1.ContainerRecreateRequest) string {
	return crr.Namespace + "/" + crr.Spec.PodName
}
