package framework

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// DaemonHook (re)starts inplace-daemon on the local cluster.
const DaemonHook = "hack/local-up.d/30-inplace-daemon.sh"

// RunLocalUpHook runs a hack/local-up.d hook on its own (it restarts its program), logging its
// output to the test.
func RunLocalUpHook(t *testing.T, hook string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, hook)
	cmd.Dir = Repo
	out, err := cmd.CombinedOutput()
	t.Logf("%s:\n%s", hook, out)
	return err
}

// InClusterMode tells whether the local cluster runs the inplace programs in the cluster (the
// marker hack/lib/inplace.sh leaves).
func InClusterMode() bool {
	return InClusterShape() != ""
}

// InClusterShape is what hack/lib/inplace.sh installed: "base" (artifacts/deploy), "ha"
// (artifacts/deploy/ha), or "" when the programs run as host processes.
func InClusterShape() string {
	data, err := os.ReadFile(filepath.Join(Repo, "_output/local/inplace/in-cluster"))
	if err != nil {
		return ""
	}
	if shape := strings.TrimSpace(string(data)); shape != "" {
		return shape
	}
	return "base" // a marker of an earlier tree, before shapes
}

// ProgramPorts are the plain-HTTP health and metrics ports of the programs (artifacts/deploy and
// the local-up hooks use the same).
var ProgramPorts = map[string]int{"inplace-controller": 10390, "inplace-daemon": 10391}

// Program is one incarnation of an inplace program: its process (pid and start time, so a
// recycled pid is never mistaken for it) and, in the cluster, its Pod. pid 0: none runs.
type Program struct {
	Name      string
	Pid       int
	StartTime string
	Pod       *corev1.Pod
}

// CurrentProgram finds the running incarnation of NAME (inplace-apiserver, inplace-controller,
// inplace-daemon).
func CurrentProgram(t *testing.T, name string) Program {
	t.Helper()
	if !InClusterMode() {
		return RecordedProgram(t, name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var found Program
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := ClusterProgram(ctx, name)
		found = p
		return err == nil, nil
	})
	if err != nil {
		// None runs (scaled to 0, or between a kill and the kubelet's restart): not alive.
		t.Logf("%s: no running container found in %s", name, InplaceNamespace)
		return Program{Name: name}
	}
	return found
}

// RecordedProgram reads the pid file hack/lib/local.sh writes for a host process.
func RecordedProgram(t *testing.T, name string) Program {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Repo, "_output/local/pids", name+".pid"))
	if err != nil {
		t.Fatalf("reading the pid of %s: %v", name, err)
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		t.Fatalf("pid file of %s: want \"PID STARTTIME\", got %q", name, data)
	}
	pid, err := strconv.Atoi(fields[0])
	if err != nil {
		t.Fatalf("pid file of %s: %v", name, err)
	}
	return Program{Name: name, Pid: pid, StartTime: fields[1]}
}

