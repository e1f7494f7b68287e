package validation

import (
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// want is one expected error: its type and the path of the field at fault.
type want struct {
	typ  field.ErrorType
	path string
}

func required(p string) want     { return want{field.ErrorTypeRequired, p} }
func invalid(p string) want      { return want{field.ErrorTypeInvalid, p} }
func notSupported(p string) want { return want{field.ErrorTypeNotSupported, p} }
func duplicate(p string) want    { return want{field.ErrorTypeDuplicate, p} }
func forbidden(p string) want    { return want{field.ErrorTypeForbidden, p} }

// expectErrors asserts errs are exactly wants, in order, and that errors a user must act on say why.
func expectErrors(t *testing.T, errs field.ErrorList, wants ...want) {
	t.Helper()
	if len(errs) != len(wants) {
		t.Fatalf("got %d errors, want %d %v:\n%v", len(errs), len(wants), wants, errs)
	}
	for i, w := range wants {
		e := errs[i]
		if e.Type != w.typ || e.Field != w.path {
			t.Errorf("error %d: got %s at %q, want %s at %q (%v)", i, e.Type, e.Field, w.typ, w.path, e)
		}
		// Object metadata is checked by apimachinery, whose messages are its own.
		ours := !strings.HasPrefix(e.Field, "metadata.")
		if ours && (e.Type == field.ErrorTypeRequired || e.Type == field.ErrorTypeForbidden || e.Type == field.ErrorTypeInvalid) && e.Detail == "" {
			t.Errorf("error %d at %q has no message", i, e.Field)
		}
	}
}

func quantities(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func intOrStr(v intstr.IntOrString) *intstr.IntOrString { return &v }

// ---------------------------------------------------------------------------------------------
// CloneSet
// ---------------------------------------------------------------------------------------------

func validCloneSet() *apps.CloneSet {
	return &apps.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Spec: apps.CloneSetSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}},
				Spec: corev1.PodSpec{
					RestartPolicy:  corev1.RestartPolicyAlways,
					Volumes:        []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
					InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1.36"}},
					Containers: []corev1.Container{{
						Name:            "app",
						Image:           "nginx:1.27",
						ImagePullPolicy: corev1.PullIfNotPresent,
						Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
						Env: []corev1.EnvVar{
							{Name: "MODE", Value: "prod"},
							{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
						},
						Resources: corev1.ResourceRequirements{
							Requests: quantities("cpu", "100m", "memory", "64Mi"),
							Limits:   quantities("cpu", "200m", "memory", "128Mi"),
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}, {Name: "data", MountPath: "/data"}},
					}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: quantities("storage", "1Gi")},
				},
			}},
			ScaleStrategy: apps.CloneSetScaleStrategy{PodsToDelete: []string{"web-abcde"}, MaxUnavailable: intOrStr(intstr.FromInt32(1))},
			UpdateStrategy: apps.CloneSetUpdateStrategy{
				Type:           apps.InPlaceIfPossibleCloneSetUpdateStrategyType,
				Partition:      intOrStr(intstr.FromString("50%")),
				MaxUnavailable: intOrStr(intstr.FromString("20%")),
				MaxSurge:       intOrStr(intstr.FromInt32(0)),
				PriorityStrategy: &pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{
					{Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}},
				}},
				ScatterStrategy:       pub.UpdateScatterStrategy{{Key: "zone", Value: "a"}, {Key: "zone", Value: "b"}},
				InPlaceUpdateStrategy: &pub.InPlaceUpdateStrategy{GracePeriodSeconds: 10},
			},
			RevisionHistoryLimit: ptr.To[int32](10),
			MinReadySeconds:      5,
			Lifecycle: &pub.Lifecycle{PreDelete: &pub.LifecycleHook{
				LabelsHandler:     map[string]string{"example.com/hold": "true"},
				FinalizersHandler: []string{"example.com/hold"},
			}},
		},
	}
}

