package sidecarcontrol

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// res is "cpuLimit,memLimit,cpuRequest,memRequest"; an empty field is absent.
func res(s string) corev1.ResourceRequirements {
	f := strings.Split(s, ",")
	list := func(cpu, mem string) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		if len(l) == 0 {
			return nil
		}
		return l
	}
	return corev1.ResourceRequirements{Limits: list(f[0], f[1]), Requests: list(f[2], f[3])}
}

func app(name, resources string) corev1.Container {
	return corev1.Container{Name: name, Image: "app:v1", Resources: res(resources)}
}

func policy(mode appsv1alpha1.TargetContainersModeType, regex, limCPU, limMem, reqCPU, reqMem string) *appsv1alpha1.ResourcesPolicy {
	return &appsv1alpha1.ResourcesPolicy{TargetContainersMode: mode, TargetContainersNameRegex: regex,
		ResourcesExpr: appsv1alpha1.ResourcesExpr{
			Limits:   &appsv1alpha1.ResourceExprLimits{CPU: limCPU, Memory: limMem},
			Requests: &appsv1alpha1.ResourceExprRequests{CPU: reqCPU, Memory: reqMem},
		}}
}

func sameResources(a, b corev1.ResourceRequirements) bool {
	eq := func(x, y corev1.ResourceList) bool {
		if len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || v.Cmp(w) != 0 {
				return false
			}
		}
		return true
	}
	return eq(a.Limits, b.Limits) && eq(a.Requests, b.Requests)
}

