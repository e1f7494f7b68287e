package daemonset

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/workload/history"
	"github.com/inplace-dev/inplace/pkg/workload/predownload"
)

// preDownload takes the DaemonSet's next image pre-download step. As OpenKruise, it reads the
// status of the last sync: the rollout is over once it shows every desired node's Pod at the
// update revision, and partition and maxUnavailable scale to its desired nodes. It says when
// to look again if it waits for the cache.
func (c *Controller) preDownload(ctx context.Context, ds *v1alpha1.DaemonSet, revs history.Revisions, revisions []*appsv1.ControllerRevision) (time.Duration, error) {
	if c.Predl == nil || ds.DeletionTimestamp != nil {
		// A DaemonSet being deleted takes its jobs with it (garbage collection).
		return 0, nil
	}
	return c.Predl.Sync(ctx, cache.MetaObjectToName(ds).String(), preDownloadRollout(ds, revs, revisions))
}

// preDownloadRollout is what package predownload reads of the DaemonSet.
func preDownloadRollout(ds *v1alpha1.DaemonSet, revs history.Revisions, revisions []*appsv1.ControllerRevision) predownload.Rollout {
	desired := int(ds.Status.DesiredNumberScheduled)
	r := predownload.Rollout{
		Owner:     ds,
		OwnerRef:  *controllerRef(ds),
		Selector:  ds.Spec.Selector,
		Template:  &ds.Spec.Template,
		DaemonSet: true,
		Replicas:  desired,
		Update:    revs.Update,
		Done: ds.Status.UpdatedNumberScheduled == ds.Status.DesiredNumberScheduled &&
			ds.Status.DaemonSetHash == revs.Update.Name,
	}
	for _, rev := range revisions {
		if rev.Name != revs.Update.Name {
			r.Old = append(r.Old, rev)
		}
	}
	// As OpenKruise: partition rounds down, maxUnavailable (default 1) up.
	maxUnavailable := intstr.FromInt32(1)
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		if ru.Partition != nil {
			r.Partition, _ = intstr.GetScaledValueFromIntOrPercent(ru.Partition, desired, false)
		}
		if ru.MaxUnavailable != nil {
			maxUnavailable = *ru.MaxUnavailable
		}
	}
	r.MaxUnavailable, _ = intstr.GetScaledValueFromIntOrPercent(&maxUnavailable, desired, true)
	return r
}
