package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
)

func withResourcesPolicy(s *apps.SidecarSet) *apps.ResourcesPolicy {
	p := &apps.ResourcesPolicy{
		TargetContainersMode:      apps.TargetContainersModeSum,
		TargetContainersNameRegex: "^app$",
		ResourcesExpr: apps.ResourcesExpr{
			Limits:   &apps.ResourceExprLimits{CPU: "max(cpu*50%, 50m)", Memory: "200Mi"},
			Requests: &apps.ResourceExprRequests{CPU: "cpu*30% + 50m", Memory: "memory*15% + 50Mi"},
		},
	}
	s.Spec.Containers[0].ResourcesPolicy = p
	return p
}

// The rules of OpenKruise v1.9's SidecarSet webhook and CRD schema for resourcesPolicy, each
// refused at its field path.
func TestValidateSidecarSetResourcesPolicy(t *testing.T) {
	s := validSidecarSet()
	withResourcesPolicy(s)
	expectErrors(t, ValidateSidecarSet(s))

	policy := "spec.containers[0].resourcesPolicy"
	cases := []struct {
		name   string
		mutate func(s *apps.SidecarSet, p *apps.ResourcesPolicy)
		want   []want
	}{
		{"with resources", func(s *apps.SidecarSet, _ *apps.ResourcesPolicy) {
			s.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}, []want{forbidden(policy)}},
		{"no mode", func(_ *apps.SidecarSet, p *apps.ResourcesPolicy) { p.TargetContainersMode = "" },
			[]want{required(policy + ".targetContainersMode")}},
		{"unknown mode", func(_ *apps.SidecarSet, p *apps.ResourcesPolicy) { p.TargetContainersMode = "avg" },
			[]want{notSupported(policy + ".targetContainersMode")}},
		{"empty regex", func(_ *apps.SidecarSet, p *apps.ResourcesPolicy) { p.TargetContainersNameRegex = "" },
			[]want{required(policy + ".targetContainersNameRegex")}},
		{"regex that does not compile", func(_ *apps.SidecarSet, p *apps.ResourcesPolicy) { p.TargetContainersNameRegex = "app-(" },
			[]want{invalid(policy + ".targetContainersNameRegex")}},
		{"no expressions", func(_ *apps.SidecarSet, p *apps.ResourcesPolicy) { p.ResourcesExpr = apps.ResourcesExpr{} },
			[]want{required(policy + ".resourcesExpr")}},
		{"bad expressions", func(_ *apps.SidecarSet, p *apps.ResourcesPolicy) {
			p.ResourcesExpr.Limits.CPU = "cpu *"
			p.ResourcesExpr.Limits.Memory = "memory * 2Mi"
			p.ResourcesExpr.Requests.CPU = "max(cpu)"
			p.ResourcesExpr.Requests.Memory = "cpu"
		}, []want{
			invalid(policy + ".resourcesExpr.limits.cpu"), invalid(policy + ".resourcesExpr.limits.memory"),
			invalid(policy + ".resourcesExpr.requests.cpu"), invalid(policy + ".resourcesExpr.requests.memory"),
		}},
		{"empty expressions leave the resource unset", func(_ *apps.SidecarSet, p *apps.ResourcesPolicy) {
			p.ResourcesExpr.Limits.CPU, p.ResourcesExpr.Requests.Memory = "", ""
		}, nil},
		{"on a classic init container", func(s *apps.SidecarSet, p *apps.ResourcesPolicy) {
			s.Spec.Containers[0].ResourcesPolicy = nil
			s.Spec.InitContainers[0].ResourcesPolicy = p
		}, []want{forbidden("spec.initContainers[0].resourcesPolicy")}},
		{"on a native sidecar", func(s *apps.SidecarSet, p *apps.ResourcesPolicy) {
			s.Spec.Containers[0].ResourcesPolicy = nil
			s.Spec.InitContainers[0].ResourcesPolicy = p
			s.Spec.InitContainers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
			s.Spec.UpdateStrategy.Type = apps.NotUpdateSidecarSetStrategyType
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := validSidecarSet()
			tc.mutate(s, withResourcesPolicy(s))
			expectErrors(t, ValidateSidecarSet(s), tc.want...)
		})
	}
}

// A user reads where the expression is wrong, not only that it is.
func TestValidateSidecarSetResourcesExprMessage(t *testing.T) {
	s := validSidecarSet()
	withResourcesPolicy(s).ResourcesExpr.Limits.CPU = "max(cpu*50%, 50m"
	errs := ValidateSidecarSet(s)
	if len(errs) != 1 {
		t.Fatalf("got %v, want one error", errs)
	}
	want := `spec.containers[0].resourcesPolicy.resourcesExpr.limits.cpu: Invalid value: "max(cpu*50%, 50m": at column 17: expected "," or ")", found the end`
	if got := errs[0].Error(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains(errs[0].Error(), "column") {
		t.Error("no column in the message")
	}
}
