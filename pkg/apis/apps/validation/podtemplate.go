package validation

import (
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// validatePodTemplate checks a workload's Pod template. Its volumes were checked by the caller, which
// passes the names a container may mount (template volumes and volume claim templates).
func validatePodTemplate(t *corev1.PodTemplateSpec, volumes sets.Set[string], fldPath *field.Path) field.ErrorList {
	metaPath, specPath := fldPath.Child("metadata"), fldPath.Child("spec")
	allErrs := metav1validation.ValidateLabels(t.Labels, metaPath.Child("labels"))
	allErrs = append(allErrs, apivalidation.ValidateAnnotations(t.Annotations, metaPath.Child("annotations"))...)

	spec := &t.Spec
	if len(spec.Containers) == 0 {
		allErrs = append(allErrs, field.Required(specPath.Child("containers"), "the Pod template needs at least one container"))
	}
	allErrs = append(allErrs, validateContainerLists(spec.InitContainers, spec.Containers, volumes, specPath)...)
	if spec.RestartPolicy != "" && spec.RestartPolicy != corev1.RestartPolicyAlways {
		allErrs = append(allErrs, field.NotSupported(specPath.Child("restartPolicy"), spec.RestartPolicy,
			[]corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("activeDeadlineSeconds"),
			"Pods of a workload run until replaced; activeDeadlineSeconds is not supported"))
	}
	return append(allErrs, validateOptionalNonNegative(spec.TerminationGracePeriodSeconds, specPath.Child("terminationGracePeriodSeconds"))...)
}

// validateContainerLists checks init containers and containers, whose names must be unique across both.
func validateContainerLists(initContainers, containers []corev1.Container, volumes sets.Set[string], fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i := range initContainers {
		allErrs = append(allErrs, validateContainer(&initContainers[i], true, names, volumes, fldPath.Child("initContainers").Index(i))...)
	}
	for i := range containers {
		allErrs = append(allErrs, validateContainer(&containers[i], false, names, volumes, fldPath.Child("containers").Index(i))...)
	}
	return allErrs
}

var pullPolicies = []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}

func validateContainer(c *corev1.Container, isInit bool, names, volumes sets.Set[string], fldPath *field.Path) field.ErrorList {
	allErrs := validateContainerName(c.Name, names, fldPath.Child("name"))
	allErrs = append(allErrs, validateImage(c.Image, true, fldPath.Child("image"))...)
	allErrs = append(allErrs, validateEnum(c.ImagePullPolicy, pullPolicies, fldPath.Child("imagePullPolicy"))...)
	allErrs = append(allErrs, validatePorts(c.Ports, fldPath.Child("ports"))...)
	allErrs = append(allErrs, validateEnv(c.Env, fldPath.Child("env"))...)
	allErrs = append(allErrs, validateResources(&c.Resources, fldPath.Child("resources"))...)
	allErrs = append(allErrs, validateVolumeMounts(c, volumes, fldPath)...)
	if isInit && c.RestartPolicy != nil && *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("restartPolicy"), *c.RestartPolicy,
			[]corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways}))
	}
	return allErrs
}

// validateContainerName checks a container name is set, a DNS-1123 label, and not in seen (to which it
// is added).
func validateContainerName(name string, seen sets.Set[string], fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "the container name is required")}
	}
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Label(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	if seen.Has(name) {
		allErrs = append(allErrs, field.Duplicate(fldPath, name))
	}
	seen.Insert(name)
	return allErrs
}

func validateImage(image string, required bool, fldPath *field.Path) field.ErrorList {
	if image == "" {
		if required {
			return field.ErrorList{field.Required(fldPath, "the container image is required")}
		}
		return nil
	}
	if strings.TrimSpace(image) != image {
		return field.ErrorList{field.Invalid(fldPath, image, "must not have leading or trailing whitespace")}
	}
	return nil
}

var protocols = []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}

func validatePorts(ports []corev1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		p := fldPath.Index(i)
		if port.Name != "" {
			for _, msg := range utilvalidation.IsValidPortName(port.Name) {
				allErrs = append(allErrs, field.Invalid(p.Child("name"), port.Name, msg))
			}
			if names.Has(port.Name) {
				allErrs = append(allErrs, field.Duplicate(p.Child("name"), port.Name))
			}
			names.Insert(port.Name)
		}
		if port.ContainerPort == 0 {
			allErrs = append(allErrs, field.Required(p.Child("containerPort"), "the port number is required"))
		} else {
			for _, msg := range utilvalidation.IsValidPortNum(int(port.ContainerPort)) {
				allErrs = append(allErrs, field.Invalid(p.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range utilvalidation.IsValidPortNum(int(port.HostPort)) {
				allErrs = append(allErrs, field.Invalid(p.Child("hostPort"), port.HostPort, msg))
			}
		}
		allErrs = append(allErrs, validateEnum(port.Protocol, protocols, p.Child("protocol"))...)
	}
	return allErrs
}

func validateEnv(env []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ev := range env {
		p := fldPath.Index(i)
		allErrs = append(allErrs, validateEnvName(ev.Name, p.Child("name"))...)
		if ev.ValueFrom == nil {
			continue
		}
		if ev.Value != "" {
			allErrs = append(allErrs, field.Invalid(p.Child("valueFrom"), "", "may not be set when `value` is not empty"))
		} else if countSetPointers(*ev.ValueFrom) != 1 {
			allErrs = append(allErrs, field.Invalid(p.Child("valueFrom"), "",
				"must have exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef or fileKeyRef"))
		}
	}
	return allErrs
}

// validateEnvName uses Kubernetes' relaxed rule (GA since 1.34): any printable ASCII but '='.
func validateEnvName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "the env var name is required")}
	}
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsRelaxedEnvVarName(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}

