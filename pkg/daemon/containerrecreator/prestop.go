package containerrecreator

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// maxHookOutput bounds how much of a hook's output goes into an error.
const maxHookOutput = 512

// runPreStop runs the container's preStop hook (from the request, which admission filled from the
// Pod) within timeout: exec through the CRI in the container, httpGet against the Pod IP.
// tcpSocket is not run: the kubelet deprecated it as a lifecycle hook and does nothing either.
func (c *Controller) runPreStop(ctx context.Context, pod *corev1.Pod, spec *v1alpha1.ContainerRecreateRequestContainer,
	id string, timeout time.Duration) error {
	hook := spec.PreStop
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case hook.Exec != nil:
		if len(hook.Exec.Command) == 0 {
			return nil
		}
		res, err := c.runtime.ExecSync(ctx, id, hook.Exec.Command, timeout)
		if err != nil {
			return err
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("command %q exited with code %d: %s", strings.Join(hook.Exec.Command, " "), res.ExitCode,
				truncate(strings.TrimSpace(string(res.Stdout))+" "+strings.TrimSpace(string(res.Stderr))))
		}
		return nil
	case hook.HTTPGet != nil:
		return c.runHTTPGet(ctx, pod, spec, hook.HTTPGet)
	case hook.TCPSocket != nil:
		klog.FromContext(ctx).V(2).Info("Not running a tcpSocket preStop hook (deprecated; the kubelet does not run it either)", "container", spec.Name)
	}
	return nil
}

// runHTTPGet sends the hook's GET to the Pod (or the hook's host); an answer of 400 or more is
// a failure.
func (c *Controller) runHTTPGet(ctx context.Context, pod *corev1.Pod, spec *v1alpha1.ContainerRecreateRequestContainer, h *corev1.HTTPGetAction) error {
	host := h.Host
	if host == "" {
		host = pod.Status.PodIP
	}
	if host == "" {
		return fmt.Errorf("httpGet: the Pod has no IP")
	}
	port, err := resolvePort(h.Port, spec.Ports, pod, spec.Name)
	if err != nil {
		return fmt.Errorf("httpGet: %w", err)
	}
	scheme := strings.ToLower(string(h.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := h.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u, err := url.Parse(fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(port)), path))
	if err != nil {
		return fmt.Errorf("httpGet: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("httpGet: %w", err)
	}
	req.Header.Set("User-Agent", "inplace-daemon/prestop")
	for _, hd := range h.HTTPHeaders {
		if strings.EqualFold(hd.Name, "Host") {
			req.Host = hd.Value
			continue
		}
		req.Header.Add(hd.Name, hd.Value)
	}
	resp, err := c.httpClient.Do(req)
	if err != nil {
		return fmt.Errorf("httpGet %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxHookOutput))
	if resp.StatusCode >= http.StatusBadRequest {
		return fmt.Errorf("httpGet %s: %s: %s", u, resp.Status, truncate(string(body)))
	}
	return nil
}

// resolvePort is a port number, or the number of a named port of the container (the request's
// ports, else the Pod spec's), or a name that is a number.
func resolvePort(port intstr.IntOrString, ports []corev1.ContainerPort, pod *corev1.Pod, container string) (int, error) {
	if port.Type == intstr.Int {
		if p := port.IntValue(); p > 0 && p < 65536 {
			return p, nil
		}
		return 0, fmt.Errorf("invalid port %d", port.IntValue())
	}
	name := port.StrVal
	for _, p := range ports {
		if p.Name == name {
			return int(p.ContainerPort), nil
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name != container {
			continue
		}
		for _, p := range c.Ports {
			if p.Name == name {
				return int(p.ContainerPort), nil
			}
		}
	}
	if p, err := strconv.Atoi(name); err == nil && p > 0 && p < 65536 {
		return p, nil
	}
	return 0, fmt.Errorf("container %s has no port named %q", container, name)
}

func truncate(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > maxHookOutput {
		return s[:maxHookOutput] + "..."
	}
	return s
}
