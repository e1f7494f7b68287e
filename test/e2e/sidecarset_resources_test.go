package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// resourcesOf is "cpuLimit,memLimit,cpuRequest,memRequest"; an empty field is absent.
func resourcesOf(s string) corev1.ResourceRequirements {
	f := strings.Split(s, ",")
	list := func(cpu, mem string) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	return corev1.ResourceRequirements{Limits: list(f[0], f[1]), Requests: list(f[2], f[3])}
}

// checkResources compares resources by value: a missing entry is unlimited (limits) or none.
func checkResources(t *testing.T, where string, got corev1.ResourceRequirements, want string) {
	t.Helper()
	w := resourcesOf(want)
	for _, kind := range []struct {
		name      string
		got, want corev1.ResourceList
	}{{"limits", got.Limits, w.Limits}, {"requests", got.Requests, w.Requests}} {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			g, gok := kind.got[r]
			x, xok := kind.want[r]
			if gok != xok || gok && g.Cmp(x) != 0 {
				t.Errorf("%s: %s.%s = %v (set %v), want %v (set %v)", where, kind.name, r, g.String(), gok, x.String(), xok)
			}
		}
	}
}

func policyOf(mode v1alpha1.TargetContainersModeType, regex, limCPU, limMem, reqCPU, reqMem string) *v1alpha1.ResourcesPolicy {
	return &v1alpha1.ResourcesPolicy{TargetContainersMode: mode, TargetContainersNameRegex: regex,
		ResourcesExpr: v1alpha1.ResourcesExpr{
			Limits:   &v1alpha1.ResourceExprLimits{CPU: limCPU, Memory: limMem},
			Requests: &v1alpha1.ResourceExprRequests{CPU: reqCPU, Memory: reqMem},
		}}
}

func appWith(name, resources string) corev1.Container {
	c := framework.ShContainer(name, "exec sleep 999d")
	c.Resources = resourcesOf(resources)
	return c
}

