package statefulset

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/workload/history"
	"github.com/inplace-dev/inplace/pkg/workload/predownload"
)

// preDownload takes the StatefulSet's next image pre-download step (OpenKruise's
// PreDownloadImageForInPlaceUpdate, which covers Advanced StatefulSets as CloneSets). As
// OpenKruise, it reads the status of the last sync and runs before the Pods are touched: the
// rollout is over once the current revision is the update revision. It says when to look again
// if it waits for the cache.
func (c *Controller) preDownload(ctx context.Context, set *v1beta1.StatefulSet, revs history.Revisions) (time.Duration, error) {
	if c.Predl == nil || set.DeletionTimestamp != nil {
		// A StatefulSet being deleted takes its jobs with it (garbage collection).
		return 0, nil
	}
	return c.Predl.Sync(ctx, cache.MetaObjectToName(set).String(), preDownloadRollout(set, revs))
}

// preDownloadRollout is what package predownload reads of the StatefulSet, with OpenKruise's
// StatefulSet rules (statefulset_predownload_image.go): in place unless the update type is OnDelete
// or the podUpdatePolicy ReCreate; partition as it is (a number of Pods); maxUnavailable (default
// 1) scaled to replicas rounding down; updated ready Pods from the status only when it is about
// the same update revision.
func preDownloadRollout(set *v1beta1.StatefulSet, revs history.Revisions) predownload.Rollout {
	replicas := int(ptr.Deref(set.Spec.Replicas, 1))
	r := predownload.Rollout{
		Owner:    set,
		OwnerRef: *controllerRef(set),
		Selector: set.Spec.Selector,
		Template: &set.Spec.Template,
		Replicas: replicas,
		Current:  revs.Current,
		Update:   revs.Update,
	}
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && set.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
		r.InPlace = ru.PodUpdatePolicy == v1beta1.InPlaceIfPossiblePodUpdateStrategyType ||
			ru.PodUpdatePolicy == v1beta1.InPlaceOnlyPodUpdateStrategyType
		r.Partition = int(ptr.Deref(ru.Partition, 0))
		maxUnavailable := intstr.FromInt32(1)
		if ru.MaxUnavailable != nil {
			maxUnavailable = *ru.MaxUnavailable
		}
		// An invalid value (validation refuses it) counts as 0: not all at once.
		r.MaxUnavailable, _ = intstr.GetScaledValueFromIntOrPercent(&maxUnavailable, replicas, false)
	}
	if set.Status.UpdateRevision == revs.Update.Name {
		r.UpdatedReady = int(set.Status.UpdatedReadyReplicas)
	}
	return r
}