func TestValidateCloneSet(t *testing.T) {
	expectErrors(t, ValidateCloneSet(validCloneSet()))

	app := "spec.template.spec.containers[0]"
	us := "spec.updateStrategy"
	cases := []struct {
		name   string
		mutate func(cs *apps.CloneSet)
		want   want
	}{
		{"name not a DNS subdomain", func(cs *apps.CloneSet) { cs.Name = "Web_1" }, invalid("metadata.name")},
		{"no namespace", func(cs *apps.CloneSet) { cs.Namespace = "" }, required("metadata.namespace")},
		{"negative replicas", func(cs *apps.CloneSet) { cs.Spec.Replicas = ptr.To[int32](-1) }, invalid("spec.replicas")},
		{"no selector", func(cs *apps.CloneSet) { cs.Spec.Selector = nil }, required("spec.selector")},
		{"empty selector", func(cs *apps.CloneSet) { cs.Spec.Selector = &metav1.LabelSelector{} }, invalid("spec.selector")},
		{"bad selector operator", func(cs *apps.CloneSet) {
			cs.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Like"}}
		}, invalid("spec.selector.matchExpressions[0].operator")},
		{"selector does not match template", func(cs *apps.CloneSet) { cs.Spec.Selector.MatchLabels["app"] = "api" }, invalid("spec.template.metadata.labels")},
		{"no containers", func(cs *apps.CloneSet) { cs.Spec.Template.Spec.Containers = nil }, required("spec.template.spec.containers")},
		{"container name not a DNS label", func(cs *apps.CloneSet) { cs.Spec.Template.Spec.Containers[0].Name = "App" }, invalid(app + ".name")},
		{"container name used by an init container", func(cs *apps.CloneSet) { cs.Spec.Template.Spec.InitContainers[0].Name = "app" }, duplicate(app + ".name")},
		{"no image", func(cs *apps.CloneSet) { cs.Spec.Template.Spec.Containers[0].Image = "" }, required(app + ".image")},
		{"init container without image", func(cs *apps.CloneSet) { cs.Spec.Template.Spec.InitContainers[0].Image = "" }, required("spec.template.spec.initContainers[0].image")},
		{"bad pull policy", func(cs *apps.CloneSet) { cs.Spec.Template.Spec.Containers[0].ImagePullPolicy = "Sometimes" }, notSupported(app + ".imagePullPolicy")},
		{"port out of range", func(cs *apps.CloneSet) { cs.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort = 70000 }, invalid(app + ".ports[0].containerPort")},
		{"port protocol", func(cs *apps.CloneSet) { cs.Spec.Template.Spec.Containers[0].Ports[0].Protocol = "HTTP" }, notSupported(app + ".ports[0].protocol")},
		{"env name with '='", func(cs *apps.CloneSet) { cs.Spec.Template.Spec.Containers[0].Env[0].Name = "A=B" }, invalid(app + ".env[0].name")},
		{"env value and valueFrom", func(cs *apps.CloneSet) { cs.Spec.Template.Spec.Containers[0].Env[1].Value = "x" }, invalid(app + ".env[1].valueFrom")},
		{"request above limit", func(cs *apps.CloneSet) {
			cs.Spec.Template.Spec.Containers[0].Resources.Requests["cpu"] = resource.MustParse("300m")
		}, invalid(app + ".resources.requests[cpu]")},
		{"negative quantity", func(cs *apps.CloneSet) {
			cs.Spec.Template.Spec.Containers[0].Resources.Requests["ephemeral-storage"] = resource.MustParse("-1Gi")
		}, invalid(app + ".resources.requests[ephemeral-storage]")},
		{"restartPolicy OnFailure", func(cs *apps.CloneSet) { cs.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure }, notSupported("spec.template.spec.restartPolicy")},
		{"activeDeadlineSeconds", func(cs *apps.CloneSet) { cs.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) }, forbidden("spec.template.spec.activeDeadlineSeconds")},
		{"duplicate volume", func(cs *apps.CloneSet) {
			v := cs.Spec.Template.Spec.Volumes
			cs.Spec.Template.Spec.Volumes = append(v, v[0])
		}, duplicate("spec.template.spec.volumes[1].name")},
		{"volume with two sources", func(cs *apps.CloneSet) {
			cs.Spec.Template.Spec.Volumes[0].HostPath = &corev1.HostPathVolumeSource{Path: "/tmp"}
		}, forbidden("spec.template.spec.volumes[0]")},
		{"mount of an unknown volume", func(cs *apps.CloneSet) { cs.Spec.Template.Spec.Containers[0].VolumeMounts[0].Name = "nope" }, invalid(app + ".volumeMounts[0].name")},
		{"same mount path twice", func(cs *apps.CloneSet) { cs.Spec.Template.Spec.Containers[0].VolumeMounts[1].MountPath = "/cache" }, duplicate(app + ".volumeMounts[1].mountPath")},
		{"duplicate volume claim template", func(cs *apps.CloneSet) {
			v := cs.Spec.VolumeClaimTemplates
			cs.Spec.VolumeClaimTemplates = append(v, v[0])
		}, duplicate("spec.volumeClaimTemplates[1].metadata.name")},
		{"volume claim template named like a volume", func(cs *apps.CloneSet) {
			pvc := cs.Spec.VolumeClaimTemplates[0].DeepCopy()
			pvc.Name = "cache"
			cs.Spec.VolumeClaimTemplates = append(cs.Spec.VolumeClaimTemplates, *pvc)
		}, invalid("spec.volumeClaimTemplates[1].metadata.name")},
		{"volume claim template without size", func(cs *apps.CloneSet) {
			cs.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests = nil
		}, required("spec.volumeClaimTemplates[0].spec.resources.requests[storage]")},
		{"duplicate podsToDelete", func(cs *apps.CloneSet) {
			cs.Spec.ScaleStrategy.PodsToDelete = []string{"web-a", "web-a"}
		}, duplicate("spec.scaleStrategy.podsToDelete[1]")},
		{"scale maxUnavailable above 100%", func(cs *apps.CloneSet) {
			cs.Spec.ScaleStrategy.MaxUnavailable = intOrStr(intstr.FromString("150%"))
		}, invalid("spec.scaleStrategy.maxUnavailable")},
		{"unknown update type", func(cs *apps.CloneSet) { cs.Spec.UpdateStrategy.Type = "Rolling" }, notSupported(us + ".type")},
		{"negative partition", func(cs *apps.CloneSet) { cs.Spec.UpdateStrategy.Partition = intOrStr(intstr.FromInt32(-1)) }, invalid(us + ".partition")},
		{"maxUnavailable not a number", func(cs *apps.CloneSet) {
			cs.Spec.UpdateStrategy.MaxUnavailable = intOrStr(intstr.FromString("abc"))
		}, invalid(us + ".maxUnavailable")},
		{"maxUnavailable and maxSurge both 0", func(cs *apps.CloneSet) {
			cs.Spec.UpdateStrategy.MaxUnavailable = intOrStr(intstr.FromString("0%"))
		}, invalid(us + ".maxUnavailable")},
		{"maxSurge with InPlaceOnly", func(cs *apps.CloneSet) {
			cs.Spec.UpdateStrategy.Type = apps.InPlaceOnlyCloneSetUpdateStrategyType
			cs.Spec.UpdateStrategy.MaxSurge = intOrStr(intstr.FromInt32(1))
		}, forbidden(us + ".maxSurge")},
		{"weight and order priority", func(cs *apps.CloneSet) {
			cs.Spec.UpdateStrategy.PriorityStrategy.OrderPriority = []pub.UpdatePriorityOrderTerm{{OrderedKey: "rank"}}
		}, forbidden(us + ".priorityStrategy")},
		{"weight above 100", func(cs *apps.CloneSet) { cs.Spec.UpdateStrategy.PriorityStrategy.WeightPriority[0].Weight = 101 }, invalid(us + ".priorityStrategy.weightPriority[0].weight")},
		{"weight with empty selector", func(cs *apps.CloneSet) {
			cs.Spec.UpdateStrategy.PriorityStrategy.WeightPriority[0].MatchSelector = metav1.LabelSelector{}
		}, invalid(us + ".priorityStrategy.weightPriority[0].matchSelector")},
		{"empty orderedKey", func(cs *apps.CloneSet) {
			cs.Spec.UpdateStrategy.PriorityStrategy = &pub.UpdatePriorityStrategy{OrderPriority: []pub.UpdatePriorityOrderTerm{{}}}
		}, required(us + ".priorityStrategy.orderPriority[0].orderedKey")},
		{"scatter term without key", func(cs *apps.CloneSet) { cs.Spec.UpdateStrategy.ScatterStrategy[0].Key = "" }, required(us + ".scatterStrategy[0].key")},
		{"duplicate scatter term", func(cs *apps.CloneSet) { cs.Spec.UpdateStrategy.ScatterStrategy[1].Value = "a" }, duplicate(us + ".scatterStrategy[1]")},
		{"negative in-place grace period", func(cs *apps.CloneSet) {
			cs.Spec.UpdateStrategy.InPlaceUpdateStrategy.GracePeriodSeconds = -1
		}, invalid(us + ".inPlaceUpdateStrategy.gracePeriodSeconds")},
		{"negative revisionHistoryLimit", func(cs *apps.CloneSet) { cs.Spec.RevisionHistoryLimit = ptr.To[int32](-1) }, invalid("spec.revisionHistoryLimit")},
		{"negative minReadySeconds", func(cs *apps.CloneSet) { cs.Spec.MinReadySeconds = -1 }, invalid("spec.minReadySeconds")},
		{"bad lifecycle label key", func(cs *apps.CloneSet) {
			cs.Spec.Lifecycle.PreDelete.LabelsHandler = map[string]string{"bad key": "true"}
		}, invalid("spec.lifecycle.preDelete.labelsHandler")},
		{"bad lifecycle finalizer", func(cs *apps.CloneSet) {
			cs.Spec.Lifecycle.InPlaceUpdate = &pub.LifecycleHook{FinalizersHandler: []string{"bad finalizer!"}}
		}, invalid("spec.lifecycle.inPlaceUpdate.finalizersHandler[0]")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := validCloneSet()
			tc.mutate(cs)
			expectErrors(t, ValidateCloneSet(cs), tc.want)
		})
	}
}

