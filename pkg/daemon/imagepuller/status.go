package imagepuller

import (
	"slices"
	"strings"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// specTags are the tags the spec asks for, by image name and tag.
func specTags(spec *v1alpha1.NodeImageSpec) map[tagKey]v1alpha1.ImageTagSpec {
	out := map[tagKey]v1alpha1.ImageTagSpec{}
	for name, image := range spec.Images {
		for _, t := range image.Tags {
			out[tagKey{name, t.Tag}] = t
		}
	}
	return out
}

// tagStatus is the status reported for one tag, nil when none.
func tagStatus(status *v1alpha1.NodeImageStatus, k tagKey) *v1alpha1.ImageTagStatus {
	tags := status.ImageStatuses[k.image].Tags
	if i := slices.IndexFunc(tags, func(t v1alpha1.ImageTagStatus) bool { return t.Tag == k.tag }); i >= 0 {
		return &tags[i]
	}
	return nil
}

// buildStatus is the NodeImage status to report: for each tag of the spec, the status of its pull
// here (pulls), else the finished status of its version already reported (by an earlier run of
// this daemon), else nothing; tags no longer in the spec are dropped. The counts are OpenKruise's:
// desired is the tags of the spec, the others count the reported statuses by phase.
// firstSyncStatus is kept as it is.
func buildStatus(ni *v1alpha1.NodeImage, pulls map[tagKey]v1alpha1.ImageTagStatus) v1alpha1.NodeImageStatus {
	out := v1alpha1.NodeImageStatus{FirstSyncStatus: ni.Status.FirstSyncStatus, ImageStatuses: map[string]v1alpha1.ImageStatus{}}
	for name, image := range ni.Spec.Images {
		var tags []v1alpha1.ImageTagStatus
		for _, t := range image.Tags {
			out.Desired++
			k := tagKey{name, t.Tag}
			ts, ok := pulls[k]
			if !ok {
				old := tagStatus(&ni.Status, k)
				if old == nil || old.Version != t.Version || old.CompletionTime == nil {
					continue
				}
				ts = *old
			}
			tags = append(tags, ts)
			switch ts.Phase {
			case v1alpha1.ImagePhaseSucceeded:
				out.Succeeded++
			case v1alpha1.ImagePhaseFailed:
				out.Failed++
			case v1alpha1.ImagePhasePulling:
				out.Pulling++
			case v1alpha1.ImagePhaseWaiting:
				out.Waiting++
			}
		}
		if len(tags) == 0 {
			continue
		}
		slices.SortFunc(tags, func(a, b v1alpha1.ImageTagStatus) int { return strings.Compare(a.Tag, b.Tag) })
		out.ImageStatuses[name] = v1alpha1.ImageStatus{Tags: tags}
	}
	if len(out.ImageStatuses) == 0 {
		out.ImageStatuses = nil
	}
	return out
}
