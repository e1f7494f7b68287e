package sidecarcontrol

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

func TestPatchPodMetadata(t *testing.T) {
	patch := func(policy appsv1alpha1.SidecarSetPatchPolicyType, kv ...string) appsv1alpha1.SidecarSetPatchPodMetadata {
		p := appsv1alpha1.SidecarSetPatchPodMetadata{PatchPolicy: policy, Annotations: map[string]string{}}
		for i := 0; i < len(kv); i += 2 {
			p.Annotations[kv[i]] = kv[i+1]
		}
		return p
	}
	cases := []struct {
		name        string
		pod         map[string]string
		patches     []appsv1alpha1.SidecarSetPatchPodMetadata
		want        map[string]string
		wantChanged bool
		wantErr     string
	}{
		{name: "retain keeps the Pod's", pod: map[string]string{"a": "pod"},
			patches: []appsv1alpha1.SidecarSetPatchPodMetadata{patch(appsv1alpha1.SidecarSetRetainPatchPolicy, "a", "x", "b", "y")},
			want:    map[string]string{"a": "pod", "b": "y"}, wantChanged: true},
		{name: "empty policy is retain", pod: map[string]string{"a": "pod"},
			patches: []appsv1alpha1.SidecarSetPatchPodMetadata{patch("", "a", "x")},
			want:    map[string]string{"a": "pod"}},
		{name: "overwrite", pod: map[string]string{"a": "pod"},
			patches: []appsv1alpha1.SidecarSetPatchPodMetadata{patch(appsv1alpha1.SidecarSetOverwritePatchPolicy, "a", "x")},
			want:    map[string]string{"a": "x"}, wantChanged: true},
		{name: "overwrite with the same value changes nothing", pod: map[string]string{"a": "x"},
			patches: []appsv1alpha1.SidecarSetPatchPodMetadata{patch(appsv1alpha1.SidecarSetOverwritePatchPolicy, "a", "x")},
			want:    map[string]string{"a": "x"}},
		{name: "merge patch json", pod: map[string]string{"j": `{"keep": 1, "drop": true, "n": {"x": 1, "y": 2}}`},
			patches: []appsv1alpha1.SidecarSetPatchPodMetadata{patch(appsv1alpha1.SidecarSetMergePatchJsonPatchPolicy, "j", `{"drop": null, "n": {"y": 3, "z": {"a": null, "b": 1}}, "new": "v"}`)},
			want:    map[string]string{"j": `{"keep":1,"n":{"x":1,"y":3,"z":{"b":1}},"new":"v"}`}, wantChanged: true},
		{name: "merge patch json sets a missing annotation as written", pod: nil,
			patches: []appsv1alpha1.SidecarSetPatchPodMetadata{patch(appsv1alpha1.SidecarSetMergePatchJsonPatchPolicy, "j", `{"a": null}`)},
			want:    map[string]string{"j": `{"a": null}`}, wantChanged: true},
		{name: "merge patch json on a non-object replaces it", pod: map[string]string{"j": `"s"`},
			patches: []appsv1alpha1.SidecarSetPatchPodMetadata{patch(appsv1alpha1.SidecarSetMergePatchJsonPatchPolicy, "j", `{"a":1,"b":null}`)},
			want:    map[string]string{"j": `{"a":1}`}, wantChanged: true},
		{name: "merge patch json with an invalid document", pod: map[string]string{"j": `not json`},
			patches: []appsv1alpha1.SidecarSetPatchPodMetadata{patch(appsv1alpha1.SidecarSetMergePatchJsonPatchPolicy, "j", `{}`)},
			wantErr: "invalid JSON document"},
		{name: "merge patch json with a scalar patch", pod: map[string]string{"j": `{}`},
			patches: []appsv1alpha1.SidecarSetPatchPodMetadata{patch(appsv1alpha1.SidecarSetMergePatchJsonPatchPolicy, "j", `3`)},
			wantErr: "invalid JSON merge patch"},
		{name: "patches in order", pod: nil,
			patches: []appsv1alpha1.SidecarSetPatchPodMetadata{patch(appsv1alpha1.SidecarSetRetainPatchPolicy, "a", "1"), patch(appsv1alpha1.SidecarSetOverwritePatchPolicy, "a", "2")},
			want:    map[string]string{"a": "2"}, wantChanged: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			meta := &metav1.ObjectMeta{Annotations: maps.Clone(tc.pod)}
			changed, err := PatchPodMetadata(meta, tc.patches)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if changed != tc.wantChanged || !maps.Equal(meta.Annotations, tc.want) {
				t.Errorf("got %v changed=%v, want %v changed=%v", meta.Annotations, changed, tc.want, tc.wantChanged)
			}
		})
	}
}

