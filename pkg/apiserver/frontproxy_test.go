package apiserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

// testCA is a certificate authority that signs client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key}
}

func (ca *testCA) pem() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

// client signs a client certificate for common name cn, valid for an hour around now.
func (ca *testCA) client(t *testing.T, cn string) *x509.Certificate {
	t.Helper()
	return ca.sign(t, cn, time.Now().Add(time.Hour), x509.ExtKeyUsageClientAuth)
}

// sign signs a certificate for common name cn, valid from an hour ago until notAfter, for usage.
func (ca *testCA) sign(t *testing.T, cn string, notAfter time.Time, usage x509.ExtKeyUsage) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// frontProxyConfig is the requestheader configuration of a server behind a front proxy whose
// client certificates ca signs, for the name front-proxy-client.
func frontProxyConfig(t *testing.T, ca *testCA) *authenticatorfactory.RequestHeaderConfig {
	t.Helper()
	caContent, err := dynamiccertificates.NewStaticCAContent("requestheader", ca.pem())
	if err != nil {
		t.Fatal(err)
	}
	return &authenticatorfactory.RequestHeaderConfig{
		CAContentProvider:   caContent,
		AllowedClientNames:  headerrequest.StaticStringSlice{"front-proxy-client"},
		UsernameHeaders:     headerrequest.StaticStringSlice{"X-Remote-User"},
		UIDHeaders:          headerrequest.StaticStringSlice{"X-Remote-Uid"},
		GroupHeaders:        headerrequest.StaticStringSlice{"X-Remote-Group"},
		ExtraHeaderPrefixes: headerrequest.StaticStringSlice{"X-Remote-Extra-"},
	}
}

func requestWithPeer(peer ...*x509.Certificate) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/apis/apps.kruise.io/v1alpha1/namespaces/ns/pods/p/inplaceupdate", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: peer}
	return r
}

// A request whose client certificate is the front proxy's (requestheader CA, allowed name) is
// allowed without asking the delegated authorizer; any other request is the delegated
// authorizer's to decide.
func TestFrontProxyAuthorizer(t *testing.T) {
	proxyCA, clientCA := newTestCA(t, "front-proxy-ca"), newTestCA(t, "client-ca")
	fp := NewFrontProxy(frontProxyConfig(t, proxyCA))
	delegated := 0
	deny := authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
		delegated++
		return authorizer.DecisionDeny, "asked kube-apiserver", nil
	})
	authz, err := fp.Authorizer(deny)
	if err != nil {
		t.Fatal(err)
	}
	var decision authorizer.Decision
	handler := fp.Filter(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		decision, _, _ = authz.Authorize(r.Context(), authorizer.AttributesRecord{Verb: "create", Resource: "pods", Subresource: "inplaceupdate"})
	}))

	cases := []struct {
		name          string
		peer          []*x509.Certificate
		wantAllowed   bool
		wantDelegated bool
	}{
		{"front proxy", []*x509.Certificate{proxyCA.client(t, "front-proxy-client")}, true, false},
		{"front proxy CA, another name", []*x509.Certificate{proxyCA.client(t, "someone")}, false, true},
		{"a client certificate of another CA", []*x509.Certificate{clientCA.client(t, "front-proxy-client")}, false, true},
		{"no client certificate", nil, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			delegated = 0
			handler.ServeHTTP(httptest.NewRecorder(), requestWithPeer(tc.peer...))
			if (decision == authorizer.DecisionAllow) != tc.wantAllowed || (delegated == 1) != tc.wantDelegated {
				t.Errorf("decision %v, delegated %d times; want allowed %v, delegated %v", decision, delegated, tc.wantAllowed, tc.wantDelegated)
			}
		})
	}

	// Without a front proxy to recognise, nothing changes.
	if fp := NewFrontProxy(nil); fp != nil {
		t.Errorf("no requestheader config: got a FrontProxy, want nil")
	}
}

