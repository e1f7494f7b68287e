// Command inplace-registry is the local cluster's image registry (hack/local-up.d/05-registry.sh):
// go-containerregistry's OCI distribution server (pkg/registry) over plain HTTP, its blobs on disk,
// and a client that pushes the OCI image layouts hack/build-images.sh writes.
//
//	inplace-registry serve -listen 10.77.0.1:5000 -listen 127.0.0.1:5000 -root _output/local/registry \
//	    [-slow slow/=256] [-auth private/=USER:PASSWORD]
//	inplace-registry push [-resolve registry.inplace.local:5000=127.0.0.1:5000] [-label K=V] \
//	    [-pad-layer BYTES] [-auth USER:PASSWORD] _output/images/app-v1.tar registry.inplace.local:5000/inplace/app:v1 [more references]
//
// serve keeps blobs in ROOT/blobs (go-containerregistry's disk blob handler: written to a
// temporary file and renamed once the digest is verified, so a restart keeps them and a second
// push of the same image uploads nothing) and manifests and tags in memory: a restarted registry
// is empty until pushed to again, as local-up does at every start.
//
// -slow PREFIX=KIB serves the blobs of the repositories whose name starts with PREFIX at KIB KiB a
// second (the registry's responses are paced, not the node's download): a cold pull of a small
// test image then takes as long as a large image's from a distant registry, which is what image
// pre-download is about (hack/bench-predownload.sh). Manifests and other repositories are served
// at full speed.
//
// -auth PREFIX=USER:PASSWORD asks for HTTP basic auth with those credentials on every request
// (pull or push) for the repositories whose name starts with PREFIX: a 401 with a Basic challenge
// without them or with others, as a private repository of a real registry answers. That is what
// image pull secrets are for (a Pod's imagePullSecrets, an ImagePullJob's pullSecrets); other
// repositories and the /v2/ ping stay open.
//
// push reads an OCI image layout (a directory, or a tar of one such as hack/build-images.sh's) or
// a `docker save` tarball, and pushes it under each reference over plain HTTP. The host name in a
// reference need not resolve on this machine: -resolve sends connections for HOST:PORT to ADDR
// (by default the local cluster's name to the registry on loopback); -auth USER:PASSWORD sends
// basic auth credentials (for a repository served with -auth). -label adds a label to the
// image's config, which makes it another image (another config digest, so another image ID in
// containerd) with the same layers. -pad-layer BYTES appends a layer of that many random-looking bytes (derived from the image, so
// the same every time): an
// image whose content no node has (a node that holds the same layers, such as the imported test
// images', fetches only a pull's manifest and config).
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// defaultResolve is the local cluster's registry name (hack/lib/local.sh REGISTRY_HOST) and where
// serve listens for it on this machine.
const defaultResolve = "registry.inplace.local:5000=127.0.0.1:5000"

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serveMain(os.Args[2:])
	case "push":
		err = pushMain(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		log.Fatalf("inplace-registry %s: %v", os.Args[1], err)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: inplace-registry serve -listen ADDR... -root DIR [-slow PREFIX=KIB]... [-auth PREFIX=USER:PASSWORD]...\n"+
		"       inplace-registry push [-resolve HOST:PORT=ADDR]... [-label K=V]... [-pad-layer BYTES] [-auth USER:PASSWORD] SRC REF...")
	os.Exit(2)
}

func serveMain(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	var listen listFlag
	fs.Var(&listen, "listen", "address to serve plain HTTP on (repeatable)")
	root := fs.String("root", "", "directory of the blobs (created if missing)")
	var slow listFlag
	fs.Var(&slow, "slow", "PREFIX=KIB: serve the blobs of repositories named PREFIX... at KIB KiB/s (repeatable)")
	var auth listFlag
	fs.Var(&auth, "auth", "PREFIX=USER:PASSWORD: ask basic auth with these credentials for repositories named PREFIX... (repeatable)")
	_ = fs.Parse(args)
	if len(listen) == 0 || *root == "" || fs.NArg() > 0 {
		usage()
	}
	handler, err := newHandler(*root, log.Default())
	if err != nil {
		return err
	}
	for _, sl := range slow {
		t, err := parseThrottle(sl)
		if err != nil {
			return err
		}
		handler = t.wrap(handler)
		log.Printf("blobs of repositories %s* served at %d KiB/s", t.prefix, t.rate/1024)
	}
	for _, a := range auth {
		ba, err := parseBasicAuth(a)
		if err != nil {
			return err
		}
		handler = ba.wrap(handler)
		log.Printf("repositories %s* ask basic auth of user %s", ba.prefix, ba.user)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	errs := make(chan error, len(listen))
	var servers []*http.Server
	for _, addr := range listen {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		s := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, s)
		log.Printf("serving on http://%s, blobs in %s", l.Addr(), *root)
		go func() { errs <- s.Serve(l) }()
	}
	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(shutdown)
	}
	log.Print("stopped")
	return nil
}

