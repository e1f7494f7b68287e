package apiserver

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"slices"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/union"
	"k8s.io/utils/lru"
)

// In aggregated mode nearly every request reaches inplace-apiserver through kube-apiserver's
// aggregation layer, which authenticated and authorized it, then proxied it with its front-proxy
// client certificate and the user in request headers. FrontProxy recognises those requests once,
// ahead of the handler chain, and spares them two costs of the generic chain:
//
//   - Authorization: asking kube-apiserver again through a SubjectAccessReview, as delegated
//     authorization does, puts the same question (user, verb, group, resource, subresource,
//     namespace, name) to the same authorizers a second time: one more request to kube-apiserver
//     for almost every request here, since the answers are cached per object name
//     (hack/bench-scale.sh measured 2.1 per Pod of an in-place rollout). Authorizer allows them.
//   - Authentication: the requestheader authenticator verifies the client certificate's chain on
//     every request, though a connection presents the same certificate for all of its requests;
//     with the recognition this made two chain verifications per request, together more CPU than
//     a get's own handler (a profile of inplace-apiserver under hack/bench-api.sh). The chain is
//     verified once per certificate and CA bundle here, and Authenticator reads the user from
//     the headers of a recognised request, as the requestheader authenticator does after its
//     verification.
//
// A request that does not present the front proxy's certificate (a client talking to
// inplace-apiserver directly) goes through the generic authentication and delegated
// authorization unchanged.
type FrontProxy struct {
	certs  *frontProxyCerts
	header authenticator.Request
}

// frontProxiedKey marks a request's context as proxied by kube-apiserver.
type frontProxiedKey struct{}

// NewFrontProxy recognises the front proxy by the requestheader settings of the server's
// authentication; nil when it has none (standalone mode, no front proxy to recognise).
func NewFrontProxy(c *authenticatorfactory.RequestHeaderConfig) *FrontProxy {
	if c == nil || c.CAContentProvider == nil {
		return nil
	}
	return &FrontProxy{
		certs: newFrontProxyCerts(c.CAContentProvider.VerifyOptions, c.AllowedClientNames, time.Now),
		// The user, uid, groups and extra of the proxied request, as kube-apiserver sent them;
		// the authenticated group is added as the generic authenticator adds it.
		header: group.NewAuthenticatedGroupAdder(headerrequest.NewDynamic(c.UsernameHeaders, c.UIDHeaders, c.GroupHeaders, c.ExtraHeaderPrefixes)),
	}
}

// Filter wraps the whole handler chain: it marks the context of each request that presents the
// front proxy's client certificate.
func (f *FrontProxy) Filter(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.certs.presentedBy(r) {
			r = r.WithContext(context.WithValue(r.Context(), frontProxiedKey{}, true))
		}
		h.ServeHTTP(w, r)
	})
}

func frontProxied(ctx context.Context) bool {
	proxied, _ := ctx.Value(frontProxiedKey{}).(bool)
	return proxied
}

// Authenticator authenticates a proxied request by its headers (the certificate was verified by
// Filter) and any other request, or a proxied one without a user header, with authn.
func (f *FrontProxy) Authenticator(authn authenticator.Request) authenticator.Request {
	if authn == nil {
		return nil
	}
	return authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		if frontProxied(r.Context()) {
			if resp, ok, err := f.header.AuthenticateRequest(r); ok && err == nil {
				return resp, true, nil
			}
		}
		return authn.AuthenticateRequest(r)
	})
}

// Authorizer allows what kube-apiserver proxied and leaves everything else to authz; authz
// itself when it is nil (no authorization configured).
func (f *FrontProxy) Authorizer(authz authorizer.Authorizer) (authorizer.Authorizer, error) {
	if authz == nil {
		return nil, nil
	}
	trusting, err := union.New(
		union.NamedAuthorizer{AuthorizerName: "front-proxy", Authorizer: authorizer.AuthorizerFunc(allowFrontProxied)},
		union.NamedAuthorizer{AuthorizerName: "delegated", Authorizer: authz})
	if err != nil {
		return nil, fmt.Errorf("trusting the front proxy's authorization: %w", err)
	}
	return trusting, nil
}

// allowFrontProxied allows what kube-apiserver proxied (Filter) and has no opinion on anything
// else.
func allowFrontProxied(ctx context.Context, _ authorizer.Attributes) (authorizer.Decision, string, error) {
	if frontProxied(ctx) {
		return authorizer.DecisionAllow, "authorized by kube-apiserver before it proxied the request", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// frontProxyCerts tells whether a request presents the front proxy's client certificate: its
// chain verified against the requestheader CA for client authentication, as the requestheader
// authenticator verifies it, and its common name one of the allowed names (any, when none are
// set). A verified certificate is remembered with the CA pool it was verified against and the
// time its chain is valid, so the next requests of its connection cost a map lookup; a new CA
// bundle (the pool changes) or the chain's expiry verifies it again.
type frontProxyCerts struct {
	verifyOptions x509request.VerifyOptionFunc
	allowedNames  headerrequest.StringSliceProvider
	now           func() time.Time
	// verified maps a client certificate (the parsed leaf of a connection; the cache keeps it
	// alive, so its address is not reused while it is a key) to a verifiedChain.
	verified *lru.Cache
}

// verifiedChain says that a certificate chained to roots, from notBefore to notAfter.
type verifiedChain struct {
	roots               *x509.CertPool
	notBefore, notAfter time.Time
}

// verifiedCertificates bounds the cache: kube-apiserver holds a few connections to the server.
const verifiedCertificates = 64

func newFrontProxyCerts(verifyOptions x509request.VerifyOptionFunc, allowedNames headerrequest.StringSliceProvider, now func() time.Time) *frontProxyCerts {
	return &frontProxyCerts{verifyOptions: verifyOptions, allowedNames: allowedNames, now: now, verified: lru.New(verifiedCertificates)}
}

func (c *frontProxyCerts) presentedBy(r *http.Request) bool {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return false
	}
	leaf := r.TLS.PeerCertificates[0]
	if names := c.allowedNames.Value(); len(names) > 0 && !slices.Contains(names, leaf.Subject.CommonName) {
		return false
	}
	opts, ok := c.verifyOptions()
	if !ok {
		return false
	}
	now := c.now()
	// Only a certificate presented without intermediates is remembered: its verification then
	// depends on nothing but the certificate, the pool and the time.
	cacheable := len(r.TLS.PeerCertificates) == 1
	if cacheable {
		if v, ok := c.verified.Get(leaf); ok {
			chain := v.(verifiedChain)
			if chain.roots == opts.Roots && !now.Before(chain.notBefore) && !now.After(chain.notAfter) {
				return true
			}
		}
	}
	if opts.Intermediates == nil && len(r.TLS.PeerCertificates) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, intermediate := range r.TLS.PeerCertificates[1:] {
			opts.Intermediates.AddCert(intermediate)
		}
	}
	opts.CurrentTime = now
	chains, err := leaf.Verify(opts)
	if err != nil || len(chains) == 0 {
		return false
	}
	if cacheable {
		chain := verifiedChain{roots: opts.Roots, notBefore: leaf.NotBefore, notAfter: leaf.NotAfter}
		for _, cert := range chains[0][1:] {
			if cert.NotBefore.After(chain.notBefore) {
				chain.notBefore = cert.NotBefore
			}
			if cert.NotAfter.Before(chain.notAfter) {
				chain.notAfter = cert.NotAfter
			}
		}
		c.verified.Add(leaf, chain)
	}
	return true
}
