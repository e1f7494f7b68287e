package podunavailablebudget

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/inplace-dev/inplace/pkg/apis/policy"
	"github.com/inplace-dev/inplace/pkg/features"
)

// store is one budget behind a compare-and-swap on its resourceVersion, as etcd keeps it.
type store struct {
	mu     sync.Mutex
	pub    *policy.PodUnavailableBudget
	writes int
}

// inNamespace is the generic registry's rule: a namespaced object is read and written in a
// context that carries its namespace.
func (s *store) inNamespace(ctx context.Context) error {
	if ns, ok := genericapirequest.NamespaceFrom(ctx); !ok || (s.pub != nil && ns != s.pub.Namespace) {
		return apierrors.NewBadRequest("Namespace parameter required.")
	}
	return nil
}

func (s *store) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.inNamespace(ctx); err != nil {
		return nil, err
	}
	if s.pub == nil || s.pub.Name != name {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: policy.GroupName, Resource: "podunavailablebudgets"}, name)
	}
	return s.pub.DeepCopy(), nil
}

func (s *store) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc,
	_ rest.ValidateObjectUpdateFunc, _ bool, _ *metav1.UpdateOptions) (runtime.Object, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.inNamespace(ctx); err != nil {
		return nil, false, err
	}
	obj, err := objInfo.UpdatedObject(ctx, s.pub)
	if err != nil {
		return nil, false, err
	}
	pub := obj.(*policy.PodUnavailableBudget)
	if pub.ResourceVersion != s.pub.ResourceVersion {
		return nil, false, apierrors.NewConflict(schema.GroupResource{Resource: "podunavailablebudgets"}, name, errors.New("changed"))
	}
	rv, _ := strconv.Atoi(pub.ResourceVersion)
	pub.ResourceVersion = strconv.Itoa(rv + 1)
	s.pub, s.writes = pub.DeepCopy(), s.writes+1
	return pub, false, nil
}

func newStore(allowed int32) *store {
	return &store{pub: &policy.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "pub", Namespace: "default", Generation: 1, ResourceVersion: "1"},
		Status: policy.PodUnavailableBudgetStatus{ObservedGeneration: 1, UnavailableAllowed: allowed, CurrentAvailable: 3,
			DesiredAvailable: 3 - allowed, TotalReplicas: 3},
	}}
}

func readyPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{policy.PodRelatedPubAnnotation: "pub"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

// Ten Pods charged at once against a budget of two: exactly two get through, each recorded, the
// others refused with a 429 naming the budget.
func TestChargeConcurrent(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, features.DefaultFeatureGate, features.PodUnavailableBudgetUpdateGate, true)
	s := newStore(2)
	c := NewCharger(s)
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Go(func() {
			errs[i] = c.Charge(t.Context(), readyPod("p"+strconv.Itoa(i)), policy.PubUpdateOperation, time.Now(), false)
		})
	}
	wg.Wait()
	var ok int
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case apierrors.IsTooManyRequests(err):
			status := err.(apierrors.APIStatus).Status()
			if !strings.Contains(status.Message, "PodUnavailableBudget pub") || len(status.Details.Causes) != 1 ||
				status.Details.Causes[0].Type != BudgetCause {
				t.Errorf("refusal %+v, want it to name the budget in its message and cause", status)
			}
			// A Retry-After would make client-go repeat the request itself for ten seconds.
			if status.Details.RetryAfterSeconds != 0 {
				t.Errorf("refusal with retryAfterSeconds %d, want none (as pods/eviction)", status.Details.RetryAfterSeconds)
			}
		default:
			t.Errorf("charge: %v, want nil or a 429", err)
		}
	}
	if ok != 2 || len(s.pub.Status.UnavailablePods) != 2 || s.pub.Status.UnavailableAllowed != 0 {
		t.Errorf("%d charges went through, recorded %v, allowed %d; want 2, 2, 0", ok, s.pub.Status.UnavailablePods, s.pub.Status.UnavailableAllowed)
	}
}

// What passes without a charge: a Pod charged already, a dry run, a Pod not ready, the
// no-protect annotation, an operation the budget does not protect, the gate off.
func TestChargeFreeCases(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, features.DefaultFeatureGate, features.PodUnavailableBudgetUpdateGate, true)
	s := newStore(1)
	s.pub.Spec.ProtectOperations = []policy.PubOperation{policy.PubUpdateOperation, policy.PubDeleteOperation}
	s.pub.Status.UnavailablePods = map[string]metav1.Time{"charged": metav1.NewTime(time.Now())}
	c := NewCharger(s)
	notReady := readyPod("not-ready")
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	noProtect := readyPod("no-protect")
	noProtect.Annotations[policy.PodPubNoProtectionAnnotation] = "true"
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		op     policy.PubOperation
		dryRun bool
	}{
		{"charged already", readyPod("charged"), policy.PubUpdateOperation, false},
		{"dry run", readyPod("a"), policy.PubUpdateOperation, true},
		{"not ready", notReady, policy.PubUpdateOperation, false},
		{"no-protect", noProtect, policy.PubUpdateOperation, false},
		{"unprotected resize", readyPod("b"), policy.PubResizeOperation, false},
	} {
		if err := c.Charge(t.Context(), tc.pod, tc.op, time.Now(), tc.dryRun); err != nil {
			t.Errorf("%s: %v, want it to pass", tc.name, err)
		}
	}
	if s.writes != 0 || s.pub.Status.UnavailableAllowed != 1 {
		t.Errorf("%d writes, allowed %d; want none written and the unit left", s.writes, s.pub.Status.UnavailableAllowed)
	}
	featuregatetesting.SetFeatureGateDuringTest(t, features.DefaultFeatureGate, features.PodUnavailableBudgetUpdateGate, false)
	s.pub.Status.UnavailableAllowed = 0
	if err := c.Charge(t.Context(), readyPod("c"), policy.PubUpdateOperation, time.Now(), false); err != nil {
		t.Errorf("with PodUnavailableBudgetUpdateGate off: %v, want it to pass", err)
	}
	if err := c.Charge(t.Context(), readyPod("c"), policy.PubDeleteOperation, time.Now(), false); !apierrors.IsTooManyRequests(err) {
		t.Errorf("a DELETE with no unit left: %v, want a 429 (PodUnavailableBudgetDeleteGate is on by default)", err)
	}
}
