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
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
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

// client signs a client certificate for common name cn.
func (ca *testCA) client(t *testing.T, cn string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
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

// A request whose client certificate is the front proxy's (requestheader CA, allowed name) is
// allowed without asking the delegated authorizer; any other request is the delegated
// authorizer's to decide.
func TestTrustFrontProxy(t *testing.T) {
	proxyCA, clientCA := newTestCA(t, "front-proxy-ca"), newTestCA(t, "client-ca")
	caContent, err := dynamiccertificates.NewStaticCAContent("requestheader", proxyCA.pem())
	if err != nil {
		t.Fatal(err)
	}
	requestHeader := &authenticatorfactory.RequestHeaderConfig{
		CAContentProvider:  caContent,
		AllowedClientNames: headerrequest.StaticStringSlice{"front-proxy-client"},
	}
	delegated := 0
	deny := authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
		delegated++
		return authorizer.DecisionDeny, "asked kube-apiserver", nil
	})
	authz, filter, err := TrustFrontProxy(deny, requestHeader)
	if err != nil || filter == nil {
		t.Fatalf("TrustFrontProxy: filter set %v, err %v", filter != nil, err)
	}
	var decision authorizer.Decision
	handler := filter(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
			r := httptest.NewRequest(http.MethodPost, "/apis/apps.kruise.io/v1alpha1/namespaces/ns/pods/p/inplaceupdate", nil)
			r.TLS = &tls.ConnectionState{PeerCertificates: tc.peer}
			handler.ServeHTTP(httptest.NewRecorder(), r)
			if (decision == authorizer.DecisionAllow) != tc.wantAllowed || (delegated == 1) != tc.wantDelegated {
				t.Errorf("decision %v, delegated %d times; want allowed %v, delegated %v", decision, delegated, tc.wantAllowed, tc.wantDelegated)
			}
		})
	}

	// Without a front proxy to recognise, nothing changes.
	if a, f, err := TrustFrontProxy(deny, nil); a == nil || f != nil || err != nil {
		t.Errorf("no requestheader config: authorizer %v, filter set %v, err %v; want the delegated authorizer alone", a, f != nil, err)
	}
}
