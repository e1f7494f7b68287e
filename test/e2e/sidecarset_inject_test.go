package e2e

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestSidecarSetInjectionFromPodMetadata holds injection to OpenKruise's [SidecarSetInject]
// scenarios "volumes.downwardAPI", "volumeMounts, SubPathExpr with expanded subpath" and
// "transfer Envs with downward API by metadata.labels / metadata.annotations", on one running Pod:
//   - a downwardAPI volume of the SidecarSet is added to the Pod and mounted into the sidecar,
//     which reads the Pod's labels from it;
//   - shareVolumePolicy enabled mounts the app's volume with its subPathExpr into the sidecar and
//     brings along the app's env vars the expression names (POD_NAME, OD_NAME), so both expand
//     it to the same directory: the sidecar reads the file the app wrote there;
//   - transferEnv with sourceContainerNameFrom takes the source container's name from a label
//     (proxy) or an annotation (logger): the named env vars are copied from it, except one the
//     sidecar sets itself, which keeps the sidecar's value.
func TestSidecarSetInjectionFromPodMetadata(t *testing.T) {
	ctx, ns := framework.Start(t, "ss-inject-meta")
	name := "e2e-meta-" + utilrand.String(5)

	proxy := framework.Sidecar(framework.ShContainer("proxy", `cat /etc/podinfo/labels; echo
until [ -s /main-volume/hello ]; do sleep 0.1; done
echo "read $(cat /main-volume/hello) POD_NAME=$POD_NAME OD_NAME=$OD_NAME PROXY_IP=$PROXY_IP"
exec sleep 999d`), v1alpha1.BeforeAppContainerType)
	proxy.ShareVolumePolicy.Type = v1alpha1.ShareVolumePolicyEnabled
	proxy.VolumeMounts = []corev1.VolumeMount{{Name: "podinfo", MountPath: "/etc/podinfo"}}
	proxy.TransferEnv = []v1alpha1.TransferEnvVar{{
		SourceContainerNameFrom: &v1alpha1.SourceContainerNameSource{FieldRef: &corev1.ObjectFieldSelector{
			APIVersion: "v1", FieldPath: "metadata.labels['biz']"}},
		EnvNames: []string{"PROXY_IP"},
	}}
	logger := framework.Sidecar(framework.ShContainer("logger", `echo "POD_NAME=$POD_NAME OD_NAME=$OD_NAME PROXY_IP=$PROXY_IP"; exec sleep 999d`), v1alpha1.AfterAppContainerType)
	logger.Env = []corev1.EnvVar{{Name: "OD_NAME", Value: "sidecar_name"}}
	logger.TransferEnv = []v1alpha1.TransferEnvVar{{
		SourceContainerNameFrom: &v1alpha1.SourceContainerNameSource{FieldRef: &corev1.ObjectFieldSelector{
			APIVersion: "v1", FieldPath: "metadata.annotations['biz']"}},
		EnvNames: []string{"POD_NAME", "OD_NAME", "PROXY_IP"},
	}}
	set := framework.ScopedSidecarSet(name, ns, name)
	set.Spec.Containers = []v1alpha1.SidecarContainer{proxy, logger}
	set.Spec.Volumes = []corev1.Volume{{Name: "podinfo", VolumeSource: corev1.VolumeSource{
		DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations"}},
		}}}}}
	framework.CreateSidecarSet(t, ctx, set)

	main := framework.ShContainer("main", `echo hello-from-main > /main-volume/hello; echo wrote; exec sleep 999d`)
	main.Env = []corev1.EnvVar{{Name: "POD_NAME", Value: "bar"}, {Name: "OD_NAME", Value: "od_name"}, {Name: "PROXY_IP", Value: "127.0.0.1"}}
	main.VolumeMounts = []corev1.VolumeMount{{Name: "main-volume", MountPath: "/main-volume", SubPathExpr: "foo/$(POD_NAME)/$(OD_NAME)/conf"}}
	pod := framework.LabeledPod(ns, "web", name, main)
	pod.Labels["biz"] = "main"
	pod.Annotations = map[string]string{"biz": "main"}
	pod.Spec.Volumes = []corev1.Volume{{Name: "main-volume", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	created := framework.CreateInjectedPod(t, ctx, pod, name)
	for _, v := range []string{"main-volume", "podinfo"} {
		found := false
		for _, vol := range created.Spec.Volumes {
			found = found || vol.Name == v
		}
		if !found {
			t.Errorf("pod volumes %v: want %s", created.Spec.Volumes, v)
		}
	}
	p := framework.FindContainer(created.Spec.Containers, "proxy")
	if p == nil {
		t.Fatalf("containers %v: no proxy", framework.ContainerNames(created.Spec.Containers))
	}
	if m := framework.FindMount(p, "main-volume"); m == nil || m.SubPathExpr != "foo/$(POD_NAME)/$(OD_NAME)/conf" {
		t.Errorf("proxy volumeMounts %+v: want main's main-volume with its subPathExpr", p.VolumeMounts)
	}
	if m := framework.FindMount(p, "podinfo"); m == nil || m.MountPath != "/etc/podinfo" {
		t.Errorf("proxy volumeMounts %+v: want podinfo at /etc/podinfo", p.VolumeMounts)
	}
	// subPathExpr's vars and transferEnv's PROXY_IP from main.
	for k, want := range map[string]string{"POD_NAME": "bar", "OD_NAME": "od_name", "PROXY_IP": "127.0.0.1"} {
		if v, ok := framework.EnvValue(p, k); !ok || v != want {
			t.Errorf("proxy env %s=%q (set %v), want %q", k, v, ok, want)
		}
	}
	// OpenKruise: POD_NAME and PROXY_IP from main, OD_NAME the sidecar's own.
	l := framework.FindContainer(created.Spec.Containers, "logger")
	for k, want := range map[string]string{"POD_NAME": "bar", "OD_NAME": "sidecar_name", "PROXY_IP": "127.0.0.1"} {
		if v, ok := framework.EnvValue(l, k); !ok || v != want {
			t.Errorf("logger env %s=%q (set %v), want %q", k, v, ok, want)
		}
	}
	if m := framework.FindMount(l, "main-volume"); m != nil {
		t.Errorf("logger mounts %+v although its shareVolumePolicy is disabled", m)
	}

	framework.WaitPodSettled(t, ctx, ns, "web")
	framework.WaitLog(t, ctx, ns, "web", "main", "wrote")
	framework.WaitLog(t, ctx, ns, "web", "proxy", `biz="main"`)
	// Both expand the subPathExpr to foo/bar/od_name/conf: the sidecar reads what main wrote.
	framework.WaitLog(t, ctx, ns, "web", "proxy", "read hello-from-main POD_NAME=bar OD_NAME=od_name PROXY_IP=127.0.0.1")
	framework.WaitLog(t, ctx, ns, "web", "logger", "POD_NAME=bar OD_NAME=sidecar_name PROXY_IP=127.0.0.1")
}

// TestSidecarSetCanaryInjection (OpenKruise "sidecarSet inject pod sidecar during canary
// upgrades"): a SidecarSet at custom version 0 changes in a way that cannot go in place, for
// Pods labelled version=canary only (updateStrategy.selector), with injectionStrategy.revision
// {customVersion: "0", policy: Partial}. No existing Pod is upgraded (2 matched, 0 updated, 2
// ready); a new canary Pod gets the new sidecar, a new stable Pod the sidecar of version 0.
func TestSidecarSetCanaryInjection(t *testing.T) {
	ctx, ns := framework.Start(t, "ss-canary")
	name := "e2e-canary-" + utilrand.String(5)
	set := framework.ScopedSidecarSet(name, ns, name)
	set.Labels = map[string]string{v1alpha1.SidecarSetCustomVersionLabel: "0"}
	set.Spec.Containers = []v1alpha1.SidecarContainer{framework.Sidecar(framework.Container("agent", framework.AppImageV1), v1alpha1.AfterAppContainerType)}
	framework.CreateSidecarSet(t, ctx, set)

	podOf := func(podName, version string) *corev1.Pod {
		p := framework.LabeledPod(ns, podName, name, framework.Container("main", framework.AppImageV1))
		p.Labels["version"] = version
		return p
	}
	agentImage := func(p *corev1.Pod) string {
		if c := framework.FindContainer(p.Spec.Containers, "agent"); c != nil {
			return c.Image
		}
		return ""
	}
	create := func(p *corev1.Pod, wantImage string) {
		t.Helper()
		framework.WaitPodWebhook(t, ctx, fmt.Sprintf("the webhook to inject agent %s into %s", wantImage, p.Name), p, func(got *corev1.Pod) bool {
			return agentImage(got) == wantImage
		})
		created, err := framework.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := agentImage(created); got != wantImage {
			t.Errorf("pod %s (version=%s) created with agent %q, want %s", p.Name, p.Labels["version"], got, wantImage)
		}
	}
	create(podOf("stable-1", "stable"), framework.AppImageV1)
	create(podOf("canary-1", "canary"), framework.AppImageV1)
	framework.WaitSidecarSetStatus(t, ctx, name, 2, 2, 2, 2)

	framework.UpdateSidecarSet(t, ctx, name, func(s *v1alpha1.SidecarSet) {
		s.Labels[v1alpha1.SidecarSetCustomVersionLabel] = "1"
		s.Spec.Containers[0].Image = framework.AppImageV2
		// An env change cannot go in place: existing Pods keep their sidecar.
		s.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "SOME_ENV", Value: "SOME_VAL"}}
		s.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"version": "canary"}}
		s.Spec.InjectionStrategy.Revision = &v1alpha1.SidecarSetInjectRevision{
			CustomVersion: ptr.To("0"), Policy: v1alpha1.PartialSidecarSetInjectRevisionPolicy}
	})
	framework.WaitSidecarSetStatus(t, ctx, name, 2, 0, 2, 0)

	create(podOf("canary-2", "canary"), framework.AppImageV2)
	create(podOf("stable-2", "stable"), framework.AppImageV1)
	pods, err := framework.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		want := framework.AppImageV1
		if p.Name == "canary-2" {
			want = framework.AppImageV2
		}
		if got := agentImage(&p); got != want {
			t.Errorf("pod %s: agent %s, want %s", p.Name, got, want)
		}
	}
}

