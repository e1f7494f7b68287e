package podwebhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/admission/review"
	"github.com/inplace-dev/inplace/pkg/apis/policy"
	"github.com/inplace-dev/inplace/pkg/podbudget"
)

// BudgetPath is where inplace-apiserver serves the PodUnavailableBudget check of Pod DELETE,
// eviction and direct updates (a ValidatingWebhookConfiguration:
// artifacts/deploy/base/pod-budget-webhook.yaml).
const BudgetPath = "/admission/pods/budget"

// Charger takes a unit of the budget a Pod names for op, or answers why not (a 429 naming the
// budget when none is left): podunavailablebudget.Charger, the same that pods/inplaceupdate and
// pods/recreate charge with. It checks the operation's feature gate, the Pod's availability and
// the budget's ignore rules itself.
type Charger interface {
	Charge(ctx context.Context, pod *corev1.Pod, op policy.PubOperation, at time.Time, dryRun bool) error
}

// BudgetHandler serves the AdmissionReviews of Pod DELETE, pods/eviction CREATE and Pod (and
// pods/resize) UPDATE: it charges the Pod's PodUnavailableBudget for the deletion (DELETE),
// eviction (EVICT) or change of spec (UPDATE, RESIZE) and denies the request when the budget has
// no unit left, as OpenKruise's Pod validating webhook
// (pkg/webhook/pod/validating/pod_unavailable_budget.go) does.
//
// A budget that cannot be read or written denies the request. For deletions and evictions the
// ValidatingWebhookConfiguration fails closed too, and calls it only for Pods that name a budget
// (and for every eviction, which does not carry the Pod); for direct updates it fails open, and
// leaves out inplace-apiserver's own writes (pods/inplaceupdate charged the Pod before writing it;
// were they sent, they would pass: a Pod is not charged twice). docs/podunavailablebudget.md says
// why.
type BudgetHandler struct {
	Charger Charger
	// GetPod reads a Pod (an eviction names it, the request does not carry it).
	GetPod func(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	Now    func() time.Time
}

// ServeHTTP decodes the review, admits its request and writes the review back.
func (h *BudgetHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	review.Serve(w, r, h.Admit)
}

// Admit answers one request: allowed unless it deletes, evicts or changes (as UpdateOperation
// judges) a Pod whose budget has no unit left, or the budget cannot be charged.
func (h *BudgetHandler) Admit(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	start := time.Now()
	pod, op, dryRun, err := h.target(ctx, req)
	if err == nil && pod == nil {
		observe(resultIgnored, start)
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	if err == nil {
		err = h.Charger.Charge(ctx, pod, op, h.Now(), dryRun)
	}
	if err == nil {
		observe(resultBudgetAllowed, start)
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	status := denial(err)
	if status.Code == http.StatusTooManyRequests {
		observe(resultRefused, start)
	} else {
		klog.FromContext(ctx).Error(err, "Pod request denied: its PodUnavailableBudget could not be charged", "namespace", req.Namespace, "name", req.Name, "operation", req.Operation, "subResource", req.SubResource)
		observe(resultBudgetFailed, start)
	}
	return &admissionv1.AdmissionResponse{Allowed: false, Result: status}
}

// target is the Pod the request disrupts (nil when it disrupts none), what it does to it as a
// budget protects it, and whether the request is a dry run: DELETE for a Pod DELETE, EVICT for a
// CREATE of pods/eviction, UPDATE or RESIZE (podbudget.UpdateOperation) for an UPDATE of the Pod or
// of pods/resize that changes its spec or adds an unavailable-pod label — charged to the Pod as it
// was, as OpenKruise does. Other subresources, and a DELETE without the old object, disrupt none.
func (h *BudgetHandler) target(ctx context.Context, req *admissionv1.AdmissionRequest) (*corev1.Pod, policy.PubOperation, bool, error) {
	if req.Resource.Group != "" || req.Resource.Resource != "pods" {
		return nil, "", false, nil
	}
	dryRun := req.DryRun != nil && *req.DryRun
	switch {
	case req.Operation == admissionv1.Delete && req.SubResource == "" && len(req.OldObject.Raw) > 0:
		pod, err := decodePod(req.OldObject.Raw)
		return pod, policy.PubDeleteOperation, dryRun, err
	case req.Operation == admissionv1.Update && (req.SubResource == "" || req.SubResource == "resize"):
		old, err := decodePod(req.OldObject.Raw)
		if err != nil {
			return nil, "", false, err
		}
		updated, err := decodePod(req.Object.Raw)
		if err != nil {
			return nil, "", false, err
		}
		op, ok := podbudget.UpdateOperation(old, updated)
		if !ok {
			return nil, "", false, nil
		}
		return old, op, dryRun, nil
	case req.Operation == admissionv1.Create && req.SubResource == "eviction":
		// An Eviction of policy/v1 or v1beta1: only its deleteOptions matter here.
		eviction := struct {
			DeleteOptions *metav1.DeleteOptions `json:"deleteOptions"`
		}{}
		if err := json.Unmarshal(req.Object.Raw, &eviction); err != nil {
			return nil, "", false, apierrors.NewBadRequest(fmt.Sprintf("decoding the Eviction: %v", err))
		}
		if o := eviction.DeleteOptions; o != nil && slices.Contains(o.DryRun, metav1.DryRunAll) {
			dryRun = true
		}
		pod, err := h.GetPod(ctx, req.Namespace, req.Name)
		if apierrors.IsNotFound(err) {
			return nil, "", false, nil // the eviction answers 404 itself
		}
		return pod, policy.PubEvictOperation, dryRun, err
	}
	return nil, "", false, nil
}

func decodePod(raw []byte) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	if err := json.Unmarshal(raw, pod); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding the Pod: %v", err))
	}
	return pod, nil
}

// denial is the Status a denied request answers with: the Charger's own (a 429 naming the budget,
// which kubectl drain waits on as it waits on a PodDisruptionBudget), or a 500 saying the budget
// could not be checked. Never with a Retry-After (the Charger sends none either), as pods/eviction
// refuses for a PodDisruptionBudget: client-go would otherwise repeat the DELETE itself for up to
// ten seconds (kubectl delete hanging, a ReplicaSet controller's worker held), where its caller has
// its own backoff.
func denial(err error) *metav1.Status {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		if s.Details != nil {
			d := *s.Details
			d.RetryAfterSeconds = 0
			s.Details = &d
		}
		return &s
	}
	s := apierrors.NewInternalError(fmt.Errorf("inplace: checking the Pod's PodUnavailableBudget: %w", err)).ErrStatus
	return &s
}
