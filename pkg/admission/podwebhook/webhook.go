// Package podwebhook is the handler of the Pod admission webhook that inplace-apiserver serves on
// its own secure port (Path), for core Pod CREATE: it injects the SidecarSets that select the
// Pod, with the same code as sidecarsets/NAME/inject (pkg/sidecarset).
//
// It fails open: whatever goes wrong (a body it cannot read, a SidecarSet it cannot inject), the
// Pod is allowed as it came, with a warning, so that inplace is never the reason a Pod cannot be
// created. The MutatingWebhookConfiguration that points kube-apiserver here is not installed yet.
package podwebhook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	listers "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/sidecarset"
)

// Path is where inplace-apiserver serves the webhook.
const Path = "/admission/pods"

// maxBody bounds an AdmissionReview (kube-apiserver sends at most a few MiB).
const maxBody = 8 << 20

// Handler serves AdmissionReview v1 requests for Pods.
type Handler struct {
	SidecarSets listers.SidecarSetLister
	// NamespaceLabels returns the labels of a namespace, for SidecarSets' namespaceSelector.
	NamespaceLabels func(ctx context.Context, namespace string) (map[string]string, error)
	Now             func() time.Time
}

// ServeHTTP decodes the review, admits its request and writes the review back.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, fmt.Sprintf("reading the AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	review := &admissionv1.AdmissionReview{}
	if err := json.Unmarshal(body, review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("want an AdmissionReview v1 with a request: %v", err), http.StatusBadRequest)
		return
	}
	out := &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: h.Admit(r.Context(), review.Request),
	}
	out.Response.UID = review.Request.UID
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(out); err != nil {
		klog.FromContext(r.Context()).Error(err, "Writing the AdmissionReview response")
	}
}

// Admit answers one request: allowed always; for a Pod CREATE that SidecarSets select, with the
// JSON patch that injects them.
func (h *Handler) Admit(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	allowed := &admissionv1.AdmissionResponse{Allowed: true}
	if req.Operation != admissionv1.Create || req.Kind.Kind != "Pod" || req.SubResource != "" {
		return allowed
	}
	patch, err := h.mutate(ctx, req)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Pod admitted without sidecar injection", "namespace", req.Namespace, "name", req.Name)
		allowed.Warnings = []string{"inplace: no SidecarSet injected: " + err.Error()}
		return allowed
	}
	if patch != nil {
		patchType := admissionv1.PatchTypeJSONPatch
		allowed.Patch, allowed.PatchType = patch, &patchType
	}
	return allowed
}

// mutate returns the JSON patch that injects the SidecarSets selecting the Pod, nil when none does.
func (h *Handler) mutate(ctx context.Context, req *admissionv1.AdmissionRequest) ([]byte, error) {
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		return nil, fmt.Errorf("decoding the Pod: %w", err)
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace // not set yet on a Pod being created
	}
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
	matched := sidecarset.Matching(pod, nsLabels, all)
	if len(matched) == 0 {
		return nil, nil
	}
	res, err := sidecarset.Inject(pod, matched, metav1.NewTime(h.Now()))
	if err != nil {
		return nil, err
	}
	return replacePatch(res.Pod)
}

// replacePatch is a JSON patch that sets the Pod's spec, labels and annotations to the injected
// ones. The Pod is being created: nothing else can have changed them in between.
func replacePatch(pod *corev1.Pod) ([]byte, error) {
	ops := []map[string]any{
		{"op": "replace", "path": "/spec", "value": pod.Spec},
		// "add" sets a member whether or not it exists (RFC 6902).
		{"op": "add", "path": "/metadata/labels", "value": nonNil(pod.Labels)},
		{"op": "add", "path": "/metadata/annotations", "value": nonNil(pod.Annotations)},
	}
	return json.Marshal(ops)
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
