// Package review serves AdmissionReview v1 over HTTP for the admission webhooks that
// inplace-apiserver serves on its own port (the Pod webhooks, deletion protection): it decodes
// the review, hands its request to the webhook's admit function and writes the response back
// with the request's UID.
package review

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// maxBody bounds an AdmissionReview (kube-apiserver sends at most a few MiB).
const maxBody = 8 << 20

// Admit answers one admission request.
type Admit func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse

// Serve decodes an AdmissionReview, answers its request with admit and writes the review back.
// A request that is not a POST of an AdmissionReview v1 with a request gets a 4xx that says so.
func Serve(w http.ResponseWriter, r *http.Request, admit Admit) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, fmt.Sprintf("reading the AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	in := &admissionv1.AdmissionReview{}
	if err := json.Unmarshal(body, in); err != nil || in.Request == nil {
		http.Error(w, fmt.Sprintf("want an AdmissionReview v1 with a request: %v", err), http.StatusBadRequest)
		return
	}
	out := &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: admit(r.Context(), in.Request),
	}
	out.Response.UID = in.Request.UID
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(out); err != nil {
		klog.FromContext(r.Context()).Error(err, "Writing the AdmissionReview response")
	}
}
