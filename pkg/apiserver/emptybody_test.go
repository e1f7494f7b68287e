package apiserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestEmptyBodyIsEmptyObject(t *testing.T) {
	var got string
	h := emptyBodyIsEmptyObject(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = string(b)
	}))
	for _, tc := range []struct{ method, path, body, want string }{
		{http.MethodPost, "/apis/apps.kruise.io/v1alpha1/namespaces/ns/pods/web/recreate", "", "{}"},
		{http.MethodPost, "/apis/apps.kruise.io/v1alpha1/namespaces/ns/pods/web/recreate", `{"spec":{}}`, `{"spec":{}}`},
		{http.MethodPost, "/apis/apps.kruise.io/v1alpha1/namespaces/ns/pods/web/inplaceupdate", "", ""},
		{http.MethodPost, "/apis/apps.kruise.io/v1alpha1/namespaces/ns/containerrecreaterequests", "", ""},
		{http.MethodPut, "/apis/apps.kruise.io/v1alpha1/namespaces/ns/pods/web/recreate", "", ""},
	} {
		for _, chunked := range []bool{false, true} {
			r := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			if chunked { // length unknown, as the aggregator forwards a body
				r.ContentLength = -1
				r.Body = io.NopCloser(strings.NewReader(tc.body))
			}
			got = "(not read)"
			h.ServeHTTP(httptest.NewRecorder(), r)
			if got != tc.want {
				t.Errorf("%s %s with %q (chunked %v): handler read %q, want %q", tc.method, tc.path, tc.body, chunked, got, tc.want)
			}
		}
	}
}
