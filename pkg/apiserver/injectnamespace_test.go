package apiserver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/inplace-dev/inplace/pkg/registry/apps/sidecarset"
)

func TestInjectKeepsPodNamespace(t *testing.T) {
	var gotNamespace, gotBody string
	h := injectKeepsPodNamespace(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		gotNamespace = podNamespace(r.Context())
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
	}))
	for _, tc := range []struct{ path, body, want string }{
		{"/apis/apps.kruise.io/v1alpha1/sidecarsets/agent/inject", `{"metadata":{"name":"p","namespace":"team-a"}}`, "team-a"},
		{"/apis/apps.kruise.io/v1alpha1/sidecarsets/agent/inject", "metadata:\n  namespace: team-b\n", "team-b"},
		{"/apis/apps.kruise.io/v1alpha1/sidecarsets/agent/inject", `not a pod`, ""},
		{"/apis/apps.kruise.io/v1alpha1/sidecarsets/agent", `{"metadata":{"namespace":"team-a"}}`, ""},
	} {
		gotNamespace, gotBody = "", ""
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body)))
		if gotNamespace != tc.want || gotBody != tc.body {
			t.Errorf("POST %s %q: namespace %q, body %q; want %q and the body unchanged", tc.path, tc.body, gotNamespace, gotBody, tc.want)
		}
	}
}

// podNamespace reads what the filter recorded, through the registry's own accessor.
func podNamespace(ctx context.Context) string { return sidecarset.PodNamespaceFrom(ctx) }

// The Pod webhook's path skips the generic chain; everything else goes through it; a panic in the
// webhook answers 500 (kube-apiserver then creates the Pod as it came).
func TestServedAhead(t *testing.T) {
	var chained bool
	chain := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { chained = true })
	webhook := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })
	h := servedAhead("/admission/pods", webhook, chain)

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/admission/pods", nil))
	if chained || rec.Code != http.StatusInternalServerError {
		t.Errorf("webhook path: chained %v, HTTP %d; want served ahead, 500 after the panic", chained, rec.Code)
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if !chained {
		t.Error("another path did not go through the chain")
	}
}