// TestValidateCloneSetOnDelete: OnDelete is valid with or without the rolling update's
// parameters (v1beta1 defaults none), and a v1beta1 type or podUpdatePolicy carried in
// inplace.dev/v1beta1-fields is validated at the v1beta1 field it came from.
func TestValidateCloneSetOnDelete(t *testing.T) {
	onDelete := func(carried string) *apps.CloneSet {
		cs := validCloneSet()
		cs.Spec.UpdateStrategy = apps.CloneSetUpdateStrategy{Type: apps.OnDeleteCloneSetUpdateStrategyType}
		if carried != "" {
			cs.Annotations = map[string]string{"inplace.dev/v1beta1-fields": carried}
		}
		return cs
	}
	expectErrors(t, ValidateCloneSet(onDelete("")))
	expectErrors(t, ValidateCloneSet(onDelete(`{"type":"OnDelete","podUpdatePolicy":"InPlaceIfPossible"}`)))
	expectErrors(t, ValidateCloneSetUpdate(onDelete(""), validCloneSet()))
	expectErrors(t, ValidateCloneSet(onDelete(`{"type":"Sometimes"}`)), notSupported("spec.updateStrategy.type"))
	expectErrors(t, ValidateCloneSet(onDelete(`{"type":"OnDelete","podUpdatePolicy":"Never"}`)),
		notSupported("spec.updateStrategy.rollingUpdate.podUpdatePolicy"))
	expectErrors(t, ValidateCloneSet(onDelete(`not json`)), invalid("metadata.annotations[inplace.dev/v1beta1-fields]"))
}

func TestValidateCloneSetUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(cs *apps.CloneSet)
		want   []want
	}{
		{"scale and new image", func(cs *apps.CloneSet) {
			cs.Spec.Replicas = ptr.To[int32](10)
			cs.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
		}, nil},
		{"new volume claim template (allowed, as in OpenKruise)", func(cs *apps.CloneSet) {
			cs.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests = quantities("storage", "2Gi")
		}, nil},
		{"selector change", func(cs *apps.CloneSet) {
			cs.Spec.Selector.MatchLabels["tier"] = "front"
		}, []want{forbidden("spec.selector")}},
		{"invalid new spec", func(cs *apps.CloneSet) { cs.Spec.Replicas = ptr.To[int32](-2) }, []want{invalid("spec.replicas")}},
		{"name change", func(cs *apps.CloneSet) { cs.Name = "api" }, []want{invalid("metadata.name")}},
		{"no resourceVersion", func(cs *apps.CloneSet) { cs.ResourceVersion = "" }, []want{invalid("metadata.resourceVersion")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := validCloneSet()
			tc.mutate(cs)
			expectErrors(t, ValidateCloneSetUpdate(cs, validCloneSet()), tc.want...)
		})
	}
}

// progressDeadlineSeconds, as OpenKruise's webhook checks it on create and on update: optional,
// not negative, and greater than minReadySeconds unless it is math.MaxInt32 (no deadline).
func TestValidateCloneSetProgressDeadline(t *testing.T) {
	pds := "spec.progressDeadlineSeconds"
	cases := []struct {
		name            string
		deadline        *int32
		minReadySeconds int32
		want            []want
	}{
		{"unset", nil, 5, nil},
		{"greater than minReadySeconds", ptr.To[int32](6), 5, nil},
		{"equal to minReadySeconds", ptr.To[int32](5), 5, []want{invalid(pds)}},
		{"less than minReadySeconds", ptr.To[int32](1), 5, []want{invalid(pds)}},
		{"zero", ptr.To[int32](0), 0, []want{invalid(pds)}},
		{"one with minReadySeconds zero", ptr.To[int32](1), 0, nil},
		{"negative", ptr.To[int32](-1), 0, []want{invalid(pds), invalid(pds)}},
		{"MaxInt32", ptr.To[int32](math.MaxInt32), 5, nil},
		{"MaxInt32 with minReadySeconds MaxInt32", ptr.To[int32](math.MaxInt32), math.MaxInt32, nil},
		{"below MaxInt32 with minReadySeconds MaxInt32", ptr.To[int32](math.MaxInt32 - 1), math.MaxInt32, []want{invalid(pds)}},
	}
	for _, tc := range cases {
		mutate := func(cs *apps.CloneSet) {
			cs.Spec.ProgressDeadlineSeconds = tc.deadline
			cs.Spec.MinReadySeconds = tc.minReadySeconds
		}
		t.Run("create/"+tc.name, func(t *testing.T) {
			cs := validCloneSet()
			mutate(cs)
			expectErrors(t, ValidateCloneSet(cs), tc.want...)
		})
		t.Run("update/"+tc.name, func(t *testing.T) {
			cs := validCloneSet()
			mutate(cs)
			expectErrors(t, ValidateCloneSetUpdate(cs, validCloneSet()), tc.want...)
		})
	}
}

// The error says what the rule is, in OpenKruise's words.
func TestValidateCloneSetProgressDeadlineMessage(t *testing.T) {
	cs := validCloneSet()
	cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](5)
	errs := ValidateCloneSet(cs)
	if len(errs) != 1 || errs[0].Detail != "must be greater than minReadySeconds" || errs[0].BadValue != int32(5) {
		t.Errorf("got %v, want one Invalid error of value 5 saying \"must be greater than minReadySeconds\"", errs)
	}
}

