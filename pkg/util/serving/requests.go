package serving

import (
	"net/http"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// kubeRequests counts what a program asks of the API servers by verb and resource, which
// client-go's own rest_client_requests_total (by method and code) cannot tell apart: a Pod status
// write from a CloneSet read. hack/bench-rollout.sh divides them by the Pods a rollout updated.
var kubeRequests = metrics.NewCounterVec(&metrics.CounterOpts{
	Name: "inplace_kube_requests_total",
	Help: "Requests this program sent to kube-apiserver (and through it to inplace-apiserver), by verb " +
		"(get, list, watch, create, update, patch, delete, as kube-apiserver names them), resource " +
		"(resource.group, core resources without a group; /subresource appended) and HTTP status code.",
	StabilityLevel: metrics.ALPHA,
}, []string{"verb", "resource", "code"})

var registerKubeRequests sync.Once

// requestInfo parses request paths as kube-apiserver does (verb from method and path, resource,
// subresource).
var requestInfo = &request.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// CountRequests makes the clients built from config count their requests in
// inplace_kube_requests_total.
func CountRequests(config *rest.Config) {
	registerKubeRequests.Do(func() { legacyregistry.MustRegister(kubeRequests) })
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt} })
}

type countingTransport struct{ next http.RoundTripper }

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	code := "error" // no response: a timeout, a refused connection
	if resp != nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	verb, resource := requestKind(req)
	kubeRequests.WithLabelValues(verb, resource, code).Inc()
	return resp, err
}

// requestKind is a request's verb and resource as the counter labels them; the resource is ""
// for requests that are not for one (discovery, /version).
func requestKind(req *http.Request) (verb, resource string) {
	info, err := requestInfo.NewRequestInfo(req)
	if err != nil {
		return "", ""
	}
	if !info.IsResourceRequest {
		return info.Verb, ""
	}
	resource = info.Resource
	if info.APIGroup != "" {
		resource += "." + info.APIGroup
	}
	if info.Subresource != "" {
		resource += "/" + info.Subresource
	}
	return info.Verb, resource
}
