// Command inplace-controller runs inplace's controllers (one active replica, elected through a
// Lease): the CloneSet controller (scaling, revisions, status), the controller that drives
// in-place updates of Pods to their end, the ContainerRecreateRequest controller, the SidecarSet
// controller (revisions, status, in-place upgrades of injected sidecars), the Advanced StatefulSet
// controller (ordinal Pods and claims, rolling updates in place), the Advanced DaemonSet controller
// (a Pod per eligible node, rolling updates in place or with a surge), image pre-pull (a NodeImage
// per node, ImagePullJobs writing their tags into them, ImageListPullJobs fanning out into
// ImagePullJobs), the one that releases the containers of Pods launching in order (their
// barrier ConfigMaps), and the one that keeps PodUnavailableBudgets' status.
package main

import (
	"os"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"
	"k8s.io/utils/clock"

	"github.com/inplace-dev/inplace/pkg/controller/cloneset"
	"github.com/inplace-dev/inplace/pkg/controller/containerrecreaterequest"
	"github.com/inplace-dev/inplace/pkg/controller/daemonset"
	"github.com/inplace-dev/inplace/pkg/controller/imagelistpulljob"
	"github.com/inplace-dev/inplace/pkg/controller/imagepulljob"
	"github.com/inplace-dev/inplace/pkg/controller/inplaceprogress"
	"github.com/inplace-dev/inplace/pkg/controller/launchrelease"
	"github.com/inplace-dev/inplace/pkg/controller/manager"
	"github.com/inplace-dev/inplace/pkg/controller/nodeimage"
	"github.com/inplace-dev/inplace/pkg/controller/podunavailablebudget"
	"github.com/inplace-dev/inplace/pkg/controller/sidecarset"
	"github.com/inplace-dev/inplace/pkg/controller/statefulset"
	"github.com/inplace-dev/inplace/pkg/features"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
	"github.com/inplace-dev/inplace/pkg/workload/rolloutmetrics"
)

