package inplaceupdate

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/inplace-dev/inplace/pkg/features"
)

// notInPlaceReason is the reason of a change no in-place update can make.
const notInPlaceReason = "changed: only container images and resources, and Pod labels and annotations, can change in place"

// CalculateSpec compares the Pod templates of two revisions and returns the update that takes a
// Pod from the old one to the new one in place, or a *NotInPlaceError saying which field forbids
// it. In place only if every change is:
//
//   - the image of a container (never of an init container);
//   - a Pod label or annotation (set or removed); containers whose env reads a changed key
//     through a fieldRef are recorded in ContainerRefMetadata;
//   - the cpu or memory requests or limits of a container (none removed, never of an init
//     container), as long as the Pod's QoS class stays the same, and unless the feature gate
//     InPlaceWorkloadVerticalScaling is set to false (then, as in OpenKruise with the gate off,
//     a workload whose resources change recreates its Pods).
//
// Containers must keep their number, order and names. revision becomes the spec's Revision;
// the caller sets GraceSeconds.
func CalculateSpec(oldTemplate, newTemplate *corev1.PodTemplateSpec, revision string) (*UpdateSpec, error) {
	if oldTemplate == nil || newTemplate == nil {
		return nil, errors.New("both the old and the new pod template are needed")
	}
	oldT, newT := oldTemplate.DeepCopy(), newTemplate.DeepCopy()
	spec := &UpdateSpec{Revision: revision}
	specPath := field.NewPath("spec")

	// Containers: images and resources; nothing else of theirs may change (checked below).
	containersPath := specPath.Child("containers")
	if len(oldT.Spec.Containers) != len(newT.Spec.Containers) {
		return nil, &NotInPlaceError{Field: containersPath.String(), Reason: fmt.Sprintf(
			"changed from %d to %d containers: containers cannot be added or removed in place",
			len(oldT.Spec.Containers), len(newT.Spec.Containers))}
	}
	var firstResized *field.Path
	for i := range oldT.Spec.Containers {
		o, n := &oldT.Spec.Containers[i], &newT.Spec.Containers[i]
		p := containersPath.Index(i)
		if o.Name != n.Name {
			return nil, &NotInPlaceError{Field: p.Child("name").String(), Reason: fmt.Sprintf(
				"changed from %q to %q: containers cannot be renamed or reordered in place", o.Name, n.Name)}
		}
		if o.Image != n.Image {
			setMap(&spec.ContainerImages, n.Name, n.Image)
		}
		changed, want, err := diffResources(p.Child("resources"), o.Resources, n.Resources)
		if err != nil {
			return nil, err
		}
		if changed {
			setMap(&spec.ContainerResources, n.Name, want)
			if firstResized == nil {
				firstResized = p.Child("resources")
			}
		}
		o.Image, n.Image = "", ""
		o.Resources.Requests, o.Resources.Limits = nil, nil
		n.Resources.Requests, n.Resources.Limits = nil, nil
	}

	// Init containers run once, before the others: changing them means a new Pod.
	for i := range min(len(oldT.Spec.InitContainers), len(newT.Spec.InitContainers)) {
		o, n := &oldT.Spec.InitContainers[i], &newT.Spec.InitContainers[i]
		p := specPath.Child("initContainers").Index(i)
		if o.Image != n.Image {
			return nil, &NotInPlaceError{Field: p.Child("image").String(), Reason: "changed: init containers cannot be updated in place"}
		}
		if changed, _, _ := diffResources(p.Child("resources"), o.Resources, n.Resources); changed {
			return nil, &NotInPlaceError{Field: p.Child("resources").String(), Reason: "changed: init containers cannot be resized in place"}
		}
	}

	// Labels and annotations.
	setLabels, removeLabels := diffStrings(oldT.Labels, newT.Labels)
	setAnnotations, removeAnnotations := diffStrings(oldT.Annotations, newT.Annotations)
	oldT.Labels, newT.Labels, oldT.Annotations, newT.Annotations = nil, nil, nil, nil

	// Anything else that differs forbids an in-place update.
	if path, err := firstDifference(oldT, newT); err != nil {
		return nil, err
	} else if path != "" {
		return nil, &NotInPlaceError{Field: path, Reason: notInPlaceReason}
	}

	if firstResized != nil {
		if !features.Enabled(features.InPlaceWorkloadVerticalScaling) {
			return nil, &NotInPlaceError{Field: firstResized.String(), Reason: "changed, and the feature gate " +
				string(features.InPlaceWorkloadVerticalScaling) + " is off: resources change by recreating the Pod"}
		}
		if from, to := ComputeQOSClass(&oldTemplate.Spec), ComputeQOSClass(&newTemplate.Spec); from != to {
			return nil, &NotInPlaceError{Field: firstResized.String(), Reason: fmt.Sprintf(
				"changed the Pod's QoS class from %s to %s: resources can change in place only within the same QoS class", from, to)}
		}
	}

	spec.addMetadataChange(newTemplate.Spec.Containers, setLabels, setAnnotations, removeLabels, removeAnnotations)
	return spec, nil
}

