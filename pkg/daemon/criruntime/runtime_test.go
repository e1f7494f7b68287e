package criruntime_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime/fakecri"
)

// shortDir is a temporary directory with a short path: unix socket paths are limited to ~107 bytes.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cri")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func serve(t *testing.T, path, name string) *fakecri.Server {
	t.Helper()
	s, err := fakecri.Serve(path, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// staleSocket leaves a socket file nobody listens on, as a crashed runtime does.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = l.Close()
}

func connect(t *testing.T, endpoint string, candidates []string) criruntime.Runtime {
	t.Helper()
	rt, err := criruntime.Connect(context.Background(), endpoint, candidates)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

// deadCandidates are three socket paths in dir that no runtime answers on: one missing, one a
// regular file, one a socket nobody listens on.
func deadCandidates(t *testing.T, dir string) (missing, regular, stale string) {
	t.Helper()
	missing = filepath.Join(dir, "missing.sock")
	regular = filepath.Join(dir, "regular.sock")
	if err := os.WriteFile(regular, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	stale = filepath.Join(dir, "stale.sock")
	staleSocket(t, stale)
	return missing, regular, stale
}

func TestConnectProbesInOrder(t *testing.T) {
	dir := shortDir(t)
	missing, regular, stale := deadCandidates(t, dir)
	first := serve(t, filepath.Join(dir, "crio.sock"), "cri-o")
	second := serve(t, filepath.Join(dir, "containerd.sock"), "containerd")

	rt := connect(t, "", []string{missing, regular, stale, first.Path, second.Path})
	if rt.Name() != "cri-o" || rt.Endpoint() != "unix://"+first.Path {
		t.Errorf("connected to %s at %s, want the first answering socket (cri-o at %s)", rt.Name(), rt.Endpoint(), first.Path)
	}
	if err := rt.Ping(context.Background()); err != nil {
		t.Errorf("Ping: %v", err)
	}

	// unix:// candidates work as well, and a dead first candidate is skipped.
	rt = connect(t, "", []string{"unix://" + stale, "unix://" + second.Path})
	if rt.Name() != "containerd" {
		t.Errorf("connected to %s, want containerd", rt.Name())
	}
}

func TestConnectNoneAnswers(t *testing.T) {
	dir := shortDir(t)
	missing, regular, stale := deadCandidates(t, dir)

	start := time.Now()
	_, err := criruntime.Connect(context.Background(), "", []string{missing, regular, stale})
	if err == nil {
		t.Fatal("Connect succeeded with no runtime")
	}
	msg := err.Error()
	for _, want := range []string{"no CRI runtime found", "--runtime-endpoint",
		missing + ": does not exist", regular + ": not a socket", stale + ": Version"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("probing took %s", d)
	}
}

func TestConnectDefaultCandidates(t *testing.T) {
	if want := []string{"/run/containerd/containerd.sock", "/run/k3s/containerd/containerd.sock",
		"/var/run/crio/crio.sock", "/var/run/cri-dockerd.sock"}; !reflect.DeepEqual(criruntime.DefaultEndpoints, want) {
		t.Errorf("DefaultEndpoints = %v, want %v", criruntime.DefaultEndpoints, want)
	}
}

func TestConnectExplicitEndpoint(t *testing.T) {
	dir := shortDir(t)
	s := serve(t, filepath.Join(dir, "rt.sock"), "containerd")
	for _, endpoint := range []string{s.Endpoint(), s.Path} {
		if rt := connect(t, endpoint, nil); rt.Name() != "containerd" {
			t.Errorf("Connect(%s): runtime %s", endpoint, rt.Name())
		}
	}
	stale := filepath.Join(dir, "stale.sock")
	staleSocket(t, stale)
	for _, endpoint := range []string{"unix://" + stale, "unix://" + filepath.Join(dir, "none.sock"), "tcp://127.0.0.1:1", "relative.sock"} {
		_, err := criruntime.Connect(context.Background(), endpoint, nil)
		if err == nil || !strings.Contains(err.Error(), endpoint) {
			t.Errorf("Connect(%s) = %v, want an error naming the endpoint", endpoint, err)
		}
	}
}

func TestListPodContainers(t *testing.T) {
	s := serve(t, filepath.Join(shortDir(t), "rt.sock"), "containerd")
	t0 := time.Unix(1700000000, 0)
	s.Add(fakecri.Container{ID: "a0", PodUID: "uid-1", Name: "app", Attempt: 0, State: criruntime.StateExited, Created: t0})
	s.Add(fakecri.Container{ID: "a1", PodUID: "uid-1", Name: "app", Attempt: 1, State: criruntime.StateRunning, Created: t0.Add(time.Minute),
		ImageRef: "sha256:1111", Annotations: map[string]string{"io.kubernetes.container.hash": "c939881b"}})
	s.Add(fakecri.Container{ID: "s0", PodUID: "uid-1", Name: "sidecar", State: criruntime.StateRunning, Created: t0})
	s.Add(fakecri.Container{ID: "x0", PodUID: "uid-2", Name: "app", State: criruntime.StateRunning, Created: t0})

	rt := connect(t, s.Endpoint(), nil)
	got, err := rt.ListPodContainers(context.Background(), "uid-1")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range got {
		ids = append(ids, c.ID)
	}
	if want := []string{"a1", "a0", "s0"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("containers %v, want %v (by name, newest attempt first)", ids, want)
	}
	a1 := got[0]
	if a1.Name != "app" || a1.Attempt != 1 || a1.State != runtimeapi.ContainerState_CONTAINER_RUNNING ||
		!a1.CreatedAt.Equal(t0.Add(time.Minute)) || a1.Labels[criruntime.PodUIDLabel] != "uid-1" ||
		a1.Annotations["io.kubernetes.container.hash"] != "c939881b" || a1.ImageID != "sha256:1111" {
		t.Errorf("container a1 = %+v", a1)
	}
	if got, err := rt.ListPodContainers(context.Background(), "uid-none"); err != nil || len(got) != 0 {
		t.Errorf("ListPodContainers(unknown uid) = %v, %v", got, err)
	}
}

func TestImageID(t *testing.T) {
	s := serve(t, filepath.Join(shortDir(t), "rt.sock"), "containerd")
	s.AddImage("app:v1", "sha256:1111")
	rt := connect(t, s.Endpoint(), nil)
	for ref, want := range map[string]string{"app:v1": "sha256:1111", "sha256:1111": "sha256:1111", "app:v9": ""} {
		if got, err := rt.ImageID(context.Background(), ref); err != nil || got != want {
			t.Errorf("ImageID(%q) = %q, %v; want %q", ref, got, err, want)
		}
	}
}

// TestPullImage: a pull sends the reference, the credentials and the sandbox config (with the
// annotation that keeps it non-empty); the runtime has the image afterwards; a missing reference
// fails with the runtime's words.
func TestPullImage(t *testing.T) {
	s := serve(t, filepath.Join(shortDir(t), "rt.sock"), "containerd")
	s.AddRemoteImage("reg.example:5000/app:v1", "sha256:aaaa")
	rt := connect(t, s.Endpoint(), nil)
	ctx := context.Background()
	if img, err := rt.ImageStatus(ctx, "reg.example:5000/app:v1"); err != nil || img != nil {
		t.Fatalf("ImageStatus before the pull = %+v, %v; want nil, nil", img, err)
	}
	id, err := rt.PullImage(ctx, "reg.example:5000/app:v1", &criruntime.Auth{Username: "u", Password: "p"},
		&criruntime.PullSandbox{Labels: map[string]string{"l": "1"}, Annotations: map[string]string{"a": "2"}})
	if err != nil || id != "sha256:aaaa" {
		t.Fatalf("PullImage = %q, %v; want sha256:aaaa", id, err)
	}
	pulls := s.Pulls()
	if len(pulls) != 1 {
		t.Fatalf("pulls %+v, want one", pulls)
	}
	p := pulls[0]
	if p.Auth.GetUsername() != "u" || p.Auth.GetPassword() != "p" || p.SandboxLabels["l"] != "1" ||
		p.SandboxAnnotations["a"] != "2" || p.SandboxAnnotations[criruntime.PullingByAnnotation] != "inplace-daemon" {
		t.Errorf("pull %+v: want the credentials, labels and annotations given", p)
	}
	img, err := rt.ImageStatus(ctx, "reg.example:5000/app:v1")
	if err != nil || img == nil || img.ID != "sha256:aaaa" || !reflect.DeepEqual(img.RepoTags, []string{"reg.example:5000/app:v1"}) {
		t.Errorf("ImageStatus after the pull = %+v, %v", img, err)
	}

	_, err = rt.PullImage(ctx, "reg.example:5000/app:nope", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "not found") || !strings.Contains(err.Error(), "app:nope") {
		t.Errorf("pulling a missing tag: %v, want a not found error naming it", err)
	}
	if a := s.Pulls()[1].SandboxAnnotations; a[criruntime.PullingByAnnotation] == "" {
		t.Errorf("anonymous pull without a sandbox: annotations %v, want %s", a, criruntime.PullingByAnnotation)
	}
}

func TestContainerEnv(t *testing.T) {
	s := serve(t, filepath.Join(shortDir(t), "rt.sock"), "containerd")
	env := []string{"FOO=v1", "EQ=a=b", "EMPTY="}
	s.Add(fakecri.Container{ID: "spec", PodUID: "u", Name: "a", State: criruntime.StateRunning, Env: env})
	s.Add(fakecri.Container{ID: "cfg", PodUID: "u", Name: "b", State: criruntime.StateExited, Env: env, InfoMode: "config"})
	s.Add(fakecri.Container{ID: "none", PodUID: "u", Name: "c", State: criruntime.StateRunning, Env: env, InfoMode: "none"})
	rt := connect(t, s.Endpoint(), nil)

	got, err := rt.ContainerEnv(context.Background(), "spec")
	if err != nil {
		t.Fatal(err)
	}
	// The runtime spec's env: the image's (PATH, HOSTNAME in the fake) and the kubelet's.
	if want := map[string]string{"PATH": "/usr/bin:/bin", "HOSTNAME": "fake", "FOO": "v1", "EQ": "a=b", "EMPTY": ""}; !reflect.DeepEqual(got, want) {
		t.Errorf("env from runtimeSpec = %v, want %v", got, want)
	}
	got, err = rt.ContainerEnv(context.Background(), "cfg")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"FOO": "v1", "EQ": "a=b", "EMPTY": ""}; !reflect.DeepEqual(got, want) {
		t.Errorf("env from config = %v, want %v", got, want)
	}
	if _, err := rt.ContainerEnv(context.Background(), "none"); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("env without verbose info: err = %v", err)
	}
	if _, err := rt.ContainerEnv(context.Background(), "gone"); err == nil {
		t.Error("env of a missing container: no error")
	}
}

