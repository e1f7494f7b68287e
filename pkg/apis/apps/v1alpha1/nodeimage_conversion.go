package v1alpha1

import (
	"encoding/json"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/conversion"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
)

// A NodeImage's pull secrets have a mode at v1beta1 (OpenKruise v1.9) that v1alpha1 lacks and
// OpenKruise's conversion drops. inplace carries it, on a NodeImage read at v1alpha1, in
// StatefulSetV1beta1FieldsAnnotation (the one annotation of v1beta1-only fields): the modes of
// each image's pull secrets, by image and position, only where one is set.
type nodeImageV1beta1Fields struct {
	PullSecretModes map[string][]string `json:"pullSecretModes"`
}

// Convert_apps_NodeImage_To_v1alpha1_NodeImage converts the hub to v1alpha1, the pull secrets'
// modes into StatefulSetV1beta1FieldsAnnotation.
func Convert_apps_NodeImage_To_v1alpha1_NodeImage(in *apps.NodeImage, out *NodeImage, s conversion.Scope) error {
	if err := autoConvert_apps_NodeImage_To_v1alpha1_NodeImage(in, out, s); err != nil {
		return err
	}
	var extra nodeImageV1beta1Fields
	for name, image := range in.Spec.Images {
		for i, secret := range image.PullSecrets {
			if secret.Mode == "" {
				continue
			}
			if extra.PullSecretModes == nil {
				extra.PullSecretModes = map[string][]string{}
			}
			if extra.PullSecretModes[name] == nil {
				extra.PullSecretModes[name] = make([]string, len(image.PullSecrets))
			}
			extra.PullSecretModes[name][i] = secret.Mode
		}
	}
	if extra.PullSecretModes == nil {
		return nil
	}
	data, err := json.Marshal(extra)
	if err != nil {
		return fmt.Errorf("encoding the v1beta1 fields of NodeImage %s: %w", in.Name, err)
	}
	// The generated conversion shares the annotation map with in: write into a copy.
	out.Annotations = maps.Clone(out.Annotations)
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[StatefulSetV1beta1FieldsAnnotation] = string(data)
	return nil
}

// Convert_v1alpha1_NodeImage_To_apps_NodeImage converts v1alpha1 to the hub, restoring the pull
// secrets' modes from StatefulSetV1beta1FieldsAnnotation (and dropping it). A mode is restored
// only onto a pull secret still at its position.
func Convert_v1alpha1_NodeImage_To_apps_NodeImage(in *NodeImage, out *apps.NodeImage, s conversion.Scope) error {
	if err := autoConvert_v1alpha1_NodeImage_To_apps_NodeImage(in, out, s); err != nil {
		return err
	}
	data, ok := in.Annotations[StatefulSetV1beta1FieldsAnnotation]
	if !ok {
		return nil
	}
	var extra nodeImageV1beta1Fields
	if err := json.Unmarshal([]byte(data), &extra); err != nil {
		return fmt.Errorf("metadata.annotations[%s]: not the v1beta1 fields this server wrote: %w", StatefulSetV1beta1FieldsAnnotation, err)
	}
	out.Annotations = maps.Clone(out.Annotations)
	delete(out.Annotations, StatefulSetV1beta1FieldsAnnotation)
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	for name, modes := range extra.PullSecretModes {
		image, ok := out.Spec.Images[name]
		if !ok {
			continue
		}
		// The generated conversion shares the slice with in: write into a copy.
		image.PullSecrets = append([]apps.ReferenceObject(nil), image.PullSecrets...)
		for i := range min(len(modes), len(image.PullSecrets)) {
			image.PullSecrets[i].Mode = modes[i]
		}
		out.Spec.Images[name] = image
	}
	return nil
}

// Convert_apps_ReferenceObject_To_v1alpha1_ReferenceObject converts the fields v1alpha1 has; the
// mode is carried by Convert_apps_NodeImage_To_v1alpha1_NodeImage.
func Convert_apps_ReferenceObject_To_v1alpha1_ReferenceObject(in *apps.ReferenceObject, out *ReferenceObject, s conversion.Scope) error {
	return autoConvert_apps_ReferenceObject_To_v1alpha1_ReferenceObject(in, out, s)
}
