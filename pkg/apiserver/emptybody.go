package apiserver

import (
	"bufio"
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
		if r.Method == http.MethodPost && isRecreatePath(r.URL.Path) && emptyBody(r) {
			r.Body = io.NopCloser(strings.NewReader("{}"))
			r.ContentLength = 2
			r.Header.Set("Content-Type", "application/json")
		}
		next.ServeHTTP(w, r)
	})
}

// emptyBody tells whether the request has no body. Of a body of unknown length (chunked, as
// kube-apiserver's aggregator forwards it), it reads one byte ahead, which the handler still gets.
func emptyBody(r *http.Request) bool {
	if r.ContentLength >= 0 || r.Body == nil || r.Body == http.NoBody {
		return r.ContentLength == 0
	}
	peek := bufio.NewReaderSize(r.Body, 16)
	if _, err := peek.Peek(1); err == io.EOF {
		return true
	}
	r.Body = readCloser{Reader: peek, Closer: r.Body}
	return false
}

type readCloser struct {
	io.Reader
	io.Closer
}

// isRecreatePath matches /apis/apps.kruise.io/VERSION/namespaces/NS/pods/NAME/recreate.
func isRecreatePath(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	return len(parts) == 8 && parts[0] == "apis" && parts[1] == apps.GroupName && parts[3] == "namespaces" &&
		parts[5] == "pods" && parts[7] == "recreate"
}
