package migrate

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// carried are the CRDs (plural.group) of the resources inplace serves: objects of any other kind
// of the carried groups cannot be carried, and the migration refuses to start while there are any.
var carried = map[string]bool{
	"clonesets.apps.kruise.io": true, "statefulsets.apps.kruise.io": true, "daemonsets.apps.kruise.io": true,
	"sidecarsets.apps.kruise.io": true, "containerrecreaterequests.apps.kruise.io": true, "imagepulljobs.apps.kruise.io": true,
	"imagelistpulljobs.apps.kruise.io": true, "nodeimages.apps.kruise.io": true,
	"podunavailablebudgets.policy.kruise.io": true,
}

// kruiseStorageKinds are the kinds inplace serves, at the storage versions of OpenKruise v1.9's
// CRDs (config/crd/bases): the versions the objects are read from inplace and re-created at when
// no --crds FILE says otherwise.
var kruiseStorageKinds = []Kind{
	{CRD: "clonesets.apps.kruise.io", Group: Group, Kind: "CloneSet", Plural: "clonesets", Version: "v1alpha1", Namespaced: true},
	{CRD: "containerrecreaterequests.apps.kruise.io", Group: Group, Kind: "ContainerRecreateRequest", Plural: "containerrecreaterequests", Version: "v1alpha1", Namespaced: true},
	{CRD: "daemonsets.apps.kruise.io", Group: Group, Kind: "DaemonSet", Plural: "daemonsets", Version: "v1beta1", Namespaced: true},
	{CRD: "imagelistpulljobs.apps.kruise.io", Group: Group, Kind: "ImageListPullJob", Plural: "imagelistpulljobs", Version: "v1beta1", Namespaced: true},
	{CRD: "imagepulljobs.apps.kruise.io", Group: Group, Kind: "ImagePullJob", Plural: "imagepulljobs", Version: "v1beta1", Namespaced: true},
	{CRD: "nodeimages.apps.kruise.io", Group: Group, Kind: "NodeImage", Plural: "nodeimages", Version: "v1beta1"},
	{CRD: "sidecarsets.apps.kruise.io", Group: Group, Kind: "SidecarSet", Plural: "sidecarsets", Version: "v1beta1"},
	{CRD: "statefulsets.apps.kruise.io", Group: Group, Kind: "StatefulSet", Plural: "statefulsets", Version: "v1beta1", Namespaced: true},
	{CRD: "podunavailablebudgets.policy.kruise.io", Group: PolicyGroup, Kind: "PodUnavailableBudget", Plural: "podunavailablebudgets", Version: "v1alpha1", Namespaced: true},
}

// group is the kind's group (Group for a Kind recorded without one).
func (k Kind) group() string {
	if k.Group == "" {
		return Group
	}
	return k.Group
}

func (k Kind) gvr() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: k.group(), Version: k.Version, Resource: k.Plural}
}

// kindOf is the recorded Kind of that group and kind.
func (m *Migrator) kindOf(group, kind string) (Kind, bool) {
	for _, k := range m.state.Kinds {
		if k.group() == group && k.Kind == kind {
			return k, true
		}
	}
	return Kind{}, false
}

// kindOfObject is the recorded Kind of the object (by its apiVersion's group and kind).
func (m *Migrator) kindOfObject(o unstructured.Unstructured) (Kind, bool) {
	return m.kindOf(o.GroupVersionKind().Group, o.GetKind())
}

// carriedGroup tells whether the group is one the migration carries.
func carriedGroup(group string) bool {
	for _, g := range Groups {
		if g == group {
			return true
		}
	}
	return false
}

// apiServiceNames are the APIServices (VERSION.GROUP) inplace serves for the kinds: v1alpha1 and
// v1beta1 of apps.kruise.io and of each other group the kinds have, and any other version a kind
// is at.
func apiServiceNames(kinds []Kind) []string {
	seen := map[string]bool{}
	add := func(version, group string) { seen[version+"."+group] = true }
	add("v1alpha1", Group)
	add("v1beta1", Group)
	for _, k := range kinds {
		add("v1alpha1", k.group())
		add("v1beta1", k.group())
		if k.Version != "" {
			add(k.Version, k.group())
		}
	}
	return sortedKeys(seen)
}

// groupAPIServices are inplace's APIServices of the groups: v1alpha1 and v1beta1 of each.
func groupAPIServices(groups ...string) []string {
	var out []string
	for _, g := range groups {
		out = append(out, "v1alpha1."+g, "v1beta1."+g)
	}
	return out
}

// kindAPIServices are the distinct APIServices (VERSION.GROUP) of the kinds at their versions:
// those kube-apiserver's CRD autoregistration serves once the kinds' CRDs are installed.
func kindAPIServices(kinds []Kind) []string {
	seen := map[string]bool{}
	for _, k := range kinds {
		seen[k.Version+"."+k.group()] = true
	}
	return sortedKeys(seen)
}

func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// kindGroups names the groups of the kinds ("apps.kruise.io and policy.kruise.io"), apps.kruise.io
// always.
func kindGroups(kinds []Kind) string {
	have := map[string]bool{Group: true}
	for _, k := range kinds {
		have[k.group()] = true
	}
	var out []string
	for _, g := range Groups {
		if have[g] {
			out = append(out, g)
		}
	}
	return strings.Join(out, " and ")
}

// backKinds are the kinds carried back and their versions: OpenKruise v1.9's storage versions,
// or those of the CRDs in the file (each kind inplace serves that the file has).
func backKinds(crdsFile string) ([]Kind, error) {
	if crdsFile == "" {
		return append([]Kind(nil), kruiseStorageKinds...), nil
	}
	crds, err := loadCRDs(crdsFile)
	if err != nil {
		return nil, err
	}
	var kinds []Kind
	for _, k := range kruiseStorageKinds {
		if c, ok := crds[k.CRD]; ok {
			kinds = append(kinds, c)
		} else {
			k.Version = "" // not in the file: preflight refuses if inplace has objects of it
			kinds = append(kinds, k)
		}
	}
	return kinds, nil
}

// loadCRDs reads the CRDs of the carried groups in a manifest file, as Kinds at their storage
// versions.
func loadCRDs(path string) (map[string]Kind, error) {
	objs, err := loadManifests(path)
	if err != nil {
		return nil, err
	}
	out := map[string]Kind{}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		if g, _, _ := unstructured.NestedString(o.Object, "spec", "group"); !carriedGroup(g) {
			continue
		}
		if k := crdKind(o); k.Version != "" {
			out[k.CRD] = k
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no CustomResourceDefinition of %s with a storage version", path, strings.Join(Groups, " or "))
	}
	return out, nil
}

// crdKind is the Kind of a CRD object, at its storage version.
func crdKind(crd unstructured.Unstructured) Kind {
	k := Kind{CRD: crd.GetName()}
	k.Group, _, _ = unstructured.NestedString(crd.Object, "spec", "group")
	k.Kind, _, _ = unstructured.NestedString(crd.Object, "spec", "names", "kind")
	k.Plural, _, _ = unstructured.NestedString(crd.Object, "spec", "names", "plural")
	scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
	k.Namespaced = scope == "Namespaced"
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		if storage, _ := vm["storage"].(bool); storage {
			k.Version, _ = vm["name"].(string)
		}
	}
	return k
}

// servesVersion tells whether the CRD serves the version.
func servesVersion(crd unstructured.Unstructured, version string) bool {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		if served, _ := vm["served"].(bool); served && vm["name"] == version {
			return true
		}
	}
	return false
}
