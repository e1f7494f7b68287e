package apiserver

import (
	"context"
	"fmt"
	"net/http"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/union"
)

// A request that reaches inplace-apiserver through the aggregation layer has been authorized
// already: kube-apiserver runs its authorizers on every /apis/apps.kruise.io request, with the
// same attributes (user, verb, group, resource, subresource, namespace, name), before it proxies
// it with its front-proxy client certificate. Asking kube-apiserver again through a
// SubjectAccessReview, as delegated authorization does, puts the same question to the same
// authorizers a second time: one more request to kube-apiserver for almost every request here,
// since its answers are cached per object name (hack/bench-scale.sh measured 2.1 per Pod of an
// in-place rollout). So a request whose client certificate is the front proxy's (the
// requestheader CA and allowed names kube-apiserver publishes) is allowed here; every other
// request (a client talking to inplace-apiserver directly) is authorized by SubjectAccessReview
// as before.

// frontProxiedKey marks a request's context as proxied by kube-apiserver.
type frontProxiedKey struct{}

// frontProxyVerifier says whether a request's client certificate is the front proxy's, by the
// requestheader options of the server's authentication (nil when it has none).
func frontProxyVerifier(c *authenticatorfactory.RequestHeaderConfig) authenticator.Request {
	if c == nil || c.CAContentProvider == nil {
		return nil
	}
	ok := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{}, true, nil
	})
	return x509request.NewDynamicCAVerifier(c.CAContentProvider.VerifyOptions, ok, c.AllowedClientNames)
}

// markFrontProxied marks the context of each request that came through kube-apiserver's proxy
// (verifier accepts its client certificate), for frontProxyAuthorizer.
func markFrontProxied(h http.Handler, verifier authenticator.Request) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok, err := verifier.AuthenticateRequest(r); ok && err == nil {
			r = r.WithContext(context.WithValue(r.Context(), frontProxiedKey{}, true))
		}
		h.ServeHTTP(w, r)
	})
}

// allowFrontProxied allows what kube-apiserver proxied (markFrontProxied) and has no opinion on
// anything else.
func allowFrontProxied(ctx context.Context, _ authorizer.Attributes) (authorizer.Decision, string, error) {
	if proxied, _ := ctx.Value(frontProxiedKey{}).(bool); proxied {
		return authorizer.DecisionAllow, "authorized by kube-apiserver before it proxied the request", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// TrustFrontProxy makes authz allow the requests kube-apiserver proxied without asking it again, and
// returns the filter (for Config.FrontProxyFilter) that recognises them; authz unchanged and a
// nil filter when there is no authorizer or no front proxy to recognise.
func TrustFrontProxy(authz authorizer.Authorizer, requestHeader *authenticatorfactory.RequestHeaderConfig) (authorizer.Authorizer, func(http.Handler) http.Handler, error) {
	verifier := frontProxyVerifier(requestHeader)
	if authz == nil || verifier == nil {
		return authz, nil, nil
	}
	trusting, err := union.New(
		union.NamedAuthorizer{AuthorizerName: "front-proxy", Authorizer: authorizer.AuthorizerFunc(allowFrontProxied)},
		union.NamedAuthorizer{AuthorizerName: "delegated", Authorizer: authz})
	if err != nil {
		return nil, nil, fmt.Errorf("trusting the front proxy's authorization: %w", err)
	}
	return trusting, func(h http.Handler) http.Handler { return markFrontProxied(h, verifier) }, nil
}
