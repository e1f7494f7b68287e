package daemon

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/inplace-dev/inplace/pkg/daemon/containermeta"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
	"github.com/inplace-dev/inplace/pkg/daemon/inplaceready"
	"github.com/inplace-dev/inplace/pkg/daemon/launchbarrier"
	"github.com/inplace-dev/inplace/pkg/features"
	"github.com/inplace-dev/inplace/pkg/launchpriority"
)

// Options are the settings of inplace-daemon.
type Options struct {
	// Kubeconfig is the kubeconfig file; empty means in-cluster configuration.
	Kubeconfig string
	// NodeName is the node this daemon serves; only its Pods are watched.
	NodeName string
	// RuntimeEndpoint is the CRI socket (unix:///path); empty probes the well-known sockets.
	RuntimeEndpoint string
	// BindAddress serves /healthz, /readyz and /metrics over plain HTTP.
	BindAddress string
	// Profiling serves Go's profiles on BindAddress under /debug/pprof/.
	Profiling bool
	// Workers is how many keys each controller reconciles at once.
	Workers int
	// CRRWorkers is how many Pods' ContainerRecreateRequests are carried out at once.
	CRRWorkers int
	// MaxPullWorkers is how many images the node pulls at once for its NodeImage; 0 or less: no
	// limit.
	MaxPullWorkers int
	// MaxStopGracePeriod caps the grace period given to a container stopped for a restart.
	MaxStopGracePeriod time.Duration
	// EnvRestartDelay is how long a container must be seen needing an env-from-metadata restart
	// before it is stopped (see containermeta.Config.EnvRestartDelay).
	EnvRestartDelay time.Duration
	// InPlaceReadyPollInterval is how often the runtime is asked whether the new containers of an
	// in-place image update run, with kubelets that report no observedGeneration (see
	// inplaceready.Config.PollInterval).
	InPlaceReadyPollInterval time.Duration
	// LaunchBarrierAddress is the loopback host:port where the kubelet's postStart launch barrier
	// hooks are answered (package launchbarrier); empty: not answered.
	LaunchBarrierAddress string
	// LaunchBarrierMaxWait bounds how long a launch barrier hook waits.
	LaunchBarrierMaxWait time.Duration
	// QPS and Burst limit the daemon's requests to the API servers.
	QPS   float32
	Burst int
	// ClockSkew sets the daemon's clock off the machine's by this much (test only, hidden
	// --clock-skew): every wait the daemon measures must come out the same, since it only ever
	// compares times of its own clock.
	ClockSkew time.Duration
	// FeatureGates is --feature-gates: OpenKruise's gates (pkg/features), unknown names ignored.
	// The daemon accepts the string OpenKruise's chart gives kruise-daemon.
	FeatureGates *features.Flag
}

// NewOptions returns the defaults; the node name defaults to $NODE_NAME.
func NewOptions() *Options {
	return &Options{
		NodeName:                 os.Getenv("NODE_NAME"),
		BindAddress:              "127.0.0.1:10391",
		Workers:                  4,
		CRRWorkers:               32,
		MaxPullWorkers:           -1,
		MaxStopGracePeriod:       30 * time.Second,
		EnvRestartDelay:          containermeta.DefaultConfig().EnvRestartDelay,
		InPlaceReadyPollInterval: inplaceready.DefaultConfig().PollInterval,
		LaunchBarrierAddress:     launchbarrier.DefaultConfig().Address,
		LaunchBarrierMaxWait:     launchbarrier.DefaultConfig().MaxWait,
		QPS:                      20,
		Burst:                    40,
	}
}