// A proxied request is authenticated by its headers, as the requestheader authenticator does
// once it verified the certificate: the same user, and the headers removed. A request that is not
// proxied, or a proxied one without a user, goes to the server's own authenticator; headers
// alone never make a user.
func TestFrontProxyAuthenticator(t *testing.T) {
	proxyCA := newTestCA(t, "front-proxy-ca")
	fp := NewFrontProxy(frontProxyConfig(t, proxyCA))
	fallbacks := 0
	authn := fp.Authenticator(authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		fallbacks++
		return nil, false, nil
	}))
	proxy := proxyCA.client(t, "front-proxy-client")
	withUser := func(r *http.Request) *http.Request {
		r.Header.Set("X-Remote-User", "alice")
		r.Header.Set("X-Remote-Uid", "u-1")
		r.Header.Add("X-Remote-Group", "devs")
		r.Header.Set("X-Remote-Extra-Scopes", "s1")
		return r
	}
	cases := []struct {
		name         string
		req          *http.Request
		wantUser     string
		wantFallback bool
	}{
		{"proxied with a user", withUser(requestWithPeer(proxy)), "alice", false},
		{"proxied without a user", requestWithPeer(proxy), "", true},
		{"headers without the front proxy's certificate", withUser(requestWithPeer(newTestCA(t, "other").client(t, "front-proxy-client"))), "", true},
		{"headers without a certificate", withUser(requestWithPeer()), "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fallbacks = 0
			var resp *authenticator.Response
			var ok bool
			fp.Filter(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				resp, ok, _ = authn.AuthenticateRequest(r)
			})).ServeHTTP(httptest.NewRecorder(), tc.req)
			if (fallbacks == 1) != tc.wantFallback {
				t.Errorf("server's authenticator asked %d times, want asked %v", fallbacks, tc.wantFallback)
			}
			if tc.wantUser == "" {
				if ok {
					t.Errorf("authenticated as %v, want not authenticated", resp.User)
				}
				return
			}
			if !ok {
				t.Fatalf("not authenticated, want %s", tc.wantUser)
			}
			u := resp.User
			if u.GetName() != "alice" || u.GetUID() != "u-1" || !slices.Equal(u.GetGroups(), []string{"devs", "system:authenticated"}) ||
				!slices.Equal(u.GetExtra()["scopes"], []string{"s1"}) {
				t.Errorf("user %q uid %q groups %v extra %v; want alice, u-1, [devs system:authenticated], scopes [s1]", u.GetName(), u.GetUID(), u.GetGroups(), u.GetExtra())
			}
			if h := tc.req.Header.Get("X-Remote-User"); h != "" {
				t.Errorf("X-Remote-User still set (%q): the authentication headers must be removed", h)
			}
		})
	}
}

// requestHeaderVerifier is k8s.io/apiserver's verification of the front proxy's certificate, the
// one its requestheader authenticator runs on every request.
func requestHeaderVerifier(cfg *authenticatorfactory.RequestHeaderConfig) authenticator.Request {
	ok := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{}, true, nil
	})
	return x509request.NewDynamicCAVerifier(cfg.CAContentProvider.VerifyOptions, ok, cfg.AllowedClientNames)
}