// ClusterProgram finds NAME's Pod (inplace-controller: the Lease holder's) with its container
// running, and that container's main process on the host.
func ClusterProgram(ctx context.Context, name string) (Program, error) {
	pods, err := Kube.CoreV1().Pods(InplaceNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
	if err != nil {
		return Program{}, err
	}
	leader := ""
	if name == "inplace-controller" {
		lease, err := Kube.CoordinationV1().Leases(InplaceNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return Program{}, err
		}
		if lease.Spec.HolderIdentity == nil {
			return Program{}, fmt.Errorf("lease %s has no holder", name)
		}
		leader, _, _ = strings.Cut(*lease.Spec.HolderIdentity, "_")
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.DeletionTimestamp != nil || (leader != "" && pod.Name != leader) {
			continue
		}
		if p, err := PodProgram(name, pod); err == nil {
			return p, nil
		}
	}
	return Program{}, fmt.Errorf("no running %s container (leader %q)", name, leader)
}

// PodProgram is the main process of the Pod's first container, which must be running.
func PodProgram(name string, pod *corev1.Pod) (Program, error) {
	if len(pod.Status.ContainerStatuses) == 0 {
		return Program{}, fmt.Errorf("pod %s: no container status", pod.Name)
	}
	st := pod.Status.ContainerStatuses[0]
	if st.State.Running == nil || st.ContainerID == "" {
		return Program{}, fmt.Errorf("pod %s: container %s not running", pod.Name, st.Name)
	}
	_, id, _ := strings.Cut(st.ContainerID, "://")
	pid, err := containerMainPid(id)
	if err != nil {
		return Program{}, fmt.Errorf("pod %s: %w", pod.Name, err)
	}
	_, start, err := procStat(pid)
	if err != nil {
		return Program{}, err
	}
	return Program{Name: name, Pid: pid, StartTime: start, Pod: pod}, nil
}

// containerMainPid finds the process of container ID that is pid 1 in its own pid namespace,
// by its cgroup (the cgroupfs driver names the container's cgroup after its ID).
func containerMainPid(id string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil || !strings.Contains(string(cg), id) {
			continue
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "NSpid:" && f[len(f)-1] == "1" {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("no process of container %.12s found", id)
}

// procStat reads the state (field 3) and the start time (field 22, clock ticks after boot) of
// /proc/PID/stat.
func procStat(pid int) (state, start string, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", "", err
	}
	s := string(data)
	i := strings.LastIndex(s, ") ") // the command may hold spaces and parentheses
	if i < 0 {
		return "", "", fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	fields := strings.Fields(s[i+2:]) // fields 3.. of /proc/PID/stat
	if len(fields) < 20 {
		return "", "", fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	return fields[0], fields[19], nil
}

// Alive tells whether the process still runs (same pid and start time, not a zombie).
func (p Program) Alive() bool {
	if p.Pid == 0 {
		return false
	}
	state, start, err := procStat(p.Pid)
	return err == nil && state != "Z" && state != "X" && start == p.StartTime
}

// Signal sends sig to the process, only if it still is that process.
func (p Program) Signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if !p.Alive() {
		t.Fatalf("%s (pid %d) is not running", p.Name, p.Pid)
	}
	if err := syscall.Kill(p.Pid, sig); err != nil {
		t.Fatalf("signalling %s (pid %d): %v", p.Name, p.Pid, err)
	}
}

// Stop signals the process (only if it still is that process) and waits up to timeout for it
// to exit. A process still there then fails the test and is killed (SIGKILL), so that the test
// can go on. In the cluster the kubelet starts the container again afterwards.
func (p Program) Stop(t *testing.T, ctx context.Context, sig syscall.Signal, timeout time.Duration) {
	t.Helper()
	p.Signal(t, sig)
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return !p.Alive(), nil
	})
	if err == nil {
		return
	}
	t.Errorf("%s (pid %d) still runs %v after %v; killing it", p.Name, p.Pid, timeout, sig)
	if p.Alive() {
		_ = syscall.Kill(p.Pid, syscall.SIGKILL)
	}
	Poll(t, ctx, 30*time.Second, fmt.Sprintf("%s (pid %d) to exit after SIGKILL", p.Name, p.Pid), func(context.Context) (bool, error) {
		return !p.Alive(), nil
	})
}

// TakeDown stops NAME and keeps it stopped until its hook runs again: the host process gets
// SIGTERM; in the cluster its workload is scaled to 0 and its Pods are waited out (a killed
// container would be restarted by the kubelet at once).
func TakeDown(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if !InClusterMode() {
		CurrentProgram(t, name).Stop(t, ctx, syscall.SIGTERM, StopTimeout)
		return
	}
	MustKubectl(t, ctx, "", "-n", InplaceNamespace, "scale", "deployment/"+name, "--replicas=0")
	Poll(t, ctx, 60*time.Second, name+"'s Pods gone", func(ctx context.Context) (bool, error) {
		pods, err := Kube.CoreV1().Pods(InplaceNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
		if err != nil {
			return false, err
		}
		return len(pods.Items) == 0, fmt.Errorf("%d Pods left", len(pods.Items))
	})
}

// ProgramAddress is where NAME serves /healthz, /readyz and /metrics over plain HTTP: loopback
// for a host process, its Pod's IP in the cluster (the leader's for inplace-controller).
func ProgramAddress(t *testing.T, name string) string {
	t.Helper()
	port, ok := ProgramPorts[name]
	if !ok {
		t.Fatalf("%s serves no plain-HTTP port", name)
	}
	if !InClusterMode() {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	p := CurrentProgram(t, name)
	if p.Pod == nil || p.Pod.Status.PodIP == "" {
		t.Fatalf("%s: no running Pod with an IP", name)
	}
	return net.JoinHostPort(p.Pod.Status.PodIP, strconv.Itoa(port))
}

// AwaitRestart has the stopped program old running again and returns the new incarnation: a host
// process is started by its local-up hook; in the cluster nothing is done, the kubelet restarts the
// container, which is what a crash there gets. In the cluster it waits for that very Pod's
// container to run again and be Ready (with two replicas, the other one runs all along, and the
// aggregator may still send to the killed one until its endpoint is marked not ready); the
// program returned is then the current one (a Deployment's standby may lead by now).
func AwaitRestart(t *testing.T, ctx context.Context, old Program) Program {
	t.Helper()
	if !InClusterMode() {
		hook := map[string]string{"inplace-apiserver": ApiserverHook, "inplace-controller": ControllerHook, "inplace-daemon": DaemonHook}[old.Name]
		if err := RunLocalUpHook(t, hook); err != nil {
			t.Fatalf("%s: %v", hook, err)
		}
	} else {
		WaitContainerRestarted(t, ctx, old.Pod)
	}
	var now Program
	Poll(t, ctx, 2*time.Minute, old.Name+" running again", func(ctx context.Context) (bool, error) {
		now = CurrentProgram(t, old.Name)
		return now.Pid != old.Pid && now.Alive(), fmt.Errorf("pid %d (the stopped one %d)", now.Pid, old.Pid)
	})
	return now
}

// WaitContainerRestarted waits until the Pod (the same one: same UID) has its first container
// restarted since the Pod was read (restartCount grown) and is Ready.
func WaitContainerRestarted(t *testing.T, ctx context.Context, pod *corev1.Pod) {
	t.Helper()
	before := pod.Status.ContainerStatuses[0].RestartCount
	Poll(t, ctx, 2*time.Minute, pod.Name+" restarted and Ready", func(ctx context.Context) (bool, error) {
		p, err := Kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.UID != pod.UID {
			return false, fmt.Errorf("pod %s replaced (uid %s, was %s)", p.Name, p.UID, pod.UID)
		}
		st := p.Status.ContainerStatuses
		return len(st) > 0 && st[0].RestartCount > before && PodReady(p), fmt.Errorf("container %+v", st)
	})
}

// StopTimeout bounds a graceful stop: hack/local-down.sh gives a daemon 15 s after SIGTERM
// before it kills it, and so does the kubelet by default (30 s) for the Deployment's Pod. Open
// watches (kube-controller-manager keeps some on every resource) must not hold it up.
const StopTimeout = 15 * time.Second

// ApiserverHook starts inplace-apiserver on the local cluster; run on its own it restarts the
// server and keeps its data.
const ApiserverHook = "hack/local-up.d/10-inplace-apiserver.sh"

// RestartAPIServer stops inplace-apiserver with sig, has it started again (its local-up hook; in the
// cluster the kubelet restarts the container, on the same claim), and waits until the aggregator
// reports it Available.
func RestartAPIServer(t *testing.T, ctx context.Context, sig syscall.Signal) {
	t.Helper()
	old := CurrentProgram(t, "inplace-apiserver")
	start := time.Now()
	old.Stop(t, ctx, sig, StopTimeout)
	t.Logf("inplace-apiserver (pid %d) gone %.1fs after %v", old.Pid, time.Since(start).Seconds(), sig)

	start = time.Now()
	now := AwaitRestart(t, ctx, old)
	Poll(t, ctx, 60*time.Second, "APIService "+APIServiceName+" Available", func(ctx context.Context) (bool, error) {
		return APIServiceAvailable(ctx)
	})
	t.Logf("inplace-apiserver restarted (pid %d) and Available in %.1fs", now.Pid, time.Since(start).Seconds())
}

// localUpHooks start each inplace program on the running cluster.
var localUpHooks = map[string]string{
	"inplace-apiserver":  ApiserverHook,
	"inplace-controller": ControllerHook,
	"inplace-daemon":     DaemonHook,
}

// StartAgainAfter makes sure that the inplace program name, which the test stops, runs again
// after the test whatever its outcome: its local-up hook starts it if it is not running.
func StartAgainAfter(t *testing.T, name string) {
	t.Helper()
	hook, ok := localUpHooks[name]
	if !ok {
		t.Fatalf("no local-up hook starts %s", name)
	}
	t.Cleanup(func() {
		if !CurrentProgram(t, name).Alive() {
			_ = RunLocalUpHook(t, hook)
		}
	})
}

// KillControllerMidway SIGKILLs inplace-controller (controller, as found before the change) once
// a first Pod of the CloneSet has container on image, but not all, and starts it again: a
// rollout (or upgrade) interrupted midway.
func KillControllerMidway(t *testing.T, ctx context.Context, controller Program, cs *v1alpha1.CloneSet, container, image, what string) {
	t.Helper()
	var started, total int
	Poll(t, ctx, RolloutTimeout, "the "+what+" to start", func(ctx context.Context) (bool, error) {
		pods, err := CloneSetPods(ctx, cs)
		if err != nil {
			return false, err
		}
		started, total = 0, len(pods)
		for _, p := range pods {
			if SpecImage(p, container) == image {
				started++
			}
		}
		return started > 0, nil
	})
	controller.Stop(t, ctx, syscall.SIGKILL, 10*time.Second)
	t.Logf("inplace-controller (pid %d) killed with %d of %d Pods started", controller.Pid, started, total)
	if started == total {
		t.Fatalf("the %s was over before inplace-controller was killed", what)
	}
	if err := RunLocalUpHook(t, ControllerHook); err != nil {
		t.Fatalf("%s: %v", ControllerHook, err)
	}
}

// HTTPGet GETs url (a program's /metrics, /healthz...) and returns the status code and the body.
func HTTPGet(ctx context.Context, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, body, fmt.Errorf("reading the answer of GET %s: %w", url, err)
	}
	return resp.StatusCode, body, nil
}

// MetricValue scrapes http://ADDR/metrics and returns the value of the series named exactly
// series (name with its labels, as Prometheus' text format prints them), 0 when absent.
func MetricValue(t *testing.T, ctx context.Context, addr, series string) float64 {
	t.Helper()
	code, body, err := HTTPGet(ctx, "http://"+addr+"/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("scraping %s: HTTP %d %v", addr, code, err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", series, line, err)
			}
			return v
		}
	}
	return 0
}