// addMetadataChange records label and annotation changes. A key set that some container reads
// through an env fieldRef goes to that container's ContainerRefMetadata, so that the value
// changes in the container's batch; other keys go to Metadata, applied with the first batch. A
// removed key is removed with the first batch and restarts nothing, as in OpenKruise (only
// replaced or added keys are env-from-metadata changes there): a container reading it keeps the
// value it started with until it restarts for another reason. (While a Pod of an OpenKruise
// workload is not InPlaceUpdateReady, inplace-daemon restarts any container whose env no longer
// matches the Pod's metadata, which then covers it.)
func (s *UpdateSpec) addMetadataChange(containers []corev1.Container, setLabels, setAnnotations map[string]string, removeLabels, removeAnnotations []string) {
	md := &MetadataChange{}
	refMeta := func(c string) metav1.ObjectMeta {
		if s.ContainerRefMetadata == nil {
			s.ContainerRefMetadata = map[string]metav1.ObjectMeta{}
		}
		return s.ContainerRefMetadata[c]
	}
	set := func(path string, values map[string]string, into *map[string]string) {
		for _, k := range sortedKeys(values) {
			read := false
			for i := range containers {
				if !readsMetadata(&containers[i], path, k) {
					continue
				}
				read = true
				meta := refMeta(containers[i].Name)
				if path == labelsFieldPath {
					setMap(&meta.Labels, k, values[k])
				} else {
					setMap(&meta.Annotations, k, values[k])
				}
				s.ContainerRefMetadata[containers[i].Name] = meta
			}
			if !read {
				setMap(into, k, values[k])
			}
		}
	}
	set(labelsFieldPath, setLabels, &md.Labels)
	set(annotationsFieldPath, setAnnotations, &md.Annotations)
	md.RemoveLabels = append(md.RemoveLabels, removeLabels...)
	md.RemoveAnnotations = append(md.RemoveAnnotations, removeAnnotations...)
	if !md.isEmpty() {
		s.Metadata = md
	}
	s.UpdateEnvFromMetadata = len(s.EnvRestartContainers()) > 0
}

// diffStrings returns the keys of b whose value is not in a, and the keys of a not in b (sorted).
func diffStrings(a, b map[string]string) (map[string]string, []string) {
	var set map[string]string
	var removed []string
	for k, v := range b {
		if old, ok := a[k]; !ok || old != v {
			setMap(&set, k, v)
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			removed = append(removed, k)
		}
	}
	slices.Sort(removed)
	return set, removed
}

// firstDifference compares the JSON of a and b and returns the field path of the first
// difference, in sorted key order, or "" when they are equal.
func firstDifference(a, b any) (string, error) {
	var ja, jb any
	for _, x := range []struct {
		v   any
		out *any
	}{{a, &ja}, {b, &jb}} {
		raw, err := json.Marshal(x.v)
		if err != nil {
			return "", err
		}
		if err := json.Unmarshal(raw, x.out); err != nil {
			return "", err
		}
	}
	return jsonDifference("", ja, jb), nil
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func jsonDifference(path string, a, b any) string {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return path
		}
		keys := map[string]bool{}
		for k := range av {
			keys[k] = true
		}
		for k := range bv {
			keys[k] = true
		}
		for _, k := range sortedKeys(keys) {
			child := path + "[" + k + "]"
			if identifier.MatchString(k) {
				child = k
				if path != "" {
					child = path + "." + k
				}
			}
			x, inA := av[k]
			y, inB := bv[k]
			if inA != inB {
				return child
			}
			if d := jsonDifference(child, x, y); d != "" {
				return d
			}
		}
		return ""
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return path
		}
		for i := range av {
			if d := jsonDifference(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i]); d != "" {
				return d
			}
		}
		return ""
	default:
		if a != b {
			return path
		}
		return ""
	}
}

func setMap[V any](m *map[string]V, k string, v V) {
	if *m == nil {
		*m = map[string]V{}
	}
	(*m)[k] = v
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