// allowList is the allow-list of these rules as ParsePatchMetadataAllowList reads it from the
// ConfigMap.
func allowList(t *testing.T, rules ...PatchMetadataAllowRule) *PatchMetadataAllowList {
	t.Helper()
	data, err := json.Marshal(PatchMetadataAllowList{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	allow, err := ParsePatchMetadataAllowList(map[string]string{PatchMetadataAllowListKey: string(data)})
	if err != nil {
		t.Fatal(err)
	}
	return allow
}

func TestValidatePatchPodMetadata(t *testing.T) {
	setLabels := map[string]string{"team": "mesh"}
	patches := []map[string]string{{"mesh.io/inject": "x"}, {"mesh.io/a": "1", "other/b": "2"}}
	path := field.NewPath("spec", "patchPodMetadata")
	rules := func(rules ...PatchMetadataAllowRule) *PatchMetadataAllowList {
		return allowList(t, rules...)
	}
	cases := []struct {
		name  string
		allow *PatchMetadataAllowList
		want  []string // each error's field and the start of its message
	}{
		{name: "no allow-list", want: []string{"spec.patchPodMetadata: Forbidden: a SidecarSet may patch only the Pod annotations an allow-list names, and there is no allow-list (cm)"}},
		{name: "no rule", allow: rules(), want: []string{"spec.patchPodMetadata: Forbidden: a SidecarSet may patch only the Pod annotations an allow-list names, and no rule of the allow-list (cm) selects"}},
		{name: "allowed", allow: rules(PatchMetadataAllowRule{AllowedAnnotationKeyExprs: []string{`^mesh\.io/`, `^other/`}})},
		{name: "allowed by two rules", allow: rules(
			PatchMetadataAllowRule{AllowedAnnotationKeyExprs: []string{`^mesh\.io/`}},
			PatchMetadataAllowRule{Selector: &metav1.LabelSelector{MatchLabels: setLabels}, AllowedAnnotationKeyExprs: []string{`^other/b$`}})},
		{name: "one key not allowed", allow: rules(PatchMetadataAllowRule{AllowedAnnotationKeyExprs: []string{`^mesh\.io/`}}),
			want: []string{"spec.patchPodMetadata[1].annotations[other/b]: Forbidden: no rule of the allow-list (cm) that selects this SidecarSet allows"}},
		{name: "rule for other SidecarSets", allow: rules(PatchMetadataAllowRule{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "other"}}, AllowedAnnotationKeyExprs: []string{`.*`}}),
			want: []string{"spec.patchPodMetadata: Forbidden: a SidecarSet may patch only the Pod annotations an allow-list names, and no rule"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidatePatchPodMetadata(setLabels, patches, tc.allow, "cm", path)
			if len(errs) != len(tc.want) {
				t.Fatalf("errors %v, want %d", errs, len(tc.want))
			}
			for i, err := range errs {
				if !strings.HasPrefix(err.Error(), tc.want[i]) {
					t.Errorf("error %q, want it to start with %q", err, tc.want[i])
				}
			}
		})
	}
	if errs := ValidatePatchPodMetadata(setLabels, nil, nil, "cm", path); len(errs) != 0 {
		t.Errorf("no patchPodMetadata needs no allow-list: %v", errs)
	}
}

// TestParsePatchMetadataAllowList: OpenKruise's JSON; absent is nil; what cannot be used is an
// error that names what is wrong.
func TestParsePatchMetadataAllowList(t *testing.T) {
	allow, err := ParsePatchMetadataAllowList(map[string]string{PatchMetadataAllowListKey: `{"rules":[{"selector":{"matchLabels":{"a":"b"}},"allowedAnnotationKeyExprs":["^x/"]}]}`})
	if err != nil || len(allow.Rules) != 1 || allow.Rules[0].Selector.MatchLabels["a"] != "b" || allow.Rules[0].AllowedAnnotationKeyExprs[0] != "^x/" {
		t.Errorf("parsed %+v, %v", allow, err)
	}
	if allow, err := ParsePatchMetadataAllowList(nil); allow != nil || err != nil {
		t.Errorf("no ConfigMap: %+v, %v", allow, err)
	}
	if allow, err := ParsePatchMetadataAllowList(map[string]string{"other": "x"}); allow != nil || err != nil {
		t.Errorf("no key: %+v, %v", allow, err)
	}
	for value, want := range map[string]string{
		`rules: []`: "is not a patch-metadata allow-list",
		`{"rules":[{"allowedAnnotationKeyExprs":["("]}]}`:                                         "rules[0].allowedAnnotationKeyExprs",
		`{"rules":[{"selector":{"matchLabels":{"a b":"c"}},"allowedAnnotationKeyExprs":[".*"]}]}`: "rules[0].selector",
	} {
		if _, err := ParsePatchMetadataAllowList(map[string]string{PatchMetadataAllowListKey: value}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", value, err, want)
		}
	}
}

// An upgrade writes the annotations patchPodMetadata changes, and only those; a patch that does
// not apply is an error.
func TestUpgradePatchesPodMetadata(t *testing.T) {
	pod := logPods(t, 1)[0]
	pod.Annotations["merged"] = `{"agent":1,"x":true}`
	pod.Annotations["retained"] = "pod's"
	pod.Annotations["same"] = "v"
	set := logSet("agent:v2", func(s *appsv1alpha1.SidecarSet) {
		s.Spec.PatchPodMetadata = []appsv1alpha1.SidecarSetPatchPodMetadata{
			{PatchPolicy: appsv1alpha1.SidecarSetMergePatchJsonPatchPolicy, Annotations: map[string]string{"merged": `{"agent":2}`}},
			{PatchPolicy: appsv1alpha1.SidecarSetRetainPatchPolicy, Annotations: map[string]string{"retained": "set's", "new": "n"}},
			{PatchPolicy: appsv1alpha1.SidecarSetOverwritePatchPolicy, Annotations: map[string]string{"same": "v"}},
		}
	})
	change, err := Upgrade(pod, set)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"merged": `{"agent":2,"x":true}`, "new": "n"}
	if !maps.Equal(change.Annotations, want) || change.Images["agent"] != "agent:v2" {
		t.Errorf("change %+v, want agent:v2 and annotations %v", change, want)
	}
	if pod.Annotations["merged"] != `{"agent":1,"x":true}` {
		t.Error("Upgrade changed the Pod it was given")
	}
	pod.Annotations["merged"] = "not json"
	if _, err := Upgrade(pod, set); err == nil || !strings.Contains(err.Error(), "merged") {
		t.Errorf("a patch over an annotation that is not JSON: %v, want an error naming it", err)
	}
}
