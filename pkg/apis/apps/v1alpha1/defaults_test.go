package v1alpha1_test

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// applyDefaults defaults obj through a scheme built from v1alpha1.AddToScheme, the way the API
// server does on decode, so the tests also prove that the generated defaulters are registered.
func applyDefaults(t *testing.T, obj runtime.Object) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatalf("AddToScheme: %v", err)
	}
	scheme.Default(obj)
}

func check[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func checkIntOrString(t *testing.T, what string, got *intstr.IntOrString, want intstr.IntOrString) {
	t.Helper()
	if got == nil {
		t.Errorf("%s = nil, want %s", what, want.String())
		return
	}
	check(t, what, *got, want)
}

func minimalCloneSet() *v1alpha1.CloneSet {
	return &v1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: v1alpha1.CloneSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{
					InitContainers: []corev1.Container{
						{Name: "tagged", Image: "busybox:1.36"},
						{Name: "untagged", Image: "busybox"},
					},
					Containers: []corev1.Container{{
						Name:  "app",
						Image: "nginx:1.27",
						Ports: []corev1.ContainerPort{{ContainerPort: 80}},
					}},
				},
			},
		},
	}
}

func TestCloneSetDefaults(t *testing.T) {
	cs := minimalCloneSet()
	applyDefaults(t, cs)

	spec := &cs.Spec
	check(t, "replicas", ptr.Deref(spec.Replicas, -1), 1)
	check(t, "revisionHistoryLimit", ptr.Deref(spec.RevisionHistoryLimit, -1), 10)
	us := &spec.UpdateStrategy
	check(t, "updateStrategy.type", us.Type, v1alpha1.RecreateCloneSetUpdateStrategyType)
	checkIntOrString(t, "updateStrategy.partition", us.Partition, intstr.FromInt32(0))
	checkIntOrString(t, "updateStrategy.maxUnavailable", us.MaxUnavailable, intstr.FromString("20%"))
	checkIntOrString(t, "updateStrategy.maxSurge", us.MaxSurge, intstr.FromInt32(0))
	if us.InPlaceUpdateStrategy != nil {
		t.Errorf("ReCreate got inPlaceUpdateStrategy %+v, want none", us.InPlaceUpdateStrategy)
	}

	pod := &spec.Template.Spec
	check(t, "restartPolicy", pod.RestartPolicy, corev1.RestartPolicyAlways)
	check(t, "dnsPolicy", pod.DNSPolicy, corev1.DNSClusterFirst)
	check(t, "schedulerName", pod.SchedulerName, corev1.DefaultSchedulerName)
	check(t, "terminationGracePeriodSeconds", ptr.Deref(pod.TerminationGracePeriodSeconds, -1), 30)
	if pod.SecurityContext == nil {
		t.Error("securityContext not defaulted")
	}

	app := &pod.Containers[0]
	check(t, "terminationMessagePath", app.TerminationMessagePath, "/dev/termination-log")
	check(t, "terminationMessagePolicy", app.TerminationMessagePolicy, corev1.TerminationMessageReadFile)
	check(t, "ports[0].protocol", app.Ports[0].Protocol, corev1.ProtocolTCP)
	// OpenKruise (apis/apps/defaults/pod.go) pulls CloneSet containers Always, whatever the tag,
	// so that in-place updates to a re-pushed tag take effect; init containers keep kube's rule.
	check(t, "containers[app].imagePullPolicy", app.ImagePullPolicy, corev1.PullAlways)
	check(t, "initContainers[tagged].imagePullPolicy", pod.InitContainers[0].ImagePullPolicy, corev1.PullIfNotPresent)
	check(t, "initContainers[untagged].imagePullPolicy", pod.InitContainers[1].ImagePullPolicy, corev1.PullAlways)
	check(t, "initContainers[tagged].terminationMessagePath", pod.InitContainers[0].TerminationMessagePath, "/dev/termination-log")
}

func TestCloneSetDefaultsInPlaceStrategies(t *testing.T) {
	for _, typ := range []v1alpha1.CloneSetUpdateStrategyType{
		v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, v1alpha1.InPlaceOnlyCloneSetUpdateStrategyType,
	} {
		cs := minimalCloneSet()
		cs.Spec.UpdateStrategy.Type = typ
		applyDefaults(t, cs)
		got := cs.Spec.UpdateStrategy.InPlaceUpdateStrategy
		if got == nil || *got != (pub.InPlaceUpdateStrategy{}) {
			t.Errorf("%s: inPlaceUpdateStrategy = %+v, want {}", typ, got)
		}
	}

	cs := minimalCloneSet()
	cs.Spec.UpdateStrategy.Type = v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cs.Spec.UpdateStrategy.InPlaceUpdateStrategy = &pub.InPlaceUpdateStrategy{GracePeriodSeconds: 15}
	applyDefaults(t, cs)
	check(t, "kept gracePeriodSeconds", cs.Spec.UpdateStrategy.InPlaceUpdateStrategy.GracePeriodSeconds, 15)
}

