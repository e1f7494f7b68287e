package cloneset

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/workload/history"
	"github.com/inplace-dev/inplace/pkg/workload/predownload"
)

// preDownload takes the CloneSet's next image pre-download step, from the status just computed:
// its rollout is over once the status names the update revision current. It says when to look
// again if it waits for the cache.
func (c *Controller) preDownload(ctx context.Context, cs *v1alpha1.CloneSet, status *v1alpha1.CloneSetStatus, revs history.Revisions) (time.Duration, error) {
	if c.Predl == nil || cs.DeletionTimestamp != nil {
		// A CloneSet being deleted takes its jobs with it (garbage collection).
		return 0, nil
	}
	current := revs.Current
	if status.CurrentRevision == revs.Update.Name {
		current = revs.Update
	}
	return c.Predl.Sync(ctx, cache.MetaObjectToName(cs).String(), preDownloadRollout(cs, status, current, revs))
}

// preDownloadRollout is what package predownload reads of the CloneSet. Updated ready Pods count
// from the status only when it is about the same update revision.
func preDownloadRollout(cs *v1alpha1.CloneSet, status *v1alpha1.CloneSetStatus, current *appsv1.ControllerRevision, revs history.Revisions) predownload.Rollout {
	r := predownload.Rollout{
		Owner:          cs,
		OwnerRef:       *controllerRef(cs),
		Selector:       cs.Spec.Selector,
		Template:       &cs.Spec.Template,
		InPlace:        inPlaceStrategy(cs.Spec.UpdateStrategy.Type),
		Replicas:       int(ptr.Deref(cs.Spec.Replicas, 1)),
		Partition:      int(partition(cs)),
		MaxUnavailable: preDownloadMaxUnavailable(cs),
		Current:        current,
		Update:         revs.Update,
	}
	if status.UpdateRevision == revs.Update.Name {
		r.UpdatedReady = int(status.UpdatedReadyReplicas)
	}
	return r
}

func inPlaceStrategy(t v1alpha1.CloneSetUpdateStrategyType) bool {
	return t == v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType || t == v1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
}

// preDownloadMaxUnavailable is updateStrategy.maxUnavailable (default 20%) scaled to replicas
// rounding down, as OpenKruise scales it to decide whether every Pod updates at once (the rolling
// update itself rounds up: updateLimitsOf).
func preDownloadMaxUnavailable(cs *v1alpha1.CloneSet) int {
	mu := intstr.FromString(v1alpha1.DefaultCloneSetMaxUnavailable)
	if cs.Spec.UpdateStrategy.MaxUnavailable != nil {
		mu = *cs.Spec.UpdateStrategy.MaxUnavailable
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&mu, int(ptr.Deref(cs.Spec.Replicas, 1)), false)
	if err != nil {
		return 0 // validation refuses it; counted as not all at once
	}
	return n
}