func TestValidateCloneSetUpdateInPlaceOnly(t *testing.T) {
	old := validCloneSet()
	old.Spec.UpdateStrategy.Type = apps.InPlaceOnlyCloneSetUpdateStrategyType

	ok := old.DeepCopy()
	ok.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
	ok.Spec.Template.Spec.Containers[0].Resources.Limits["cpu"] = resource.MustParse("500m")
	ok.Spec.Template.Labels["version"] = "v2"
	expectErrors(t, ValidateCloneSetUpdate(ok, old))

	envChange := old.DeepCopy()
	envChange.Spec.Template.Spec.Containers[0].Env[0].Value = "debug"
	expectErrors(t, ValidateCloneSetUpdate(envChange, old), forbidden("spec.template.spec"))

	newContainer := old.DeepCopy()
	newContainer.Spec.Template.Spec.Containers = append(newContainer.Spec.Template.Spec.Containers, corev1.Container{Name: "extra", Image: "busybox"})
	expectErrors(t, ValidateCloneSetUpdate(newContainer, old), forbidden("spec.template.spec.containers"))
}

func TestValidateCloneSetStatusUpdate(t *testing.T) {
	old := validCloneSet()
	cs := old.DeepCopy()
	cs.Status = apps.CloneSetStatus{ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 2, UpdatedReplicas: 1, CollisionCount: ptr.To[int32](0)}
	expectErrors(t, ValidateCloneSetStatusUpdate(cs, old))

	cs.Status.ReadyReplicas = -1
	expectErrors(t, ValidateCloneSetStatusUpdate(cs, old), invalid("status.readyReplicas"))

	cs.Status.ReadyReplicas = 0
	cs.Status.CollisionCount = ptr.To[int32](-1)
	expectErrors(t, ValidateCloneSetStatusUpdate(cs, old), invalid("status.collisionCount"))
}

// ---------------------------------------------------------------------------------------------
// SidecarSet
// ---------------------------------------------------------------------------------------------

func validSidecarSet() *apps.SidecarSet {
	return &apps.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "log-agent", ResourceVersion: "1"},
		Spec: apps.SidecarSetSpec{
			Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
			InitContainers: []apps.SidecarContainer{{
				Container:         corev1.Container{Name: "init-config", Image: "busybox:1.36"},
				PodInjectPolicy:   apps.AfterAppContainerType,
				UpgradeStrategy:   apps.SidecarContainerUpgradeStrategy{UpgradeType: apps.SidecarContainerColdUpgrade},
				ShareVolumePolicy: apps.ShareVolumePolicy{Type: apps.ShareVolumePolicyDisabled},
			}},
			Containers: []apps.SidecarContainer{{
				Container: corev1.Container{
					Name:         "agent",
					Image:        "agent:v1",
					VolumeMounts: []corev1.VolumeMount{{Name: "logs", MountPath: "/var/log/agent"}},
				},
				PodInjectPolicy: apps.BeforeAppContainerType,
				UpgradeStrategy: apps.SidecarContainerUpgradeStrategy{
					UpgradeType:          apps.SidecarContainerHotUpgrade,
					HotUpgradeEmptyImage: "agent:empty",
				},
				ShareVolumePolicy: apps.ShareVolumePolicy{Type: apps.ShareVolumePolicyEnabled},
				TransferEnv: []apps.TransferEnvVar{
					{SourceContainerName: "app", EnvName: "TZ"},
					{
						SourceContainerNameFrom: &apps.SourceContainerNameSource{FieldRef: &corev1.ObjectFieldSelector{
							APIVersion: "v1", FieldPath: "metadata.labels['example.com/main-container']",
						}},
						EnvNames: []string{"REGION", "ZONE"},
					},
				},
			}},
			Volumes: []corev1.Volume{{Name: "logs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			UpdateStrategy: apps.SidecarSetUpdateStrategy{
				Type:            apps.RollingUpdateSidecarSetStrategyType,
				Partition:       intOrStr(intstr.FromInt32(0)),
				MaxUnavailable:  intOrStr(intstr.FromString("10%")),
				Selector:        &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}},
				ScatterStrategy: pub.UpdateScatterStrategy{{Key: "zone", Value: "a"}},
			},
			InjectionStrategy: apps.SidecarSetInjectionStrategy{Revision: &apps.SidecarSetInjectRevision{
				RevisionName: ptr.To("log-agent-5d8f9c"),
				Policy:       apps.AlwaysSidecarSetInjectRevisionPolicy,
			}},
			ImagePullSecrets:     []corev1.LocalObjectReference{{Name: "registry"}},
			RevisionHistoryLimit: ptr.To[int32](10),
			PatchPodMetadata: []apps.SidecarSetPatchPodMetadata{{
				Annotations: map[string]string{"example.com/agent-config": `{"level":"info"}`},
				PatchPolicy: apps.SidecarSetMergePatchJsonPatchPolicy,
			}},
		},
	}
}

