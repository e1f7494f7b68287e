package history

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
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

// TruncateUnused is Truncate for a Pod-template workload: the revisions it keeps whatever the
// limit are its current and update revisions and every revision one of its Pods is at (a Pod's
// controller-revision-hash label names its revision).
func TruncateUnused(ctx context.Context, client appsv1client.ControllerRevisionsGetter, revisions []*appsv1.ControllerRevision,
	revs Revisions, pods []*corev1.Pod, limit int) error {
	live := sets.New(revs.Current.Name, revs.Update.Name)
	for _, p := range pods {
		if r := p.Labels[appsv1.ControllerRevisionHashLabelKey]; r != "" {
			live.Insert(r)
		}
	}
	return Truncate(ctx, client, revisions, live, limit)
}