// newHandler is the registry with its blobs in root/blobs/sha256/<hex>.
func newHandler(root string, logger *log.Logger) (http.Handler, error) {
	blobs := filepath.Join(root, "blobs")
	// The disk handler writes its temporary files into this directory itself.
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return nil, err
	}
	// Uploads the handler did not finish (killed, or a digest mismatch) leave upload-* files.
	stale, _ := filepath.Glob(filepath.Join(blobs, "upload-*"))
	for _, f := range stale {
		_ = os.Remove(f)
	}
	return registry.New(registry.Logger(logger), registry.WithBlobHandler(registry.NewDiskBlobHandler(blobs))), nil
}

func pushMain(args []string) error {
	fs := flag.NewFlagSet("push", flag.ExitOnError)
	resolve := listFlag{}
	fs.Var(&resolve, "resolve", "HOST:PORT=ADDR: connect to ADDR for registry HOST:PORT (repeatable; default "+defaultResolve+")")
	var labels listFlag
	fs.Var(&labels, "label", "K=V: add a label to the image config (repeatable)")
	pad := fs.Int64("pad-layer", 0, "BYTES: append a layer of that many random bytes")
	auth := fs.String("auth", "", "USER:PASSWORD: basic auth credentials to push with")
	_ = fs.Parse(args)
	if fs.NArg() < 2 || *pad < 0 {
		usage()
	}
	opts := []remote.Option{}
	if *auth != "" {
		user, password, ok := strings.Cut(*auth, ":")
		if !ok || user == "" {
			return fmt.Errorf("-auth %q: want USER:PASSWORD", *auth)
		}
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: user, Password: password}))
	}
	if len(resolve) == 0 {
		resolve = listFlag{defaultResolve}
	}
	dial, err := resolver(resolve)
	if err != nil {
		return err
	}
	return push(fs.Arg(0), fs.Args()[1:], labels, *pad, dial, opts...)
}

// resolver maps "HOST:PORT=ADDR" entries to a dialer that connects to ADDR for HOST:PORT.
func resolver(entries []string) (func(ctx context.Context, network, addr string) (net.Conn, error), error) {
	to := map[string]string{}
	for _, e := range entries {
		host, addr, ok := strings.Cut(e, "=")
		if !ok || host == "" || addr == "" {
			return nil, fmt.Errorf("-resolve %q: want HOST:PORT=ADDR", e)
		}
		to[host] = addr
	}
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if a, ok := to[addr]; ok {
			addr = a
		}
		return d.DialContext(ctx, network, addr)
	}, nil
}

// push pushes the image (or image index) in src under every reference, over plain HTTP.
// opts are more remote options (credentials).
func push(src string, refs, labels []string, pad int64, dial func(ctx context.Context, network, addr string) (net.Conn, error),
	opts ...remote.Option) error {
	opts = append(opts, remote.WithTransport(transport(dial)))

	img, idx, cleanup, err := load(src)
	if err != nil {
		return fmt.Errorf("reading %s: %w", src, err)
	}
	defer cleanup()
	if (len(labels) > 0 || pad > 0) && img == nil {
		return fmt.Errorf("-label, -pad-layer: %s holds an image index, not one image", src)
	}
	if len(labels) > 0 {
		if img, err = withLabels(img, labels); err != nil {
			return err
		}
	}
	if pad > 0 {
		if img, err = withPadLayer(img, pad); err != nil {
			return fmt.Errorf("-pad-layer: %w", err)
		}
	}
	for _, r := range refs {
		ref, err := name.ParseReference(r, name.Insecure)
		if err != nil {
			return err
		}
		var digest v1.Hash
		if img != nil {
			err = remote.Write(ref, img, opts...)
			if err == nil {
				digest, err = img.Digest()
			}
		} else {
			err = remote.WriteIndex(ref, idx, opts...)
			if err == nil {
				digest, err = idx.Digest()
			}
		}
		if err != nil {
			return fmt.Errorf("pushing %s to %s: %w", src, ref, err)
		}
		fmt.Printf("pushed %s@%s\n", ref, digest)
	}
	return nil
}