func TestCloneSetDefaultsKeepExplicitValues(t *testing.T) {
	cs := minimalCloneSet()
	cs.Spec.Replicas = ptr.To[int32](0)
	cs.Spec.RevisionHistoryLimit = ptr.To[int32](0)
	cs.Spec.UpdateStrategy = v1alpha1.CloneSetUpdateStrategy{
		Type:           v1alpha1.InPlaceOnlyCloneSetUpdateStrategyType,
		Partition:      ptr.To(intstr.FromString("50%")),
		MaxUnavailable: ptr.To(intstr.FromInt32(2)),
		MaxSurge:       ptr.To(intstr.FromString("10%")),
	}
	cs.Spec.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	applyDefaults(t, cs)

	check(t, "replicas", *cs.Spec.Replicas, 0)
	check(t, "revisionHistoryLimit", *cs.Spec.RevisionHistoryLimit, 0)
	check(t, "type", cs.Spec.UpdateStrategy.Type, v1alpha1.InPlaceOnlyCloneSetUpdateStrategyType)
	checkIntOrString(t, "partition", cs.Spec.UpdateStrategy.Partition, intstr.FromString("50%"))
	checkIntOrString(t, "maxUnavailable", cs.Spec.UpdateStrategy.MaxUnavailable, intstr.FromInt32(2))
	checkIntOrString(t, "maxSurge", cs.Spec.UpdateStrategy.MaxSurge, intstr.FromString("10%"))
	check(t, "imagePullPolicy", cs.Spec.Template.Spec.Containers[0].ImagePullPolicy, corev1.PullNever)
}

func TestCloneSetDefaultsVolumes(t *testing.T) {
	cs := minimalCloneSet()
	cs.Spec.Template.Spec.Volumes = []corev1.Volume{
		{Name: "scratch"},
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
		{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}},
		}}},
	}
	cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	applyDefaults(t, cs)

	vols := cs.Spec.Template.Spec.Volumes
	if vols[0].EmptyDir == nil {
		t.Error("a volume without source did not become an emptyDir")
	}
	check(t, "configMap.defaultMode", ptr.Deref(vols[1].ConfigMap.DefaultMode, -1), corev1.ConfigMapVolumeSourceDefaultMode)
	check(t, "downwardAPI.defaultMode", ptr.Deref(vols[2].DownwardAPI.DefaultMode, -1), corev1.DownwardAPIVolumeSourceDefaultMode)
	check(t, "downwardAPI fieldRef apiVersion", vols[2].DownwardAPI.Items[0].FieldRef.APIVersion, "v1")
	pvc := &cs.Spec.VolumeClaimTemplates[0]
	check(t, "volumeClaimTemplates volumeMode", ptr.Deref(pvc.Spec.VolumeMode, ""), corev1.PersistentVolumeFilesystem)
}

func TestCloneSetListDefaults(t *testing.T) {
	list := &v1alpha1.CloneSetList{Items: []v1alpha1.CloneSet{*minimalCloneSet()}}
	applyDefaults(t, list)
	check(t, "items[0].replicas", ptr.Deref(list.Items[0].Spec.Replicas, -1), 1)
}

func TestDefaultsAreIdempotent(t *testing.T) {
	cs := minimalCloneSet()
	applyDefaults(t, cs)
	again := cs.DeepCopy()
	applyDefaults(t, again)
	if !equality.Semantic.DeepEqual(cs, again) {
		t.Errorf("defaulting twice changed the object:\n%+v\n%+v", cs, again)
	}
}

func TestImagePullPolicyDefault(t *testing.T) {
	cases := []struct {
		image string
		want  corev1.PullPolicy
	}{
		{"nginx:1.27", corev1.PullIfNotPresent},
		{"nginx", corev1.PullAlways},
		{"nginx:latest", corev1.PullAlways},
		{"registry.local:5000/team/app", corev1.PullAlways},
		{"registry.local:5000/team/app:v2", corev1.PullIfNotPresent},
		{"app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", corev1.PullIfNotPresent},
		{"app:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", corev1.PullAlways},
	}
	for _, tc := range cases {
		// SidecarSet containers get kube-apiserver's rule unchanged.
		s := &v1alpha1.SidecarSet{Spec: v1alpha1.SidecarSetSpec{
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "c", Image: tc.image}}},
		}}
		applyDefaults(t, s)
		check(t, tc.image, s.Spec.Containers[0].ImagePullPolicy, tc.want)
	}
}

