package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The inplace programs run either as host processes started by the local-up hooks (the
// default) or in the cluster, installed from artifacts/deploy by hack/deploy.sh
// (INPLACE_IN_CLUSTER=1 hack/local-up.sh, make test-e2e-in-cluster). The tests that stop, kill
// or restart a program, or talk to its health port, go through program and the hooks, which
// both modes serve:
//   - currentProgram finds the running incarnation: the recorded host process, or the main
//     process of its container (the leader for inplace-controller), seen in the host's pid
//     namespace, so that a test signals it the same way in both modes;
//   - runLocalUpHook restarts a program: the hook starts the host process again, or, in the
//     cluster, applies the install again (scale and flags included) and restarts the workload.
//
// A container killed in the cluster is started again by the kubelet on its own; a test that
// needs a program to stay down uses takeDown.

// inClusterMode tells whether the local cluster runs the inplace programs in the cluster (the
// marker hack/lib/inplace.sh leaves).
func inClusterMode() bool {
	return inClusterShape() != ""
}

// inClusterShape is what hack/lib/inplace.sh installed: "base" (artifacts/deploy), "ha"
// (artifacts/deploy/ha), or "" when the programs run as host processes.
func inClusterShape() string {
	data, err := os.ReadFile(filepath.Join(repo, "_output/local/inplace/in-cluster"))
	if err != nil {
		return ""
	}
	if shape := strings.TrimSpace(string(data)); shape != "" {
		return shape
	}
	return "base" // a marker of an earlier tree, before shapes
}

// programPorts are the plain-HTTP health and metrics ports of the programs (artifacts/deploy and
// the local-up hooks use the same).
var programPorts = map[string]int{"inplace-controller": 10390, "inplace-daemon": 10391}

// program is one incarnation of an inplace program: its process (pid and start time, so a
// recycled pid is never mistaken for it) and, in the cluster, its Pod. pid 0: none runs.
type program struct {
	name      string
	pid       int
	startTime string
	pod       *corev1.Pod
}

// currentProgram finds the running incarnation of NAME (inplace-apiserver, inplace-controller,
// inplace-daemon).
func currentProgram(t *testing.T, name string) program {
	t.Helper()
	if !inClusterMode() {
		return recordedProgram(t, name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var found program
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := clusterProgram(ctx, name)
		found = p
		return err == nil, nil
	})
	if err != nil {
		// None runs (scaled to 0, or between a kill and the kubelet's restart): not alive.
		t.Logf("%s: no running container found in %s", name, inplaceNamespace)
		return program{name: name}
	}
	return found
}

// recordedProgram reads the pid file hack/lib/local.sh writes for a host process.
func recordedProgram(t *testing.T, name string) program {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repo, "_output/local/pids", name+".pid"))
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
	return program{name: name, pid: pid, startTime: fields[1]}
}

// clusterProgram finds NAME's Pod (inplace-controller: the Lease holder's) with its container
// running, and that container's main process on the host.
func clusterProgram(ctx context.Context, name string) (program, error) {
	pods, err := kube.CoreV1().Pods(inplaceNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
	if err != nil {
		return program{}, err
	}
	leader := ""
	if name == "inplace-controller" {
		lease, err := kube.CoordinationV1().Leases(inplaceNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return program{}, err
		}
		if lease.Spec.HolderIdentity == nil {
			return program{}, fmt.Errorf("lease %s has no holder", name)
		}
		leader, _, _ = strings.Cut(*lease.Spec.HolderIdentity, "_")
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.DeletionTimestamp != nil || (leader != "" && pod.Name != leader) {
			continue
		}
		if p, err := podProgram(name, pod); err == nil {
			return p, nil
		}
	}
	return program{}, fmt.Errorf("no running %s container (leader %q)", name, leader)
}

// podProgram is the main process of the Pod's first container, which must be running.
func podProgram(name string, pod *corev1.Pod) (program, error) {
	if len(pod.Status.ContainerStatuses) == 0 {
		return program{}, fmt.Errorf("pod %s: no container status", pod.Name)
	}
	st := pod.Status.ContainerStatuses[0]
	if st.State.Running == nil || st.ContainerID == "" {
		return program{}, fmt.Errorf("pod %s: container %s not running", pod.Name, st.Name)
	}
	_, id, _ := strings.Cut(st.ContainerID, "://")
	pid, err := containerMainPid(id)
	if err != nil {
		return program{}, fmt.Errorf("pod %s: %w", pod.Name, err)
	}
	_, start, err := procStat(pid)
	if err != nil {
		return program{}, err
	}
	return program{name: name, pid: pid, startTime: start, pod: pod}, nil
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

// alive tells whether the process still runs (same pid and start time, not a zombie).
func (p program) alive() bool {
	if p.pid == 0 {
		return false
	}
	state, start, err := procStat(p.pid)
	return err == nil && state != "Z" && state != "X" && start == p.startTime
}

// signal sends sig to the process, only if it still is that process.
func (p program) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if !p.alive() {
		t.Fatalf("%s (pid %d) is not running", p.name, p.pid)
	}
	if err := syscall.Kill(p.pid, sig); err != nil {
		t.Fatalf("signalling %s (pid %d): %v", p.name, p.pid, err)
	}
}

// stop signals the process (only if it still is that process) and waits up to timeout for it
// to exit. A process still there then fails the test and is killed (SIGKILL), so that the test
// can go on. In the cluster the kubelet starts the container again afterwards.
func (p program) stop(t *testing.T, ctx context.Context, sig syscall.Signal, timeout time.Duration) {
	t.Helper()
	p.signal(t, sig)
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return !p.alive(), nil
	})
	if err == nil {
		return
	}
	t.Errorf("%s (pid %d) still runs %v after %v; killing it", p.name, p.pid, timeout, sig)
	if p.alive() {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
	poll(t, ctx, 30*time.Second, fmt.Sprintf("%s (pid %d) to exit after SIGKILL", p.name, p.pid), func(context.Context) (bool, error) {
		return !p.alive(), nil
	})
}