// transport is go-containerregistry's default transport connecting through dial.
func transport(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Transport {
	tr := remote.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = dial
	return tr
}

// withPadLayer appends to img a layer holding one file of size bytes that look random (they do not
// compress) but are derived from img's digest: the same image padded twice is the same image, so
// pushing it again at the next local-up stores nothing new.
func withPadLayer(img v1.Image, size int64) (v1.Image, error) {
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	seed := sha256.Sum256([]byte("inplace-registry pad " + d.String()))
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "pad", Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
		return nil, err
	}
	if _, err := io.CopyN(tw, rand.NewChaCha8(seed), size); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	})
	if err != nil {
		return nil, err
	}
	return mutate.AppendLayers(img, layer)
}

func withLabels(img v1.Image, labels []string) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg := *cf.Config.DeepCopy()
	if cfg.Labels == nil {
		cfg.Labels = map[string]string{}
	}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("-label %q: want K=V", l)
		}
		cfg.Labels[k] = v
	}
	return mutate.Config(img, cfg)
}

// load reads src: an OCI image layout directory, a tar of one, or a `docker save` tarball. It
// returns the image when the layout holds exactly one image manifest, the whole index otherwise;
// cleanup removes what it unpacked.
func load(src string) (img v1.Image, idx v1.ImageIndex, cleanup func(), err error) {
	cleanup = func() {}
	st, err := os.Stat(src)
	if err != nil {
		return nil, nil, cleanup, err
	}
	dir := src
	if !st.IsDir() {
		names, err := tarNames(src)
		if err != nil {
			return nil, nil, cleanup, err
		}
		switch {
		case names["index.json"]:
			if dir, err = os.MkdirTemp("", "inplace-registry-push-"); err != nil {
				return nil, nil, cleanup, err
			}
			cleanup = func() { _ = os.RemoveAll(dir) }
			if err := untar(src, dir); err != nil {
				return nil, nil, cleanup, err
			}
		case names["manifest.json"]:
			img, err := tarball.ImageFromPath(src, nil)
			return img, nil, cleanup, err
		default:
			return nil, nil, cleanup, errors.New("neither an OCI image layout (index.json) nor a docker save tarball (manifest.json)")
		}
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, nil, cleanup, err
	}
	idx, err = p.ImageIndex()
	if err != nil {
		return nil, nil, cleanup, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, nil, cleanup, err
	}
	if len(im.Manifests) == 1 && im.Manifests[0].MediaType.IsImage() {
		img, err = idx.Image(im.Manifests[0].Digest)
		return img, nil, cleanup, err
	}
	return nil, idx, cleanup, nil
}

// tarNames lists the regular files of a tar archive.
func tarNames(file string) (map[string]bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names := map[string]bool{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			names[filepath.Clean(h.Name)] = true
		}
	}
}