func TestSidecarSetDefaults(t *testing.T) {
	s := &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "log-agent"},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			InitContainers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "init", Image: "busybox:1.36"}}},
			Containers: []v1alpha1.SidecarContainer{{
				Container: corev1.Container{Name: "agent", Image: "agent:v1"},
				TransferEnv: []v1alpha1.TransferEnvVar{{
					SourceContainerNameFrom: &v1alpha1.SourceContainerNameSource{
						FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['main']"},
					},
					EnvName: "TZ",
				}},
			}},
			Volumes:           []corev1.Volume{{Name: "logs"}},
			PatchPodMetadata:  []v1alpha1.SidecarSetPatchPodMetadata{{Annotations: map[string]string{"example.com/a": "b"}}},
			InjectionStrategy: v1alpha1.SidecarSetInjectionStrategy{Revision: &v1alpha1.SidecarSetInjectRevision{RevisionName: ptr.To("log-agent-1")}},
		},
	}
	applyDefaults(t, s)

	us := &s.Spec.UpdateStrategy
	check(t, "updateStrategy.type", us.Type, v1alpha1.RollingUpdateSidecarSetStrategyType)
	checkIntOrString(t, "updateStrategy.maxUnavailable", us.MaxUnavailable, intstr.FromInt32(1))
	checkIntOrString(t, "updateStrategy.partition", us.Partition, intstr.FromInt32(0))
	check(t, "revisionHistoryLimit", ptr.Deref(s.Spec.RevisionHistoryLimit, -1), 10)

	agent, init := &s.Spec.Containers[0], &s.Spec.InitContainers[0]
	check(t, "containers podInjectPolicy", agent.PodInjectPolicy, v1alpha1.BeforeAppContainerType)
	check(t, "initContainers podInjectPolicy", init.PodInjectPolicy, v1alpha1.AfterAppContainerType)
	for name, c := range map[string]*v1alpha1.SidecarContainer{"agent": agent, "init": init} {
		check(t, name+" upgradeType", c.UpgradeStrategy.UpgradeType, v1alpha1.SidecarContainerColdUpgrade)
		check(t, name+" shareVolumePolicy", c.ShareVolumePolicy.Type, v1alpha1.ShareVolumePolicyDisabled)
		check(t, name+" terminationMessagePath", c.TerminationMessagePath, "/dev/termination-log")
		check(t, name+" imagePullPolicy", c.ImagePullPolicy, corev1.PullIfNotPresent)
	}
	check(t, "transferEnv fieldRef apiVersion", agent.TransferEnv[0].SourceContainerNameFrom.FieldRef.APIVersion, "v1")
	if s.Spec.Volumes[0].EmptyDir == nil {
		t.Error("a volume without source did not become an emptyDir")
	}
	check(t, "patchPodMetadata patchPolicy", s.Spec.PatchPodMetadata[0].PatchPolicy, v1alpha1.SidecarSetRetainPatchPolicy)
	check(t, "injection revision policy", s.Spec.InjectionStrategy.Revision.Policy, v1alpha1.AlwaysSidecarSetInjectRevisionPolicy)
}

// A SidecarSet's containers get their liveness and readiness probes defaulted and not their
// startup probe, as in OpenKruise, so that kruise.io/sidecarset-hash is the same there and here.
func TestSidecarSetProbeDefaults(t *testing.T) {
	probe := func() *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	}
	s := &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: v1alpha1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "agent", Image: "agent:v1",
				LivenessProbe: probe(), ReadinessProbe: probe(), StartupProbe: probe()}}},
		},
	}
	applyDefaults(t, s)
	c := s.Spec.Containers[0]
	check(t, "livenessProbe periodSeconds", c.LivenessProbe.PeriodSeconds, 10)
	check(t, "readinessProbe failureThreshold", c.ReadinessProbe.FailureThreshold, 3)
	if !reflect.DeepEqual(c.StartupProbe, probe()) {
		t.Errorf("startupProbe defaulted to %+v, want it as written", c.StartupProbe)
	}
}