// takeDown stops NAME and keeps it stopped until its hook runs again: the host process gets
// SIGTERM; in the cluster its workload is scaled to 0 and its Pods are waited out (a killed
// container would be restarted by the kubelet at once).
func takeDown(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if !inClusterMode() {
		currentProgram(t, name).stop(t, ctx, syscall.SIGTERM, stopTimeout)
		return
	}
	mustKubectl(t, ctx, "", "-n", inplaceNamespace, "scale", "deployment/"+name, "--replicas=0")
	poll(t, ctx, 60*time.Second, name+"'s Pods gone", func(ctx context.Context) (bool, error) {
		pods, err := kube.CoreV1().Pods(inplaceNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
		if err != nil {
			return false, err
		}
		return len(pods.Items) == 0, fmt.Errorf("%d Pods left", len(pods.Items))
	})
}

// programAddress is where NAME serves /healthz, /readyz and /metrics over plain HTTP: loopback
// for a host process, its Pod's IP in the cluster (the leader's for inplace-controller).
func programAddress(t *testing.T, name string) string {
	t.Helper()
	port, ok := programPorts[name]
	if !ok {
		t.Fatalf("%s serves no plain-HTTP port", name)
	}
	if !inClusterMode() {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	p := currentProgram(t, name)
	if p.pod == nil || p.pod.Status.PodIP == "" {
		t.Fatalf("%s: no running Pod with an IP", name)
	}
	return net.JoinHostPort(p.pod.Status.PodIP, strconv.Itoa(port))
}

// awaitRestart has the stopped program old running again and returns the new incarnation: a host
// process is started by its local-up hook; in the cluster nothing is done, the kubelet restarts the
// container, which is what a crash there gets. In the cluster it waits for that very Pod's
// container to run again and be Ready (with two replicas, the other one runs all along, and the
// aggregator may still send to the killed one until its endpoint is marked not ready); the
// program returned is then the current one (a Deployment's standby may lead by now).
func awaitRestart(t *testing.T, ctx context.Context, old program) program {
	t.Helper()
	if !inClusterMode() {
		hook := map[string]string{"inplace-apiserver": apiserverHook, "inplace-controller": controllerHook, "inplace-daemon": daemonHook}[old.name]
		if err := runLocalUpHook(t, hook); err != nil {
			t.Fatalf("%s: %v", hook, err)
		}
	} else {
		waitContainerRestarted(t, ctx, old.pod)
	}
	var now program
	poll(t, ctx, 2*time.Minute, old.name+" running again", func(ctx context.Context) (bool, error) {
		now = currentProgram(t, old.name)
		return now.pid != old.pid && now.alive(), fmt.Errorf("pid %d (the stopped one %d)", now.pid, old.pid)
	})
	return now
}

// waitContainerRestarted waits until the Pod (the same one: same UID) has its first container
// restarted since the Pod was read (restartCount grown) and is Ready.
func waitContainerRestarted(t *testing.T, ctx context.Context, pod *corev1.Pod) {
	t.Helper()
	before := pod.Status.ContainerStatuses[0].RestartCount
	poll(t, ctx, 2*time.Minute, pod.Name+" restarted and Ready", func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.UID != pod.UID {
			return false, fmt.Errorf("pod %s replaced (uid %s, was %s)", p.Name, p.UID, pod.UID)
		}
		st := p.Status.ContainerStatuses
		return len(st) > 0 && st[0].RestartCount > before && podReady(p), fmt.Errorf("container %+v", st)
	})
}
