package kubectlplugin

import (
	"fmt"
	"strings"
)

// Kind is a workload kind the rollout, set image and scale commands act on.
type Kind string

// The workload kinds, as their apps.kruise.io kinds are named.
const (
	CloneSet    Kind = "CloneSet"
	StatefulSet Kind = "StatefulSet" // Advanced StatefulSet, apps.kruise.io/v1beta1
	DaemonSet   Kind = "DaemonSet"   // Advanced DaemonSet, apps.kruise.io/v1alpha1
)

// kindNames are the names a kind is given on the command line: OpenKruise's short names, the
// resource and the kind in singular and plural, bare or with the group. The bare statefulset,
// sts, daemonset and ds are apps/v1's (kubectl's own), so they are refused with a hint.
var kindNames = map[string]Kind{
	"clone": CloneSet, "clones": CloneSet, "cloneset": CloneSet, "clonesets": CloneSet,
	"asts": StatefulSet, "advancedstatefulset": StatefulSet, "advancedstatefulsets": StatefulSet,
	"ads": DaemonSet, "daemon": DaemonSet, "advanceddaemonset": DaemonSet, "advanceddaemonsets": DaemonSet,
}

func init() {
	// With the group (and a version): cloneset.apps.kruise.io, statefulsets.v1beta1.apps.kruise.io...
	for singular, k := range map[string]Kind{"cloneset": CloneSet, "statefulset": StatefulSet, "daemonset": DaemonSet} {
		for _, n := range []string{singular, singular + "s"} {
			for _, v := range []string{"", "v1alpha1.", "v1beta1."} {
				kindNames[n+"."+v+"apps.kruise.io"] = k
			}
		}
	}
}

// Resource is the resource name of the kind, as the name printer and messages show it.
func (k Kind) Resource() string {
	switch k {
	case CloneSet:
		return "cloneset.apps.kruise.io"
	case StatefulSet:
		return "statefulset.apps.kruise.io"
	default:
		return "daemonset.apps.kruise.io"
	}
}

// Ref names one workload.
type Ref struct {
	Kind Kind
	Name string
}

func (r Ref) String() string { return r.Resource() }

// Resource is KIND.GROUP/NAME, as kubectl names an object.
func (r Ref) Resource() string { return r.Kind.Resource() + "/" + r.Name }

// ParseKind reads a kind name (clone, asts, ads, clonesets.apps.kruise.io, ...).
func ParseKind(s string) (Kind, error) {
	name := strings.ToLower(s)
	if k, ok := kindNames[name]; ok {
		return k, nil
	}
	switch name {
	case "statefulset", "statefulsets", "sts", "daemonset", "daemonsets", "ds", "deployment", "deployments", "deploy":
		return "", fmt.Errorf("%q is an apps/v1 kind: use kubectl's own commands for it; kubectl inplace takes clone/NAME, asts/NAME (Advanced StatefulSet) or ads/NAME (Advanced DaemonSet)", s)
	}
	return "", fmt.Errorf("unknown kind %q: use clone/NAME (CloneSet), asts/NAME (Advanced StatefulSet) or ads/NAME (Advanced DaemonSet)", s)
}

// ParseRefs reads workloads given as kubectl takes them: TYPE/NAME ... or TYPE NAME ....
func ParseRefs(args []string) ([]Ref, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("you must specify a workload: clone/NAME, asts/NAME or ads/NAME")
	}
	if !strings.Contains(args[0], "/") {
		kind, err := ParseKind(args[0])
		if err != nil {
			return nil, err
		}
		if len(args) == 1 {
			return nil, fmt.Errorf("you must specify the name of the %s", kind)
		}
		var refs []Ref
		for _, name := range args[1:] {
			if strings.Contains(name, "/") || name == "" {
				return nil, fmt.Errorf("there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'kubectl inplace rollout status clone/NAME' instead of 'kubectl inplace rollout status clone clone/NAME')")
			}
			refs = append(refs, Ref{Kind: kind, Name: name})
		}
		return refs, nil
	}
	var refs []Ref
	for _, a := range args {
		typ, name, _ := strings.Cut(a, "/")
		if name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("arguments in resource/name form must have a single resource and name: %q", a)
		}
		kind, err := ParseKind(typ)
		if err != nil {
			return nil, err
		}
		refs = append(refs, Ref{Kind: kind, Name: name})
	}
	return refs, nil
}

// ParseRef reads exactly one workload.
func ParseRef(args []string) (Ref, error) {
	refs, err := ParseRefs(args)
	if err != nil {
		return Ref{}, err
	}
	if len(refs) != 1 {
		return Ref{}, fmt.Errorf("exactly one workload is expected, got %d", len(refs))
	}
	return refs[0], nil
}
