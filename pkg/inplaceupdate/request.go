package inplaceupdate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// reservedAnnotations are the annotations only this engine and the daemon write.
var reservedAnnotations = map[string]bool{
	pub.InPlaceUpdateStateKey:    true,
	pub.InPlaceUpdateStateKeyOld: true,
	pub.InPlaceUpdateGraceKey:    true,
	pub.InPlaceUpdateGraceKeyOld: true,
	pub.RuntimeContainerMetaKey:  true,
	// The SidecarSet upgrade's state and hashes: written by injection and sidecar upgrades.
	pub.SidecarSetInPlaceUpdateStateKey: true,
	pub.SidecarSetHashKey:               true,
	pub.SidecarSetHashWithoutImageKey:   true,
}

// SpecFromRequest checks a pods/inplaceupdate request against the live Pod and returns the
// UpdateSpec to Begin (the same CalculateSpec would build for the same change). It expects a body
// that apps validation (ValidateInPlaceUpdate) has accepted. Requested values the Pod already has
// are left out, except labels and annotations a container reads through env in a request for a
// new revision (they stay in ContainerRefMetadata, see below); requested resources are merged
// over the container's current ones.
//
// Errors:
//   - *PodNotUpdatableError (errors.Is ErrPodNotUpdatable): the Pod is being deleted, has
//     terminated, or is not scheduled;
//   - *InProgressError (errors.Is ErrInProgress): an in-place update of another revision is in
//     its grace period, or one of the same revision with other changes, or either of the two
//     revisions is unnamed, is in progress — answer 409 (an unfinished update of another named
//     revision is superseded);
//   - *InvalidRequestError: a container the Pod does not have (spec.containers[i].name), an init
//     container (spec.containers[i].image / .resources; a SidecarSet's upgrade may change its
//     native sidecars, see sidecar.go), a resize that changes the Pod's QoS
//     class or removes or changes a resource that cannot be resized, a reserved label or
//     annotation, or a request that changes nothing — answer 422.
//
// Repeating a request for the revision the Pod's state already has, while that update runs or
// after it completed, returns an empty spec of that revision, which Begin answers without change.
func SpecFromRequest(pod *corev1.Pod, req *apps.InPlaceUpdate) (*UpdateSpec, error) {
	if err := checkPodUpdatable(pod); err != nil {
		return nil, err
	}
	if req.Spec.SidecarSet != nil {
		return sidecarSpecFromRequest(pod, req)
	}
	in := &req.Spec
	st, hasState, err := readState(pod)
	if err != nil {
		// A state that does not decode is overwritten by the new update.
		st, hasState = nil, false
	}
	grace, inGrace, err := readGrace(pod)
	if err != nil {
		grace, inGrace = nil, false
	}
	inProgress := inGrace || (hasState && !st.completed())
	if inProgress {
		current := ""
		if hasState {
			current = st.Revision
		} else {
			current = grace.Revision
		}
		switch {
		case current == in.Revision:
		case !inGrace && in.Revision != "" && current != "":
			// A named revision supersedes the unfinished update of another one, as OpenKruise's
			// CloneSet does: an update that cannot finish (the kubelet finds its resize
			// Infeasible) must not hold the Pod forever. The new update starts afresh from the
			// live Pod (Begin replaces the state); a grace period still running is not cut short.
			inProgress = false
		default:
			return nil, &InProgressError{Revision: current, Requested: in.Revision}
		}
	}
	var pend *pending
	if inProgress {
		pend = pendingOf(st, grace)
	}

	spec := &UpdateSpec{Revision: in.Revision, GraceSeconds: in.GracePeriodSeconds, StayInService: in.StayInService}
	var errs field.ErrorList
	specPath := field.NewPath("spec")
	resized := pod.Spec.DeepCopy()
	var firstResized *field.Path
	for i := range in.Containers {
		rc := &in.Containers[i]
		p := specPath.Child("containers").Index(i)
		c := FindContainer(pod.Spec.Containers, rc.Name)
		if c == nil {
			if FindContainer(pod.Spec.InitContainers, rc.Name) != nil {
				what := p.Child("image")
				if rc.Image == "" {
					what = p.Child("resources")
				}
				errs = append(errs, field.Forbidden(what, fmt.Sprintf("%q is an init container: init containers cannot be updated in place", rc.Name)))
			} else {
				errs = append(errs, field.NotFound(p.Child("name"), rc.Name))
			}
			continue
		}
		if rc.Image != "" && rc.Image != c.Image && !pend.hasImage(rc.Name, rc.Image) {
			setMap(&spec.ContainerImages, rc.Name, rc.Image)
		}
		if rc.Resources == nil {
			continue
		}
		if bad := notResizable(p.Child("resources"), rc.Resources); len(bad) > 0 {
			errs = append(errs, bad...)
			continue
		}
		// Merged over the current resources, nothing is removed and only cpu and memory change:
		// diffResources cannot refuse.
		merged := mergeResources(c.Resources, *rc.Resources)
		changed, want, _ := diffResources(p.Child("resources"), c.Resources, merged)
		FindContainer(resized.Containers, rc.Name).Resources = merged
		if changed && !pend.hasResources(rc.Name, want) {
			setMap(&spec.ContainerResources, rc.Name, want)
		}
		if changed && firstResized == nil {
			firstResized = p.Child("resources")
		}
	}
	if firstResized != nil {
		if from, to := PodQOSClass(pod), ComputeQOSClass(resized); from != to {
			errs = append(errs, field.Forbidden(firstResized, fmt.Sprintf(
				"the new resources would change the Pod's QoS class from %s to %s: resources can change in place only within the same QoS class", from, to)))
		}
	}

	// A label or annotation the Pod already has with the requested value is left out, unless a
	// container reads it through env and the request is for another revision than the Pod's
	// update state: then the key stays an env-from-metadata change, as in OpenKruise, which
	// derives those from the template diff and never looks at the live Pod. A value edited by
	// hand before the template changed has not reached the container's env (nothing restarts
	// it); the daemon restarts the container only if its env indeed differs, and the update
	// completes at once otherwise. A repeated request (same revision as the state's) keeps the
	// shortcut, so that it stays a harmless no-op.
	repeat := hasState && st.Revision == in.Revision
	alreadySet := func(current map[string]string, path, k, v string) bool {
		if !hasValue(current, k, v) {
			return false
		}
		if repeat {
			return true
		}
		for i := range pod.Spec.Containers {
			if readsMetadata(&pod.Spec.Containers[i], path, k) {
				return false
			}
		}
		return true
	}
	var setLabels, setAnnotations map[string]string
	var removeLabels, removeAnnotations []string
	if md := in.Metadata; md != nil {
		mdPath := specPath.Child("metadata")
		for _, k := range sortedKeys(md.Labels) {
			v := md.Labels[k]
			switch {
			case k == RevisionLabelKey:
				errs = append(errs, field.Forbidden(mdPath.Child("labels").Key(k), "set spec.revision instead"))
			case alreadySet(pod.Labels, labelsFieldPath, k, v) || pend.hasLabel(k, v):
			default:
				setMap(&setLabels, k, v)
			}
		}
		for _, k := range sortedKeys(md.Annotations) {
			v := md.Annotations[k]
			switch {
			case reservedAnnotations[k]:
				errs = append(errs, field.Forbidden(mdPath.Child("annotations").Key(k), "this annotation is written by inplace itself"))
			case alreadySet(pod.Annotations, annotationsFieldPath, k, v) || pend.hasAnnotation(k, v):
			default:
				setMap(&setAnnotations, k, v)
			}
		}
		for i, k := range md.RemoveLabels {
			switch _, has := pod.Labels[k]; {
			case k == RevisionLabelKey:
				errs = append(errs, field.Forbidden(mdPath.Child("removeLabels").Index(i), "the revision label cannot be removed"))
			case has && !pend.removesLabel(k):
				removeLabels = append(removeLabels, k)
			}
		}
		for i, k := range md.RemoveAnnotations {
			switch _, has := pod.Annotations[k]; {
			case reservedAnnotations[k]:
				errs = append(errs, field.Forbidden(mdPath.Child("removeAnnotations").Index(i), "this annotation is written by inplace itself"))
			case has && !pend.removesAnnotation(k):
				removeAnnotations = append(removeAnnotations, k)
			}
		}
	}
	spec.addMetadataChange(pod.Spec.Containers, setLabels, setAnnotations, removeLabels, removeAnnotations)
	for _, k := range sortedKeys(in.CompletionLabels) {
		if k == RevisionLabelKey {
			errs = append(errs, field.Forbidden(specPath.Child("completionLabels").Key(k), "set spec.revision instead"))
			continue
		}
		setMap(&spec.CompletionLabels, k, in.CompletionLabels[k])
	}

	if len(errs) > 0 {
		return nil, &InvalidRequestError{Errs: errs}
	}
	if spec.IsEmpty() {
		switch {
		case hasState && st.Revision == in.Revision && (in.Revision != "" || inProgress):
			// The same request again: nothing more to do.
			return &UpdateSpec{Revision: in.Revision}, nil
		case in.Revision != "" && pod.Labels[RevisionLabelKey] != in.Revision:
			// The Pod already has the requested content; only its revision label changes.
			return spec, nil
		default:
			return nil, &InvalidRequestError{Errs: field.ErrorList{field.Invalid(specPath, "",
				"the request changes nothing: the pod already has every requested image, resource, label and annotation")}}
		}
	}
	if inProgress {
		return nil, &InProgressError{Revision: in.Revision, Requested: in.Revision}
	}
	if c, set := sidecarContainersBusy(pod, spec.containerNames(), ""); c != "" {
		return nil, &ContainerBusyError{Container: c, By: fmt.Sprintf("SidecarSet %s's upgrade", set)}
	}
	return spec, nil
}