func TestValidateSidecarSet(t *testing.T) {
	expectErrors(t, ValidateSidecarSet(validSidecarSet()))
	// A native sidecar is upgraded in place by RollingUpdate, as a container is.
	native := validSidecarSet()
	native.Spec.InitContainers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	expectErrors(t, ValidateSidecarSet(native))

	agent := "spec.containers[0]"
	te := agent + ".transferEnv"
	cases := []struct {
		name   string
		mutate func(s *apps.SidecarSet)
		want   want
	}{
		{"namespaced", func(s *apps.SidecarSet) { s.Namespace = "default" }, forbidden("metadata.namespace")},
		{"name not a DNS label", func(s *apps.SidecarSet) { s.Name = "Log_Agent" }, invalid("metadata.name")},
		{"no selector", func(s *apps.SidecarSet) { s.Spec.Selector = nil }, required("spec.selector")},
		{"empty selector", func(s *apps.SidecarSet) { s.Spec.Selector = &metav1.LabelSelector{} }, invalid("spec.selector")},
		{"namespace and namespaceSelector", func(s *apps.SidecarSet) { s.Spec.Namespace = "prod" }, forbidden("spec.namespaceSelector")},
		{"no containers", func(s *apps.SidecarSet) {
			s.Spec.Containers, s.Spec.InitContainers = nil, nil
		}, required("spec.containers")},
		{"container named like an init container", func(s *apps.SidecarSet) { s.Spec.Containers[0].Name = "init-config" }, duplicate(agent + ".name")},
		{"container without image", func(s *apps.SidecarSet) { s.Spec.InitContainers[0].Image = "" }, required("spec.initContainers[0].image")},
		{"unknown podInjectPolicy", func(s *apps.SidecarSet) { s.Spec.Containers[0].PodInjectPolicy = "Middle" }, notSupported(agent + ".podInjectPolicy")},
		{"unknown upgradeType", func(s *apps.SidecarSet) { s.Spec.Containers[0].UpgradeStrategy.UpgradeType = "Warm" }, notSupported(agent + ".upgradeStrategy.upgradeType")},
		{"hot upgrade without empty image", func(s *apps.SidecarSet) {
			s.Spec.Containers[0].UpgradeStrategy.HotUpgradeEmptyImage = ""
		}, required(agent + ".upgradeStrategy.hotUpgradeEmptyImage")},
		{"hot upgrade empty image equals image", func(s *apps.SidecarSet) {
			s.Spec.Containers[0].UpgradeStrategy.HotUpgradeEmptyImage = "agent:v1"
		}, invalid(agent + ".upgradeStrategy.hotUpgradeEmptyImage")},
		{"unknown shareVolumePolicy", func(s *apps.SidecarSet) { s.Spec.Containers[0].ShareVolumePolicy.Type = "on" }, notSupported(agent + ".shareVolumePolicy.type")},
		{"transferEnv with two sources", func(s *apps.SidecarSet) { s.Spec.Containers[0].TransferEnv[1].SourceContainerName = "app" }, forbidden(te + "[1].sourceContainerNameFrom")},
		{"transferEnv without source", func(s *apps.SidecarSet) { s.Spec.Containers[0].TransferEnv[0].SourceContainerName = "" }, required(te + "[0].sourceContainerName")},
		{"transferEnv without env", func(s *apps.SidecarSet) { s.Spec.Containers[0].TransferEnv[0].EnvName = "" }, required(te + "[0].envName")},
		{"transferEnv envName and envNames", func(s *apps.SidecarSet) { s.Spec.Containers[0].TransferEnv[1].EnvName = "TZ" }, forbidden(te + "[1].envNames")},
		{"transferEnv duplicate envNames", func(s *apps.SidecarSet) {
			s.Spec.Containers[0].TransferEnv[1].EnvNames = []string{"A", "A"}
		}, duplicate(te + "[1].envNames[1]")},
		{"transferEnv unsupported fieldPath", func(s *apps.SidecarSet) {
			s.Spec.Containers[0].TransferEnv[1].SourceContainerNameFrom.FieldRef.FieldPath = "spec.nodeName"
		}, notSupported(te + "[1].sourceContainerNameFrom.fieldRef.fieldPath")},
		{"duplicate volume", func(s *apps.SidecarSet) { s.Spec.Volumes = append(s.Spec.Volumes, s.Spec.Volumes[0]) }, duplicate("spec.volumes[1].name")},
		{"mount of a volume the SidecarSet lacks", func(s *apps.SidecarSet) { s.Spec.Volumes = nil }, invalid(agent + ".volumeMounts[0].name")},
		{"unknown update type", func(s *apps.SidecarSet) { s.Spec.UpdateStrategy.Type = "Rolling" }, notSupported("spec.updateStrategy.type")},
		{"maxUnavailable above 100%", func(s *apps.SidecarSet) {
			s.Spec.UpdateStrategy.MaxUnavailable = intOrStr(intstr.FromString("200%"))
		}, invalid("spec.updateStrategy.maxUnavailable")},
		{"negative partition", func(s *apps.SidecarSet) {
			s.Spec.UpdateStrategy.Selector = nil
			s.Spec.UpdateStrategy.Partition = intOrStr(intstr.FromInt32(-3))
		}, invalid("spec.updateStrategy.partition")},
		{"partition with selector", func(s *apps.SidecarSet) {
			s.Spec.UpdateStrategy.Partition = intOrStr(intstr.FromInt32(2))
		}, forbidden("spec.updateStrategy.partition")},
		{"hot-upgrade native sidecar with RollingUpdate", func(s *apps.SidecarSet) {
			s.Spec.InitContainers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
			s.Spec.InitContainers[0].UpgradeStrategy = apps.SidecarContainerUpgradeStrategy{
				UpgradeType: apps.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty:v1"}
		}, invalid("spec.updateStrategy.type")},
		{"revision without name or version", func(s *apps.SidecarSet) {
			s.Spec.InjectionStrategy.Revision.RevisionName = nil
		}, required("spec.injectionStrategy.revision")},
		{"unknown revision policy", func(s *apps.SidecarSet) {
			s.Spec.InjectionStrategy.Revision.Policy = "Sometimes"
		}, notSupported("spec.injectionStrategy.revision.policy")},
		{"unknown patchPolicy", func(s *apps.SidecarSet) { s.Spec.PatchPodMetadata[0].PatchPolicy = "Replace" }, notSupported("spec.patchPodMetadata[0].patchPolicy")},
		{"MergePatchJson value not JSON", func(s *apps.SidecarSet) {
			s.Spec.PatchPodMetadata[0].Annotations["example.com/agent-config"] = "level=info"
		}, invalid("spec.patchPodMetadata[0].annotations[example.com/agent-config]")},
		{"annotation patched twice", func(s *apps.SidecarSet) {
			s.Spec.PatchPodMetadata = append(s.Spec.PatchPodMetadata, s.Spec.PatchPodMetadata[0])
		}, duplicate("spec.patchPodMetadata[1].annotations[example.com/agent-config]")},
		{"negative revisionHistoryLimit", func(s *apps.SidecarSet) { s.Spec.RevisionHistoryLimit = ptr.To[int32](-1) }, invalid("spec.revisionHistoryLimit")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := validSidecarSet()
			tc.mutate(s)
			expectErrors(t, ValidateSidecarSet(s), tc.want)
		})
	}
}

func TestValidateSidecarSetUpdate(t *testing.T) {
	old := validSidecarSet()

	s := old.DeepCopy()
	s.Spec.Containers[0].Image = "agent:v2"
	s.Spec.Selector.MatchLabels["tier"] = "front"
	s.Spec.Containers = append(s.Spec.Containers, apps.SidecarContainer{Container: corev1.Container{Name: "proxy", Image: "envoy:1.30"}})
	expectErrors(t, ValidateSidecarSetUpdate(s, old))

	s = old.DeepCopy()
	s.Spec.Containers[0].UpgradeStrategy = apps.SidecarContainerUpgradeStrategy{UpgradeType: apps.SidecarContainerColdUpgrade}
	expectErrors(t, ValidateSidecarSetUpdate(s, old), forbidden("spec.containers[0].upgradeStrategy.upgradeType"))
}

func TestValidateSidecarSetStatusUpdate(t *testing.T) {
	old := validSidecarSet()
	s := old.DeepCopy()
	s.Status = apps.SidecarSetStatus{ObservedGeneration: 1, MatchedPods: 4, UpdatedPods: 2, ReadyPods: 4}
	expectErrors(t, ValidateSidecarSetStatusUpdate(s, old))

	s.Status.MatchedPods = -1
	expectErrors(t, ValidateSidecarSetStatusUpdate(s, old), invalid("status.matchedPods"))
}