func TestEnvFromVerboseInfo(t *testing.T) {
	for _, tc := range []struct {
		name string
		info map[string]string
		want map[string]string
		err  bool
	}{
		{name: "runtimeSpec wins over config, last duplicate wins",
			info: map[string]string{"info": `{"config":{"envs":[{"key":"A","value":"cfg"}]},"runtimeSpec":{"process":{"env":["A=1","A=2","B"]}}}`},
			want: map[string]string{"A": "2", "B": ""}},
		{name: "config only",
			info: map[string]string{"info": `{"config":{"envs":[{"key":"A","value":"x=y"}]}}`},
			want: map[string]string{"A": "x=y"}},
		{name: "runtimeSpec with an empty process env",
			info: map[string]string{"info": `{"runtimeSpec":{"process":{}}}`},
			want: map[string]string{}},
		{name: "no info entry", info: map[string]string{"other": "{}"}, err: true},
		{name: "not JSON", info: map[string]string{"info": "pid 42"}, err: true},
		{name: "neither env", info: map[string]string{"info": `{"pid":42}`}, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := criruntime.EnvFromVerboseInfo(tc.info)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if !tc.err && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("env = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStopContainer(t *testing.T) {
	s := serve(t, filepath.Join(shortDir(t), "rt.sock"), "containerd")
	s.Add(fakecri.Container{ID: "a", PodUID: "u", Name: "a", State: criruntime.StateRunning})
	rt := connect(t, s.Endpoint(), nil)
	if err := rt.StopContainer(context.Background(), "a", 7*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := rt.StopContainer(context.Background(), "gone", time.Second); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Errorf("stopping a missing container: err = %v", err)
	}
	ids, timeouts := s.Stopped()
	if !reflect.DeepEqual(ids, []string{"a"}) || !reflect.DeepEqual(timeouts, []int64{7}) {
		t.Errorf("stopped %v with timeouts %v, want [a] with [7]", ids, timeouts)
	}
	got, _ := rt.ListPodContainers(context.Background(), "u")
	if got[0].State != criruntime.StateExited {
		t.Errorf("state after stop: %v", got[0].State)
	}
}

func TestExecSync(t *testing.T) {
	s := serve(t, filepath.Join(shortDir(t), "rt.sock"), "containerd")
	s.Add(fakecri.Container{ID: "a", PodUID: "u", Name: "a", State: criruntime.StateRunning})
	s.SetExecFunc(func(id string, cmd []string) ([]byte, []byte, int32, error) {
		return []byte("out " + strings.Join(cmd, ",")), []byte("err"), 3, nil
	})
	rt := connect(t, s.Endpoint(), nil)
	res, err := rt.ExecSync(context.Background(), "a", []string{"sh", "-c", "exit 3"}, 1500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "out sh,-c,exit 3" || string(res.Stderr) != "err" || res.ExitCode != 3 {
		t.Errorf("result %+v", res)
	}
	if _, err := rt.ExecSync(context.Background(), "gone", []string{"true"}, 0); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Errorf("exec in a missing container: err = %v", err)
	}
	want := []fakecri.Exec{{ID: "a", Cmd: []string{"sh", "-c", "exit 3"}, Timeout: 2}, {ID: "gone", Cmd: []string{"true"}, Timeout: 1}}
	if got := s.Execs(); !reflect.DeepEqual(got, want) {
		t.Errorf("execs %+v, want %+v (timeouts rounded up to whole seconds, at least 1)", got, want)
	}
}