// sidecarSpecFromRequest is SpecFromRequest for a SidecarSet's upgrade of its sidecars
// (spec.sidecarSet set): the Pod must have been injected by that SidecarSet, every container must
// be one of its sidecars (or of their hot-upgrade pairs) among the Pod's containers or native
// sidecars (init containers with restartPolicy Always; see sidecar.go), and none may
// be changing in another in-place update (409). An unfinished upgrade of the same SidecarSet to
// another hash is superseded (a new image fixes one that does not start); the same request again
// returns an empty spec, which Begin answers without change.
func sidecarSpecFromRequest(pod *corev1.Pod, req *apps.InPlaceUpdate) (*UpdateSpec, error) {
	in := &req.Spec
	specPath := field.NewPath("spec")
	hashes, err := SidecarSetHashes(pod, pub.SidecarSetHashKey)
	if err != nil {
		return nil, &InvalidRequestError{Errs: field.ErrorList{field.Invalid(specPath.Child("sidecarSet", "name"), in.SidecarSet.Name, err.Error())}}
	}
	entry, injected := hashes[in.SidecarSet.Name]
	if !injected {
		return nil, &InvalidRequestError{Errs: field.ErrorList{field.Invalid(specPath.Child("sidecarSet", "name"), in.SidecarSet.Name,
			fmt.Sprintf("pod %s was not injected by this SidecarSet (annotation %s has no entry for it)", pod.Name, pub.SidecarSetHashKey))}}
	}
	sidecars := map[string]bool{}
	for _, name := range entry.SidecarList {
		one, two := name+"-1", name+"-2" // a hot-upgrade pair
		sidecars[name], sidecars[one], sidecars[two] = true, true, true
	}
	spec := &UpdateSpec{
		Revision:   in.Revision,
		SidecarSet: &SidecarSetUpdate{Name: in.SidecarSet.Name, ControllerRevision: in.SidecarSet.ControllerRevision, LeaveService: in.SidecarSet.LeaveService},
	}
	var errs field.ErrorList
	for i := range in.Containers {
		rc := &in.Containers[i]
		p := specPath.Child("containers").Index(i)
		c, _ := sidecarContainer(pod, rc.Name)
		switch {
		case !sidecars[rc.Name]:
			errs = append(errs, field.Invalid(p.Child("name"), rc.Name, fmt.Sprintf("not a sidecar container of SidecarSet %s in this pod (its sidecars: %s)",
				in.SidecarSet.Name, strings.Join(entry.SidecarList, ", "))))
		case c == nil && FindContainer(pod.Spec.InitContainers, rc.Name) != nil:
			errs = append(errs, field.Forbidden(p.Child("image"), fmt.Sprintf(
				"%q is a plain init container (no restartPolicy Always): it ran before the app containers and never runs again, so it cannot be upgraded in place; only native sidecars can", rc.Name)))
		case c == nil:
			errs = append(errs, field.NotFound(p.Child("name"), rc.Name))
		case rc.Image != c.Image:
			setMap(&spec.ContainerImages, rc.Name, rc.Image)
		}
	}
	errs = append(errs, sidecarAnnotations(pod, in, sidecars, spec)...)
	if len(errs) > 0 {
		return nil, &InvalidRequestError{Errs: errs}
	}
	names := spec.containerNames()
	if c := workloadContainersBusy(pod, names); c != "" {
		return nil, &ContainerBusyError{Container: c, By: "the workload's in-place update"}
	}
	if c, set := sidecarContainersBusy(pod, names, in.SidecarSet.Name); c != "" {
		return nil, &ContainerBusyError{Container: c, By: fmt.Sprintf("SidecarSet %s's upgrade", set)}
	}
	return spec, nil
}

