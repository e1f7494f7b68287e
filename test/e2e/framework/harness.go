package framework

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Main runs the e2e tests of m against a local cluster: in the harness process it builds the
// inplace programs, brings the cluster up (hack/local-up.sh), runs the tests in a child process
// and always brings the cluster down; in the child it sets up the clients and runs the tests.
// A test package calls it from its TestMain, once: one cluster start per go test run.
func Main(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if err := setUp(); err != nil {
			harnessLog("FAIL: %v", err)
			os.Exit(1)
		}
		code := m.Run()
		_ = os.RemoveAll(KubectlCache)
		os.Exit(code)
	}
	os.Exit(harness())
}

// childEnv marks the child process, which runs the tests against the running cluster.
const childEnv = "INPLACE_E2E_CHILD"

// inClusterEnv (=1) makes the harness run the inplace programs in the cluster, installed from
// artifacts/deploy with inplace's image (INPLACE_IN_CLUSTER=1 hack/local-up.sh), instead of as
// host processes; =ha installs artifacts/deploy/ha (three etcd members, two apiservers). The
// tests are the same; see programs.go (and test/e2e/ha_test.go, which needs =ha).
const inClusterEnv = "INPLACE_E2E_IN_CLUSTER"

// reuseEnv (=1) makes the harness use the running local cluster as it is: it neither builds the
// inplace programs nor runs hack/local-up.sh or hack/local-down.sh.
const reuseEnv = "INPLACE_E2E_REUSE_CLUSTER"

// harnessLog prints a harness message; the file name in it keeps it in make test-e2e's
// filtered output.
func harnessLog(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "    main_test.go: e2e harness: "+format+"\n", args...)
}

// harness brings the cluster up, runs the tests in a child process, and brings the cluster down
// whatever happened. It returns the exit code.
func harness() (code int) {
	root, err := repoRoot()
	if err != nil {
		harnessLog("FAIL: %v", err)
		return 1
	}
	if os.Geteuid() != 0 {
		harnessLog("FAIL: the e2e tests start a real Kubernetes node (containerd, kubelet, a bridge, "+
			"cgroups) and must run as root; this process runs as uid %d. Run `sudo make test-e2e`.", os.Geteuid())
		return 1
	}
	for _, tool := range []string{"go", "openssl", "ss", "ip", "flock", "setsid"} {
		if _, err := exec.LookPath(tool); err != nil {
			harnessLog("FAIL: required program %q not found in PATH (hack/install-deps.sh installs the packages)", tool)
			return 1
		}
	}

	// The child ends on Ctrl-C (same process group); the harness must live on to clean up.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)

	// Every kubectl the harness and the tests run keeps its discovery cache with the cluster
	// (hack/lib/local.sh), not in ~/.kube/cache: a cache of another cluster at the same address
	// (a benchmark's CRD of the same resource name, say) would send `kubectl get clonesets` there.
	os.Setenv("KUBECACHEDIR", filepath.Join(root, "_output/local/kubectl-cache"))

	if os.Getenv(reuseEnv) == "1" {
		required := []string{"kube-apiserver", "kubelet", "inplace-apiserver"}
		if _, err := os.Stat(filepath.Join(root, "_output/local/inplace/in-cluster")); err == nil {
			required = required[:2] // inplace runs in the cluster: no host process of its own
		}
		for _, name := range required {
			if !recordedRunning(root, name) {
				harnessLog("FAIL: %s=1 but %s of the local cluster is not running: start the cluster with hack/local-up.sh", reuseEnv, name)
				return 1
			}
		}
		harnessLog("%s=1: using the running cluster as it is (no build, no local-up, no local-down)", reuseEnv)
		return runChild(root, signals)
	}

	// Always the programs of this source tree: _output/bin/inplace-NAME for every cmd/NAME, the
	// names the local-up hooks start; a kubectl plugin (cmd/kubectl-NAME) keeps its own name, as
	// make build names it, for tests that run it.
	start := time.Now()
	commands, err := os.ReadDir(filepath.Join(root, "cmd"))
	if err != nil {
		harnessLog("FAIL: %v", err)
		return 1
	}
	for _, c := range commands {
		if !c.IsDir() {
			continue
		}
		out := "_output/bin/inplace-" + c.Name()
		if strings.HasPrefix(c.Name(), "kubectl-") {
			out = "_output/bin/" + c.Name()
		}
		if err := runLogged(root, "go", "build", "-o", out, "./cmd/"+c.Name()); err != nil {
			harnessLog("FAIL: building cmd/%s: %v", c.Name(), err)
			return 1
		}
	}
	harnessLog("built the inplace programs in %.1fs", time.Since(start).Seconds())

	defer func() {
		start := time.Now()
		if err := runLogged(root, "hack/local-down.sh"); err != nil {
			harnessLog("FAIL: hack/local-down.sh: %v (see its output above)", err)
			code = 1
			return
		}
		harnessLog("cluster down in %.1fs", time.Since(start).Seconds())
	}()

	start = time.Now()
	switch shape := os.Getenv(inClusterEnv); shape {
	case "", "0":
		// With the programs on the host the cluster has its second node (the tests that need two
		// nodes use it; the others never land there: it is tainted).
		if os.Getenv("INPLACE_NODES") == "" {
			os.Setenv("INPLACE_NODES", "2")
		}
	case "1", "ha":
		// hack/local-up.d/10-inplace-apiserver.sh installs inplace into the cluster.
		harnessLog("%s=%s: inplace runs in the cluster, installed from artifacts/deploy%s by hack/deploy.sh",
			inClusterEnv, shape, map[string]string{"ha": "/ha"}[shape])
		os.Setenv("INPLACE_IN_CLUSTER", shape)
	default:
		harnessLog("FAIL: %s=%s: want 1 (artifacts/deploy) or ha (artifacts/deploy/ha)", inClusterEnv, shape)
		return 1
	}
	if err := runLogged(root, "hack/local-up.sh"); err != nil {
		harnessLog("FAIL: hack/local-up.sh: %v; logs in %s", err, filepath.Join(root, "_output/local/logs"))
		return 1
	}
	harnessLog("cluster and inplace ready in %.1fs", time.Since(start).Seconds())
	for _, bin := range []string{"kubectl", "inplace-apiserver"} { // the tests need them
		if _, err := os.Stat(filepath.Join(root, "_output/bin", bin)); err != nil {
			harnessLog("FAIL: required binary missing: %v", err)
			return 1
		}
	}

	return runChild(root, signals)
}

