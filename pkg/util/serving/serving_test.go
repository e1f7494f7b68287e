package serving

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func TestHandler(t *testing.T) {
	syncing := &Syncing{}
	syncing.Set(true)
	broken := errors.New("lease not renewed")
	var healthy bool
	srv := httptest.NewServer(Handler(Checks{
		Healthz: func(*http.Request) error {
			if healthy {
				return nil
			}
			return broken
		},
		Readyz: syncing.Check,
	}))
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != http.StatusInternalServerError || !strings.Contains(body, "lease not renewed") {
		t.Errorf("/healthz failing: %d %q", code, body)
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not synced") {
		t.Errorf("/readyz while syncing: %d %q", code, body)
	}
	healthy = true
	syncing.Set(false)
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, _ := get(path); code != http.StatusOK {
			t.Errorf("%s: %d, want 200", path, code)
		}
	}
	// A request of a client-go client shows on /metrics (rest_client_requests_total), so that
	// benchmarks and operators can count what the program sends.
	if _, err := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL}).Discovery().ServerVersion(); err == nil {
		t.Errorf("/version of the health server answered")
	}
	if code, body := get("/metrics"); code != http.StatusOK || !strings.Contains(body, `rest_client_requests_total{code="404",host=`) {
		t.Errorf("/metrics: %d, no rest_client_requests_total of the 404 in:\n%s", code, body)
	}
}

// Go's profiles are served only when asked for.
func TestHandlerProfiling(t *testing.T) {
	for _, on := range []bool{false, true} {
		srv := httptest.NewServer(Handler(Checks{Profiling: on}))
		resp, err := http.Get(srv.URL + "/debug/pprof/heap?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		served := resp.StatusCode == http.StatusOK && strings.Contains(string(body), "heap profile")
		if served != on {
			t.Errorf("profiling %v: /debug/pprof/heap answered %d", on, resp.StatusCode)
		}
	}
}
