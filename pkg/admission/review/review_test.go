package review

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestServe(t *testing.T) {
	allow := func(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: req.Name == "x"}
	}
	for _, c := range []struct {
		name, method, body string
		code               int
	}{
		{"a review", http.MethodPost, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","name":"x"}}`, http.StatusOK},
		{"a GET", http.MethodGet, "", http.StatusMethodNotAllowed},
		{"not JSON", http.MethodPost, "not json", http.StatusBadRequest},
		{"no request", http.MethodPost, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, http.StatusBadRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			Serve(rec, httptest.NewRequest(c.method, "/admission/x", strings.NewReader(c.body)), allow)
			if rec.Code != c.code {
				t.Fatalf("HTTP %d (%s), want %d", rec.Code, rec.Body, c.code)
			}
			if c.code != http.StatusOK {
				return
			}
			out := &admissionv1.AdmissionReview{}
			if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
				t.Fatal(err)
			}
			if out.Kind != "AdmissionReview" || out.Response == nil || out.Response.UID != types.UID("u1") || !out.Response.Allowed {
				t.Errorf("answered %+v, want the response of admit with the request's UID", out)
			}
		})
	}
}
