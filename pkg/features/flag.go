package features

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
)

// FlagName is OpenKruise's flag, and kube's.
const FlagName = "feature-gates"

// Flag is the value of --feature-gates: comma-separated name=bool pairs, as OpenKruise's and
// kube's flag. Unlike theirs, a name that neither gate knows is logged and dropped, never an
// error: OpenKruise's chart passes one string to all its programs and a newer OpenKruise has
// gates inplace lacks, and a program that refuses to start over a switch it does not have helps
// nobody. A malformed pair (no value, not a bool) is still an error: that is a typo in a name
// inplace knows or not, the flag cannot tell.
type Flag struct {
	gate featuregate.MutableFeatureGate
	// next, when set, takes the pairs gate does not know but nextKnows does (inplace-apiserver:
	// kube's own gates, through the generic server's flag).
	next      pflag.Value
	nextKnows func(name string) bool
	// set are the pairs set so far (the last value of each name wins), for String.
	set map[string]bool
	// Ignored are the names dropped so far, in the order given.
	Ignored []string
}

// NewFlag is a --feature-gates value that sets gate.
func NewFlag(gate featuregate.MutableFeatureGate) *Flag {
	return &Flag{gate: gate}
}

// AddFlag adds --feature-gates for DefaultMutableFeatureGate to fs.
func AddFlag(fs *pflag.FlagSet) *Flag {
	f := NewFlag(DefaultMutableFeatureGate)
	fs.Var(f, FlagName, usage(DefaultMutableFeatureGate, ""))
	return f
}

// WrapFlag turns an existing --feature-gates of fs (the generic API server's, for kube's gates
// in kubeGate) into one that also takes OpenKruise's gates: a name DefaultMutableFeatureGate
// knows goes there, a name kubeGate knows (or one with a component prefix, "kube:Name") goes to
// the flag as it was, and any other name is logged and dropped. OpenKruise's gates come first, as
// OpenKruise's users' strings are what the flag is for here (InPlacePodVerticalScaling is in both).
func WrapFlag(fs *pflag.FlagSet, kubeGate featuregate.MutableFeatureGate) (*Flag, error) {
	return wrapFlag(fs, DefaultMutableFeatureGate, kubeGate)
}

func wrapFlag(fs *pflag.FlagSet, gate, kubeGate featuregate.MutableFeatureGate) (*Flag, error) {
	existing := fs.Lookup(FlagName)
	if existing == nil {
		return nil, fmt.Errorf("no --%s flag to wrap", FlagName)
	}
	f := NewFlag(gate)
	f.next = existing.Value
	f.nextKnows = func(name string) bool {
		if strings.Contains(name, ":") {
			return true
		}
		_, known := kubeGate.GetAll()[featuregate.Feature(name)]
		return known
	}
	existing.Value = f
	existing.Usage = usage(gate, "Also kube's gates of the generic API server (optionally as kube:Name=bool).\n")
	return f, nil
}

func usage(gate featuregate.MutableFeatureGate, extra string) string {
	known := gate.KnownFeatures()
	sort.Strings(known)
	return "Comma-separated Name=bool pairs switching OpenKruise's feature gates (the same string as OpenKruise's --feature-gates); " +
		"a name inplace does not have is logged and ignored.\n" + extra + "OpenKruise's gates:\n" + strings.Join(known, "\n")
}

// String lists the gates set through the flag.
func (f *Flag) String() string {
	if f == nil {
		return ""
	}
	pairs := make([]string, 0, len(f.set))
	for k, v := range f.set {
		pairs = append(pairs, k+"="+strconv.FormatBool(v))
	}
	sort.Strings(pairs)
	if f.next != nil && f.next.String() != "" {
		pairs = append(pairs, f.next.String())
	}
	return strings.Join(pairs, ",")
}

// Type is pflag's name of the flag's type, as kube's feature gate flag says it.
func (f *Flag) Type() string { return "mapStringBool" }

// Set parses name=bool pairs: the names gate knows are set there (all at once, so one bad value
// sets none of them), those next knows go to next, the others are logged and dropped.
func (f *Flag) Set(value string) error {
	ours := map[string]bool{}
	var theirs []string
	for _, pair := range strings.Split(value, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok {
			return fmt.Errorf("missing bool value for %s", k)
		}
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("invalid value of %s=%s: %w", k, strings.TrimSpace(v), err)
		}
		switch {
		case f.knows(k):
			ours[k] = b
		case f.next != nil && f.nextKnows(k):
			theirs = append(theirs, k+"="+strconv.FormatBool(b))
		default:
			// klog's flags may not be parsed yet: this goes to stderr at its defaults, which
			// is where a user looking at why a switch had no effect will look.
			klog.InfoS("Ignoring a feature gate inplace does not have", "featureGate", k, "value", b)
			f.Ignored = append(f.Ignored, k)
		}
	}
	if len(ours) > 0 {
		if err := f.gate.SetFromMap(ours); err != nil {
			return err
		}
		if f.set == nil {
			f.set = map[string]bool{}
		}
		for k, v := range ours {
			f.set[k] = v
		}
	}
	if len(theirs) > 0 {
		return f.next.Set(strings.Join(theirs, ","))
	}
	return nil
}

func (f *Flag) knows(name string) bool {
	_, ok := f.gate.GetAll()[featuregate.Feature(name)]
	return ok
}

// Log writes the state of every gate that is not at its default, and the names the flag ignored.
func Log(logger klog.Logger) {
	all := DefaultMutableFeatureGate.GetAll()
	var changed []string
	for name, spec := range all {
		if on := DefaultFeatureGate.Enabled(name); on != spec.Default {
			changed = append(changed, fmt.Sprintf("%s=%t", name, on))
		}
	}
	sort.Strings(changed)
	logger.Info("OpenKruise feature gates", "notAtDefault", changed)
}