// validateResources checks quantities are non-negative and requests do not exceed limits.
func validateResources(r *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	allErrs := validateResourceList(r.Limits, fldPath.Child("limits"))
	allErrs = append(allErrs, validateResourceList(r.Requests, fldPath.Child("requests"))...)
	for _, name := range sortedResourceNames(r.Requests) {
		req := r.Requests[name]
		if limit, ok := r.Limits[name]; ok && req.Cmp(limit) > 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to the %s limit of %s", name, limit.String())))
		}
	}
	return allErrs
}

func validateResourceList(list corev1.ResourceList, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, name := range sortedResourceNames(list) {
		p := fldPath.Key(string(name))
		for _, msg := range content.IsLabelKey(string(name)) {
			allErrs = append(allErrs, field.Invalid(p, name, "is not a valid resource name: "+msg))
		}
		if q := list[name]; q.Sign() < 0 {
			allErrs = append(allErrs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
		}
	}
	return allErrs
}

func sortedResourceNames(list corev1.ResourceList) []corev1.ResourceName {
	return sets.List(sets.KeySet(list))
}

func validateVolumeMounts(c *corev1.Container, volumes sets.Set[string], fldPath *field.Path) field.ErrorList {
	const unknown = "must name a volume defined in this object (its volumes, or volumeClaimTemplates)"
	var allErrs field.ErrorList
	paths := sets.New[string]()
	for i, m := range c.VolumeMounts {
		p := fldPath.Child("volumeMounts").Index(i)
		if m.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), "the name of the volume to mount is required"))
		} else if !volumes.Has(m.Name) {
			allErrs = append(allErrs, field.Invalid(p.Child("name"), m.Name, unknown))
		}
		if m.MountPath == "" {
			allErrs = append(allErrs, field.Required(p.Child("mountPath"), "the path to mount the volume at is required"))
		} else if paths.Has(m.MountPath) {
			allErrs = append(allErrs, field.Duplicate(p.Child("mountPath"), m.MountPath))
		}
		paths.Insert(m.MountPath)
	}
	for i, d := range c.VolumeDevices {
		if !volumes.Has(d.Name) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("volumeDevices").Index(i).Child("name"), d.Name, unknown))
		}
	}
	return allErrs
}

// validateVolumes checks Pod volumes and returns their names.
func validateVolumes(volumes []corev1.Volume, fldPath *field.Path) (sets.Set[string], field.ErrorList) {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i := range volumes {
		v := &volumes[i]
		p := fldPath.Index(i)
		if v.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), "the volume name is required"))
		} else if msgs := utilvalidation.IsDNS1123Label(v.Name); len(msgs) > 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("name"), v.Name, strings.Join(msgs, "; ")))
		} else if names.Has(v.Name) {
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), v.Name))
		}
		names.Insert(v.Name)
		switch n := countSetPointers(v.VolumeSource); {
		case n == 0:
			allErrs = append(allErrs, field.Required(p, "a volume source (emptyDir, configMap, secret, persistentVolumeClaim, ...) is required"))
		case n > 1:
			allErrs = append(allErrs, field.Forbidden(p, "may not have more than one volume source"))
		}
	}
	return names, allErrs
}

// countSetPointers counts the non-nil pointer fields of a struct of optional members (a one-of).
func countSetPointers(v any) int {
	rv := reflect.ValueOf(v)
	n := 0
	for i := range rv.NumField() {
		if f := rv.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
		}
	}
	return n
}

// validateStayInServiceContainers checks a workload's pub.StayInServiceContainersKey annotation:
// every name is a container of its Pod template (a misspelt name would silently take the Pod out
// of service on the next update of that container).
func validateStayInServiceContainers(annotations map[string]string, t *corev1.PodTemplateSpec) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i := range t.Spec.Containers {
		names.Insert(t.Spec.Containers[i].Name)
	}
	for _, n := range pub.StayInServiceContainers(annotations) {
		if !names.Has(n) {
			allErrs = append(allErrs, field.Invalid(metadataPath.Child("annotations").Key(pub.StayInServiceContainersKey), annotations[pub.StayInServiceContainersKey],
				fmt.Sprintf("%q is not a container of spec.template.spec.containers (%s); init containers are never updated by the workload", n, strings.Join(sets.List(names), ", "))))
		}
	}
	return allErrs
}
