package sidecarcontrol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// RevisionSetLabel labels a SidecarSet's ControllerRevisions with its name (OpenKruise's
// kruise.io/sidecarset-name). They live in inplace's own namespace, since a SidecarSet is
// cluster-scoped.
const RevisionSetLabel = "kruise.io/sidecarset-name"

// WantsRevision is true when the SidecarSet injects a recorded revision rather than its spec.
func WantsRevision(set *appsv1alpha1.SidecarSet) bool {
	r := set.Spec.InjectionStrategy.Revision
	return r != nil && (r.RevisionName != nil || r.CustomVersion != nil)
}

// PickRevision finds, among the SidecarSet's ControllerRevisions, the one its
// injectionStrategy.revision names: by revisionName, else the newest (highest .revision) labelled
// apps.kruise.io/sidecarset-custom-version: <customVersion>. The error says what was looked for.
func PickRevision(set *appsv1alpha1.SidecarSet, revisions []appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	want := set.Spec.InjectionStrategy.Revision
	var found *appsv1.ControllerRevision
	for i := range revisions {
		r := &revisions[i]
		if r.Labels[RevisionSetLabel] != set.Name {
			continue
		}
		switch {
		case want.RevisionName != nil:
			if r.Name == *want.RevisionName {
				return r, nil
			}
		case want.CustomVersion != nil:
			if r.Labels[appsv1alpha1.SidecarSetCustomVersionLabel] == *want.CustomVersion && (found == nil || r.Revision > found.Revision) {
				found = r
			}
		}
	}
	if found != nil {
		return found, nil
	}
	if want.RevisionName != nil {
		return nil, fmt.Errorf("spec.injectionStrategy.revision.revisionName: no ControllerRevision %s of SidecarSet %s", *want.RevisionName, set.Name)
	}
	return nil, fmt.Errorf("spec.injectionStrategy.revision.customVersion: no ControllerRevision of SidecarSet %s labelled %s=%s",
		set.Name, appsv1alpha1.SidecarSetCustomVersionLabel, *want.CustomVersion)
}

