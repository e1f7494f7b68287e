package sidecarcontrol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/features"
)

// PatchPodMetadata applies a SidecarSet's spec.patchPodMetadata to a Pod's annotations, in
// order, as OpenKruise (sidecarcontrol.PatchPodMetadata): Retain (or empty) sets only annotations
// the Pod lacks; Overwrite sets them all; MergePatchJson applies each value as a JSON merge patch
// (RFC 7386) to the Pod's value, or sets it when the Pod has none (or an empty one). It reports
// whether any annotation changed. An invalid JSON document or patch is an error (OpenKruise then
// refuses the Pod).
func PatchPodMetadata(meta *metav1.ObjectMeta, patches []appsv1alpha1.SidecarSetPatchPodMetadata) (bool, error) {
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	changed := false
	set := func(k, v string) {
		if old, ok := meta.Annotations[k]; !ok || old != v {
			changed = true
		}
		meta.Annotations[k] = v
	}
	for _, patch := range patches {
		for k, v := range patch.Annotations {
			switch patch.PatchPolicy {
			case appsv1alpha1.SidecarSetRetainPatchPolicy, "":
				if _, ok := meta.Annotations[k]; !ok {
					set(k, v)
				}
			case appsv1alpha1.SidecarSetOverwritePatchPolicy:
				set(k, v)
			case appsv1alpha1.SidecarSetMergePatchJsonPatchPolicy:
				origin := meta.Annotations[k]
				if origin == "" {
					set(k, v)
					continue
				}
				merged, err := mergePatch([]byte(origin), []byte(v))
				if err != nil {
					return changed, fmt.Errorf("annotation %s: %w", k, err)
				}
				set(k, string(merged))
			}
		}
	}
	return changed, nil
}

var (
	errBadJSONDoc   = errors.New("invalid JSON document")
	errBadJSONPatch = errors.New("invalid JSON merge patch")
)

// mergePatch is a JSON merge patch (RFC 7386) with the behaviour of github.com/evanphx/json-patch's
// MergePatch, which OpenKruise uses: keys come out sorted and compact; a null in the patch deletes
// a key; a patch that is an object replaces a document that is not one; a patch that is an array
// replaces the document; a null or non-JSON document or patch, or a scalar patch, is an error.
func mergePatch(doc, patch []byte) ([]byte, error) {
	d, err := decodeJSON(doc)
	if err != nil || d == nil {
		return nil, errBadJSONDoc
	}
	p, err := decodeJSON(patch)
	if err != nil || p == nil {
		return nil, errBadJSONPatch
	}
	switch pv := p.(type) {
	case map[string]any:
		dv, ok := d.(map[string]any)
		if !ok {
			return json.Marshal(pruneNulls(pv))
		}
		return json.Marshal(mergeObjects(dv, pv))
	case []any:
		return json.Marshal(pruneNulls(pv))
	default:
		return nil, errBadJSONPatch
	}
}

func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // keep numbers as written
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data")
	}
	return v, nil
}

func mergeObjects(doc, patch map[string]any) map[string]any {
	for k, pv := range patch {
		if pv == nil {
			delete(doc, k)
			continue
		}
		dm, dok := doc[k].(map[string]any)
		pm, pok := pv.(map[string]any)
		if dok && pok {
			doc[k] = mergeObjects(dm, pm)
		} else {
			doc[k] = pruneNulls(pv)
		}
	}
	return doc
}

// pruneNulls drops null members of objects, at any depth (array elements stay), as a merge patch
// applied to nothing.
func pruneNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
			} else {
				t[k] = pruneNulls(e)
			}
		}
	case []any:
		for i, e := range t {
			if e != nil {
				t[i] = pruneNulls(e)
			}
		}
	}
	return v
}

// The allow-list's place, as OpenKruise names it: the key PatchMetadataAllowListKey of the
// ConfigMap ConfigurationName in the server's own namespace.
const (
	ConfigurationName         = "kruise-configuration"
	PatchMetadataAllowListKey = "SidecarSet_PatchPodMetadata_WhiteList"
)

// PatchMetadataAllowList is OpenKruise's SidecarSet patch-metadata allow-list (the
// "SidecarSet_PatchPodMetadata_WhiteList" key of the kruise-configuration ConfigMap): which
// annotation keys a SidecarSet may patch into Pods.
type PatchMetadataAllowList struct {
	Rules []PatchMetadataAllowRule `json:"rules"`

	// compiled holds each rule's selector and expressions as ParsePatchMetadataAllowList
	// compiled them once, for every write that ValidatePatchPodMetadata checks.
	compiled []compiledAllowRule
}

