package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Kubectl runs _output/bin/kubectl as cluster-admin and returns its stdout and stderr.
func Kubectl(ctx context.Context, stdin string, args ...string) (string, string, error) {
	return KubectlWith(ctx, time.Minute, nil, stdin, args...)
}

// KubectlWith is kubectl with a timeout and more environment variables.
func KubectlWith(ctx context.Context, timeout time.Duration, env []string, stdin string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, KubectlBin, args...)
	cmd.Dir = Repo
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+Kubeconfig, "KUBECACHEDIR="+KubectlCache), env...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("kubectl %s: %w; stderr: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), stderr.String(), err
}

// MustKubectl runs kubectl and fails the test when it fails.
func MustKubectl(t *testing.T, ctx context.Context, stdin string, args ...string) string {
	t.Helper()
	out, _, err := Kubectl(ctx, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TableLines splits kubectl's table output into rows of fields.
func TableLines(out string) [][]string {
	var lines [][]string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l != "" {
			lines = append(lines, strings.Fields(l))
		}
	}
	return lines
}

// KubectlCreateRaw is `kubectl create --raw PATH -f FILE` (FILE "-": stdin) at -v=6: what it
// printed, the response status from its log, and its own messages (the lines that are not log
// lines).
func KubectlCreateRaw(ctx context.Context, path, stdin, file string) RawResponse {
	out, stderr, err := Kubectl(ctx, stdin, "create", "--raw", path, "-f", file, "-v=6")
	r := RawResponse{Body: out, Err: err}
	for _, line := range strings.Split(stderr, "\n") {
		if m := ResponseLine.FindStringSubmatch(line); m != nil {
			_, _ = fmt.Sscan(m[1], &r.Code)
		} else if !IsKlogLine(line) && strings.TrimSpace(line) != "" {
			r.ErrMsg += line + "\n"
		}
	}
	return r
}

// LogLines logs text one t.Log per line, each prefixed: make's e2e targets keep only the lines
// that name a _test.go file, so a multi-line message in one t.Fatalf reaches CI as its first line.
func LogLines(t *testing.T, prefix, text string) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		t.Logf("%s: %s", prefix, l)
	}
}

// LogInstallation logs the state of inplace's installation in the cluster (its workloads, Pods
// and recent events): what a test that waited for it to come up prints when it did not.
func LogInstallation(t *testing.T, ctx context.Context) {
	t.Helper()
	for _, args := range [][]string{
		{"get", "statefulsets,deployments,daemonsets,pods,pvc", "-n", InplaceNamespace, "-o", "wide"},
		append([]string{"get", "apiservices"}, APIServiceNames...),
		{"get", "events", "-n", InplaceNamespace, "--sort-by=.lastTimestamp"},
	} {
		out, stderr, err := Kubectl(ctx, "", args...)
		if err != nil {
			t.Logf("kubectl %s: %v", strings.Join(args, " "), err)
			continue
		}
		lines := strings.Split(strings.TrimSpace(out+stderr), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		LogLines(t, "kubectl "+args[1], strings.Join(lines, "\n"))
	}
}
