package validation

import (
	"strings"
	"testing"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

const basePath = "metadata.annotations[apps.kruise.io/sidecarset-base]"

func canarySidecarSet(canary, base string) *apps.SidecarSet {
	s := validSidecarSet()
	s.Annotations = map[string]string{v1alpha1.SidecarSetCanaryAnnotation: canary, v1alpha1.SidecarSetBaseAnnotation: base}
	s.Spec.UpdateStrategy.Type = apps.NotUpdateSidecarSetStrategyType
	return s
}

// The cases of OpenKruise master's TestValidateSidecarSetCanaryAnnotations that read no other
// SidecarSet (base exists, base is a canary: the admission plugin's tests), each at its field path.
func TestValidateSidecarSetCanary(t *testing.T) {
	cases := []struct {
		name   string
		obj    *apps.SidecarSet
		mutate func(*apps.SidecarSet)
		want   []want
	}{
		{name: "not a canary", obj: validSidecarSet()},
		{name: "canary", obj: canarySidecarSet("true", "base")},
		{name: "canary is its own base", obj: canarySidecarSet("true", "log-agent"), want: []want{invalid(basePath)}},
		{name: "canary with RollingUpdate", obj: canarySidecarSet("true", "base"),
			mutate: func(s *apps.SidecarSet) { s.Spec.UpdateStrategy.Type = apps.RollingUpdateSidecarSetStrategyType },
			want:   []want{invalid("spec.updateStrategy.type")}},
		{name: "TRUE is not a canary: not checked", obj: canarySidecarSet("TRUE", "log-agent"),
			mutate: func(s *apps.SidecarSet) { s.Spec.UpdateStrategy.Type = apps.RollingUpdateSidecarSetStrategyType }},
		{name: "canary without base is not a canary: not checked", obj: canarySidecarSet("true", ""),
			mutate: func(s *apps.SidecarSet) { s.Spec.UpdateStrategy.Type = apps.RollingUpdateSidecarSetStrategyType }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.mutate != nil {
				tc.mutate(tc.obj)
			}
			expectErrors(t, ValidateSidecarSet(tc.obj), tc.want...)
		})
	}
}

func TestValidateSidecarSetCanaryUpdate(t *testing.T) {
	cases := []struct {
		name     string
		old, obj *apps.SidecarSet
		want     []want
	}{
		{name: "base unchanged", old: canarySidecarSet("true", "base"), obj: canarySidecarSet("true", "base")},
		{name: "base changed", old: canarySidecarSet("true", "old-base"), obj: canarySidecarSet("true", "new-base"),
			want: []want{invalid(basePath)}},
		{name: "a SidecarSet becomes a canary", old: validSidecarSet(), obj: canarySidecarSet("true", "base"),
			want: []want{invalid(basePath)}},
		{name: "a canary stops being one", old: canarySidecarSet("true", "base"), obj: canarySidecarSet("false", "base")},
		{name: "canary annotation set later, same base", old: canarySidecarSet("false", "base"), obj: canarySidecarSet("true", "base")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateSidecarSetUpdate(tc.obj, tc.old), tc.want...)
		})
	}
}

// The user reads which base it was and what to do.
func TestValidateSidecarSetCanaryMessages(t *testing.T) {
	errs := ValidateSidecarSetUpdate(canarySidecarSet("true", "new-base"), canarySidecarSet("true", "old-base"))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `immutable (was "old-base")`) {
		t.Errorf("got %v", errs)
	}
	s := canarySidecarSet("true", "base")
	s.Spec.UpdateStrategy.Type = apps.RollingUpdateSidecarSetStrategyType
	errs = ValidateSidecarSet(s)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "updateStrategy.type must be NotUpdate") {
		t.Errorf("got %v", errs)
	}
}
