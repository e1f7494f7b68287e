package imagepuller

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
)

// named is s as Secret ns/name.
func named(s corev1.Secret, name string) corev1.Secret {
	s.Namespace, s.Name = "ns", name
	return s
}

func dockerConfigJSONSecret(name, config string) corev1.Secret {
	return named(corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(config)}}, name)
}

func TestPullCredentials(t *testing.T) {
	basic := base64.StdEncoding.EncodeToString([]byte("fromauth:secret:with:colons"))
	json := dockerConfigJSONSecret("json", `{"auths": {
		"reg.example:5000": {"username": "port", "password": "p1"},
		"reg.example": {"username": "noport", "password": "p2"},
		"*.example.com": {"username": "glob", "password": "p3"},
		"quay.io": {"username": "quay", "password": "p4"},
		"https://quay.io/v2/coreos": {"username": "coreos", "password": "p5"},
		"https://index.docker.io/v1/": {"auth": "`+basic+`"},
		"tokens.example": {"identitytoken": "id-token", "registrytoken": "reg-token"}
	}}`)
	cfg := named(corev1.Secret{Type: corev1.SecretTypeDockercfg, Data: map[string][]byte{
		corev1.DockerConfigKey: []byte(`{"reg.example:5000": {"username": "legacy", "password": "p6"}}`)}}, "cfg")

	user := func(auths []criruntime.Auth) []string {
		var out []string
		for _, a := range auths {
			out = append(out, a.Username)
		}
		return out
	}
	for _, tc := range []struct {
		image string
		want  []string
	}{
		{"reg.example:5000/app:v1", []string{"port", "legacy"}}, // the port must match; secrets in order
		{"reg.example/app:v1", []string{"noport"}},              // no port in the image: the port-less key only
		{"reg.example:5001/app", nil},                           // another port: nothing
		{"a.example.com/team/app:v1", []string{"glob"}},         // one glob part per host part
		{"a.b.example.com/app:v1", nil},                         // more host parts than the glob
		{"quay.io/coreos/etcd:v3", []string{"coreos", "quay"}},  // the more specific key first
		{"quay.io/other/app", []string{"quay"}},                 // path prefix not matched
		{"nginx:1.27", []string{"fromauth"}},                    // Docker Hub, by index.docker.io
		{"docker.io/library/busybox@sha256:" + strings.Repeat("a", 64), []string{"fromauth"}},
		{"localhost:5000/app", nil},
	} {
		auths, errs := pullCredentials([]corev1.Secret{json, cfg}, tc.image)
		if len(errs) > 0 {
			t.Errorf("%s: errors %v", tc.image, errs)
		}
		if got := user(auths); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: credentials of %v, want %v", tc.image, got, tc.want)
		}
	}

	auths, _ := pullCredentials([]corev1.Secret{json}, "nginx")
	if len(auths) != 1 || auths[0].Password != "secret:with:colons" {
		t.Errorf("auth field: %+v, want the password after the first colon", auths)
	}
	auths, _ = pullCredentials([]corev1.Secret{json}, "tokens.example/app")
	if len(auths) != 1 || auths[0].IdentityToken != "id-token" || auths[0].RegistryToken != "reg-token" {
		t.Errorf("tokens: %+v", auths)
	}
}

// TestPullCredentialsBadSecrets: a Secret that is no docker config is named in an error and
// skipped; the others still count.
func TestPullCredentialsBadSecrets(t *testing.T) {
	good := dockerConfigJSONSecret("good", `{"auths": {"reg.example": {"username": "u", "password": "p"}}}`)
	for _, bad := range []corev1.Secret{
		named(corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"username": []byte("u")}}, "opaque"),
		dockerConfigJSONSecret("garbled", `{"auths": `),
		dockerConfigJSONSecret("badauth", `{"auths": {"reg.example": {"auth": "not base64!"}}}`),
	} {
		auths, errs := pullCredentials([]corev1.Secret{bad, good}, "reg.example/app:v1")
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "ns/"+bad.Name) {
			t.Errorf("secret %s: errors %v, want one naming it", bad.Name, errs)
		}
		if len(auths) != 1 || auths[0].Username != "u" {
			t.Errorf("secret %s: credentials %+v, want the good secret's", bad.Name, auths)
		}
	}
}

func TestURLsMatch(t *testing.T) {
	for _, tc := range []struct {
		glob, target string
		want         bool
	}{
		{"*.docker.io", "blah.docker.io", true},
		{"*.docker.io", "not.right.io", false},
		{"reg.example", "reg.example/a", true},
		{"reg.example/a", "reg.example/ab", true}, // a prefix of the path, as the kubelet
		{"reg.example/a/b", "reg.example/a", false},
		{"reg.example:5000", "reg.example/a", false},
		{"reg.example", "reg.example:5000/a", false},
		{"[", "x/a", false}, // a malformed glob matches nothing
	} {
		if got := urlsMatch(tc.glob, tc.target); got != tc.want {
			t.Errorf("urlsMatch(%q, %q) = %v, want %v", tc.glob, tc.target, got, tc.want)
		}
	}
}
