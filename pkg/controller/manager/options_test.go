package manager

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/inplace-dev/inplace/pkg/features"
)

// TestFeatureGates: inplace-controller takes the --feature-gates string of OpenKruise's chart,
// a gate it does not have included.
func TestFeatureGates(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("inplace-controller", pflag.ContinueOnError)
	o.AddFlags(fs)
	t.Cleanup(func() {
		_ = features.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(features.PreparingUpdateAsUpdate): false})
	})
	if err := fs.Parse([]string{"--feature-gates=PreparingUpdateAsUpdate=true,NoSuchGate=true"}); err != nil {
		t.Fatalf("parsing: %v", err)
	}
	if !features.Enabled(features.PreparingUpdateAsUpdate) {
		t.Error("PreparingUpdateAsUpdate is off, want on")
	}
	if got := o.FeatureGates.Ignored; len(got) != 1 || got[0] != "NoSuchGate" {
		t.Errorf("ignored %v, want [NoSuchGate]", got)
	}
}

// TestNewOptionsNamespace: without $POD_NAMESPACE (a host process) inplace's namespace is
// inplace-system and the Lease lives in kube-system; in a Pod both are the Pod's namespace.
func TestNewOptionsNamespace(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	o := NewOptions()
	if o.Namespace != DefaultNamespace || o.LeaderElectionNamespace != "kube-system" {
		t.Errorf("host: namespace %q, lease namespace %q; want %s, kube-system", o.Namespace, o.LeaderElectionNamespace, DefaultNamespace)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("the defaults do not validate: %v", err)
	}
	t.Setenv("POD_NAMESPACE", "pod-ns")
	o = NewOptions()
	if o.Namespace != "pod-ns" || o.LeaderElectionNamespace != "pod-ns" {
		t.Errorf("in a Pod: namespace %q, lease namespace %q; want pod-ns for both", o.Namespace, o.LeaderElectionNamespace)
	}
}

// TestFlags: every flag sets its option; defaults stay when a flag is not given.
func TestFlags(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	o := NewOptions()
	fs := pflag.NewFlagSet("inplace-controller", pflag.ContinueOnError)
	o.AddFlags(fs)
	err := fs.Parse([]string{"--kubeconfig=/k", "--leader-elect=false", "--leader-elect-namespace=ln",
		"--leader-elect-name=lk", "--leader-elect-lease-duration=30s", "--leader-elect-renew-deadline=20s",
		"--leader-elect-retry-period=3s", "--bind-address=:9000", "--profiling", "--rollout-metrics",
		"--cloneset-image-predownload=false", "--workers=7", "--kube-api-qps=5.5", "--kube-api-burst=11", "--namespace=own"})
	if err != nil {
		t.Fatalf("parsing: %v", err)
	}
	want := Options{Kubeconfig: "/k", LeaderElect: false, LeaderElectionNamespace: "ln", LeaderElectionName: "lk",
		LeaseDuration: 30 * time.Second, RenewDeadline: 20 * time.Second, RetryPeriod: 3 * time.Second,
		BindAddress: ":9000", Profiling: true, RolloutMetrics: true, ImagePreDownload: false, Workers: 7,
		QPS: 5.5, Burst: 11, Namespace: "own", FeatureGates: o.FeatureGates}
	if *o != want {
		t.Errorf("options\n %+v\nwant\n %+v", *o, want)
	}

	o = NewOptions()
	fs = pflag.NewFlagSet("inplace-controller", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatalf("parsing: %v", err)
	}
	if !o.LeaderElect || !o.ImagePreDownload || o.RolloutMetrics || o.Profiling || o.Workers != 4 ||
		o.BindAddress != "127.0.0.1:10390" || o.LeaderElectionName != "inplace-controller" {
		t.Errorf("defaults changed: %+v", *o)
	}
}

// TestValidate: each bad setting is reported, all of them at once, and leader election settings
// are only checked with --leader-elect.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(*Options)
		want   []string // substrings of the error; none means valid
	}{
		{name: "defaults", modify: func(*Options) {}},
		{name: "no lease name", modify: func(o *Options) { o.LeaderElectionName = "" },
			want: []string{"--leader-elect-namespace and --leader-elect-name"}},
		{name: "no lease namespace", modify: func(o *Options) { o.LeaderElectionNamespace = "" },
			want: []string{"--leader-elect-namespace and --leader-elect-name"}},
		{name: "lease not longer than renew", modify: func(o *Options) { o.LeaseDuration = o.RenewDeadline },
			want: []string{"--leader-elect-lease-duration (10s) must be longer than --leader-elect-renew-deadline (10s)"}},
		{name: "no leader election: lease settings not checked", modify: func(o *Options) {
			o.LeaderElect, o.LeaderElectionName, o.LeaseDuration = false, "", 0
		}},
		{name: "bind address without port", modify: func(o *Options) { o.BindAddress = "127.0.0.1" },
			want: []string{`--bind-address="127.0.0.1"`}},
		{name: "no namespace", modify: func(o *Options) { o.Namespace = "" }, want: []string{"--namespace: required"}},
		{name: "no workers", modify: func(o *Options) { o.Workers = 0 }, want: []string{"--workers=0: must be at least 1"}},
		{name: "all at once", modify: func(o *Options) {
			o.LeaderElectionName, o.BindAddress, o.Namespace, o.Workers = "", "x", "", -1
		}, want: []string{"--leader-elect-name", "--bind-address", "--namespace", "--workers=-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.modify(o)
			err := o.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Errorf("err %v, want valid", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("valid, want errors %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q does not contain %q", err, w)
				}
			}
		})
	}
}