// TestSidecarSetNamespaceSelectorFollowsRelabel (OpenKruise "sidecarSet upgrade cold sidecar
// container image only", its first half): a SidecarSet whose namespaceSelector asks for label
// inject=sidecar injects nothing into a Pod of a namespace without it; once the namespace is
// labelled, a Pod created there gets the sidecar, and the Pod created before keeps none.
func TestSidecarSetNamespaceSelectorFollowsRelabel(t *testing.T) {
	ctx, ns := framework.Start(t, "ss-relabel")
	name := "e2e-relabel-" + utilrand.String(5)
	set := framework.ScopedSidecarSet(name, ns, name)
	set.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{
		corev1.LabelMetadataName: ns, "inject": "sidecar"}}
	set.Spec.Containers = []v1alpha1.SidecarContainer{framework.Sidecar(framework.Container("agent", framework.AppImageV1), v1alpha1.BeforeAppContainerType)}
	framework.CreateSidecarSet(t, ctx, set)

	first, err := framework.Kube.CoreV1().Pods(ns).Create(ctx, framework.LabeledPod(ns, "before", name, framework.Container("main", framework.AppImageV1)), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	framework.ExpectUntouched(t, first, "namespace not labelled inject=sidecar", "main")

	framework.MustKubectl(t, ctx, "", "label", "namespace", ns, "inject=sidecar")
	second := framework.LabeledPod(ns, "after", name, framework.Container("main", framework.AppImageV1))
	framework.WaitPodWebhook(t, ctx, "the webhook to see the namespace's new label", second, func(p *corev1.Pod) bool {
		return framework.FindContainer(p.Spec.Containers, "agent") != nil
	})
	created, err := framework.Kube.CoreV1().Pods(ns).Create(ctx, second, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := framework.ContainerNames(created.Spec.Containers); len(got) != 2 || got[0] != "agent" || created.Spec.Containers[0].Image != framework.AppImageV1 {
		t.Errorf("pod after the relabel has containers %v, want [agent main] with agent on %s", got, framework.AppImageV1)
	}
	if p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, "before", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if got := framework.ContainerNames(p.Spec.Containers); len(got) != 1 {
		t.Errorf("pod created before the relabel now has containers %v: want it left alone", got)
	}
}