// frontProxyCerts accepts exactly the certificates the requestheader authenticator of
// k8s.io/apiserver accepts, and verifies a certificate's chain once for all its requests; a new
// CA bundle or the certificate's expiry makes it verify again.
func TestFrontProxyCerts(t *testing.T) {
	proxyCA, otherCA := newTestCA(t, "front-proxy-ca"), newTestCA(t, "other-ca")
	cfg := frontProxyConfig(t, proxyCA)
	reference := requestHeaderVerifier(cfg)
	soon := time.Now().Add(time.Minute)
	for _, tc := range []struct {
		name string
		cert *x509.Certificate
		want bool
	}{
		{"front proxy", proxyCA.client(t, "front-proxy-client"), true},
		{"another name", proxyCA.client(t, "someone"), false},
		{"another CA", otherCA.client(t, "front-proxy-client"), false},
		{"expired", proxyCA.sign(t, "front-proxy-client", time.Now().Add(-time.Minute), x509.ExtKeyUsageClientAuth), false},
		{"server certificate", proxyCA.sign(t, "front-proxy-client", soon, x509.ExtKeyUsageServerAuth), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			certs := newFrontProxyCerts(cfg.CAContentProvider.VerifyOptions, cfg.AllowedClientNames, time.Now)
			_, refOK, refErr := reference.AuthenticateRequest(requestWithPeer(tc.cert))
			if refOK != tc.want || (refErr == nil) != tc.want {
				t.Fatalf("k8s.io/apiserver's verifier: ok %v err %v; the test expects %v", refOK, refErr, tc.want)
			}
			for i := range 2 {
				if got := certs.presentedBy(requestWithPeer(tc.cert)); got != tc.want {
					t.Errorf("request %d: front proxy %v, want %v", i+1, got, tc.want)
				}
			}
		})
	}

	t.Run("verified once", func(t *testing.T) {
		certs := newFrontProxyCerts(cfg.CAContentProvider.VerifyOptions, cfg.AllowedClientNames, time.Now)
		leaf := proxyCA.client(t, "front-proxy-client")
		if !certs.presentedBy(requestWithPeer(leaf)) {
			t.Fatal("front proxy's certificate refused")
		}
		// A certificate whose signature no longer verifies: accepted for the same certificate
		// (the connection's parsed leaf, remembered), refused as a certificate not seen before.
		tampered := *leaf
		leaf.Signature = append([]byte(nil), leaf.Signature...)
		leaf.Signature[len(leaf.Signature)-1] ^= 0xff
		tampered.Signature = leaf.Signature
		if !certs.presentedBy(requestWithPeer(leaf)) {
			t.Error("second request of the same certificate verified its chain again")
		}
		if certs.presentedBy(requestWithPeer(&tampered)) {
			t.Error("a certificate with a broken signature was accepted")
		}
	})

	t.Run("new CA bundle", func(t *testing.T) {
		certs := newFrontProxyCerts(cfg.CAContentProvider.VerifyOptions, cfg.AllowedClientNames, time.Now)
		leaf := proxyCA.client(t, "front-proxy-client")
		if !certs.presentedBy(requestWithPeer(leaf)) {
			t.Fatal("front proxy's certificate refused")
		}
		otherBundle, err := dynamiccertificates.NewStaticCAContent("requestheader", otherCA.pem())
		if err != nil {
			t.Fatal(err)
		}
		certs.verifyOptions = otherBundle.VerifyOptions
		if certs.presentedBy(requestWithPeer(leaf)) {
			t.Error("a certificate of the old CA accepted after the CA bundle changed")
		}
	})

	t.Run("expiry", func(t *testing.T) {
		now := time.Now()
		certs := newFrontProxyCerts(cfg.CAContentProvider.VerifyOptions, cfg.AllowedClientNames, func() time.Time { return now })
		leaf := proxyCA.sign(t, "front-proxy-client", now.Add(time.Minute), x509.ExtKeyUsageClientAuth)
		if !certs.presentedBy(requestWithPeer(leaf)) {
			t.Fatal("front proxy's certificate refused")
		}
		now = now.Add(2 * time.Minute)
		if certs.presentedBy(requestWithPeer(leaf)) {
			t.Error("an expired certificate accepted because it was valid when first seen")
		}
	})
}

// BenchmarkFrontProxyCerts compares recognising the front proxy on a connection's later
// requests (remembered) with verifying the chain every time, as before.
func BenchmarkFrontProxyCerts(b *testing.B) {
	t := &testing.T{}
	proxyCA := newTestCA(t, "front-proxy-ca")
	cfg := frontProxyConfig(t, proxyCA)
	leaf := proxyCA.client(t, "front-proxy-client")
	r := requestWithPeer(leaf)
	b.Run("remembered", func(b *testing.B) {
		certs := newFrontProxyCerts(cfg.CAContentProvider.VerifyOptions, cfg.AllowedClientNames, time.Now)
		for b.Loop() {
			if !certs.presentedBy(r) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("verified every time", func(b *testing.B) {
		verifier := requestHeaderVerifier(cfg)
		for b.Loop() {
			if _, ok, _ := verifier.AuthenticateRequest(r); !ok {
				b.Fatal("refused")
			}
		}
	})
}