// Restore returns the SidecarSet as the revision recorded it: the revision's data, a strategic
// merge patch of spec (containers, initContainers, volumes, imagePullSecrets, patchPodMetadata,
// as OpenKruise records them), applied to the SidecarSet; the hash annotations the revision
// carries (computed from the restored spec when it has none); status.latestRevision its name.
func Restore(set *appsv1alpha1.SidecarSet, rev *appsv1.ControllerRevision) (*appsv1alpha1.SidecarSet, error) {
	current, err := json.Marshal(set)
	if err != nil {
		return nil, err
	}
	patched, err := strategicpatch.StrategicMergePatch(current, rev.Data.Raw, &appsv1alpha1.SidecarSet{})
	if err != nil {
		return nil, fmt.Errorf("applying ControllerRevision %s to SidecarSet %s: %w", rev.Name, set.Name, err)
	}
	out := &appsv1alpha1.SidecarSet{}
	if err := json.Unmarshal(patched, out); err != nil {
		return nil, fmt.Errorf("reading SidecarSet %s at ControllerRevision %s: %w", set.Name, rev.Name, err)
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	for key, hash := range map[string]func(*appsv1alpha1.SidecarSet) (string, error){
		appsv1alpha1.SidecarSetHashAnnotation:             Hash,
		appsv1alpha1.SidecarSetHashWithoutImageAnnotation: HashWithoutImage,
	} {
		if v := rev.Annotations[key]; v != "" {
			out.Annotations[key] = v
			continue
		}
		v, err := hash(out)
		if err != nil {
			return nil, err
		}
		out.Annotations[key] = v
	}
	out.Status.LatestRevision = rev.Name
	return out, nil
}

// ForCreation chooses which of the SidecarSet (current) and its recorded revision (restored) a Pod
// being created gets, as OpenKruise does: the revision, except with policy Partial while the
// upgrade is not paused, where a Pod that spec.updateStrategy.selector selects (or, without a
// selector, any Pod) gets the revision with the probability of a percentage partition (none with
// an integer partition) and the current spec otherwise. random returns a number in [0, 1).
func ForCreation(current, restored *appsv1alpha1.SidecarSet, pod labels.Labels, random func() float64) (*appsv1alpha1.SidecarSet, error) {
	strategy := current.Spec.UpdateStrategy
	if strategy.Paused || current.Spec.InjectionStrategy.Revision.Policy != appsv1alpha1.PartialSidecarSetInjectRevisionPolicy {
		return restored, nil
	}
	if strategy.Selector != nil {
		selector, err := metav1.LabelSelectorAsSelector(strategy.Selector)
		if err != nil {
			return nil, fmt.Errorf("spec.updateStrategy.selector: %w", err)
		}
		if !selector.Matches(pod) {
			return restored, nil
		}
	}
	p := strategy.Partition
	if p == nil || p.Type == intstr.Int {
		return current, nil
	}
	percent, err := intstr.GetScaledValueFromIntOrPercent(p, 100, false)
	if err != nil || !strings.HasSuffix(p.StrVal, "%") {
		return nil, fmt.Errorf("spec.updateStrategy.partition: %q is not a percentage", p.StrVal)
	}
	if random() < float64(percent)/100 {
		return restored, nil
	}
	return current, nil
}

// RevisionLister lists the ControllerRevisions of one SidecarSet (labelled RevisionSetLabel).
type RevisionLister func(ctx context.Context, setName string) ([]appsv1.ControllerRevision, error)

// AtRevisions returns sets with every SidecarSet that injects a recorded revision replaced by the
// version a Pod with these labels gets (see ForCreation). A revision that cannot be read or found
// is not fatal: that SidecarSet is injected at its current spec, and a warning says so. list nil
// means revisions cannot be read here.
func AtRevisions(ctx context.Context, sets []*appsv1alpha1.SidecarSet, pod labels.Labels, list RevisionLister,
	random func() float64) ([]*appsv1alpha1.SidecarSet, []string) {
	out := make([]*appsv1alpha1.SidecarSet, len(sets))
	var warnings []string
	for i, set := range sets {
		out[i] = set
		if !WantsRevision(set) {
			continue
		}
		chosen, err := atRevision(ctx, set, pod, list, random)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("SidecarSet %s injected at its current spec: %v", set.Name, err))
			continue
		}
		out[i] = chosen
	}
	return out, warnings
}

func atRevision(ctx context.Context, set *appsv1alpha1.SidecarSet, pod labels.Labels, list RevisionLister,
	random func() float64) (*appsv1alpha1.SidecarSet, error) {
	if list == nil {
		return nil, errors.New("its ControllerRevisions cannot be read here (standalone mode)")
	}
	revisions, err := list(ctx, set.Name)
	if err != nil {
		return nil, fmt.Errorf("listing its ControllerRevisions: %w", err)
	}
	rev, err := PickRevision(set, revisions)
	if err != nil {
		return nil, err
	}
	restored, err := Restore(set, rev)
	if err != nil {
		return nil, err
	}
	return ForCreation(set, restored, pod, random)
}

// RevisionData is what a ControllerRevision of the SidecarSet stores, as OpenKruise records it: a
// strategic merge patch {"spec":{"$patch":"replace", "containers", "initContainers", "volumes",
// "imagePullSecrets", "patchPodMetadata"}} (absent fields as null) that Restore applies. Keys are
// sorted, so equal specs give equal bytes.
func RevisionData(set *appsv1alpha1.SidecarSet) ([]byte, error) {
	raw, err := json.Marshal(&set.Spec)
	if err != nil {
		return nil, err
	}
	spec := map[string]any{}
	if err := json.Unmarshal(raw, &spec); err != nil {
		return nil, err
	}
	recorded := map[string]any{"$patch": "replace"}
	for _, k := range []string{"volumes", "containers", "initContainers", "imagePullSecrets", "patchPodMetadata"} {
		recorded[k] = spec[k]
	}
	return json.Marshal(map[string]any{"spec": recorded})
}
