// Package manager runs inplace-controller: it connects to the cluster, elects one leader among its
// replicas (Lease), serves health and metrics, and runs every controller while it leads.
package manager

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/inplace-dev/inplace/pkg/features"
)

// DefaultNamespace is inplace's namespace when $POD_NAMESPACE does not say (as inplace-apiserver's).
const DefaultNamespace = "inplace-system"

// Options are the settings of inplace-controller.
type Options struct {
	// Kubeconfig is the kubeconfig file; empty means in-cluster configuration.
	Kubeconfig string
	// LeaderElect makes replicas elect one leader through a Lease; off only for a single replica.
	LeaderElect bool
	// LeaderElectionNamespace and LeaderElectionName name the Lease.
	LeaderElectionNamespace string
	LeaderElectionName      string
	LeaseDuration           time.Duration
	RenewDeadline           time.Duration
	RetryPeriod             time.Duration
	// BindAddress serves /healthz, /readyz and /metrics over plain HTTP.
	BindAddress string
	// Profiling serves Go's profiles on BindAddress under /debug/pprof/.
	Profiling bool
	// RolloutMetrics exposes one gauge series per workload (CloneSet, Advanced StatefulSet and
	// DaemonSet) and Pod state on /metrics.
	RolloutMetrics bool
	// ImagePreDownload makes CloneSets and Advanced StatefulSets that update in place pre-download
	// their new images onto the nodes of the Pods still waiting for them (OpenKruise's
	// PreDownloadImageForInPlaceUpdate, which covers both).
	ImagePreDownload bool
	// Workers is how many keys each controller reconciles at once.
	Workers int
	// QPS and Burst limit the controller's requests to the API servers.
	QPS   float32
	Burst int
	// Namespace is inplace's own namespace, where the ControllerRevisions of the cluster-scoped
	// SidecarSets live (inplace-apiserver reads them there for injectionStrategy.revision).
	Namespace string
	// FeatureGates is --feature-gates: OpenKruise's gates (pkg/features), unknown names ignored.
	FeatureGates *features.Flag
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	ns := os.Getenv("POD_NAMESPACE")
	own := ns
	if ns == "" {
		ns = "kube-system"
		own = DefaultNamespace
	}
	return &Options{
		Namespace:               own,
		LeaderElect:             true,
		LeaderElectionNamespace: ns,
		LeaderElectionName:      "inplace-controller",
		LeaseDuration:           15 * time.Second,
		RenewDeadline:           10 * time.Second,
		RetryPeriod:             2 * time.Second,
		BindAddress:             "127.0.0.1:10390",
		ImagePreDownload:        true,
		Workers:                 4,
		QPS:                     50,
		Burst:                   100,
	}
}

// AddFlags adds the flags of inplace-controller.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig file; empty uses the in-cluster configuration.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect one active replica through a Lease before running controllers.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-elect-namespace", o.LeaderElectionNamespace, "Namespace of the leader election Lease (default $POD_NAMESPACE or kube-system).")
	fs.StringVar(&o.LeaderElectionName, "leader-elect-name", o.LeaderElectionName, "Name of the leader election Lease.")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "How long a lease holds without renewal before another replica may take over.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "How long the leader retries renewing before it gives up leading.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "How often replicas try to acquire or renew the lease.")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "host:port serving /healthz, /readyz and /metrics.")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "Also serve Go's profiles on --bind-address under /debug/pprof/ (for benchmarks; off by default).")
	fs.BoolVar(&o.RolloutMetrics, "rollout-metrics", o.RolloutMetrics,
		"Expose inplace_controller_cloneset_pods, inplace_controller_statefulset_pods and inplace_controller_daemonset_pods "+
			"(per workload: its Pods by state, e.g. desired, updated, ready, available) on /metrics. "+
			"Off by default: their series grow with the number of workloads.")
	fs.BoolVar(&o.ImagePreDownload, "cloneset-image-predownload", o.ImagePreDownload,
		"Pre-download the new images of a CloneSet's or Advanced StatefulSet's in-place rollout onto the nodes of its Pods not updated yet, "+
			"through ImagePullJobs owned by the workload (OpenKruise's PreDownloadImageForInPlaceUpdate); "+
			"--cloneset-image-predownload=false turns it off.")
	fs.IntVar(&o.Workers, "workers", o.Workers, "Keys each controller reconciles at once.")
	fs.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "Requests per second to the API servers.")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "Burst of requests to the API servers.")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "inplace's own namespace, where SidecarSets' ControllerRevisions live (default $POD_NAMESPACE or "+DefaultNamespace+"); must match inplace-apiserver's.")
	o.FeatureGates = features.AddFlag(fs)
}

// Validate reports every bad flag at once.
func (o *Options) Validate() error {
	var errs []error
	if o.LeaderElect {
		if o.LeaderElectionNamespace == "" || o.LeaderElectionName == "" {
			errs = append(errs, errors.New("--leader-elect-namespace and --leader-elect-name: required with --leader-elect"))
		}
		if o.LeaseDuration <= o.RenewDeadline {
			errs = append(errs, fmt.Errorf("--leader-elect-lease-duration (%s) must be longer than --leader-elect-renew-deadline (%s)", o.LeaseDuration, o.RenewDeadline))
		}
	}
	if _, _, err := net.SplitHostPort(o.BindAddress); err != nil {
		errs = append(errs, fmt.Errorf("--bind-address=%q: %w", o.BindAddress, err))
	}
	if o.Namespace == "" {
		errs = append(errs, errors.New("--namespace: required"))
	}
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("--workers=%d: must be at least 1", o.Workers))
	}
	return errors.Join(errs...)
}