// TestSidecarSetResourcesPolicy holds inplace to OpenKruise v1.9's eight resourcesPolicy specs
// (test/e2e/apps/v1alpha1/sidecarset_resources_policy.go): the sidecar's resources, computed by the
// Pod webhook from the target containers, are those OpenKruise expects. Every story is created
// through kube-apiserver (a server-side dry run: admission and Pod validation as for a real
// create, without the scheduler); "sum" and the native-sidecar story also run on the kubelet, and
// "linear expressions" is also previewed through sidecarsets/NAME/inject.
func TestSidecarSetResourcesPolicy(t *testing.T) {
	ctx, ns := framework.Start(t, "ss-resources")
	const (
		sum = v1alpha1.TargetContainersModeSum
		max = v1alpha1.TargetContainersModeMax
	)
	always := corev1.ContainerRestartPolicyAlways
	engines := func(v8 string) []corev1.Container {
		return []corev1.Container{appWith("large-engine-v4", "200m,200Mi,50m,100Mi"), appWith("large-engine-v8", v8)}
	}
	for _, tc := range []struct {
		name       string
		policy     *v1alpha1.ResourcesPolicy
		native     bool // the policy is on a native-sidecar init container
		others     bool // another SidecarSet injects sidecars (with resources) into the same Pod
		init       []corev1.Container
		containers []corev1.Container
		want       string
		run        bool
		preview    bool
	}{
		{name: "story1-regex", policy: policyOf(sum, "^large-engine-v4$", "max(cpu*50%, 50m)", "200Mi", "max(cpu*50%, 50m)", "100Mi"),
			containers: engines("200m,200Mi,50m,100Mi"), want: "100m,200Mi,50m,100Mi"},
		{name: "story2-sum", policy: policyOf(sum, "^large-engine-v.*$", "max(cpu*50%, 50m)", "200Mi", "max(cpu*50%, 50m)", "100Mi"),
			containers: engines("400m,400Mi,100m,200Mi"), want: "300m,200Mi,75m,100Mi", run: true},
		{name: "story3-max", policy: policyOf(max, "^large-engine-v.*$", "max(cpu*50%, 50m)", "200Mi", "max(cpu*50%, 50m)", "100Mi"),
			containers: engines("400m,400Mi,100m,200Mi"), want: "200m,200Mi,50m,100Mi"},
		{name: "story4-unlimited", policy: policyOf(max, "^large-engine-v.*$", "max(cpu*50%, 50m)", "200Mi", "max(cpu*50%, 50m)", "100Mi"),
			containers: engines(",400Mi,100m,200Mi"), want: ",200Mi,50m,100Mi"},
		{name: "story5-linear", policy: policyOf(sum, ".*", "cpu*50% + 100m", "max(memory*20% + 100Mi, 200Mi)", "cpu*30% + 50m", "memory*15% + 50Mi"),
			containers: []corev1.Container{appWith("app1", "200m,400Mi,100m,200Mi"), appWith("app2", "400m,600Mi,200m,300Mi")},
			want:       "400m,300Mi,140m,125Mi", preview: true},
		{name: "story6-native-sidecar", policy: policyOf(sum, "^app.*$", "max(cpu*30%, 50m)", "max(memory*25%, 100Mi)", "cpu*20%", "memory*15%"),
			native: true, containers: []corev1.Container{appWith("app1", "400m,800Mi,200m,400Mi"), appWith("app2", "600m,1200Mi,300m,600Mi")},
			want: "300m,500Mi,100m,150Mi", run: true},
		{name: "plain-init-excluded", policy: policyOf(sum, ".*", "cpu*50%", "memory*50%", "cpu*40%", "memory*40%"),
			init: []corev1.Container{func() corev1.Container {
				c := appWith("plain-init", "100m,100Mi,50m,50Mi")
				c.Command[2] = "true"
				return c
			}()},
			containers: []corev1.Container{appWith("app1", "200m,200Mi,100m,100Mi")}, want: "100m,100Mi,40m,40Mi"},
		{name: "sidecars-excluded", policy: policyOf(sum, ".*", "cpu*50%", "memory*50%", "cpu*40%", "memory*40%"), others: true,
			containers: []corev1.Container{appWith("app1", "200m,200Mi,100m,100Mi")}, want: "100m,100Mi,40m,40Mi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			label := tc.name + "-" + utilrand.String(4)
			sidecar := framework.Sidecar(framework.ShContainer("sidecar1", "exec sleep 999d"), v1alpha1.AfterAppContainerType)
			sidecar.ResourcesPolicy = tc.policy
			set := framework.ScopedSidecarSet("e2e-"+label, ns, label)
			if tc.native {
				sidecar.RestartPolicy = &always
				set.Spec.InitContainers = []v1alpha1.SidecarContainer{sidecar}
				set.Spec.UpdateStrategy.Type = v1alpha1.NotUpdateSidecarSetStrategyType
			} else {
				set.Spec.Containers = []v1alpha1.SidecarContainer{sidecar}
			}
			framework.CreateSidecarSet(t, ctx, set)
			if tc.others {
				other := framework.ScopedSidecarSet("e2e-"+label+"-other", ns, label)
				initSidecar := framework.Sidecar(appWith("kruise-init-sidecar", "300m,300Mi,150m,150Mi"), v1alpha1.AfterAppContainerType)
				initSidecar.RestartPolicy = &always
				other.Spec.InitContainers = []v1alpha1.SidecarContainer{initSidecar}
				other.Spec.Containers = []v1alpha1.SidecarContainer{framework.Sidecar(appWith("kruise-sidecar", "400m,400Mi,200m,200Mi"), v1alpha1.AfterAppContainerType)}
				other.Spec.UpdateStrategy.Type = v1alpha1.NotUpdateSidecarSetStrategyType
				framework.CreateSidecarSet(t, ctx, other)
			}

			pod := framework.LabeledPod(ns, label, label, tc.containers...)
			pod.Spec.InitContainers = tc.init
			sidecarOf := func(p *corev1.Pod) *corev1.Container {
				if tc.native {
					return framework.FindContainer(p.Spec.InitContainers, "sidecar1")
				}
				return framework.FindContainer(p.Spec.Containers, "sidecar1")
			}
			dry := framework.WaitPodWebhook(t, ctx, "the webhook to inject "+set.Name, pod, func(p *corev1.Pod) bool {
				return sidecarOf(p) != nil && (!tc.others || framework.FindContainer(p.Spec.Containers, "kruise-sidecar") != nil)
			})
			checkResources(t, "sidecar1 of the Pod created (dry run)", sidecarOf(dry).Resources, tc.want)

			if tc.preview {
				previewed, err := framework.Inplace.AppsV1alpha1().SidecarSets().Inject(ctx, set.Name, pod, metav1.CreateOptions{})
				if err != nil {
					t.Fatalf("sidecarsets/%s/inject: %v", set.Name, err)
				}
				if c := sidecarOf(previewed); c == nil {
					t.Errorf("sidecarsets/%s/inject: no sidecar1 in %v", set.Name, framework.ContainerNames(previewed.Spec.Containers))
				} else {
					checkResources(t, "sidecar1 of the preview", c.Resources, tc.want)
				}
			}
			if tc.run {
				if _, err := framework.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				running := framework.WaitPodRunning(t, ctx, ns, pod.Name)
				checkResources(t, "sidecar1 of the running Pod", sidecarOf(running).Resources, tc.want)
			}
		})
	}
}

