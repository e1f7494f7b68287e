package containerrecreate

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

var second = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func crr(name string, created time.Time, admitted time.Duration, phase v1alpha1.ContainerRecreateRequestPhase) *v1alpha1.ContainerRecreateRequest {
	c := &v1alpha1.ContainerRecreateRequest{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Time{Time: created}}}
	c.Status.Phase = phase
	if admitted >= 0 {
		c.Annotations = map[string]string{AdmittedAtAnnotation: created.Add(admitted).Format(time.RFC3339Nano)}
	}
	return c
}

// Requests created within one second run in the order they were admitted, not by name; one
// already Recreating goes first.
func TestOrder(t *testing.T) {
	list := []*v1alpha1.ContainerRecreateRequest{
		crr("one", second, 100*time.Millisecond, ""),
		crr("two", second, 300*time.Millisecond, ""),
		crr("three", second, 500*time.Millisecond, ""),
		crr("earlier", second.Add(-time.Second), 900*time.Millisecond, v1alpha1.ContainerRecreateRequestPending),
		crr("started", second.Add(time.Second), -1, v1alpha1.ContainerRecreateRequestRecreating),
		crr("b-unstamped", second.Add(2*time.Second), -1, ""),
		crr("a-unstamped", second.Add(2*time.Second), -1, ""),
	}
	Order(list)
	var names []string
	for _, c := range list {
		names = append(names, c.Name)
	}
	if got, want := strings.Join(names, ","), "started,earlier,one,two,three,a-unstamped,b-unstamped"; got != want {
		t.Errorf("order %s, want %s", got, want)
	}
}

func states(policy v1alpha1.ContainerRecreateRequestFailurePolicyType, phases ...v1alpha1.ContainerRecreateRequestPhase) *v1alpha1.ContainerRecreateRequest {
	c := &v1alpha1.ContainerRecreateRequest{Spec: v1alpha1.ContainerRecreateRequestSpec{
		Strategy: &v1alpha1.ContainerRecreateRequestStrategy{FailurePolicy: policy}}}
	for i, p := range phases {
		name := string(rune('a' + i))
		c.Spec.Containers = append(c.Spec.Containers, v1alpha1.ContainerRecreateRequestContainer{Name: name})
		c.Status.ContainerRecreateStates = append(c.Status.ContainerRecreateStates,
			v1alpha1.ContainerRecreateRequestContainerRecreateState{Name: name, Phase: p, Message: "boom"})
	}
	return c
}

func TestDone(t *testing.T) {
	const (
		fail   = v1alpha1.ContainerRecreateRequestFailurePolicyFail
		ignore = v1alpha1.ContainerRecreateRequestFailurePolicyIgnore
		ok     = v1alpha1.ContainerRecreateRequestSucceeded
		failed = v1alpha1.ContainerRecreateRequestFailed
		busy   = v1alpha1.ContainerRecreateRequestRecreating
		wait   = v1alpha1.ContainerRecreateRequestPending
	)
	for _, tc := range []struct {
		name    string
		crr     *v1alpha1.ContainerRecreateRequest
		done    bool
		message string
	}{
		{"no states yet", states(fail), false, ""},
		{"all succeeded", states(fail, ok, ok), true, ""},
		{"one still recreating", states(fail, ok, busy), false, ""},
		{"Fail stops at the first failure", states(fail, failed, wait), true, "failurePolicy Fail: container a failed: boom"},
		{"Ignore waits for the others", states(ignore, failed, busy), false, ""},
		{"Ignore done with failures", states(ignore, failed, ok), true, "failurePolicy Ignore: container a failed: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done, msg := Done(tc.crr)
			if done != tc.done || msg != tc.message {
				t.Errorf("Done = %v %q, want %v %q", done, msg, tc.done, tc.message)
			}
			if Finished(tc.crr) != tc.done {
				t.Errorf("Finished = %v, want %v", !tc.done, tc.done)
			}
		})
	}
}
