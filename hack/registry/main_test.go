package main

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	remotetransport "github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// ociLayoutTar writes a random one-image OCI layout as a tar (what hack/build-images.sh makes) and
// returns its path and the image's digest.
func ociLayoutTar(t *testing.T) (string, string) {
	t.Helper()
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "image.tar")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	if err := tw.AddFS(os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return file, d.String()
}

// serve starts the registry on root and returns the dialer that sends the name
// registry.test:5000 to it.
func serve(t *testing.T, root string, logs io.Writer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	t.Helper()
	h, err := newHandler(root, log.New(logs, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	dial, err := resolver([]string{"registry.test:5000=" + strings.TrimPrefix(s.URL, "http://")})
	if err != nil {
		t.Fatal(err)
	}
	return dial
}

// TestPushServe: an OCI layout tar pushed under a name that resolves only through -resolve can be
// pulled back with its digest, its blobs are files under ROOT/blobs, and a registry restarted on
// the same root keeps them: a second push uploads no blob.
func TestPushServe(t *testing.T) {
	root := t.TempDir()
	src, digest := ociLayoutTar(t)
	var logs strings.Builder
	dial := serve(t, root, &logs)
	if err := push(src, []string{"registry.test:5000/e2e/app:v1", "registry.test:5000/other:x"}, nil, 0, dial); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"registry.test:5000/e2e/app:v1", "registry.test:5000/other:x"} {
		ref, err := name.ParseReference(r, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		tr := transport(dial)
		img, err := remote.Image(ref, remote.WithTransport(tr))
		if err != nil {
			t.Fatalf("pulling %s: %v", r, err)
		}
		if d, err := img.Digest(); err != nil || d.String() != digest {
			t.Errorf("%s: digest %s (%v), want %s", r, d, err, digest)
		}
		ls, err := img.Layers()
		if err != nil || len(ls) != 2 {
			t.Fatalf("%s: %d layers (%v), want 2", r, len(ls), err)
		}
	}
	// Config + 2 layers on disk (manifests are kept in memory).
	var files []string
	_ = filepath.WalkDir(filepath.Join(root, "blobs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if len(files) != 3 {
		t.Errorf("blob files %v, want 3 (config and 2 layers)", files)
	}

	// Restarted on the same root, with a leftover of an interrupted upload: the blobs are there,
	// the leftover is gone, and pushing again uploads nothing.
	leftover := filepath.Join(root, "blobs", "upload-123")
	if err := os.WriteFile(leftover, []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	dial = serve(t, root, &logs)
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("interrupted upload %s still there (%v)", leftover, err)
	}
	if err := push(src, []string{"registry.test:5000/e2e/app:v1"}, nil, 0, dial); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "/blobs/uploads") {
		t.Errorf("second push uploaded blobs again:\n%s", logs.String())
	}
}

// TestPushLabel: -label makes another image (other config, other digest) with the same layers.
func TestPushLabel(t *testing.T) {
	src, digest := ociLayoutTar(t)
	dial := serve(t, t.TempDir(), io.Discard)
	if err := push(src, []string{"registry.test:5000/app:labelled"}, []string{"inplace.dev/image=remote"}, 0, dial); err != nil {
		t.Fatal(err)
	}
	ref := name.MustParseReference("registry.test:5000/app:labelled", name.Insecure)
	img, err := remote.Image(ref, remote.WithTransport(transport(dial)))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := img.Digest(); d.String() == digest {
		t.Errorf("labelled image has the original digest %s", digest)
	}
	cf, err := img.ConfigFile()
	if err != nil || cf.Config.Labels["inplace.dev/image"] != "remote" {
		t.Errorf("config labels %v (%v), want inplace.dev/image=remote", cf.Config.Labels, err)
	}
}

func TestPushErrors(t *testing.T) {
	dial := serve(t, t.TempDir(), io.Discard)
	notImage := filepath.Join(t.TempDir(), "x.tar")
	f, _ := os.Create(notImage)
	tw := tar.NewWriter(f)
	_ = tw.WriteHeader(&tar.Header{Name: "hello", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte("x"))
	_ = tw.Close()
	_ = f.Close()
	if err := push(notImage, []string{"registry.test:5000/a:b"}, nil, 0, dial); err == nil || !strings.Contains(err.Error(), "neither an OCI image layout") {
		t.Errorf("push of a tar that is no image: %v", err)
	}
	if _, err := resolver([]string{"no-equals"}); err == nil {
		t.Error("resolver accepted an entry without =")
	}
}

// TestPushPadLayer: -pad-layer appends a layer of that many bytes, the same at every push of the
// same image (a second push uploads nothing).
func TestPushPadLayer(t *testing.T) {
	src, _ := ociLayoutTar(t)
	var logs strings.Builder
	dial := serve(t, t.TempDir(), &logs)
	if err := push(src, []string{"registry.test:5000/app:padded"}, nil, 4096, dial); err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	if err := push(src, []string{"registry.test:5000/app:padded"}, nil, 4096, dial); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "/blobs/uploads") {
		t.Errorf("second push of the same padded image uploaded blobs:\n%s", logs.String())
	}
	img, err := remote.Image(name.MustParseReference("registry.test:5000/app:padded", name.Insecure), remote.WithTransport(transport(dial)))
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 3 {
		t.Fatalf("padded image has %d layers, want the source's 2 and the pad", len(layers))
	}
	rc, err := layers[2].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	// a tar of one 4096-byte file.
	if len(b) < 4096 {
		t.Errorf("pad layer holds %d bytes, want at least 4096", len(b))
	}
}

// TestSlowRepositories: -slow paces the blobs of matching repositories to the given rate (a
// download of N bytes takes at least N/rate) and leaves other repositories and manifests alone.
func TestSlowRepositories(t *testing.T) {
	h, err := newHandler(t.TempDir(), log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	th, err := parseThrottle("slow/=64")
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(th.wrap(h))
	t.Cleanup(s.Close)
	dial, err := resolver([]string{"registry.test:5000=" + strings.TrimPrefix(s.URL, "http://")})
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(96<<10, 1) // one layer of 96 KiB: 1.5 s at 64 KiB/s
	if err != nil {
		t.Fatal(err)
	}
	opts := remote.WithTransport(transport(dial))
	for _, r := range []string{"registry.test:5000/slow/app:v1", "registry.test:5000/fast/app:v1"} {
		ref, err := name.ParseReference(r, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img, opts); err != nil {
			t.Fatal(err)
		}
	}
	pull := func(r string) time.Duration {
		t.Helper()
		ref, err := name.ParseReference(r, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		got, err := remote.Image(ref, opts)
		if err != nil {
			t.Fatal(err)
		}
		layers, err := got.Layers()
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		rc, err := layers[0].Compressed()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		n, err := io.Copy(io.Discard, rc)
		if err != nil {
			t.Fatal(err)
		}
		size, _ := layers[0].Size()
		if n != size {
			t.Fatalf("%s: read %d bytes of a %d-byte layer", r, n, size)
		}
		return time.Since(start)
	}
	// Pacing guarantees the lower bound whatever the machine's load.
	if d := pull("registry.test:5000/slow/app:v1"); d < 1400*time.Millisecond {
		t.Errorf("96 KiB from a repository served at 64 KiB/s took %v, want at least 1.4 s", d)
	}
	if d := pull("registry.test:5000/fast/app:v1"); d > time.Second {
		t.Errorf("96 KiB from a repository at full speed took %v", d)
	}
	for _, bad := range []string{"slow/", "=5", "slow/=0", "slow/=x"} {
		if _, err := parseThrottle(bad); err == nil {
			t.Errorf("-slow %q accepted", bad)
		}
	}
}

// TestPrivateRepositories: -auth asks basic auth for the matching repositories, for pushes and
// pulls: without credentials or with wrong ones a 401 with a Basic challenge, with the right ones
// the image; other repositories and the /v2/ ping stay open.
func TestPrivateRepositories(t *testing.T) {
	h, err := newHandler(t.TempDir(), log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	ba, err := parseBasicAuth("private/=puller:s3cret")
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(ba.wrap(h))
	t.Cleanup(s.Close)
	dial, err := resolver([]string{"registry.test:5000=" + strings.TrimPrefix(s.URL, "http://")})
	if err != nil {
		t.Fatal(err)
	}
	src, digest := ociLayoutTar(t)
	right := remote.WithAuth(&authn.Basic{Username: "puller", Password: "s3cret"})
	wrong := remote.WithAuth(&authn.Basic{Username: "puller", Password: "guess"})

	if err := push(src, []string{"registry.test:5000/private/app:v1"}, nil, 0, dial); !isUnauthorized(err) {
		t.Errorf("push without credentials: %v, want 401 Unauthorized", err)
	}
	if err := push(src, []string{"registry.test:5000/private/app:v1"}, nil, 0, dial, wrong); !isUnauthorized(err) {
		t.Errorf("push with a wrong password: %v, want 401 Unauthorized", err)
	}
	if err := push(src, []string{"registry.test:5000/private/app:v1", "registry.test:5000/public/app:v1"}, nil, 0, dial, right); err != nil {
		t.Fatalf("push with the credentials: %v", err)
	}

	get := func(r string, opts ...remote.Option) (string, error) {
		ref, err := name.ParseReference(r, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		desc, err := remote.Get(ref, append(opts, remote.WithTransport(transport(dial)))...)
		if err != nil {
			return "", err
		}
		return desc.Digest.String(), nil
	}
	if _, err := get("registry.test:5000/private/app:v1"); !isUnauthorized(err) {
		t.Errorf("pull without credentials: %v, want 401 Unauthorized", err)
	}
	if _, err := get("registry.test:5000/private/app:v1", wrong); !isUnauthorized(err) {
		t.Errorf("pull with a wrong password: %v, want 401 Unauthorized", err)
	}
	if d, err := get("registry.test:5000/private/app:v1", right); err != nil || d != digest {
		t.Errorf("pull with the credentials: %s, %v; want %s", d, err, digest)
	}
	if d, err := get("registry.test:5000/public/app:v1"); err != nil || d != digest {
		t.Errorf("pull of another repository without credentials: %s, %v; want %s", d, err, digest)
	}

	// The challenge containerd answers with a Pod's or a job's pull secret.
	resp, err := http.Get(s.URL + "/v2/private/app/manifests/v1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != `Basic realm="inplace-registry"` {
		t.Errorf("GET a private manifest: %d %q, want 401 with a Basic challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if resp, err := http.Get(s.URL + "/v2/"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v2/: %v %v, want 200", resp, err)
	}

	for _, bad := range []string{"private/", "=u:p", "private/=u", "private/=:p", "private/=u:"} {
		if _, err := parseBasicAuth(bad); err == nil {
			t.Errorf("-auth %q accepted", bad)
		}
	}
}

func isUnauthorized(err error) bool {
	var te *remotetransport.Error
	return errors.As(err, &te) && te.StatusCode == http.StatusUnauthorized
}

// TestRepositoryOf: the repository name of distribution API paths, slashes included.
func TestRepositoryOf(t *testing.T) {
	for path, want := range map[string][2]string{
		"/v2/":                            {"", ""},
		"/v2/app/manifests/v1":            {"app", "manifests"},
		"/v2/private/app/blobs/sha256:ab": {"private/app", "blobs"},
		"/v2/a/b/c/blobs/uploads/":        {"a/b/c", "blobs"},
		"/v2/private/tags/app/tags/list":  {"private/tags/app", "tags"},
		"/v2/app/blobs/manifests/v1":      {"app/blobs", "manifests"},
		"/v2/_catalog":                    {"", ""},
		"/metrics":                        {"", ""},
	} {
		if repo, kind := repositoryOf(path); repo != want[0] || kind != want[1] {
			t.Errorf("repositoryOf(%q) = %q, %q; want %q, %q", path, repo, kind, want[0], want[1])
		}
	}
}
