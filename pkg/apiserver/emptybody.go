package apiserver

import (
	"io"
	"net/http"
	"strings"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
)

// emptyBodyIsEmptyObject lets POST pods/NAME/recreate take an empty body, meaning the same as {}
// (every container of the Pod, default strategy): the generic create handler cannot decode an
// empty body, so the request reaches it with {} instead.
func emptyBodyIsEmptyObject(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.ContentLength == 0 && isRecreatePath(r.URL.Path) {
			r.Body = io.NopCloser(strings.NewReader("{}"))
			r.ContentLength = 2
			r.Header.Set("Content-Type", "application/json")
		}
		next.ServeHTTP(w, r)
	})
}

// isRecreatePath matches /apis/apps.kruise.io/VERSION/namespaces/NS/pods/NAME/recreate.
func isRecreatePath(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	return len(parts) == 8 && parts[0] == "apis" && parts[1] == apps.GroupName && parts[3] == "namespaces" &&
		parts[5] == "pods" && parts[7] == "recreate"
}