// ---------------------------------------------------------------------------------------------
// ContainerRecreateRequest
// ---------------------------------------------------------------------------------------------

func validCRR() *apps.ContainerRecreateRequest {
	return &apps.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-1-restart", Namespace: "default", ResourceVersion: "1",
			Labels: map[string]string{
				v1alpha1.ContainerRecreateRequestPodUIDKey:   "6f1c2a9e",
				v1alpha1.ContainerRecreateRequestNodeNameKey: "node-a",
			},
		},
		Spec: apps.ContainerRecreateRequestSpec{
			PodName:    "web-1",
			Containers: []apps.ContainerRecreateRequestContainer{{Name: "app"}, {Name: "sidecar"}},
			Strategy: &apps.ContainerRecreateRequestStrategy{
				FailurePolicy:                 apps.ContainerRecreateRequestFailurePolicyFail,
				TerminationGracePeriodSeconds: ptr.To[int64](30),
				UnreadyGracePeriodSeconds:     ptr.To[int64](5),
				MinStartedSeconds:             10,
			},
			ActiveDeadlineSeconds:   ptr.To[int64](300),
			TTLSecondsAfterFinished: ptr.To[int32](600),
		},
	}
}

func TestValidateContainerRecreateRequest(t *testing.T) {
	expectErrors(t, ValidateContainerRecreateRequest(validCRR()))

	cases := []struct {
		name   string
		mutate func(c *apps.ContainerRecreateRequest)
		want   want
	}{
		{"no namespace", func(c *apps.ContainerRecreateRequest) { c.Namespace = "" }, required("metadata.namespace")},
		{"no podName", func(c *apps.ContainerRecreateRequest) { c.Spec.PodName = "" }, required("spec.podName")},
		{"podName not a Pod name", func(c *apps.ContainerRecreateRequest) { c.Spec.PodName = "Web_1" }, invalid("spec.podName")},
		{"no containers", func(c *apps.ContainerRecreateRequest) { c.Spec.Containers = nil }, required("spec.containers")},
		{"container without name", func(c *apps.ContainerRecreateRequest) { c.Spec.Containers[0].Name = "" }, required("spec.containers[0].name")},
		{"container twice", func(c *apps.ContainerRecreateRequest) { c.Spec.Containers[1].Name = "app" }, duplicate("spec.containers[1].name")},
		{"statusContext without containerID", func(c *apps.ContainerRecreateRequest) {
			c.Spec.Containers[0].StatusContext = &apps.ContainerRecreateRequestContainerContext{RestartCount: 1}
		}, required("spec.containers[0].statusContext.containerID")},
		{"unknown failurePolicy", func(c *apps.ContainerRecreateRequest) { c.Spec.Strategy.FailurePolicy = "Retry" }, notSupported("spec.strategy.failurePolicy")},
		{"activeDeadlineSeconds below 3", func(c *apps.ContainerRecreateRequest) { c.Spec.ActiveDeadlineSeconds = ptr.To[int64](2) }, invalid("spec.activeDeadlineSeconds")},
		{"negative ttl", func(c *apps.ContainerRecreateRequest) { c.Spec.TTLSecondsAfterFinished = ptr.To[int32](-1) }, invalid("spec.ttlSecondsAfterFinished")},
		{"negative terminationGracePeriodSeconds", func(c *apps.ContainerRecreateRequest) {
			c.Spec.Strategy.TerminationGracePeriodSeconds = ptr.To[int64](-1)
		}, invalid("spec.strategy.terminationGracePeriodSeconds")},
		{"negative unreadyGracePeriodSeconds", func(c *apps.ContainerRecreateRequest) {
			c.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](-1)
		}, invalid("spec.strategy.unreadyGracePeriodSeconds")},
		{"negative minStartedSeconds", func(c *apps.ContainerRecreateRequest) { c.Spec.Strategy.MinStartedSeconds = -1 }, invalid("spec.strategy.minStartedSeconds")},
		{"unready grace outlasts the deadline", func(c *apps.ContainerRecreateRequest) {
			c.Spec.ActiveDeadlineSeconds = ptr.To[int64](10)
			c.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](10)
			c.Spec.Strategy.MinStartedSeconds = 1
		}, invalid("spec.strategy.unreadyGracePeriodSeconds")},
		{"minStartedSeconds outlasts the deadline", func(c *apps.ContainerRecreateRequest) {
			c.Spec.ActiveDeadlineSeconds = ptr.To[int64](10)
			c.Spec.Strategy.MinStartedSeconds = 12
			c.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](1)
		}, invalid("spec.strategy.minStartedSeconds")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validCRR()
			tc.mutate(c)
			expectErrors(t, ValidateContainerRecreateRequest(c), tc.want)
		})
	}
}

func TestValidateContainerRecreateRequestUpdate(t *testing.T) {
	withContext := func(c *apps.ContainerRecreateRequest) {
		c.Spec.Containers[0].StatusContext = &apps.ContainerRecreateRequestContainerContext{ContainerID: "containerd://abc", RestartCount: 2}
	}
	cases := []struct {
		name   string
		old    func(c *apps.ContainerRecreateRequest)
		mutate func(c *apps.ContainerRecreateRequest)
		want   []want
	}{
		{"labels and annotations may change", nil, func(c *apps.ContainerRecreateRequest) {
			delete(c.Labels, v1alpha1.ContainerRecreateRequestActiveKey)
			c.Annotations = map[string]string{v1alpha1.ContainerRecreateRequestUnreadyAcquiredKey: "true"}
		}, nil},
		{"statusContext recorded once", nil, withContext, nil},
		{"statusContext recorded without containerID", nil, func(c *apps.ContainerRecreateRequest) {
			c.Spec.Containers[1].StatusContext = &apps.ContainerRecreateRequestContainerContext{}
		}, []want{required("spec.containers[1].statusContext.containerID")}},
		{"podName change", nil, func(c *apps.ContainerRecreateRequest) { c.Spec.PodName = "web-2" }, []want{forbidden("spec")}},
		{"container added", nil, func(c *apps.ContainerRecreateRequest) {
			c.Spec.Containers = append(c.Spec.Containers, apps.ContainerRecreateRequestContainer{Name: "third"})
		}, []want{forbidden("spec")}},
		{"strategy change", nil, func(c *apps.ContainerRecreateRequest) { c.Spec.Strategy.OrderedRecreate = true }, []want{forbidden("spec")}},
		{"statusContext rewritten", withContext, func(c *apps.ContainerRecreateRequest) {
			c.Spec.Containers[0].StatusContext.RestartCount = 3
		}, []want{forbidden("spec")}},
		{"pod-uid label change", nil, func(c *apps.ContainerRecreateRequest) {
			c.Labels[v1alpha1.ContainerRecreateRequestPodUIDKey] = "other"
		}, []want{forbidden("metadata.labels[crr.apps.kruise.io/pod-uid]")}},
		{"unready-acquired annotation change", func(c *apps.ContainerRecreateRequest) {
			c.Annotations = map[string]string{v1alpha1.ContainerRecreateRequestUnreadyAcquiredKey: "true"}
		}, func(c *apps.ContainerRecreateRequest) {
			c.Annotations = nil
		}, []want{forbidden("metadata.annotations[crr.apps.kruise.io/unready-acquired]")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validCRR()
			if tc.old != nil {
				tc.old(old)
			}
			c := old.DeepCopy()
			tc.mutate(c)
			expectErrors(t, ValidateContainerRecreateRequestUpdate(c, old), tc.want...)
		})
	}
}