// OpenKruise v1.9's eight e2e stories of resourcesPolicy (test/e2e/apps/v1alpha1/
// sidecarset_resources_policy.go), with the resources they expect, through Inject.
func TestInjectResourcesPolicy(t *testing.T) {
	const (
		sum = appsv1alpha1.TargetContainersModeSum
		max = appsv1alpha1.TargetContainersModeMax
	)
	story := policy(sum, "^large-engine-v4$", "max(cpu*50%, 50m)", "200Mi", "max(cpu*50%, 50m)", "100Mi")
	always := corev1.ContainerRestartPolicyAlways
	for _, tc := range []struct {
		name   string
		policy *appsv1alpha1.ResourcesPolicy
		init   bool // the policy is on a native-sidecar init container
		other  *appsv1alpha1.SidecarSet
		pod    *corev1.Pod
		want   string
	}{
		{"regex picks one container", story, false, nil,
			samplePod(app("large-engine-v4", "200m,200Mi,50m,100Mi"), app("large-engine-v8", "200m,200Mi,50m,100Mi")),
			"100m,200Mi,50m,100Mi"},
		{"sum", policy(sum, "^large-engine-v.*$", "max(cpu*50%, 50m)", "200Mi", "max(cpu*50%, 50m)", "100Mi"), false, nil,
			samplePod(app("large-engine-v4", "200m,200Mi,50m,100Mi"), app("large-engine-v8", "400m,400Mi,100m,200Mi")),
			"300m,200Mi,75m,100Mi"},
		{"max", policy(max, "^large-engine-v.*$", "max(cpu*50%, 50m)", "200Mi", "max(cpu*50%, 50m)", "100Mi"), false, nil,
			samplePod(app("large-engine-v4", "200m,200Mi,50m,100Mi"), app("large-engine-v8", "400m,400Mi,100m,200Mi")),
			"200m,200Mi,50m,100Mi"},
		{"a target without a cpu limit leaves the cpu limit unlimited",
			policy(max, "^large-engine-v.*$", "max(cpu*50%, 50m)", "200Mi", "max(cpu*50%, 50m)", "100Mi"), false, nil,
			samplePod(app("large-engine-v4", "200m,200Mi,50m,100Mi"), app("large-engine-v8", ",400Mi,100m,200Mi")),
			",200Mi,50m,100Mi"},
		{"linear expressions", policy(sum, ".*", "cpu*50% + 100m", "max(memory*20% + 100Mi, 200Mi)", "cpu*30% + 50m", "memory*15% + 50Mi"), false, nil,
			samplePod(app("app1", "200m,400Mi,100m,200Mi"), app("app2", "400m,600Mi,200m,300Mi")),
			"400m,300Mi,140m,125Mi"},
		{"native-sidecar init container", policy(sum, "^app.*$", "max(cpu*30%, 50m)", "max(memory*25%, 100Mi)", "cpu*20%", "memory*15%"), true, nil,
			samplePod(app("app1", "400m,800Mi,200m,400Mi"), app("app2", "600m,1200Mi,300m,600Mi")),
			"300m,500Mi,100m,150Mi"},
		{"classic init containers are not targets", policy(sum, ".*", "cpu*50%", "memory*50%", "cpu*40%", "memory*40%"), false, nil,
			func() *corev1.Pod {
				p := samplePod(app("app1", "200m,200Mi,100m,100Mi"))
				p.Spec.InitContainers = []corev1.Container{app("plain-init", "100m,100Mi,50m,50Mi")}
				return p
			}(),
			"100m,100Mi,40m,40Mi"},
		{"other SidecarSets' sidecars are not targets", policy(sum, ".*", "cpu*50%", "memory*50%", "cpu*40%", "memory*40%"), false,
			sidecarSet("kruise-sidecars", func(s *appsv1alpha1.SidecarSet) {
				s.Spec.InitContainers = []appsv1alpha1.SidecarContainer{sidecar("kruise-init-sidecar", func(c *appsv1alpha1.SidecarContainer) {
					c.RestartPolicy = &always
					c.Resources = res("300m,300Mi,150m,150Mi")
				})}
				s.Spec.Containers = []appsv1alpha1.SidecarContainer{sidecar("kruise-sidecar", func(c *appsv1alpha1.SidecarContainer) {
					c.Resources = res("400m,400Mi,200m,200Mi")
				})}
			}),
			samplePod(app("app1", "200m,200Mi,100m,100Mi")),
			"100m,100Mi,40m,40Mi"},
		// Beyond the stories: a native sidecar of the Pod's own is a target; so is a requests-only
		// target (limits unlimited).
		{"the Pod's own native sidecar is a target", policy(sum, ".*", "cpu", "memory", "cpu", "memory"), false, nil,
			func() *corev1.Pod {
				p := samplePod(app("app1", "200m,200Mi,100m,100Mi"))
				own := app("proxy", "100m,100Mi,50m,50Mi")
				own.RestartPolicy = &always
				p.Spec.InitContainers = []corev1.Container{own}
				return p
			}(),
			"300m,300Mi,150m,150Mi"},
		{"requests only", policy(sum, ".*", "cpu", "memory", "cpu/2", ""), false, nil,
			samplePod(app("app1", ",,1,1Gi")),
			",,500m,"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sidecarSet("policy", func(s *appsv1alpha1.SidecarSet) {
				c := sidecar("sidecar1", func(c *appsv1alpha1.SidecarContainer) { c.ResourcesPolicy = tc.policy })
				if tc.init {
					c.RestartPolicy = &always
					s.Spec.InitContainers = []appsv1alpha1.SidecarContainer{c}
				} else {
					s.Spec.Containers = []appsv1alpha1.SidecarContainer{c}
				}
			})
			sets := []*appsv1alpha1.SidecarSet{s}
			if tc.other != nil {
				sets = append(sets, tc.other)
			}
			out, err := Inject(tc.pod, sets, metav1.Now())
			if err != nil {
				t.Fatal(err)
			}
			got := container(out.Pod, "sidecar1")
			if got == nil {
				t.Fatalf("sidecar1 not injected: %v", names(out.Pod.Spec.Containers))
			}
			if want := res(tc.want); !sameResources(got.Resources, want) {
				t.Errorf("sidecar1 resources = %v, want %v", got.Resources, want)
			}
			if s.Spec.Containers != nil && s.Spec.Containers[0].Resources.Limits != nil {
				t.Error("Inject changed the SidecarSet given")
			}
		})
	}
}

func TestInjectResourcesPolicyRefusesPod(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *appsv1alpha1.ResourcesPolicy
		want string
	}{
		{"no target", policy(appsv1alpha1.TargetContainersModeSum, "^db$", "cpu", "", "", ""), `no container of the Pod matches targetContainersNameRegex "^db$"`},
		{"negative result", policy(appsv1alpha1.TargetContainersModeSum, ".*", "cpu - 2", "", "", ""), "is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sidecarSet("policy", func(s *appsv1alpha1.SidecarSet) {
				s.Spec.Containers = []appsv1alpha1.SidecarContainer{sidecar("sidecar1", func(c *appsv1alpha1.SidecarContainer) { c.ResourcesPolicy = tc.p })}
			})
			_, err := Inject(samplePod(app("main", "1,1Gi,1,1Gi")), []*appsv1alpha1.SidecarSet{s}, metav1.Now())
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "sidecarset policy: container sidecar1") {
				t.Errorf("Inject: %v, want an error naming the SidecarSet, the container and %q", err, tc.want)
			}
		})
	}
}