type compiledAllowRule struct {
	selector labels.Selector // nil: every SidecarSet
	exprs    []*regexp.Regexp
}

// PatchMetadataAllowRule allows annotation keys matching any of AllowedAnnotationKeyExprs
// (regular expressions) to the SidecarSets whose labels match Selector (all when nil).
type PatchMetadataAllowRule struct {
	Selector                  *metav1.LabelSelector `json:"selector,omitempty"`
	AllowedAnnotationKeyExprs []string              `json:"allowedAnnotationKeyExprs"`
}

// ParsePatchMetadataAllowList reads the allow-list from the data of the kruise-configuration
// ConfigMap: nil when the key is absent (or the ConfigMap is, data nil). A value that is not the
// allow-list's JSON, a selector that is not one or an expression that does not compile is an
// error, as it is for OpenKruise: then no SidecarSet may patch anything.
func ParsePatchMetadataAllowList(data map[string]string) (*PatchMetadataAllowList, error) {
	value, ok := data[PatchMetadataAllowListKey]
	if !ok {
		return nil, nil
	}
	allow := &PatchMetadataAllowList{}
	if err := json.Unmarshal([]byte(value), allow); err != nil {
		return nil, fmt.Errorf("key %s is not a patch-metadata allow-list: %w", PatchMetadataAllowListKey, err)
	}
	for i, rule := range allow.Rules {
		var c compiledAllowRule
		if rule.Selector != nil {
			selector, err := metav1.LabelSelectorAsSelector(rule.Selector)
			if err != nil {
				return nil, fmt.Errorf("key %s, rules[%d].selector: %w", PatchMetadataAllowListKey, i, err)
			}
			c.selector = selector
		}
		for _, expr := range rule.AllowedAnnotationKeyExprs {
			re, err := regexp.Compile(expr)
			if err != nil {
				return nil, fmt.Errorf("key %s, rules[%d].allowedAnnotationKeyExprs: %w", PatchMetadataAllowListKey, i, err)
			}
			c.exprs = append(c.exprs, re)
		}
		allow.compiled = append(allow.compiled, c)
	}
	return allow, nil
}

// ValidatePatchPodMetadata checks the annotation keys a SidecarSet (labelled setLabels) patches
// into Pods (patches: each spec.patchPodMetadata entry's annotations, at fldPath) against an
// allow-list, as OpenKruise's SidecarSet validation (ValidateSidecarSetPatchMetadataWhitelist)
// does with its feature gate SidecarSetPatchPodMetadataDefaultsAllowed: without an allow-list, or
// without a rule for this SidecarSet, no key is allowed with the gate off (the default), any with
// it on; otherwise each key must match an expression of a rule that selects the SidecarSet.
// source names where the allow-list is kept, for the messages. allow must come from
// ParsePatchMetadataAllowList.
func ValidatePatchPodMetadata(setLabels map[string]string, patches []map[string]string, allow *PatchMetadataAllowList, source string, fldPath *field.Path) field.ErrorList {
	if len(patches) == 0 {
		return nil
	}
	defaultsAllowed := features.Enabled(features.SidecarSetPatchPodMetadataDefaultsAllowed)
	var exprs []*regexp.Regexp
	if allow != nil {
		for _, rule := range allow.compiled {
			if rule.selector == nil || rule.selector.Matches(labels.Set(setLabels)) {
				exprs = append(exprs, rule.exprs...)
			}
		}
	}
	if len(exprs) == 0 {
		if defaultsAllowed {
			return nil
		}
		why := "no rule of the allow-list (" + source + ") selects this SidecarSet"
		if allow == nil {
			why = "there is no allow-list (" + source + ")"
		}
		return field.ErrorList{field.Forbidden(fldPath, "a SidecarSet may patch only the Pod annotations an allow-list names, and "+why+
			"; add a rule there, or turn on the feature gate "+string(features.SidecarSetPatchPodMetadataDefaultsAllowed))}
	}
	var errs field.ErrorList
	for i, annotations := range patches {
		for _, key := range slices.Sorted(maps.Keys(annotations)) {
			if !slices.ContainsFunc(exprs, func(re *regexp.Regexp) bool { return re.MatchString(key) }) {
				errs = append(errs, field.Forbidden(fldPath.Index(i).Child("annotations").Key(key),
					"no rule of the allow-list ("+source+") that selects this SidecarSet allows this annotation key"))
			}
		}
	}
	return errs
}