// runChild runs the tests in a child process against the running cluster and returns its exit
// code; a signal to the harness is passed on to the child.
func runChild(root string, signals <-chan os.Signal) int {
	child := exec.Command(os.Args[0], os.Args[1:]...)
	child.Env = append(os.Environ(), childEnv+"=1", "INPLACE_REPO_ROOT="+root)
	child.Stdin, child.Stdout, child.Stderr = nil, os.Stdout, os.Stderr
	if err := child.Start(); err != nil {
		harnessLog("FAIL: starting the tests: %v", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- child.Wait() }()
	var err error
	for waiting := true; waiting; {
		select {
		case sig := <-signals:
			harnessLog("got %v: stopping the tests, then the cluster", sig)
			_ = child.Process.Signal(sig)
		case err = <-done:
			waiting = false
		}
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exitErr):
		if exitErr.ExitCode() < 0 {
			harnessLog("FAIL: the tests ended by %v", exitErr)
			return 1
		}
		return exitErr.ExitCode()
	default:
		harnessLog("FAIL: running the tests: %v", err)
		return 1
	}
}

// recordedRunning tells whether the daemon NAME recorded in _output/local/pids/NAME.pid
// ("PID STARTTIME") still runs.
func recordedRunning(root, name string) bool {
	data, err := os.ReadFile(filepath.Join(root, "_output/local/pids", name+".pid"))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return false
	}
	pid, err := strconv.Atoi(fields[0])
	if err != nil {
		return false
	}
	return Program{Name: name, Pid: pid, StartTime: fields[1]}.Alive()
}

// runLogged runs a command in dir with its output on stderr.
func runLogged(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// repoRoot is $INPLACE_REPO_ROOT, or the directory above this package holding go.mod.
func repoRoot() (string, error) {
	if root := os.Getenv("INPLACE_REPO_ROOT"); root != "" {
		return filepath.Abs(root)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s: set INPLACE_REPO_ROOT", dir)
		}
	}
}

// ReadEnvFile reads hack/local-up.sh's _output/local/env ("export K=V" lines).
func ReadEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	vars := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		vars[k] = os.Expand(v, func(name string) string {
			if val, ok := vars[name]; ok {
				return val
			}
			return os.Getenv(name)
		})
	}
	return vars, s.Err()
}
