// Package framework starts a real inplace-apiserver in the test process: the same options and
// code path as the binary, on a real embedded etcd in a temporary directory, serving TLS on a
// free loopback port.
package framework

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/inplace-dev/inplace/pkg/apiserver/options"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
)

// Server is an inplace-apiserver running in standalone mode inside the test.
type Server struct {
	// DataDir is the etcd data directory; start another Server on it to test restarts.
	DataDir string
	// EtcdURLs are the client URLs of its etcd, to look at what it stored.
	EtcdURLs []string
	// Config reaches the server as any client would (TLS, no credentials needed in standalone).
	Config *rest.Config
	// Client is the generated typed clientset, speaking JSON (client-go's default).
	Client clientset.Interface
	// ProtobufClient is the generated typed clientset speaking protobuf only: it sends protobuf and
	// accepts nothing else, so a kind or subresource the server cannot encode as protobuf fails
	// with 406 instead of falling back to JSON unnoticed.
	ProtobufClient clientset.Interface

	stop    context.CancelFunc
	running *options.Running
}

// StartServer starts a server on a new data directory and stops it when the test ends.
func StartServer(t testing.TB) *Server {
	t.Helper()
	return StartServerOn(t, t.TempDir())
}

// StartServerOn starts a server on dataDir and stops it when the test ends.
func StartServerOn(t testing.TB, dataDir string) *Server {
	t.Helper()
	return StartServerWith(t, dataDir, nil)
}

// StartServerWith starts a server on dataDir with the options changed by tweak (when not nil,
// before they are completed: as flags would), and stops it when the test ends.
func StartServerWith(t testing.TB, dataDir string, tweak func(*options.Options)) *Server {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening on loopback: %v", err)
	}
	o := options.NewOptions()
	o.DataDir = dataDir
	o.EmbeddedEtcdUnsafeNoFsync = true
	o.Recommended.SecureServing.Listener = listener
	o.Recommended.SecureServing.BindPort = listener.Addr().(*net.TCPAddr).Port
	if tweak != nil {
		tweak(o)
	}
	if err := o.Complete(); err != nil {
		t.Fatalf("completing options: %v", err)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("validating options: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	running, err := o.Start(ctx)
	if err != nil {
		cancel()
		t.Fatalf("starting inplace-apiserver: %v", err)
	}
	s := &Server{
		DataDir:  dataDir,
		EtcdURLs: o.Recommended.Etcd.StorageConfig.Transport.ServerList,
		Config: &rest.Config{
			Host:            fmt.Sprintf("https://%s", listener.Addr()),
			TLSClientConfig: rest.TLSClientConfig{Insecure: true},
			QPS:             -1,
		},
		stop:    cancel,
		running: running,
	}
	t.Cleanup(s.Stop)
	if err := s.waitReady(ctx); err != nil {
		t.Fatalf("inplace-apiserver did not become ready: %v", err)
	}
	s.Client, err = clientset.NewForConfig(s.Config)
	if err != nil {
		t.Fatalf("creating the clientset: %v", err)
	}
	protobufConfig := rest.CopyConfig(s.Config)
	protobufConfig.ContentType = runtime.ContentTypeProtobuf
	protobufConfig.AcceptContentTypes = runtime.ContentTypeProtobuf
	s.ProtobufClient, err = clientset.NewForConfig(protobufConfig)
	if err != nil {
		t.Fatalf("creating the protobuf clientset: %v", err)
	}
	return s
}

// Stop stops the server and its embedded etcd, and waits until both are gone. Stopping twice is fine.
func (s *Server) Stop() {
	s.stop()
	_ = s.running.Wait()
}

func (s *Server) waitReady(ctx context.Context) error {
	transport, err := rest.TransportFor(s.Config)
	if err != nil {
		return err
	}
	httpClient := &http.Client{Transport: transport, Timeout: 5 * time.Second}
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		resp, err := httpClient.Get(s.Config.Host + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}