// untar unpacks the regular files and directories of a tar archive into dir (an OCI layout has
// nothing else); names that would leave dir are refused.
func untar(file, dir string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		n := filepath.Clean(h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(n, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if d := filepath.Dir(n); d != "." {
				if err := root.MkdirAll(d, 0o755); err != nil {
					return err
				}
			}
			out, err := root.Create(n)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}

// throttle paces the blob downloads of the repositories whose name starts with prefix to rate
// bytes a second.
type throttle struct {
	prefix string
	rate   int64
}

// parseThrottle reads -slow's PREFIX=KIB.
func parseThrottle(v string) (throttle, error) {
	prefix, kib, ok := strings.Cut(v, "=")
	n, err := strconv.ParseInt(kib, 10, 64)
	if !ok || prefix == "" || err != nil || n <= 0 {
		return throttle{}, fmt.Errorf("-slow %q: want PREFIX=KIB with KIB a positive number of KiB a second", v)
	}
	return throttle{prefix: prefix, rate: n * 1024}, nil
}

func (t throttle) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		repo, kind := repositoryOf(r.URL.Path)
		if r.Method == http.MethodGet && kind == "blobs" && strings.HasPrefix(repo, t.prefix) {
			w = &pacedWriter{ResponseWriter: w, ctx: r.Context(), rate: t.rate, start: time.Now()}
		}
		next.ServeHTTP(w, r)
	})
}

// pacedWriter writes no faster than rate bytes a second since start, in chunks of 16 KiB (a pull
// sees a steady trickle, as from a slow link, rather than bursts).
type pacedWriter struct {
	http.ResponseWriter
	ctx     context.Context
	rate    int64
	start   time.Time
	written int64
}

const paceChunk = 16 << 10

func (p *pacedWriter) Write(b []byte) (int, error) {
	total := 0
	for len(b) > 0 {
		n, err := p.ResponseWriter.Write(b[:min(len(b), paceChunk)])
		total += n
		p.written += int64(n)
		if err != nil {
			return total, err
		}
		b = b[n:]
		if f, ok := p.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		// The time by which this many bytes may have gone out at rate: a timer, not a busy loop;
		// a client that hangs up ends the wait.
		due := p.start.Add(time.Duration(p.written * int64(time.Second) / p.rate))
		if wait := time.Until(due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-p.ctx.Done():
				t.Stop()
				return total, p.ctx.Err()
			}
		}
	}
	return total, nil
}

// repositoryOf is the repository a distribution API path is about and what of it (blobs,
// manifests, tags); "" for /v2/ and other paths.
func repositoryOf(path string) (repo, kind string) {
	rest, ok := strings.CutPrefix(path, "/v2/")
	if !ok {
		return "", ""
	}
	// The last of these segments ends the name: a repository name may hold slashes and even
	// these words, what follows them (a tag, a digest, uploads/ID, list) holds none of them.
	best := -1
	for _, k := range []string{"blobs", "manifests", "tags"} {
		if i := strings.LastIndex(rest, "/"+k+"/"); i > best {
			best, kind = i, k
		}
	}
	if best < 0 {
		return "", ""
	}
	return rest[:best], kind
}

// basicAuth asks the credentials user:password of every request for the repositories whose name
// starts with prefix.
type basicAuth struct {
	prefix, user, password string
}

// parseBasicAuth reads -auth's PREFIX=USER:PASSWORD.
func parseBasicAuth(v string) (basicAuth, error) {
	prefix, creds, ok := strings.Cut(v, "=")
	user, password, ok2 := strings.Cut(creds, ":")
	if !ok || !ok2 || prefix == "" || user == "" || password == "" {
		return basicAuth{}, fmt.Errorf("-auth %q: want PREFIX=USER:PASSWORD", v)
	}
	return basicAuth{prefix: prefix, user: user, password: password}, nil
}

func (a basicAuth) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		repo, _ := repositoryOf(r.URL.Path)
		if repo == "" || !strings.HasPrefix(repo, a.prefix) {
			next.ServeHTTP(w, r)
			return
		}
		user, password, ok := r.BasicAuth()
		if ok && subtle.ConstantTimeCompare([]byte(user), []byte(a.user)) == 1 &&
			subtle.ConstantTimeCompare([]byte(password), []byte(a.password)) == 1 {
			next.ServeHTTP(w, r)
			return
		}
		// What a distribution registry answers: a challenge the client (containerd's resolver,
		// go-containerregistry) answers with the credentials it was given for this host.
		w.Header().Set("WWW-Authenticate", `Basic realm="inplace-registry"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		msg := "authentication required"
		if ok {
			msg = "wrong user name or password"
		}
		fmt.Fprintf(w, `{"errors":[{"code":"UNAUTHORIZED","message":%q}]}`+"\n", msg)
	})
}
