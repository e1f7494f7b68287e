// Package podwebhook holds the handlers of the Pod admission webhooks that inplace-apiserver
// serves on its own secure port. Handler (Path, mutating) is for core Pod CREATE: it makes the Pod
// what inplace creates (package podcreate: the readiness gate of inplace's workloads, the
// SidecarSets that select the Pod, the launch barriers of ordered containers), with the same code
// as sidecarsets/NAME/inject.
//
// It fails open: whatever goes wrong (a body it cannot read, a SidecarSet it cannot inject), the
// Pod is allowed as it came, with a warning, so that inplace is never the reason a Pod cannot be
// created. artifacts/deploy/base/pod-webhook.yaml (and hack/local-up.sh) registers it with
// failurePolicy Ignore and a short timeout, for when inplace-apiserver is down.
//
// BudgetHandler (BudgetPath, validating) checks Pod DELETE, eviction and direct updates against
// the Pod's PodUnavailableBudget and takes a unit of it, as OpenKruise's Pod validating webhook
// does; for deletions and evictions it fails closed (see budget.go).
package podwebhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/admission/review"
	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	listers "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/podcreate"
	"github.com/inplace-dev/inplace/pkg/sidecarcontrol"
)

// Path is where inplace-apiserver serves the webhook.
const Path = "/admission/pods"

// Handler serves AdmissionReview v1 requests for Pods.
type Handler struct {
	SidecarSets listers.SidecarSetLister
	// NamespaceLabels returns the labels of a namespace, for SidecarSets' namespaceSelector.
	NamespaceLabels func(ctx context.Context, namespace string) (map[string]string, error)
	// Revisions lists a SidecarSet's ControllerRevisions (injectionStrategy.revision).
	Revisions sidecarcontrol.RevisionLister
	// Random draws in [0, 1) (injectionStrategy.revision.policy Partial with a partition).
	Random func() float64
	Now    func() time.Time
}

// ServeHTTP decodes the review, admits its request and writes the review back.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	review.Serve(w, r, h.Admit)
}

// Admit answers one request: allowed, except a Pod that cannot be injected because of what it
// is (sidecarset.PodError); for a Pod CREATE that inplace mutates (see package podcreate), with
// the JSON patch that does it.
func (h *Handler) Admit(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	start := time.Now()
	allowed := &admissionv1.AdmissionResponse{Allowed: true}
	if req.Operation != admissionv1.Create || req.Kind.Kind != "Pod" || req.SubResource != "" {
		observe(resultIgnored, start)
		return allowed
	}
	patch, warnings, err := h.mutate(ctx, req)
	allowed.Warnings = warnings
	if podErr := (*sidecarcontrol.PodError)(nil); errors.As(err, &podErr) {
		// The Pod asks for what cannot be (as OpenKruise, refuse it rather than run it without its
		// sidecars): its creator reads why.
		observe(resultRefused, start)
		return &admissionv1.AdmissionResponse{Allowed: false, Warnings: warnings, Result: &metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
			Message: "inplace: " + err.Error(),
		}}
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Pod admitted as it came", "namespace", req.Namespace, "name", req.Name)
		allowed.Warnings = append(allowed.Warnings, "inplace: the Pod was created without its SidecarSets, readiness gate and launch order: "+err.Error())
		observe(resultFailed, start)
		return allowed
	}
	if patch == nil {
		observe(resultUnchanged, start)
		return allowed
	}
	patchType := admissionv1.PatchTypeJSONPatch
	allowed.Patch, allowed.PatchType = patch, &patchType
	observe(resultPatched, start)
	return allowed
}

// mutate returns the JSON patch that makes the Pod what inplace creates, nil when that is the Pod
// as it came, and the warnings for its creator.
func (h *Handler) mutate(ctx context.Context, req *admissionv1.AdmissionRequest) ([]byte, []string, error) {
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		return nil, nil, fmt.Errorf("decoding the Pod: %w", err)
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace // not set yet on a Pod being created
	}
	matched, err := h.matching(ctx, pod)
	if err != nil {
		return nil, nil, err
	}
	matched, revisionWarnings := sidecarcontrol.AtRevisions(ctx, matched, labels.Set(pod.Labels), h.Revisions, h.Random)
	res, err := podcreate.Mutate(pod, matched, metav1.NewTime(h.Now()))
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	for _, w := range append(revisionWarnings, res.Warnings...) {
		warnings = append(warnings, "inplace: "+w)
	}
	if !res.Changed {
		return nil, warnings, nil
	}
	patch, err := replacePatch(pod, res.Pod)
	return patch, warnings, err
}

// matching returns the SidecarSets that select the Pod.
func (h *Handler) matching(ctx context.Context, pod *corev1.Pod) ([]*appsv1alpha1.SidecarSet, error) {
	all, err := h.SidecarSets.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing SidecarSets: %w", err)
	}
	if len(all) == 0 {
		return nil, nil
	}
	nsLabels, err := h.NamespaceLabels(ctx, pod.Namespace)
	if err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", pod.Namespace, err)
	}
	return sidecarcontrol.Matching(pod, nsLabels, all), nil
}

// replacePatch is a JSON patch that sets the Pod's spec, labels and annotations (and its name, when
// it had only generateName) to the mutated ones. The Pod is being created: nothing else can have
// changed them in between.
func replacePatch(in, out *corev1.Pod) ([]byte, error) {
	ops := []map[string]any{
		{"op": "replace", "path": "/spec", "value": out.Spec},
		// "add" sets a member whether or not it exists (RFC 6902).
		{"op": "add", "path": "/metadata/labels", "value": nonNil(out.Labels)},
		{"op": "add", "path": "/metadata/annotations", "value": nonNil(out.Annotations)},
	}
	if out.Name != in.Name {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/name", "value": out.Name})
	}
	return json.Marshal(ops)
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
