package apiserver

import (
	"bytes"
	"io"
	"net/http"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/registry/apps/sidecarset"
)

// maxInjectBody bounds the Pod read here; kube-apiserver's own limit for a request body is 3 MiB.
const maxInjectBody = 3 << 20

// injectKeepsPodNamespace hands sidecarsets/NAME/inject the namespace written in its Pod body.
// sidecarsets are cluster-scoped, so the generic create handler clears an object's namespace
// before the subresource sees it; yet which SidecarSets select a Pod depends on its namespace.
// It runs after authentication and authorization, inside the handler chain.
func injectKeepsPodNamespace(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !isInjectPath(r.URL.Path) || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxInjectBody+1))
		_ = r.Body.Close()
		if err != nil {
			http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		// A body the handler cannot decode is left for it to refuse, with its own message.
		var pod struct {
			Metadata struct {
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if len(body) <= maxInjectBody && yaml.Unmarshal(body, &pod) == nil && pod.Metadata.Namespace != "" {
			r = r.WithContext(sidecarset.WithPodNamespace(r.Context(), pod.Metadata.Namespace))
		}
		next.ServeHTTP(w, r)
	})
}

// isInjectPath matches /apis/apps.kruise.io/VERSION/sidecarsets/NAME/inject.
func isInjectPath(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	return len(parts) == 6 && parts[0] == "apis" && parts[1] == apps.GroupName && parts[3] == "sidecarsets" &&
		parts[5] == "inject"
}