func TestValidateContainerRecreateRequestStatusUpdate(t *testing.T) {
	old := validCRR()
	c := old.DeepCopy()
	c.Status = apps.ContainerRecreateRequestStatus{
		Phase: apps.ContainerRecreateRequestRecreating,
		ContainerRecreateStates: []apps.ContainerRecreateRequestContainerRecreateState{
			{Name: "app", Phase: apps.ContainerRecreateRequestSucceeded},
			{Name: "sidecar", Phase: apps.ContainerRecreateRequestRecreating},
		},
	}
	expectErrors(t, ValidateContainerRecreateRequestStatusUpdate(c, old))

	bad := c.DeepCopy()
	bad.Status.Phase = "Done"
	expectErrors(t, ValidateContainerRecreateRequestStatusUpdate(bad, old), notSupported("status.phase"))

	bad = c.DeepCopy()
	bad.Status.ContainerRecreateStates[1].Phase = "Restarting"
	expectErrors(t, ValidateContainerRecreateRequestStatusUpdate(bad, old), notSupported("status.containerRecreateStates[1].phase"))

	completed := old.DeepCopy()
	completed.Status.Phase = apps.ContainerRecreateRequestCompleted
	expectErrors(t, ValidateContainerRecreateRequestStatusUpdate(c, completed), forbidden("status.phase"))
}

// ---------------------------------------------------------------------------------------------
// InPlaceUpdate
// ---------------------------------------------------------------------------------------------

func validInPlaceUpdate() *apps.InPlaceUpdate {
	return &apps.InPlaceUpdate{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default"},
		Spec: apps.InPlaceUpdateSpec{
			Revision: "web-5d8f9c",
			Containers: []apps.InPlaceUpdateContainer{
				{Name: "app", Image: "nginx:1.28"},
				{Name: "sidecar", Resources: &corev1.ResourceRequirements{
					Requests: quantities("cpu", "200m", "memory", "64Mi"),
					Limits:   quantities("cpu", "400m", "memory", "64Mi"),
				}},
			},
			Metadata: &apps.InPlaceUpdateMetadata{
				Labels:      map[string]string{"version": "v2"},
				Annotations: map[string]string{"example.com/note": "rolled by hand"},
			},
			GracePeriodSeconds: 5,
		},
	}
}

func TestValidateInPlaceUpdate(t *testing.T) {
	expectErrors(t, ValidateInPlaceUpdate(validInPlaceUpdate()))

	metadataOnly := &apps.InPlaceUpdate{Spec: apps.InPlaceUpdateSpec{
		Metadata: &apps.InPlaceUpdateMetadata{Labels: map[string]string{"version": "v3"}},
	}}
	expectErrors(t, ValidateInPlaceUpdate(metadataOnly))
	removalOnly := &apps.InPlaceUpdate{Spec: apps.InPlaceUpdateSpec{
		Metadata: &apps.InPlaceUpdateMetadata{RemoveLabels: []string{"version"}},
	}}
	expectErrors(t, ValidateInPlaceUpdate(removalOnly))

	sidecar := "spec.containers[1]"
	cases := []struct {
		name   string
		mutate func(u *apps.InPlaceUpdate)
		want   want
	}{
		{"nothing to change", func(u *apps.InPlaceUpdate) {
			u.Spec.Containers = nil
			u.Spec.Metadata = &apps.InPlaceUpdateMetadata{}
		}, required("spec.containers")},
		{"container without name", func(u *apps.InPlaceUpdate) { u.Spec.Containers[0].Name = "" }, required("spec.containers[0].name")},
		{"container twice", func(u *apps.InPlaceUpdate) { u.Spec.Containers[1].Name = "app" }, duplicate(sidecar + ".name")},
		{"container with nothing to change", func(u *apps.InPlaceUpdate) { u.Spec.Containers[0].Image = "" }, required("spec.containers[0].image")},
		{"image with whitespace", func(u *apps.InPlaceUpdate) { u.Spec.Containers[0].Image = " nginx:1.28" }, invalid("spec.containers[0].image")},
		{"request above limit", func(u *apps.InPlaceUpdate) {
			u.Spec.Containers[1].Resources.Requests["memory"] = resource.MustParse("1Gi")
		}, invalid(sidecar + ".resources.requests[memory]")},
		{"negative limit", func(u *apps.InPlaceUpdate) {
			u.Spec.Containers[1].Resources.Requests = nil
			u.Spec.Containers[1].Resources.Limits["cpu"] = resource.MustParse("-1")
		}, invalid(sidecar + ".resources.limits[cpu]")},
		{"resource that cannot be resized", func(u *apps.InPlaceUpdate) {
			u.Spec.Containers[1].Resources.Limits["nvidia.com/gpu"] = resource.MustParse("1")
		}, notSupported(sidecar + ".resources.limits[nvidia.com/gpu]")},
		{"bad label value", func(u *apps.InPlaceUpdate) { u.Spec.Metadata.Labels["version"] = "not a value!" }, invalid("spec.metadata.labels")},
		{"bad annotation key", func(u *apps.InPlaceUpdate) { u.Spec.Metadata.Annotations["bad key"] = "x" }, invalid("spec.metadata.annotations")},
		{"label both set and removed", func(u *apps.InPlaceUpdate) { u.Spec.Metadata.RemoveLabels = []string{"version"} }, invalid("spec.metadata.removeLabels[0]")},
		{"removed annotation not a key", func(u *apps.InPlaceUpdate) { u.Spec.Metadata.RemoveAnnotations = []string{"bad key"} }, invalid("spec.metadata.removeAnnotations[0]")},
		{"label removed twice", func(u *apps.InPlaceUpdate) { u.Spec.Metadata.RemoveLabels = []string{"tier", "tier"} }, duplicate("spec.metadata.removeLabels[1]")},
		{"negative grace period", func(u *apps.InPlaceUpdate) { u.Spec.GracePeriodSeconds = -1 }, invalid("spec.gracePeriodSeconds")},
		{"stay in service with a grace period", func(u *apps.InPlaceUpdate) {
			u.Spec.StayInService, u.Spec.GracePeriodSeconds = true, 5
		}, invalid("spec.stayInService")},
		{"revision not a label value", func(u *apps.InPlaceUpdate) { u.Spec.Revision = "web/5d8f9c" }, invalid("spec.revision")},
		{"bad completion label", func(u *apps.InPlaceUpdate) {
			u.Spec.CompletionLabels = map[string]string{"lifecycle.apps.kruise.io/state": "not a value!"}
		}, invalid("spec.completionLabels")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := validInPlaceUpdate()
			tc.mutate(u)
			expectErrors(t, ValidateInPlaceUpdate(u), tc.want)
		})
	}
}

