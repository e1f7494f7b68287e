package history

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TemplateData is the data of a Pod-template workload's revision (CloneSet, Advanced StatefulSet,
// Advanced DaemonSet), as OpenKruise and kube's StatefulSet store it: a patch that replaces the
// whole Pod template, {"spec":{"template":{..., "$patch":"replace"}}}. Keys are sorted
// (json.Marshal of maps), so equal templates give equal bytes.
func TemplateData(template *corev1.PodTemplateSpec) ([]byte, error) {
	raw, err := json.Marshal(template)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	m["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": m}})
}

// Template decodes the Pod template a revision of TemplateData stores.
func Template(cr *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	var patch struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(cr.Data.Raw, &patch); err != nil {
		return nil, fmt.Errorf("decoding the template of revision %s: %w", cr.Name, err)
	}
	return &patch.Spec.Template, nil
}