// AddFlags adds the flags of inplace-daemon.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig file; empty uses the in-cluster configuration.")
	fs.StringVar(&o.NodeName, "node-name", o.NodeName, "Name of the node this daemon runs on (default $NODE_NAME); only its Pods are handled.")
	fs.StringVar(&o.RuntimeEndpoint, "runtime-endpoint", o.RuntimeEndpoint,
		"CRI runtime socket, e.g. unix:///run/containerd/containerd.sock; empty probes "+strings.Join(criruntime.DefaultEndpoints, ", ")+" in this order.")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "host:port serving /healthz, /readyz and /metrics.")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "Also serve Go's profiles on --bind-address under /debug/pprof/ (for benchmarks; off by default).")
	fs.IntVar(&o.Workers, "workers", o.Workers, "Keys each controller reconciles at once.")
	fs.IntVar(&o.CRRWorkers, "crr-workers", o.CRRWorkers,
		"Pods whose ContainerRecreateRequests are carried out at once; each waits for its containers' stops (grace period, preStop hook), so this bounds how many Pods have containers recreated in parallel.")
	fs.IntVar(&o.MaxPullWorkers, "max-workers-for-pull-image", o.MaxPullWorkers,
		"Images pulled at once for the node's NodeImage (OpenKruise's flag); 0 or less: no limit, every tag asked for is pulled at once. The others wait (phase Waiting).")
	fs.DurationVar(&o.MaxStopGracePeriod, "max-stop-grace-period", o.MaxStopGracePeriod,
		"Upper bound of the grace period (the Pod's terminationGracePeriodSeconds) given to a container stopped so that it restarts.")
	fs.DurationVar(&o.EnvRestartDelay, "env-restart-delay", o.EnvRestartDelay,
		"How long a container must be seen needing a restart for new env-from-metadata values before it is stopped, so the kubelet has the new Pod labels when it starts it again.")
	fs.DurationVar(&o.InPlaceReadyPollInterval, "inplace-ready-poll-interval", o.InPlaceReadyPollInterval,
		"With a kubelet that reports no status.observedGeneration (before 1.34): how often the container runtime is asked whether the new containers of an in-place image update run, to set InPlaceUpdateReady True before the kubelet's next relist (keep it well under 1s).")
	fs.StringVar(&o.LaunchBarrierAddress, "launch-barrier-address", o.LaunchBarrierAddress,
		"Loopback host:port answering the postStart hooks that order the launch of a Pod's containers (the Pod webhook points them at 127.0.0.1:"+
			fmt.Sprint(launchpriority.DefaultHookPort)+"; the daemon must share the node's network for the kubelet to reach it); empty: not answered.")
	fs.DurationVar(&o.LaunchBarrierMaxWait, "launch-barrier-max-wait", o.LaunchBarrierMaxWait,
		"Longest a launch barrier hook waits for the containers of a higher priority to be ready; then the next ones start anyway.")
	fs.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "Requests per second to the API servers.")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "Burst of requests to the API servers.")
	fs.DurationVar(&o.ClockSkew, "clock-skew", o.ClockSkew,
		"Test only: shift the daemon's clock by this duration (may be negative), to show that no wait depends on another machine's clock.")
	_ = fs.MarkHidden("clock-skew")
	o.FeatureGates = features.AddFlag(fs)
}

// Validate reports every bad flag at once.
func (o *Options) Validate() error {
	var errs []error
	if o.NodeName == "" {
		errs = append(errs, errors.New("--node-name: required (or set $NODE_NAME, e.g. from the downward API spec.nodeName)"))
	}
	if e := o.RuntimeEndpoint; e != "" && !strings.HasPrefix(e, "unix:///") && !strings.HasPrefix(e, "/") {
		errs = append(errs, fmt.Errorf("--runtime-endpoint=%q: want unix:///absolute/path", e))
	}
	if _, _, err := net.SplitHostPort(o.BindAddress); err != nil {
		errs = append(errs, fmt.Errorf("--bind-address=%q: %w", o.BindAddress, err))
	}
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("--workers=%d: must be at least 1", o.Workers))
	}
	if o.CRRWorkers < 1 {
		errs = append(errs, fmt.Errorf("--crr-workers=%d: must be at least 1", o.CRRWorkers))
	}
	if o.EnvRestartDelay < 0 {
		errs = append(errs, fmt.Errorf("--env-restart-delay=%s: must not be negative", o.EnvRestartDelay))
	}
	if o.InPlaceReadyPollInterval <= 0 {
		errs = append(errs, fmt.Errorf("--inplace-ready-poll-interval=%s: must be positive", o.InPlaceReadyPollInterval))
	}
	if a := o.LaunchBarrierAddress; a != "" {
		if host, _, err := net.SplitHostPort(a); err != nil {
			errs = append(errs, fmt.Errorf("--launch-barrier-address=%q: %w", a, err))
		} else if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			errs = append(errs, fmt.Errorf("--launch-barrier-address=%q: want a loopback IP", a))
		}
	}
	if o.LaunchBarrierMaxWait <= 0 {
		errs = append(errs, fmt.Errorf("--launch-barrier-max-wait=%s: must be positive", o.LaunchBarrierMaxWait))
	}
	if o.MaxStopGracePeriod < 0 {
		errs = append(errs, fmt.Errorf("--max-stop-grace-period=%s: must not be negative", o.MaxStopGracePeriod))
	}
	return errors.Join(errs...)
}
