package containerrecreaterequest

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/containerrecreate"
)

func runningPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"},
		Spec: corev1.PodSpec{
			NodeName:       "node-a",
			InitContainers: []corev1.Container{{Name: "setup"}},
			Containers: []corev1.Container{
				{Name: "app", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/drain", Port: intstr.FromString("http")}}}},
				{Name: "sidecar", Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "sleep 1"}}}}},
				{Name: "fresh"},
			},
			TerminationGracePeriodSeconds: ptr.To[int64](12),
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", ContainerID: "containerd://aaa", RestartCount: 2},
			{Name: "sidecar", ContainerID: "containerd://bbb"},
			{Name: "fresh"},
		}},
	}
}

func crrFor(pod string, containers ...string) *apps.ContainerRecreateRequest {
	crr := &apps.ContainerRecreateRequest{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns"}, Spec: apps.ContainerRecreateRequestSpec{PodName: pod}}
	for _, c := range containers {
		crr.Spec.Containers = append(crr.Spec.Containers, apps.ContainerRecreateRequestContainer{Name: c})
	}
	return crr
}

func TestFillFromPod(t *testing.T) {
	crr := crrFor("web", "app", "sidecar")
	if errs := Fill(crr, runningPod()); len(errs) > 0 {
		t.Fatalf("refused: %v", errs)
	}
	for k, want := range map[string]string{
		v1alpha1.ContainerRecreateRequestPodUIDKey:   "uid-1",
		v1alpha1.ContainerRecreateRequestNodeNameKey: "node-a",
		v1alpha1.ContainerRecreateRequestActiveKey:   "true",
	} {
		if got := crr.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	app, sidecar := crr.Spec.Containers[0], crr.Spec.Containers[1]
	if sc := app.StatusContext; sc == nil || sc.ContainerID != "containerd://aaa" || sc.RestartCount != 2 {
		t.Errorf("app statusContext %+v", sc)
	}
	if app.PreStop == nil || app.PreStop.HTTPGet == nil || app.PreStop.HTTPGet.Path != "/drain" || len(app.Ports) != 1 {
		t.Errorf("app preStop %+v ports %v: want the httpGet hook and the ports it may name", app.PreStop, app.Ports)
	}
	if sidecar.PreStop == nil || sidecar.PreStop.Exec == nil || len(sidecar.Ports) != 0 {
		t.Errorf("sidecar preStop %+v ports %v: want the exec hook and no ports", sidecar.PreStop, sidecar.Ports)
	}
	s := crr.Spec.Strategy
	if s == nil || s.FailurePolicy != apps.ContainerRecreateRequestFailurePolicyFail || s.TerminationGracePeriodSeconds == nil || *s.TerminationGracePeriodSeconds != 12 {
		t.Errorf("strategy %+v: want failurePolicy Fail and the Pod's grace period 12", s)
	}
}

func TestFillRefuses(t *testing.T) {
	for _, tc := range []struct {
		name       string
		crr        *apps.ContainerRecreateRequest
		pod        func(*corev1.Pod) *corev1.Pod
		field, msg string
	}{
		{"pod not found", crrFor("web", "app"), func(*corev1.Pod) *corev1.Pod { return nil }, "spec.podName", "Not found"},
		{"pod terminating", crrFor("web", "app"), func(p *corev1.Pod) *corev1.Pod { p.DeletionTimestamp = &metav1.Time{}; return p }, "spec.podName", "being deleted"},
		{"pod terminated", crrFor("web", "app"), func(p *corev1.Pod) *corev1.Pod { p.Status.Phase = corev1.PodSucceeded; return p }, "spec.podName", "has terminated (phase Succeeded)"},
		{"pod not scheduled", crrFor("web", "app"), func(p *corev1.Pod) *corev1.Pod { p.Spec.NodeName = ""; return p }, "spec.podName", "not scheduled"},
		{"restartPolicy Never", crrFor("web", "app"), func(p *corev1.Pod) *corev1.Pod { p.Spec.RestartPolicy = corev1.RestartPolicyNever; return p }, "spec.podName", "restartPolicy is Never"},
		{"unknown container", crrFor("web", "app", "nope"), nil, "spec.containers[1].name", `no container "nope"`},
		{"init container", crrFor("web", "setup"), nil, "spec.containers[0].name", "init container"},
		{"container not started", crrFor("web", "fresh"), nil, "spec.containers[0].name", "not been started"},
		{"statusContext given", func() *apps.ContainerRecreateRequest {
			c := crrFor("web", "app")
			c.Spec.Containers[0].StatusContext = &apps.ContainerRecreateRequestContainerContext{ContainerID: "containerd://x"}
			return c
		}(), nil, "spec.containers[0].statusContext", "filled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := runningPod()
			if tc.pod != nil {
				pod = tc.pod(pod)
			}
			before := tc.crr.DeepCopy()
			errs := Fill(tc.crr, pod)
			if len(errs) != 1 || errs[0].Field != tc.field || !strings.Contains(errs[0].Error(), tc.msg) {
				t.Fatalf("errors %v, want one at %s saying %q", errs, tc.field, tc.msg)
			}
			if tc.crr.Labels != nil || tc.crr.Spec.Strategy != before.Spec.Strategy {
				t.Errorf("a refused request was changed: %+v", tc.crr)
			}
		})
	}
}

func attributes(crr *apps.ContainerRecreateRequest, resource, subresource string) admission.Attributes {
	return admission.NewAttributesRecord(crr, nil, apps.Kind("ContainerRecreateRequest").WithVersion(""), "ns", crr.Name,
		apps.Resource(resource).WithVersion(""), subresource, admission.Create, &metav1.CreateOptions{}, false, nil)
}

func TestAdmitReadsTheLivePod(t *testing.T) {
	p := New()
	pod := runningPod()
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.KruisePodReadyConditionType}}
	p.SetExternalKubeClientSet(fake.NewClientset(pod))
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	crr := crrFor("web", "app")
	if err := p.Admit(ctx, attributes(crr, "containerrecreaterequests", ""), nil); err != nil {
		t.Fatalf("Admit: %v", err)
	}
	if crr.Labels[v1alpha1.ContainerRecreateRequestPodUIDKey] != "uid-1" {
		t.Errorf("labels %v not filled", crr.Labels)
	}
	if at := crr.Annotations[containerrecreate.AdmittedAtAnnotation]; at == "" {
		t.Errorf("annotations %v: want the admission time, which orders a Pod's requests", crr.Annotations)
	}

	err := p.Admit(ctx, attributes(crrFor("gone", "app"), "containerrecreaterequests", ""), nil)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.podName") {
		t.Errorf("missing pod: %v, want 422 at spec.podName", err)
	}
	// Other resources and subresources are not this plugin's.
	other := crrFor("gone", "app")
	if err := p.Admit(ctx, attributes(other, "containerrecreaterequests", "status"), nil); err != nil || other.Labels != nil {
		t.Errorf("status write: %v, labels %v", err, other.Labels)
	}
	if err := p.Validate(ctx, attributes(crrFor("web", "app"), "containerrecreaterequests", ""), nil); !apierrors.IsInvalid(err) {
		t.Errorf("Validate of an unfilled request: %v, want 422", err)
	}
}

func TestWarningWithoutGate(t *testing.T) {
	crr := crrFor("web", "app")
	crr.Spec.Strategy = &apps.ContainerRecreateRequestStrategy{UnreadyGracePeriodSeconds: ptr.To[int64](3)}
	if w := Warning(crr, runningPod()); !strings.Contains(w, "no KruisePodReady readiness gate") {
		t.Errorf("warning %q", w)
	}
	gated := runningPod()
	gated.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.KruisePodReadyConditionType}}
	if w := Warning(crr, gated); w != "" {
		t.Errorf("warning %q for a gated pod", w)
	}
}
