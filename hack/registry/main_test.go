package main

import (
	"archive/tar"
	"context"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
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
	if err := push(src, []string{"registry.test:5000/e2e/app:v1", "registry.test:5000/other:x"}, nil, dial); err != nil {
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
	if err := push(src, []string{"registry.test:5000/e2e/app:v1"}, nil, dial); err != nil {
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
	if err := push(src, []string{"registry.test:5000/app:labelled"}, []string{"inplace.dev/image=remote"}, dial); err != nil {
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
	if err := push(notImage, []string{"registry.test:5000/a:b"}, nil, dial); err == nil || !strings.Contains(err.Error(), "neither an OCI image layout") {
		t.Errorf("push of a tar that is no image: %v", err)
	}
	if _, err := resolver([]string{"no-equals"}); err == nil {
		t.Error("resolver accepted an entry without =")
	}
}
