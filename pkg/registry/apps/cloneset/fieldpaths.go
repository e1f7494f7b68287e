package cloneset

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
)

// Validation runs once, on the hub, whose update strategy is v1alpha1's: the rolling update's
// parameters sit right under spec.updateStrategy. v1beta1 has them under
// spec.updateStrategy.rollingUpdate, and scaleStrategy.enablePVCReuse where the hub has
// disablePVCReuse. errorPaths renames the fields of the errors of a v1beta1 request so that they
// name what the client sent.

// rollingUpdateFields are the hub's updateStrategy fields v1beta1 has under rollingUpdate.
var rollingUpdateFields = []string{
	"partition", "maxUnavailable", "maxSurge", "paused", "priorityStrategy", "scatterStrategy", "inPlaceUpdateStrategy",
}

// errorPaths rewrites the field paths of errs for a request of the given API version.
func errorPaths(version string, errs field.ErrorList) field.ErrorList {
	if version != v1beta1.SchemeGroupVersion.Version {
		return errs
	}
	out := make(field.ErrorList, len(errs))
	for i, e := range errs {
		c := *e
		c.Field = v1beta1Path(e.Field)
		out[i] = &c
	}
	return out
}

// v1beta1Path is the v1beta1 path of a field path of the hub.
func v1beta1Path(p string) string {
	const updateStrategy = "spec.updateStrategy."
	if rest, ok := strings.CutPrefix(p, updateStrategy); ok {
		for _, f := range rollingUpdateFields {
			if after, ok := strings.CutPrefix(rest, f); ok && (after == "" || after[0] == '.' || after[0] == '[') {
				return updateStrategy + "rollingUpdate." + rest
			}
		}
	}
	if p == "spec.scaleStrategy.disablePVCReuse" {
		return "spec.scaleStrategy.enablePVCReuse"
	}
	return p
}
