package apiserver

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestClientMistakesAre4xx(t *testing.T) {
	const path = "/apis/apps.kruise.io/v1alpha1/namespaces/ns/clonesets/web"
	answer := func(err error) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err == nil {
				w.WriteHeader(http.StatusOK)
				_, _ = w.Write([]byte(`{"kind":"CloneSet"}`))
				return
			}
			writeError(w, r, err)
		})
	}
	for _, tc := range []struct {
		name, method, path string
		handler            error // what the generic handler answers; nil: 200
		want               int
		wantIn             string
	}{
		{"apply that does not fit the schema", http.MethodPatch, path,
			errors.New("failed to create typed patch object (/web; apps.kruise.io/v1alpha1, Kind=CloneSet): .spec.bogus: field not declared in schema"),
			400, ".spec.bogus: field not declared in schema"},
		{"unknown $patch directive", http.MethodPatch, path, errors.New("unknown patch type: bogus in map: map[$patch:bogus]"), 400, "unknown patch type"},
		{"another 500 of a patch stays one", http.MethodPatch, path, errors.New("etcd is down"), 500, "etcd is down"},
		{"a 409 of a patch passes", http.MethodPatch, path, apierrors.NewConflict(schema.GroupResource{Group: "apps.kruise.io", Resource: "clonesets"}, "web", errors.New("changed")), 409, "changed"},
		{"a patch that works passes", http.MethodPatch, path, nil, 200, `"CloneSet"`},
		{"a 500 of a PUT is not looked at", http.MethodPut, path, errors.New("failed to create typed patch object"), 500, "typed patch"},
		{"resourceVersion not a number", http.MethodGet, path + "?resourceVersion=abc", nil, 400, `resourceVersion: Invalid value: \"abc\"`},
		{"limit not a number", http.MethodGet, path + "?limit=many", nil, 400, `limit: Invalid value: \"many\": must be an integer`},
		{"watch not a boolean", http.MethodGet, path + "?watch=perhaps", nil, 400, "watch: Invalid value"},
		{"good parameters pass", http.MethodGet, path + "?resourceVersion=12&limit=5&watch=true&timeoutSeconds=30", nil, 200, `"CloneSet"`},
		{"another group is not looked at", http.MethodGet, "/api/v1/pods?resourceVersion=abc", nil, 200, `"CloneSet"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader("{}"))
			req.Header.Set("Accept", "application/json")
			clientMistakesAre4xx(answer(tc.handler)).ServeHTTP(rec, req)
			if rec.Code != tc.want || !strings.Contains(rec.Body.String(), tc.wantIn) {
				t.Errorf("%d %s, want %d with %q", rec.Code, rec.Body, tc.want, tc.wantIn)
			}
		})
	}
}