// sidecarAnnotations checks the annotations of a SidecarSet upgrade against the Pod: a hot
// upgrade's version annotation names a container of this SidecarSet's pairs, its working-container
// record is a JSON object of names; any other is the SidecarSet's patchPodMetadata, and may not be
// one this engine writes itself. Those that change go into spec.Metadata. Like the hot upgrade's,
// they are written at once and restart nothing by themselves (a sidecar reading one through env
// sees it when the upgrade restarts it, as in OpenKruise).
func sidecarAnnotations(pod *corev1.Pod, in *apps.InPlaceUpdateSpec, sidecars map[string]bool, spec *UpdateSpec) field.ErrorList {
	if in.Metadata == nil {
		return nil
	}
	var errs field.ErrorList
	p := field.NewPath("spec", "metadata", "annotations")
	for _, k := range sortedKeys(in.Metadata.Annotations) {
		v := in.Metadata.Annotations[k]
		switch {
		case reservedAnnotations[k]:
			errs = append(errs, field.Forbidden(p.Key(k), "this annotation is written by inplace itself"))
			continue
		case k == pub.SidecarSetWorkingHotUpgradeContainerKey:
			working := map[string]string{}
			if err := json.Unmarshal([]byte(v), &working); err != nil {
				errs = append(errs, field.Invalid(p.Key(k), v, "must be a JSON object of SidecarSet container name to the Pod container of its pair that works, e.g. {\"mesh\":\"mesh-1\"}"))
				continue
			}
		case pub.IsSidecarSetHotUpgradeAnnotation(k):
			container := strings.TrimPrefix(strings.TrimPrefix(k, pub.SidecarSetVersionAltAnnotationPrefix), pub.SidecarSetVersionAnnotationPrefix)
			if !sidecars[container] || FindContainer(pod.Spec.Containers, container) == nil {
				errs = append(errs, field.Invalid(p.Key(k), v, fmt.Sprintf("%q is not a hot-upgrade container of SidecarSet %s in this pod", container, in.SidecarSet.Name)))
				continue
			}
		}
		// Any other annotation is the SidecarSet's spec.patchPodMetadata.
		if cur, ok := pod.Annotations[k]; !ok || cur != v {
			if spec.Metadata == nil {
				spec.Metadata = &MetadataChange{}
			}
			setMap(&spec.Metadata.Annotations, k, v)
		}
	}
	return errs
}