// TestSidecarSetResourcesPolicyRefusals: a bad expression is refused when the SidecarSet is
// created, with its field path and the column of the error; a Pod none of whose containers the
// regex matches is refused by the Pod webhook, saying so.
func TestSidecarSetResourcesPolicyRefusals(t *testing.T) {
	ctx, ns := framework.Start(t, "ss-resources-bad")
	label := "bad-" + utilrand.String(4)
	sidecar := framework.Sidecar(framework.ShContainer("sidecar1", "exec sleep 999d"), v1alpha1.AfterAppContainerType)
	sidecar.ResourcesPolicy = policyOf(v1alpha1.TargetContainersModeSum, "^main$", "max(cpu*50%, 50m", "", "", "")
	set := framework.ScopedSidecarSet("e2e-"+label, ns, label)
	set.Spec.Containers = []v1alpha1.SidecarContainer{sidecar}
	_, err := framework.Inplace.AppsV1alpha1().SidecarSets().Create(ctx, set, metav1.CreateOptions{})
	want := `spec.containers[0].resourcesPolicy.resourcesExpr.limits.cpu: Invalid value: "max(cpu*50%, 50m": at column 17`
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("creating a SidecarSet with limits.cpu %q: %v, want 422 with %q", sidecar.ResourcesPolicy.ResourcesExpr.Limits.CPU, err, want)
	}
	sidecar.ResourcesPolicy.TargetContainersMode = "avg"
	sidecar.ResourcesPolicy.ResourcesExpr.Limits.CPU = "cpu"
	sidecar.ResourcesPolicy.TargetContainersNameRegex = "main("
	set.Spec.Containers = []v1alpha1.SidecarContainer{sidecar}
	_, err = framework.Inplace.AppsV1alpha1().SidecarSets().Create(ctx, set, metav1.CreateOptions{})
	for _, w := range []string{"resourcesPolicy.targetContainersMode: Unsupported value: \"avg\"", "resourcesPolicy.targetContainersNameRegex: Invalid value: \"main(\""} {
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), w) {
			t.Errorf("creating a SidecarSet with mode avg and regex main(: %v, want 422 with %q", err, w)
		}
	}

	sidecar.ResourcesPolicy = policyOf(v1alpha1.TargetContainersModeSum, "^main$", "cpu", "", "", "")
	set.Spec.Containers = []v1alpha1.SidecarContainer{sidecar}
	framework.CreateSidecarSet(t, ctx, set)
	pod := framework.LabeledPod(ns, label, label, appWith("app", "100m,,,"))
	framework.Poll(t, ctx, framework.RbacTimeout, "the Pod webhook to refuse a Pod without a target", func(ctx context.Context) (bool, error) {
		_, err := framework.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if apierrors.IsBadRequest(err) && strings.Contains(err.Error(), `no container of the Pod matches targetContainersNameRegex "^main$"`) {
			return true, nil
		}
		return false, fmt.Errorf("dry run: %v", err)
	})
}