func TestSidecarSetDefaultsKeepExplicitValues(t *testing.T) {
	s := &v1alpha1.SidecarSet{Spec: v1alpha1.SidecarSetSpec{
		Containers: []v1alpha1.SidecarContainer{{
			Container:         corev1.Container{Name: "agent", Image: "agent:v1"},
			PodInjectPolicy:   v1alpha1.AfterAppContainerType,
			UpgradeStrategy:   v1alpha1.SidecarContainerUpgradeStrategy{UpgradeType: v1alpha1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "agent:empty"},
			ShareVolumePolicy: v1alpha1.ShareVolumePolicy{Type: v1alpha1.ShareVolumePolicyEnabled},
		}},
		UpdateStrategy: v1alpha1.SidecarSetUpdateStrategy{Type: v1alpha1.NotUpdateSidecarSetStrategyType, MaxUnavailable: ptr.To(intstr.FromString("10%"))},
	}}
	applyDefaults(t, s)
	c := &s.Spec.Containers[0]
	check(t, "podInjectPolicy", c.PodInjectPolicy, v1alpha1.AfterAppContainerType)
	check(t, "upgradeType", c.UpgradeStrategy.UpgradeType, v1alpha1.SidecarContainerHotUpgrade)
	check(t, "shareVolumePolicy", c.ShareVolumePolicy.Type, v1alpha1.ShareVolumePolicyEnabled)
	check(t, "updateStrategy.type", s.Spec.UpdateStrategy.Type, v1alpha1.NotUpdateSidecarSetStrategyType)
	checkIntOrString(t, "maxUnavailable", s.Spec.UpdateStrategy.MaxUnavailable, intstr.FromString("10%"))
	if s.Spec.InjectionStrategy.Revision != nil {
		t.Errorf("injectionStrategy.revision = %+v, want none", s.Spec.InjectionStrategy.Revision)
	}
}

// OpenKruise's CRD defaults resourcesPolicy.targetContainersNameRegex to ".*"; shareVolumeDevicePolicy
// stays unset (a pointer, so that the hash of existing SidecarSets does not change).
func TestSidecarSetResourcesPolicyDefaults(t *testing.T) {
	policy := func(regex string) *v1alpha1.ResourcesPolicy {
		return &v1alpha1.ResourcesPolicy{TargetContainersMode: v1alpha1.TargetContainersModeSum, TargetContainersNameRegex: regex,
			ResourcesExpr: v1alpha1.ResourcesExpr{Requests: &v1alpha1.ResourceExprRequests{CPU: "cpu*0.1"}}}
	}
	s := &v1alpha1.SidecarSet{Spec: v1alpha1.SidecarSetSpec{
		Containers: []v1alpha1.SidecarContainer{
			{Container: corev1.Container{Name: "none", Image: "agent:v1"}},
			{Container: corev1.Container{Name: "empty", Image: "agent:v1"}, ResourcesPolicy: policy("")},
			{Container: corev1.Container{Name: "set", Image: "agent:v1"}, ResourcesPolicy: policy("^app$")},
		},
	}}
	applyDefaults(t, s)
	c := s.Spec.Containers
	if c[0].ResourcesPolicy != nil || c[0].ShareVolumeDevicePolicy != nil {
		t.Errorf("container without policies got resourcesPolicy %+v, shareVolumeDevicePolicy %+v", c[0].ResourcesPolicy, c[0].ShareVolumeDevicePolicy)
	}
	check(t, "empty targetContainersNameRegex", c[1].ResourcesPolicy.TargetContainersNameRegex, ".*")
	check(t, "explicit targetContainersNameRegex", c[2].ResourcesPolicy.TargetContainersNameRegex, "^app$")
}

// progressDeadlineSeconds has no default in OpenKruise: unset means no deadline.
func TestCloneSetProgressDeadlineNotDefaulted(t *testing.T) {
	cs := minimalCloneSet()
	applyDefaults(t, cs)
	if cs.Spec.ProgressDeadlineSeconds != nil {
		t.Errorf("progressDeadlineSeconds = %d, want unset", *cs.Spec.ProgressDeadlineSeconds)
	}
}

func TestContainerRecreateRequestDefaults(t *testing.T) {
	crr := &v1alpha1.ContainerRecreateRequest{Spec: v1alpha1.ContainerRecreateRequestSpec{
		PodName:    "web-1",
		Containers: []v1alpha1.ContainerRecreateRequestContainer{{Name: "app", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}},
	}}
	applyDefaults(t, crr)
	if crr.Spec.Strategy == nil {
		t.Fatal("strategy not defaulted")
	}
	check(t, "strategy.failurePolicy", crr.Spec.Strategy.FailurePolicy, v1alpha1.ContainerRecreateRequestFailurePolicyFail)
	check(t, "containers[0].ports[0].protocol", crr.Spec.Containers[0].Ports[0].Protocol, corev1.ProtocolTCP)

	crr = &v1alpha1.ContainerRecreateRequest{Spec: v1alpha1.ContainerRecreateRequestSpec{
		Strategy: &v1alpha1.ContainerRecreateRequestStrategy{FailurePolicy: v1alpha1.ContainerRecreateRequestFailurePolicyIgnore},
	}}
	applyDefaults(t, crr)
	check(t, "kept failurePolicy", crr.Spec.Strategy.FailurePolicy, v1alpha1.ContainerRecreateRequestFailurePolicyIgnore)
}