// notResizable refuses requested resources other than cpu and memory.
func notResizable(fldPath *field.Path, res *corev1.ResourceRequirements) field.ErrorList {
	var errs field.ErrorList
	for _, part := range []struct {
		name string
		list corev1.ResourceList
	}{{"requests", res.Requests}, {"limits", res.Limits}} {
		for _, name := range sortedResourceNames(part.list) {
			if !resizable[name] {
				errs = append(errs, field.NotSupported(fldPath.Child(part.name).Key(string(name)), name,
					[]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}))
			}
		}
	}
	return errs
}

func hasValue(m map[string]string, k, v string) bool {
	cur, ok := m[k]
	return ok && cur == v
}

// pending are the values an in-progress update has yet to apply (grace period, later batches,
// resizes not yet reported). A nil *pending has none.
type pending struct {
	images      map[string]string
	resources   map[string]corev1.ResourceRequirements
	labels      map[string]string
	annotations map[string]string
	// removedLabels and removedAnnotations are keys a grace period has yet to remove.
	removedLabels, removedAnnotations []string
}

func pendingOf(st *state, grace *UpdateSpec) *pending {
	p := &pending{}
	addMeta := func(labels, annotations map[string]string) {
		for k, v := range labels {
			setMap(&p.labels, k, v)
		}
		for k, v := range annotations {
			setMap(&p.annotations, k, v)
		}
	}
	if grace != nil {
		for c, img := range grace.ContainerImages {
			setMap(&p.images, c, img)
		}
		for c, r := range grace.ContainerResources {
			setMap(&p.resources, c, r)
		}
		if grace.Metadata != nil {
			addMeta(grace.Metadata.Labels, grace.Metadata.Annotations)
			p.removedLabels = grace.Metadata.RemoveLabels
			p.removedAnnotations = grace.Metadata.RemoveAnnotations
		}
		for _, m := range grace.ContainerRefMetadata {
			addMeta(m.Labels, m.Annotations)
		}
	}
	if st != nil {
		for c, img := range st.NextContainerImages {
			setMap(&p.images, c, img)
		}
		for c, r := range st.NextContainerResources {
			setMap(&p.resources, c, r)
		}
		for c, r := range st.ContainerResources {
			setMap(&p.resources, c, r)
		}
		for _, m := range st.NextContainerRefMetadata {
			addMeta(m.Labels, m.Annotations)
		}
	}
	return p
}

func (p *pending) hasImage(c, image string) bool {
	return p != nil && p.images[c] == image
}

func (p *pending) hasResources(c string, want corev1.ResourceRequirements) bool {
	if p == nil {
		return false
	}
	r, ok := p.resources[c]
	return ok && covers(r, want) && covers(want, r)
}

func (p *pending) hasLabel(k, v string) bool {
	return p != nil && hasValue(p.labels, k, v)
}

func (p *pending) hasAnnotation(k, v string) bool {
	return p != nil && hasValue(p.annotations, k, v)
}

func (p *pending) removesLabel(k string) bool {
	return p != nil && slices.Contains(p.removedLabels, k)
}

func (p *pending) removesAnnotation(k string) bool {
	return p != nil && slices.Contains(p.removedAnnotations, k)
}