// TestSidecarSetResourcesPolicyFollowsResize: an in-place resize of the app container
// (pods/inplaceupdate, as a CloneSet sends it) also resizes the sidecar whose resourcesPolicy
// targets it, in the same update, which OpenKruise does not do: the sidecar gets what a Pod
// created now would get, and the kubelet applies both resizes without restarting either
// container.
func TestSidecarSetResourcesPolicyFollowsResize(t *testing.T) {
	ctx, ns := framework.Start(t, "ss-follow")
	name := "e2e-follow-" + utilrand.String(5)
	set := framework.ScopedSidecarSet(name, ns, name)
	proxy := framework.Sidecar(framework.Container("proxy", framework.AppImageV1), v1alpha1.AfterAppContainerType)
	proxy.ResourcesPolicy = policyOf(v1alpha1.TargetContainersModeSum, "^main$", "cpu*50%", "200Mi", "cpu*50%", "100Mi")
	set.Spec.Containers = []v1alpha1.SidecarContainer{proxy}
	framework.CreateSidecarSet(t, ctx, set)
	main := framework.Container("main", framework.AppImageV1)
	main.Resources = resourcesOf("200m,256Mi,100m,128Mi")
	framework.CreateInjectedPod(t, ctx, framework.LabeledPod(ns, "web", name, main), name)
	before := framework.WaitPodSettled(t, ctx, ns, "web")
	checkResources(t, "proxy at injection", framework.FindContainer(before.Spec.Containers, "proxy").Resources, "100m,200Mi,50m,100Mi")

	answer, err := framework.Inplace.AppsV1alpha1().Pods(ns).InPlaceUpdate(ctx, "web", &v1alpha1.InPlaceUpdate{Spec: v1alpha1.InPlaceUpdateSpec{
		Revision:   "bigger",
		Containers: []v1alpha1.InPlaceUpdateContainer{{Name: "main", Resources: ptr.To(resourcesOf("400m,,200m,"))}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(answer.Spec.Containers) != 2 || answer.Spec.Containers[1].Name != "proxy" {
		t.Errorf("answer's containers %+v, want main and the following proxy", answer.Spec.Containers)
	}
	after := framework.WaitPod(t, ctx, framework.UpdateTimeout, "both resizes applied", ns, "web", func(p *corev1.Pod) error {
		for _, c := range []struct{ name, cpu string }{{"main", "400m"}, {"proxy", "200m"}} {
			s := framework.FindStatus(p, c.name)
			if s == nil || s.Resources == nil || s.Resources.Limits.Cpu().String() != c.cpu {
				return fmt.Errorf("%s status resources %+v, want cpu limit %s", c.name, s, c.cpu)
			}
		}
		if st := framework.StateOf(t, p); st == nil || st.CompletedTimestamp == nil {
			return fmt.Errorf("update state %+v not completed", st)
		}
		return nil
	})
	checkResources(t, "main after the resize", framework.FindContainer(after.Spec.Containers, "main").Resources, "400m,256Mi,200m,128Mi")
	checkResources(t, "proxy after the resize", framework.FindContainer(after.Spec.Containers, "proxy").Resources, "200m,200Mi,100m,100Mi")
	if after.UID != before.UID {
		t.Errorf("pod UID %s, was %s", after.UID, before.UID)
	}
	for _, c := range []string{"main", "proxy"} {
		if s, was := framework.ContainerStatus(t, after, c), framework.ContainerStatus(t, before, c); s.ContainerID != was.ContainerID || s.RestartCount != 0 {
			t.Errorf("%s: %s restarts %d, was %s: a cpu resize restarts nothing", c, s.ContainerID, s.RestartCount, was.ContainerID)
		}
	}
}