// controllers are every controller inplace-controller runs.
var controllers = []reconcile.Init[*manager.Context]{
	{Name: cloneset.Name, New: func(cc *manager.Context) (reconcile.Runner, error) {
		sets := cc.InplaceInformers.Apps().V1alpha1().CloneSets()
		if cc.RolloutMetrics {
			rolloutmetrics.CloneSets.Expose(sets.Lister().List)
		}
		c, err := cloneset.New(cc.KubeClient, cc.InplaceClient, sets,
			cc.KubeInformers.Core().V1().Pods(), cc.KubeInformers.Core().V1().PersistentVolumeClaims(),
			cc.KubeInformers.Apps().V1().ControllerRevisions(), cc.Recorder)
		if err == nil && cc.ImagePreDownload {
			err = c.EnableImagePreDownload(cc.KubeClient.AppsV1(), cc.InplaceInformers.Apps().V1alpha1().ImagePullJobs())
		}
		return c, err
	}},
	{Name: inplaceprogress.Name, New: func(cc *manager.Context) (reconcile.Runner, error) {
		return inplaceprogress.New(cc.KubeClient, cc.KubeInformers.Core().V1().Pods(), cc.Recorder)
	}},
	{Name: containerrecreaterequest.Name, New: func(cc *manager.Context) (reconcile.Runner, error) {
		return containerrecreaterequest.New(cc.KubeClient, cc.InplaceClient,
			cc.InplaceInformers.Apps().V1alpha1().ContainerRecreateRequests(), cc.KubeInformers.Core().V1().Pods(),
			cc.Recorder, clock.RealClock{}, containerrecreaterequest.DefaultResponseTimeout)
	}},
	{Name: sidecarset.Name, New: func(cc *manager.Context) (reconcile.Runner, error) {
		return sidecarset.New(cc.KubeClient, cc.InplaceClient, cc.InplaceInformers.Apps().V1alpha1().SidecarSets(),
			cc.KubeInformers.Core().V1().Pods(), cc.KubeInformers.Core().V1().Namespaces(),
			cc.KubeInformers.Apps().V1().ControllerRevisions(), cc.Namespace, cc.Recorder)
	}},
	{Name: statefulset.Name, New: func(cc *manager.Context) (reconcile.Runner, error) {
		sets := cc.InplaceInformers.Apps().V1beta1().StatefulSets()
		if cc.RolloutMetrics {
			rolloutmetrics.StatefulSets.Expose(sets.Lister().List)
		}
		c, err := statefulset.New(cc.KubeClient, cc.InplaceClient, sets,
			cc.KubeInformers.Core().V1().Pods(), cc.KubeInformers.Core().V1().PersistentVolumeClaims(),
			cc.KubeInformers.Apps().V1().ControllerRevisions(), cc.Recorder)
		if err == nil {
			err = c.WatchClaimResize(cc.KubeInformers.Core().V1().PersistentVolumeClaims(), cc.KubeInformers.Storage().V1().StorageClasses())
		}
		// As OpenKruise, the CloneSet's switch (PreDownloadImageForInPlaceUpdate) covers StatefulSets.
		if err == nil && cc.ImagePreDownload {
			err = c.EnableImagePreDownload(cc.KubeClient.AppsV1(), cc.InplaceInformers.Apps().V1alpha1().ImagePullJobs())
		}
		return c, err
	}},
	{Name: daemonset.Name, New: func(cc *manager.Context) (reconcile.Runner, error) {
		sets := cc.InplaceInformers.Apps().V1alpha1().DaemonSets()
		if cc.RolloutMetrics {
			rolloutmetrics.DaemonSets.Expose(sets.Lister().List)
		}
		c, err := daemonset.New(cc.KubeClient, cc.InplaceClient, sets,
			cc.KubeInformers.Core().V1().Pods(), cc.KubeInformers.Core().V1().Nodes(),
			cc.KubeInformers.Apps().V1().ControllerRevisions(), cc.Recorder)
		if err != nil {
			return nil, err
		}
		// As OpenKruise, pre-download needs inplace-daemon (KruiseDaemon) to pull the images.
		if features.Enabled(features.PreDownloadImageForDaemonSetUpdate) && features.Enabled(features.KruiseDaemon) {
			err = c.EnableImagePreDownload(cc.KubeClient.AppsV1(), cc.InplaceInformers.Apps().V1alpha1().ImagePullJobs())
		}
		return c, err
	}},
	{Name: nodeimage.Name, New: func(cc *manager.Context) (reconcile.Runner, error) {
		apps := cc.InplaceInformers.Apps().V1alpha1()
		return nodeimage.New(cc.InplaceClient, cc.KubeInformers.Core().V1().Nodes(), apps.NodeImages(), apps.ImagePullJobs(),
			cc.Recorder, clock.RealClock{})
	}},
	{Name: imagepulljob.Name, New: func(cc *manager.Context) (reconcile.Runner, error) {
		apps, core := cc.InplaceInformers.Apps().V1alpha1(), cc.KubeInformers.Core().V1()
		return imagepulljob.New(cc.InplaceClient, apps.ImagePullJobs(), apps.NodeImages(), core.Nodes(), core.Pods(),
			cc.Recorder, clock.RealClock{})
	}},
	{Name: imagelistpulljob.Name, New: func(cc *manager.Context) (reconcile.Runner, error) {
		apps := cc.InplaceInformers.Apps().V1alpha1()
		return imagelistpulljob.New(cc.InplaceClient, apps.ImageListPullJobs(), apps.ImagePullJobs(), cc.Recorder, clock.RealClock{})
	}},
	{Name: podunavailablebudget.Name, New: func(cc *manager.Context) (reconcile.Runner, error) {
		// As OpenKruise: the budgets are kept while either of their gates is on.
		if !features.Enabled(features.PodUnavailableBudgetDeleteGate) && !features.Enabled(features.PodUnavailableBudgetUpdateGate) {
			return nil, nil
		}
		return podunavailablebudget.New(cc.KubeClient, cc.InplaceClient, cc.InplaceInformers.Policy().V1beta1().PodUnavailableBudgets(),
			cc.KubeInformers.Core().V1().Pods(),
			podunavailablebudget.Workloads{Kube: cc.KubeInformers.Apps().V1(), Inplace: cc.InplaceInformers.Apps()},
			cc.Recorder, clock.RealClock{})
	}},
	{Name: launchrelease.Name, New: func(cc *manager.Context) (reconcile.Runner, error) {
		return launchrelease.New(cc.KubeClient, cc.KubeInformers.Core().V1().Pods(), cc.Recorder)
	}},
}

func main() {
	o := manager.NewOptions()
	cmd := &cobra.Command{
		Use:   "inplace-controller",
		Short: "Runs inplace's controllers: CloneSets, and in-place updates of Pods to their end",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return manager.Run(cmd.Context(), o, controllers)
		},
	}
	o.AddFlags(cmd.Flags())
	cmd.SetContext(genericapiserver.SetupSignalContext())
	os.Exit(cli.Run(cmd))
}