// A SidecarSet upgrade changes images and annotations (a hot upgrade's, patchPodMetadata's) only.
func TestValidateInPlaceUpdateSidecarSet(t *testing.T) {
	valid := func() *apps.InPlaceUpdate {
		return &apps.InPlaceUpdate{Spec: apps.InPlaceUpdateSpec{
			Revision:   "zbvbxf8v44dx745987z5c8dv65wc27z2vbx66458cbz8bdzbv5ww689cfff779xf", // 64 characters
			SidecarSet: &apps.InPlaceUpdateSidecarSet{Name: "mesh"},
			Containers: []apps.InPlaceUpdateContainer{{Name: "mesh-2", Image: "mesh:v2"}},
			Metadata: &apps.InPlaceUpdateMetadata{Annotations: map[string]string{
				pub.SidecarSetWorkingHotUpgradeContainerKey:         `{"mesh":"mesh-2"}`,
				pub.SidecarSetVersionAnnotationPrefix + "mesh-2":    "7",
				pub.SidecarSetVersionAltAnnotationPrefix + "mesh-1": "7",
			}},
		}}
	}
	expectErrors(t, ValidateInPlaceUpdate(valid()))
	// Another annotation is the SidecarSet's patchPodMetadata (the engine refuses those it writes
	// itself).
	patched := valid()
	patched.Spec.Metadata.Annotations["team"] = `{"a":1}`
	expectErrors(t, ValidateInPlaceUpdate(patched))
	cases := []struct {
		name   string
		mutate func(u *apps.InPlaceUpdate)
		want   want
	}{
		{"an annotation that is not one", func(u *apps.InPlaceUpdate) { u.Spec.Metadata.Annotations["a b"] = "c" },
			invalid("spec.metadata.annotations")},
		{"a label", func(u *apps.InPlaceUpdate) { u.Spec.Metadata.Labels = map[string]string{"a": "b"} }, forbidden("spec.metadata.labels")},
		{"a removed annotation", func(u *apps.InPlaceUpdate) {
			u.Spec.Metadata.RemoveAnnotations = []string{"team"}
		}, forbidden("spec.metadata.removeAnnotations")},
		{"resources", func(u *apps.InPlaceUpdate) { u.Spec.Containers[0].Resources = &corev1.ResourceRequirements{} }, forbidden("spec.containers[0].resources")},
		{"no hash", func(u *apps.InPlaceUpdate) { u.Spec.Revision = "" }, required("spec.revision")},
		{"a hash with a space", func(u *apps.InPlaceUpdate) { u.Spec.Revision = "h 2" }, invalid("spec.revision")},
		{"completion labels", func(u *apps.InPlaceUpdate) { u.Spec.CompletionLabels = map[string]string{"a": "b"} }, forbidden("spec.completionLabels")},
		{"stay in service", func(u *apps.InPlaceUpdate) { u.Spec.StayInService = true }, forbidden("spec.stayInService")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := valid()
			tc.mutate(u)
			expectErrors(t, ValidateInPlaceUpdate(u), tc.want)
		})
	}
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

func TestValidateIntOrPercent(t *testing.T) {
	p := field.NewPath("x")
	for _, v := range []intstr.IntOrString{intstr.FromInt32(0), intstr.FromInt32(7), intstr.FromString("0%"), intstr.FromString("100%")} {
		if errs := ValidateIntOrPercent(&v, p); len(errs) > 0 {
			t.Errorf("%s: unexpected errors %v", v.String(), errs)
		}
	}
	for _, v := range []intstr.IntOrString{intstr.FromInt32(-1), intstr.FromString("101%"), intstr.FromString("5"), intstr.FromString("-5%"), intstr.FromString("%")} {
		expectErrors(t, ValidateIntOrPercent(&v, p), invalid("x"))
	}
	for _, tc := range []struct {
		v     intstr.IntOrString
		total int
		want  int
	}{{intstr.FromString("20%"), 3, 1}, {intstr.FromString("20%"), 10, 2}, {intstr.FromString("0%"), 10, 0}, {intstr.FromInt32(4), 10, 4}} {
		if got := scaledValue(&tc.v, tc.total); got != tc.want {
			t.Errorf("scaledValue(%s, %d) = %d, want %d", tc.v.String(), tc.total, got, tc.want)
		}
	}
}

// The stay-in-service annotation names containers of the Pod template, on every workload that
// updates in place, at creation and on update.
func TestValidateStayInServiceContainers(t *testing.T) {
	key := "metadata.annotations[" + pub.StayInServiceContainersKey + "]"
	for _, tc := range []struct {
		value string
		want  []want
	}{
		{"", nil},
		{"app", nil},
		{" app , ", nil},
		{"app,logger", []want{invalid(key)}},
		{"init", []want{invalid(key)}},
		{"logger,agent", []want{invalid(key), invalid(key)}},
	} {
		t.Run(tc.value, func(t *testing.T) {
			set := func(m *metav1.ObjectMeta) {
				m.Annotations = map[string]string{pub.StayInServiceContainersKey: tc.value}
			}
			cs := validCloneSet()
			set(&cs.ObjectMeta)
			expectErrors(t, ValidateCloneSet(cs), tc.want...)
			old := validCloneSet()
			old.ResourceVersion, cs.ResourceVersion = "1", "1"
			expectErrors(t, ValidateCloneSetUpdate(cs, old), tc.want...)
			sts := validStatefulSet()
			set(&sts.ObjectMeta)
			sts.Spec.Template.Spec.Containers[0].Name = "app"
			expectErrors(t, ValidateStatefulSet(sts), tc.want...)
			ds := validDaemonSet()
			set(&ds.ObjectMeta)
			expectErrors(t, ValidateDaemonSet(ds), forbidden(key))
		})
	}
}
