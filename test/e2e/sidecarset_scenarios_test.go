package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/sidecarcontrol"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// SidecarSet injection scenarios on the real cluster: OpenKruise's docs manifest, placement,
// shared volumes, transferred env, several SidecarSets, native sidecars and the inject
// subresource. Every SidecarSet is cluster-scoped, named uniquely and restricted with a
// namespaceSelector to its test's namespace, so that it touches no other test's Pods.

// ssKubectlCreatePod creates the Pod with `kubectl create -f -` and returns it as stored.
func ssKubectlCreatePod(t *testing.T, ctx context.Context, ns, name, manifest string) *corev1.Pod {
	t.Helper()
	out := framework.MustKubectl(t, ctx, manifest, "create", "-n", ns, "-f", "-")
	if !strings.Contains(out, "pod/"+name+" created") {
		t.Fatalf("kubectl create: %q, want pod/%s created", out, name)
	}
	pod, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// ssPostRaw is `kubectl create --raw PATH -f FILE` with the JSON of body in a temporary file.
func ssPostRaw(t *testing.T, ctx context.Context, path string, body any) framework.RawResponse {
	t.Helper()
	file := framework.JSONFile(t, "pod.json", body)
	r := framework.KubectlCreateRaw(ctx, path, "", file)
	if r.Code == 0 {
		t.Fatalf("kubectl create --raw %s: no response status in its log: %v\n%s", path, r.Err, r.ErrMsg)
	}
	return r
}

// docsSidecarSet is the SidecarSet of OpenKruise's docs (user-manuals/sidecarset: sidecar1 with
// sleep 999d, BeforeAppContainer, shareVolumePolicy disabled, transferEnv PROXY_IP from main, the
// log-volume emptyDir), with the local image, a selector unique to the run and a namespaceSelector
// keeping it to the test's namespace.
func docsSidecarSet(name, label, ns string, paused bool) string {
	return `apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata:
  name: ` + name + `
spec:
  selector:
    matchLabels:
      app: ` + label + `
  namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: ` + ns + `
  updateStrategy:
    type: RollingUpdate
    maxUnavailable: 1
  injectionStrategy:
    paused: ` + fmt.Sprint(paused) + `
  containers:
  - name: sidecar1
    image: ` + framework.AppImageV1 + `
    imagePullPolicy: Never
    command: ["sleep", "999d"] # do nothing at all
    podInjectPolicy: BeforeAppContainer
    shareVolumePolicy:
      type: disabled
    transferEnv:
    - sourceContainerName: main
      envName: PROXY_IP
    volumeMounts:
    - name: log-volume
      mountPath: /var/log
  volumes: # this field will be merged into pod.spec.volumes
  - name: log-volume
    emptyDir: {}
`
}

// TestSidecarSetDocsManifest: OpenKruise's docs SidecarSet applied with kubectl is injected
// into a matching Pod created with kubectl — sidecar1 first, IS_INJECTED and the transferred env,
// log-volume once, the hash annotations keyed by the SidecarSet's name with its own hashes, the
// injected list — and the sidecar runs. Pods with other labels, in a namespace the
// namespaceSelector does not match, or created while the SidecarSet is paused are untouched.
func TestSidecarSetDocsManifest(t *testing.T) {
	ctx, ns := framework.Start(t, "ss-docs")
	name := "e2e-docs-" + utilrand.String(5)
	label := name
	t.Cleanup(func() {
		_ = framework.Inplace.AppsV1alpha1().SidecarSets().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	if out := framework.MustKubectl(t, ctx, docsSidecarSet(name, label, ns, false), "apply", "-f", "-"); !strings.Contains(out, name+" created") {
		t.Fatalf("kubectl apply: %q, want %s created", out, name)
	}
	set, err := framework.Inplace.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setHash, setHashWithoutImage := set.Annotations[v1alpha1.SidecarSetHashAnnotation], set.Annotations[v1alpha1.SidecarSetHashWithoutImageAnnotation]
	if want, _ := sidecarcontrol.Hash(set); setHash == "" || setHash != want {
		t.Errorf("SidecarSet annotation %s=%q, want OpenKruise's hash %q", v1alpha1.SidecarSetHashAnnotation, setHash, want)
	}
	if want, _ := sidecarcontrol.HashWithoutImage(set); setHashWithoutImage == "" || setHashWithoutImage != want {
		t.Errorf("SidecarSet annotation %s=%q, want %q", v1alpha1.SidecarSetHashWithoutImageAnnotation, setHashWithoutImage, want)
	}

	podYAML := func(pod, label string) string {
		return `apiVersion: v1
kind: Pod
metadata:
  name: ` + pod + `
  labels: {app: ` + label + `}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: ` + framework.AppImageV1 + `
    imagePullPolicy: Never
    env: [{name: PROXY_IP, value: 10.0.0.1}, {name: OTHER, value: kept-in-main}]
    volumeMounts: [{name: main-data, mountPath: /data}]
  volumes: [{name: main-data, emptyDir: {}}]
`
	}
	probe := framework.LabeledPod(ns, "probe", label, framework.Container("main", framework.AppImageV1))
	framework.WaitPodWebhook(t, ctx, "the webhook to inject SidecarSet "+name, probe, func(p *corev1.Pod) bool {
		return p.Annotations[v1alpha1.SidecarSetListAnnotation] == name
	})

	pod := ssKubectlCreatePod(t, ctx, ns, "web", podYAML("web", label))
	if got := framework.ContainerNames(pod.Spec.Containers); !slices.Equal(got, []string{"sidecar1", "main"}) {
		t.Fatalf("containers %v, want [sidecar1 main] (BeforeAppContainer)", got)
	}
	sidecar := &pod.Spec.Containers[0]
	if v, ok := framework.EnvValue(sidecar, "IS_INJECTED"); !ok || v != "true" {
		t.Errorf("sidecar1 env %+v: want IS_INJECTED=true", sidecar.Env)
	}
	if v, ok := framework.EnvValue(sidecar, "PROXY_IP"); !ok || v != "10.0.0.1" {
		t.Errorf("sidecar1 env %+v: want PROXY_IP=10.0.0.1 transferred from main", sidecar.Env)
	}
	if _, ok := framework.EnvValue(sidecar, "OTHER"); ok {
		t.Errorf("sidecar1 env %+v: OTHER is not in transferEnv and must not be copied", sidecar.Env)
	}
	if !slices.Equal(sidecar.Command, []string{"sleep", "999d"}) || sidecar.Image != framework.AppImageV1 || sidecar.ImagePullPolicy != corev1.PullNever {
		t.Errorf("sidecar1 command %v image %s pull %s: want the SidecarSet's", sidecar.Command, sidecar.Image, sidecar.ImagePullPolicy)
	}
	if m := framework.FindMount(sidecar, "log-volume"); m == nil || m.MountPath != "/var/log" {
		t.Errorf("sidecar1 volumeMounts %+v: want log-volume at /var/log", sidecar.VolumeMounts)
	}
	// shareVolumePolicy disabled: main's own volume is not mounted into the sidecar. (The
	// ServiceAccount token is: kube-apiserver runs its ServiceAccount admission again after a
	// webhook changed the Pod, and it mounts the token into every container.)
	if m := framework.FindMount(sidecar, "main-data"); m != nil {
		t.Errorf("sidecar1 mounts main's volume %+v although shareVolumePolicy is disabled", m)
	}
	if main := &pod.Spec.Containers[1]; framework.FindMount(main, "log-volume") != nil {
		t.Errorf("main volumeMounts %+v: log-volume is the sidecar's only", main.VolumeMounts)
	}
	var logVolumes []corev1.Volume
	for _, v := range pod.Spec.Volumes {
		if v.Name == "log-volume" {
			logVolumes = append(logVolumes, v)
		}
	}
	if len(logVolumes) != 1 || logVolumes[0].EmptyDir == nil {
		t.Errorf("volumes %+v: want log-volume (emptyDir) exactly once", pod.Spec.Volumes)
	}

	if got := pod.Annotations[v1alpha1.SidecarSetListAnnotation]; got != name {
		t.Errorf("annotation %s=%q, want %q", v1alpha1.SidecarSetListAnnotation, got, name)
	}
	for key, want := range map[string]string{
		v1alpha1.SidecarSetHashAnnotation:             setHash,
		v1alpha1.SidecarSetHashWithoutImageAnnotation: setHashWithoutImage,
	} {
		hashes := framework.SidecarHashes(t, pod, key)
		if got := keys(hashes); !slices.Equal(got, []string{name}) {
			t.Errorf("annotation %s keyed by %v, want [%s]", key, got, name)
		}
		h := hashes[name]
		if h.Hash != want || h.SidecarSetName != name || !slices.Equal(h.SidecarList, []string{"sidecar1"}) || h.UpdateTimestamp.IsZero() {
			t.Errorf("annotation %s entry %+v: want hash %q (the SidecarSet's own), sidecarSetName %s, sidecarList [sidecar1], an updateTimestamp",
				key, h, want, name)
		}
	}
	if setHash == setHashWithoutImage {
		t.Errorf("the SidecarSet's hash and hash without image are both %q: the image must count in the first only", setHash)
	}

	running := framework.WaitPodSettled(t, ctx, ns, "web")
	if s := framework.ContainerStatus(t, running, "sidecar1"); s.State.Running == nil || !s.Ready || s.RestartCount != 0 {
		t.Errorf("sidecar1 status %+v: want running and ready, never restarted", s)
	}

	// Untouched: labels the selector does not match.
	other := ssKubectlCreatePod(t, ctx, ns, "other-labels", podYAML("other-labels", label+"-not"))
	framework.ExpectUntouched(t, other, "labels not matching", "main")

	// Untouched: matching labels, but a namespace the namespaceSelector does not match.
	ns2 := framework.NewNamespace(t, ctx, "ss-docs-other")
	elsewhere := ssKubectlCreatePod(t, ctx, ns2, "web", podYAML("web", label))
	framework.ExpectUntouched(t, elsewhere, "namespace not selected", "main")

	// Untouched: the SidecarSet paused (injectionStrategy.paused), applied with kubectl.
	if out := framework.MustKubectl(t, ctx, docsSidecarSet(name, label, ns, true), "apply", "-f", "-"); !strings.Contains(out, name+" configured") {
		t.Fatalf("kubectl apply (paused): %q, want %s configured", out, name)
	}
	if s, err := framework.Inplace.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{}); err != nil || !s.Spec.InjectionStrategy.Paused {
		t.Fatalf("SidecarSet after apply: paused %v, %v; want paused", s != nil && s.Spec.InjectionStrategy.Paused, err)
	}
	framework.WaitPodWebhook(t, ctx, "the webhook to see SidecarSet "+name+" paused", probe, func(p *corev1.Pod) bool {
		return len(p.Spec.Containers) == 1 && p.Annotations[v1alpha1.SidecarSetListAnnotation] == ""
	})
	paused := ssKubectlCreatePod(t, ctx, ns, "while-paused", podYAML("while-paused", label))
	framework.ExpectUntouched(t, paused, "SidecarSet paused", "main")
}

// TestSidecarSetInjectionOrderAndVolumes: BeforeAppContainer and AfterAppContainer sidecars
// frame the app containers; a sidecar with shareVolumePolicy enabled mounts the app container's
// emptyDir and reads the file the app wrote into it (one with it disabled does not get the mount);
// transferEnv copies the app container's env var into the sidecar, whose process sees it.
func TestSidecarSetInjectionOrderAndVolumes(t *testing.T) {
	ctx, ns := framework.Start(t, "ss-order")
	name := "e2e-order-" + utilrand.String(5)
	secret := "secret-" + utilrand.String(8)
	token := "token-" + utilrand.String(8)

	after := framework.Sidecar(framework.ShContainer("after-sidecar", `echo "APP_SECRET=$APP_SECRET"
until [ -s /shared/hello.txt ]; do sleep 0.1; done
echo "read $(cat /shared/hello.txt)"
exec sleep 999d`), v1alpha1.AfterAppContainerType)
	after.ShareVolumePolicy.Type = v1alpha1.ShareVolumePolicyEnabled
	after.TransferEnv = []v1alpha1.TransferEnvVar{{SourceContainerName: "app", EnvName: "APP_SECRET"}}
	set := framework.ScopedSidecarSet(name, ns, name)
	set.Spec.Containers = []v1alpha1.SidecarContainer{
		framework.Sidecar(framework.Container("before-sidecar", framework.AppImageV1), v1alpha1.BeforeAppContainerType),
		after,
	}
	framework.CreateSidecarSet(t, ctx, set)

	// The app writes the token (which only it knows) into its emptyDir.
	app := framework.ShContainer("app", `echo "$TOKEN" > /shared/hello.txt; echo wrote; exec sleep 999d`)
	app.Env = []corev1.EnvVar{{Name: "APP_SECRET", Value: secret}, {Name: "TOKEN", Value: token}}
	app.VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	pod := framework.LabeledPod(ns, "web", name, app, framework.Container("app2", framework.AppImageV1))
	pod.Spec.Volumes = []corev1.Volume{{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	created := framework.CreateInjectedPod(t, ctx, pod, name)
	if got := framework.ContainerNames(created.Spec.Containers); !slices.Equal(got, []string{"before-sidecar", "app", "app2", "after-sidecar"}) {
		t.Fatalf("containers %v, want [before-sidecar app app2 after-sidecar]", got)
	}
	before, afterC := &created.Spec.Containers[0], &created.Spec.Containers[3]
	for _, c := range []*corev1.Container{before, afterC} {
		if v, ok := framework.EnvValue(c, "IS_INJECTED"); !ok || v != "true" {
			t.Errorf("%s env %+v: want IS_INJECTED=true", c.Name, c.Env)
		}
	}
	for _, c := range created.Spec.Containers[1:3] {
		if _, ok := framework.EnvValue(&c, "IS_INJECTED"); ok {
			t.Errorf("app container %s has IS_INJECTED", c.Name)
		}
	}

	// shareVolumePolicy: enabled shares app's mount, disabled does not.
	if m := framework.FindMount(afterC, "shared"); m == nil || m.MountPath != "/shared" {
		t.Errorf("after-sidecar volumeMounts %+v: want app's shared at /shared (shareVolumePolicy enabled)", afterC.VolumeMounts)
	}
	if m := framework.FindMount(before, "shared"); m != nil {
		t.Errorf("before-sidecar mounts %+v although its shareVolumePolicy is disabled", m)
	}
	// transferEnv: APP_SECRET only, into after-sidecar only.
	if v, ok := framework.EnvValue(afterC, "APP_SECRET"); !ok || v != secret {
		t.Errorf("after-sidecar env %+v: want APP_SECRET=%s from app", afterC.Env, secret)
	}
	if _, ok := framework.EnvValue(afterC, "TOKEN"); ok {
		t.Errorf("after-sidecar env %+v: TOKEN is not transferred", afterC.Env)
	}
	if _, ok := framework.EnvValue(before, "APP_SECRET"); ok {
		t.Errorf("before-sidecar env %+v: it has no transferEnv", before.Env)
	}
	hashes := framework.SidecarHashes(t, created, v1alpha1.SidecarSetHashAnnotation)
	if got := hashes[name].SidecarList; !slices.Equal(got, []string{"after-sidecar", "before-sidecar"}) {
		t.Errorf("hash annotation %+v: want sidecarList [after-sidecar before-sidecar]", hashes)
	}

	running := framework.WaitPodSettled(t, ctx, ns, "web")
	for _, c := range []string{"before-sidecar", "app", "app2", "after-sidecar"} {
		if s := framework.ContainerStatus(t, running, c); s.State.Running == nil || s.RestartCount != 0 {
			t.Errorf("container %s: %+v, want running, never restarted", c, s)
		}
	}
	framework.WaitLog(t, ctx, ns, "web", "app", "wrote")
	framework.WaitLog(t, ctx, ns, "web", "after-sidecar", "APP_SECRET="+secret+"\n")
	framework.WaitLog(t, ctx, ns, "web", "after-sidecar", "read "+token+"\n")
	// And on demand: the sidecar reads the app's file through the shared mount.
	if out := framework.MustKubectl(t, ctx, "", "exec", "-n", ns, "web", "-c", "after-sidecar", "--", "cat", "/shared/hello.txt"); strings.TrimSpace(out) != token {
		t.Errorf("kubectl exec after-sidecar cat /shared/hello.txt: %q, want %q", out, token)
	}
	if _, _, err := framework.Kubectl(ctx, "", "exec", "-n", ns, "web", "-c", "before-sidecar", "--", "cat", "/shared/hello.txt"); err == nil {
		t.Errorf("before-sidecar (shareVolumePolicy disabled) can read /shared/hello.txt")
	}
}

// TestSidecarSetTwoSidecarSetsAndNativeSidecar: two SidecarSets selecting one Pod both inject
// (injected list sorted, a hash entry each); a SidecarSet's initContainers put a native sidecar
// (restartPolicy Always) and a plain init container after the Pod's own init containers: the
// plain one completes, the native sidecar keeps running beside the app.
func TestSidecarSetTwoSidecarSetsAndNativeSidecar(t *testing.T) {
	ctx, ns := framework.Start(t, "ss-two")
	base := "e2e-two-" + utilrand.String(5)
	nameA, nameB := base+"-a", base+"-b"

	// b first: the order is by name, not by creation.
	setB := framework.ScopedSidecarSet(nameB, ns, base)
	setB.Spec.Containers = []v1alpha1.SidecarContainer{framework.Sidecar(framework.Container("sidecar-b", framework.AppImageV1), v1alpha1.BeforeAppContainerType)}
	setB = framework.CreateSidecarSet(t, ctx, setB)
	setA := framework.ScopedSidecarSet(nameA, ns, base)
	setA.Spec.Containers = []v1alpha1.SidecarContainer{framework.Sidecar(framework.Container("sidecar-a", framework.AppImageV1), v1alpha1.BeforeAppContainerType)}
	setA = framework.CreateSidecarSet(t, ctx, setA)

	pod := framework.LabeledPod(ns, "both", base, framework.Container("main", framework.AppImageV1))
	framework.WaitPodWebhook(t, ctx, "the webhook to inject both SidecarSets", pod, func(p *corev1.Pod) bool {
		return len(p.Spec.Containers) == 3
	})
	if _, err := framework.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	both := framework.WaitPodSettled(t, ctx, ns, "both")
	if got := framework.ContainerNames(both.Spec.Containers); !slices.Equal(got, []string{"sidecar-a", "sidecar-b", "main"}) {
		t.Errorf("containers %v, want [sidecar-a sidecar-b main] (SidecarSets applied by name)", got)
	}
	if got, want := both.Annotations[v1alpha1.SidecarSetListAnnotation], nameA+","+nameB; got != want {
		t.Errorf("annotation %s=%q, want %q", v1alpha1.SidecarSetListAnnotation, got, want)
	}
	for key, want := range map[string]map[string]string{
		v1alpha1.SidecarSetHashAnnotation: {
			nameA: setA.Annotations[v1alpha1.SidecarSetHashAnnotation], nameB: setB.Annotations[v1alpha1.SidecarSetHashAnnotation]},
		v1alpha1.SidecarSetHashWithoutImageAnnotation: {
			nameA: setA.Annotations[v1alpha1.SidecarSetHashWithoutImageAnnotation], nameB: setB.Annotations[v1alpha1.SidecarSetHashWithoutImageAnnotation]},
	} {
		hashes := framework.SidecarHashes(t, both, key)
		if got := keys(hashes); !slices.Equal(got, []string{nameA, nameB}) {
			t.Errorf("annotation %s keyed by %v, want [%s %s]", key, got, nameA, nameB)
		}
		for n, h := range want {
			if hashes[n].Hash == "" || hashes[n].Hash != h || hashes[n].SidecarSetName != n {
				t.Errorf("annotation %s entry %s: %+v, want hash %q", key, n, hashes[n], h)
			}
		}
	}
	if a, b := framework.SidecarHashes(t, both, v1alpha1.SidecarSetHashAnnotation), []string{"sidecar-a", "sidecar-b"}; !slices.Equal(a[nameA].SidecarList, b[:1]) || !slices.Equal(a[nameB].SidecarList, b[1:]) {
		t.Errorf("hash annotation %+v: want each SidecarSet's own sidecarList", a)
	}
	for _, c := range []string{"sidecar-a", "sidecar-b", "main"} {
		if s := framework.ContainerStatus(t, both, c); s.State.Running == nil {
			t.Errorf("container %s: %+v, want running", c, s)
		}
	}

	// Native sidecar and plain init container from spec.initContainers.
	nameN := base + "-native"
	native := framework.ShContainer("native-sidecar", "echo native up; exec sleep 999d")
	native.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	setN := framework.ScopedSidecarSet(nameN, ns, nameN)
	// Injection only: nothing to upgrade (TestSidecarSetNativeSidecarUpgrade upgrades a native
	// sidecar in place).
	setN.Spec.UpdateStrategy.Type = v1alpha1.NotUpdateSidecarSetStrategyType
	setN.Spec.InitContainers = []v1alpha1.SidecarContainer{
		{Container: native},
		{Container: framework.ShContainer("init-plain", "echo init-plain done")},
	}
	setN = framework.CreateSidecarSet(t, ctx, setN)
	npod := framework.LabeledPod(ns, "native", nameN, framework.Container("main", framework.AppImageV1))
	npod.Spec.InitContainers = []corev1.Container{framework.ShContainer("app-init", "echo app-init done")}
	framework.WaitPodWebhook(t, ctx, "the webhook to inject SidecarSet "+nameN, npod, func(p *corev1.Pod) bool {
		return p.Annotations[v1alpha1.SidecarSetListAnnotation] == nameN
	})
	if _, err := framework.Kube.CoreV1().Pods(ns).Create(ctx, npod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, "native", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := framework.ContainerNames(created.Spec.InitContainers); !slices.Equal(got, []string{"app-init", "init-plain", "native-sidecar"}) {
		t.Fatalf("init containers %v, want [app-init init-plain native-sidecar] (the Pod's, then the SidecarSet's by name)", got)
	}
	if got := framework.ContainerNames(created.Spec.Containers); !slices.Equal(got, []string{"main"}) {
		t.Errorf("containers %v, want [main]: initContainers go to spec.initContainers only", got)
	}
	if c := framework.FindContainer(created.Spec.InitContainers, "native-sidecar"); c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("native-sidecar restartPolicy %v, want Always", c.RestartPolicy)
	}
	if c := framework.FindContainer(created.Spec.InitContainers, "init-plain"); c.RestartPolicy != nil {
		t.Errorf("init-plain restartPolicy %v, want none", *c.RestartPolicy)
	}
	for _, n := range []string{"init-plain", "native-sidecar"} {
		if v, ok := framework.EnvValue(framework.FindContainer(created.Spec.InitContainers, n), "IS_INJECTED"); !ok || v != "true" {
			t.Errorf("%s: want IS_INJECTED=true", n)
		}
	}
	if h := framework.SidecarHashes(t, created, v1alpha1.SidecarSetHashAnnotation)[nameN]; h.Hash != setN.Annotations[v1alpha1.SidecarSetHashAnnotation] ||
		!slices.Equal(h.SidecarList, []string{"native-sidecar"}) {
		t.Errorf("hash entry %+v: want the SidecarSet's hash %q and sidecarList [native-sidecar] (the native sidecar only)",
			h, setN.Annotations[v1alpha1.SidecarSetHashAnnotation])
	}

	running := framework.WaitPodSettled(t, ctx, ns, "native")
	for _, n := range []string{"app-init", "init-plain"} {
		if s := framework.InitStatus(running, n); s == nil || s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 || s.State.Terminated.Reason != "Completed" {
			t.Errorf("init container %s: %+v, want completed", n, s)
		}
	}
	if s := framework.InitStatus(running, "native-sidecar"); s == nil || s.State.Running == nil || s.Started == nil || !*s.Started || !s.Ready || s.RestartCount != 0 {
		t.Errorf("native sidecar status %+v: want started, running and ready beside the app", s)
	}
	if s := framework.ContainerStatus(t, running, "main"); s.State.Running == nil {
		t.Errorf("main: %+v, want running", s)
	}
	framework.WaitLog(t, ctx, ns, "native", "init-plain", "init-plain done")
	framework.WaitLog(t, ctx, ns, "native", "native-sidecar", "native up")
}

// TestSidecarSetInjectSubresource: POST sidecarsets/NAME/inject with kubectl create --raw
// answers the injected Pod (the Pod as given, in its namespace, with the sidecar) and creates
// nothing; a Pod the SidecarSet does not select (labels, or namespace) is refused with 422 saying
// why. One SidecarSet is restricted to the test's namespace with a namespaceSelector; the other
// has none (it selects a label unique to the run, and the subresource creates no Pod), so that
// the label cases do not depend on how the namespace is read.
func TestSidecarSetInjectSubresource(t *testing.T) {
	ctx, ns := framework.Start(t, "ss-inject")
	ns2 := framework.NewNamespace(t, ctx, "ss-inject-other")
	name := "e2e-preview-" + utilrand.String(5)
	scoped := framework.ScopedSidecarSet(name, ns, name)
	scoped.Spec.Containers = []v1alpha1.SidecarContainer{framework.Sidecar(framework.Container("agent", framework.AppImageV1), v1alpha1.BeforeAppContainerType)}
	scoped = framework.CreateSidecarSet(t, ctx, scoped)
	anyName := name + "-any"
	anywhere := framework.ScopedSidecarSet(anyName, ns, anyName)
	anywhere.Spec.NamespaceSelector = nil
	anywhere.Spec.Containers = []v1alpha1.SidecarContainer{framework.Sidecar(framework.Container("agent-any", framework.AppImageV1), v1alpha1.AfterAppContainerType)}
	anywhere = framework.CreateSidecarSet(t, ctx, anywhere)
	pathOf := func(set string) string { return "/apis/apps.kruise.io/v1alpha1/sidecarsets/" + set + "/inject" }
	podBody := func(namespace, pod, label string) *corev1.Pod {
		p := framework.LabeledPod(namespace, pod, label, framework.Container("main", framework.AppImageV1))
		p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
		return p
	}
	// injected checks an answer of the subresource: the Pod as given, with the sidecar.
	injected := func(set *v1alpha1.SidecarSet, body *corev1.Pod, resp framework.RawResponse, want []string) {
		t.Helper()
		path := pathOf(set.Name)
		if resp.Code != 200 && resp.Code != 201 {
			t.Errorf("POST %s for Pod %s/%s: HTTP %d %s, want the injected Pod", path, body.Namespace, body.Name, resp.Code, strings.TrimSpace(resp.ErrMsg))
			return
		}
		got := &corev1.Pod{}
		if err := json.Unmarshal([]byte(resp.Body), got); err != nil {
			t.Errorf("POST %s: the answer does not decode as a Pod: %v: %q", path, err, resp.Body)
			return
		}
		if got.Kind != "Pod" || got.APIVersion != "v1" || got.Name != body.Name || got.Namespace != body.Namespace {
			t.Errorf("POST %s: answer %s %s %q/%q, want v1 Pod %s/%s (the namespace of the Pod sent)",
				path, got.APIVersion, got.Kind, got.Namespace, got.Name, body.Namespace, body.Name)
		}
		if names := framework.ContainerNames(got.Spec.Containers); !slices.Equal(names, want) {
			t.Errorf("POST %s: answered containers %v, want %v", path, names, want)
		}
		if sidecar := framework.FindContainer(got.Spec.Containers, set.Spec.Containers[0].Name); sidecar != nil {
			if v, ok := framework.EnvValue(sidecar, "IS_INJECTED"); !ok || v != "true" || sidecar.Image != framework.AppImageV1 {
				t.Errorf("POST %s: answered sidecar %+v, want the SidecarSet's with IS_INJECTED=true", path, sidecar)
			}
		}
		if l := got.Annotations[v1alpha1.SidecarSetListAnnotation]; l != set.Name {
			t.Errorf("POST %s: answered annotation %s=%q, want %q", path, v1alpha1.SidecarSetListAnnotation, l, set.Name)
		}
		if raw := got.Annotations[v1alpha1.SidecarSetHashAnnotation]; raw != "" {
			if h := framework.SidecarHashes(t, got, v1alpha1.SidecarSetHashAnnotation)[set.Name]; h.Hash == "" || h.Hash != set.Annotations[v1alpha1.SidecarSetHashAnnotation] {
				t.Errorf("POST %s: answered hash entry %+v, want %q", path, h, set.Annotations[v1alpha1.SidecarSetHashAnnotation])
			}
		} else {
			t.Errorf("POST %s: answered annotations %v, want %s", path, got.Annotations, v1alpha1.SidecarSetHashAnnotation)
		}
	}

	// A Pod of the namespace the namespaceSelector selects.
	body := podBody(ns, "preview", name)
	injected(scoped, body, ssPostRaw(t, ctx, pathOf(name), body), []string{"agent", "main"})
	// A SidecarSet without namespace restriction.
	anyBody := podBody(ns, "preview-any", anyName)
	injected(anywhere, anyBody, ssPostRaw(t, ctx, pathOf(anyName), anyBody), []string{"main", "agent-any"})

	// Nothing was created.
	for _, pod := range []string{"preview", "preview-any"} {
		if p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("after the inject subresource: Pod %s/%s %v (%v), want NotFound", ns, pod, p, err)
		}
	}

	// Refusals: 422 with the reason, and nothing on stdout.
	refused := func(set string, body *corev1.Pod, why string) {
		t.Helper()
		resp := ssPostRaw(t, ctx, pathOf(set), body)
		if resp.Code != 422 || resp.Err == nil || !strings.Contains(resp.ErrMsg, why) || resp.Body != "" {
			t.Errorf("POST %s for Pod %s/%s (labels %v): HTTP %d, stdout %q, error %q (kubectl failed: %v); want 422 saying %q",
				pathOf(set), body.Namespace, body.Name, body.Labels, resp.Code, resp.Body, strings.TrimSpace(resp.ErrMsg), resp.Err != nil, why)
		}
	}
	refused(anyName, podBody(ns, "other", anyName+"-not"),
		"not injected: pod labels do not match spec.selector app="+anyName+" of sidecarset "+anyName)
	refused(name, podBody(ns2, "away", name),
		"not injected: namespace "+ns2+" does not match spec.namespaceSelector "+corev1.LabelMetadataName+"="+ns+" of sidecarset "+name)

	for _, n := range []string{ns, ns2} {
		if pods, err := framework.Kube.CoreV1().Pods(n).List(ctx, metav1.ListOptions{}); err != nil || len(pods.Items) != 0 {
			t.Errorf("Pods in %s after the inject subresource: %v (%v), want none", n, pods, err)
		}
	}
}
