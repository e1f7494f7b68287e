package imagepuller

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"

	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
)

// The credentials of a pull are found the way the kubelet finds a Pod's imagePullSecrets
// (k8s.io/kubernetes pkg/credentialprovider, keyring.go; that module cannot be imported here):
// each Secret is a keyring of docker config entries keyed by registry host (glob allowed per dot
// separated part, e.g. *.example.com), optional port (exact) and optional path (a prefix of the
// image's path). Every entry that matches the image is tried, Secrets in the order the NodeImage
// names them and within a Secret the more specific keys first (reverse lexical order, the
// kubelet's); Docker Hub images also take an entry for index.docker.io.

// defaultRegistryHost is the key of Docker Hub's entry ("https://index.docker.io/v1/" once its
// scheme and /v1/ are dropped).
const defaultRegistryHost = "index.docker.io"

// dockerConfigEntry is one registry's entry of a docker config: auth, when set, is
// base64("username:password") and wins over the fields, as in the kubelet.
type dockerConfigEntry struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// keyring is the entries of one Secret, keys sorted most specific first.
type keyring struct {
	keys  []string
	creds map[string][]criruntime.Auth
}

// pullCredentials are the credentials to try, in order, for pulling image (any reference form)
// with secrets. No credentials means an anonymous pull. A Secret of another type or with a
// malformed config is an error naming it; the others are still used.
func pullCredentials(secrets []corev1.Secret, image string) ([]criruntime.Auth, []error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return nil, []error{fmt.Errorf("invalid image %q: %w", image, err)}
	}
	repo := named.Name() // docker.io/library/nginx, registry.example:5000/app
	var auths []criruntime.Auth
	var errs []error
	for i := range secrets {
		kr, err := secretKeyring(&secrets[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		auths = append(auths, kr.lookup(repo)...)
	}
	return auths, errs
}

// secretKeyring reads a kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg Secret.
func secretKeyring(s *corev1.Secret) (*keyring, error) {
	var entries map[string]dockerConfigEntry
	switch {
	case s.Type == corev1.SecretTypeDockerConfigJson && s.Data[corev1.DockerConfigJsonKey] != nil:
		var cfg struct {
			Auths map[string]dockerConfigEntry `json:"auths"`
		}
		if err := json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &cfg); err != nil {
			return nil, fmt.Errorf("secret %s/%s: reading %s: %w", s.Namespace, s.Name, corev1.DockerConfigJsonKey, err)
		}
		entries = cfg.Auths
	case s.Type == corev1.SecretTypeDockercfg && s.Data[corev1.DockerConfigKey] != nil:
		if err := json.Unmarshal(s.Data[corev1.DockerConfigKey], &entries); err != nil {
			return nil, fmt.Errorf("secret %s/%s: reading %s: %w", s.Namespace, s.Name, corev1.DockerConfigKey, err)
		}
	default:
		return nil, fmt.Errorf("secret %s/%s of type %q: want %s (key %s) or %s (key %s)", s.Namespace, s.Name, s.Type,
			corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, corev1.SecretTypeDockercfg, corev1.DockerConfigKey)
	}
	kr := &keyring{creds: map[string][]criruntime.Auth{}}
	for loc, e := range entries {
		key, ok := entryKey(loc)
		if !ok {
			continue // the kubelet ignores an entry it cannot parse, too
		}
		auth, err := e.toAuth()
		if err != nil {
			return nil, fmt.Errorf("secret %s/%s: entry %q: %w", s.Namespace, s.Name, loc, err)
		}
		if _, seen := kr.creds[key]; !seen {
			kr.keys = append(kr.keys, key)
		}
		kr.creds[key] = append(kr.creds[key], auth)
	}
	slices.Sort(kr.keys)
	slices.Reverse(kr.keys)
	return kr, nil
}

// entryKey is the key of a docker config entry: host plus path, without scheme, and with the
// docker client's /v1/ and /v2/ prefixes read as the host alone.
func entryKey(loc string) (string, bool) {
	value := loc
	if !strings.HasPrefix(value, "https://") && !strings.HasPrefix(value, "http://") {
		value = "https://" + value
	}
	u, err := url.Parse(value)
	if err != nil || u.Host == "" {
		return "", false
	}
	path := u.Path
	if strings.HasPrefix(path, "/v2/") || strings.HasPrefix(path, "/v1/") {
		path = path[3:]
	}
	if path == "" || path == "/" {
		return u.Host, true
	}
	return u.Host + path, true
}

func (e dockerConfigEntry) toAuth() (criruntime.Auth, error) {
	a := criruntime.Auth{Username: e.Username, Password: e.Password, IdentityToken: e.IdentityToken, RegistryToken: e.RegistryToken}
	if e.Auth == "" {
		return a, nil
	}
	decoded, err := base64.StdEncoding.DecodeString(e.Auth)
	if err != nil {
		return a, fmt.Errorf("auth is not base64: %w", err)
	}
	user, pass, ok := strings.Cut(string(decoded), ":")
	if !ok {
		return a, fmt.Errorf("auth is not base64(username:password)")
	}
	a.Username, a.Password = user, pass
	return a, nil
}

// lookup is the credentials of every key that matches repo (a normalized repository name).
func (kr *keyring) lookup(repo string) []criruntime.Auth {
	var out []criruntime.Auth
	for _, k := range kr.keys {
		if urlsMatch(k, repo) {
			out = append(out, kr.creds[k]...)
		}
	}
	if len(out) == 0 && isDefaultRegistry(repo) {
		out = kr.creds[defaultRegistryHost]
	}
	return out
}

// urlsMatch tells whether target (host[:port]/path) matches glob: the same port, the same
// number of host parts each matching its glob part (filepath.Match), and glob's path a prefix of
// target's.
func urlsMatch(glob, target string) bool {
	g, err1 := url.Parse("https://" + glob)
	t, err2 := url.Parse("https://" + target)
	if err1 != nil || err2 != nil {
		return false
	}
	gParts, gPort := splitHost(g.Host)
	tParts, tPort := splitHost(t.Host)
	if gPort != tPort || len(gParts) != len(tParts) || !strings.HasPrefix(t.Path, g.Path) {
		return false
	}
	for i := range gParts {
		if ok, err := filepath.Match(gParts[i], tParts[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

func splitHost(hostport string) (parts []string, port string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}

// isDefaultRegistry tells whether repo is on Docker Hub.
func isDefaultRegistry(repo string) bool {
	host, _, found := strings.Cut(repo, "/")
	if host == "" {
		return false
	}
	if !found || host == "docker.io" || host == defaultRegistryHost {
		return true
	}
	return !strings.ContainsAny(host, ".:")
}
