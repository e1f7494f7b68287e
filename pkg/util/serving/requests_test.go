package serving

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics/testutil"
)

func TestRequestKind(t *testing.T) {
	cases := []struct {
		method, url, verb, resource string
	}{
		{"GET", "/api/v1/namespaces/ns/pods/p", "get", "pods"},
		{"GET", "/api/v1/namespaces/ns/pods", "list", "pods"},
		{"GET", "/api/v1/pods?watch=true&resourceVersion=5", "watch", "pods"},
		{"PATCH", "/api/v1/namespaces/ns/pods/p/status", "patch", "pods/status"},
		{"POST", "/api/v1/namespaces/ns/pods/p/inplaceupdate", "create", "pods/inplaceupdate"},
		{"PUT", "/apis/apps.kruise.io/v1alpha1/namespaces/ns/clonesets/c/status", "update", "clonesets.apps.kruise.io/status"},
		{"DELETE", "/apis/apps/v1/namespaces/ns/controllerrevisions/r", "delete", "controllerrevisions.apps"},
		{"GET", "/api/v1/namespaces/ns", "get", "namespaces"},
		{"GET", "/version", "get", ""},
	}
	for _, c := range cases {
		req := httptest.NewRequest(c.method, c.url, nil)
		if verb, resource := requestKind(req); verb != c.verb || resource != c.resource {
			t.Errorf("%s %s: %q %q, want %q %q", c.method, c.url, verb, resource, c.verb, c.resource)
		}
	}
}

// TestCountRequests: a client built from a counting configuration counts each request it sends,
// with the server's answer.
func TestCountRequests(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/missing") {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
			return
		}
		_, _ = w.Write([]byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns"}}`))
	}))
	defer server.Close()
	config := &rest.Config{Host: server.URL}
	CountRequests(config)
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	metric := func(code string) float64 {
		v, err := testutil.GetCounterMetricValue(kubeRequests.WithLabelValues("get", "pods", code))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	ok, missing := metric("200"), metric("404")
	ctx := context.Background()
	for range 2 {
		if _, err := kube.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kube.CoreV1().Pods("ns").Get(ctx, "missing", metav1.GetOptions{}); err == nil {
		t.Fatal("getting the missing Pod: no error")
	}
	if got := metric("200") - ok; got != 2 {
		t.Errorf("get pods 200: counted %v, want 2", got)
	}
	if got := metric("404") - missing; got != 1 {
		t.Errorf("get pods 404: counted %v, want 1", got)
	}
}
