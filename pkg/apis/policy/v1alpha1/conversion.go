package v1alpha1

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"

	"github.com/inplace-dev/inplace/pkg/apis/policy"
)

// PodUnavailableBudget conversion between the hub and v1alpha1. v1alpha1 says in annotations what
// v1beta1 (and the hub) say in fields, as OpenKruise converts:
//
//   - kruise.io/pub-protect-operations ("DELETE,EVICT") is spec.protectOperations;
//   - pub.kruise.io/protect-total-replicas ("5") is spec.protectTotalReplicas;
//   - inplace.dev/v1beta1-fields ({"ignoredPodSelector": ...}) is spec.ignoredPodSelector, which
//     OpenKruise's v1alpha1 drops; kept here so that a v1alpha1 client's update does not erase it.
//
// An annotation that parses becomes the field and leaves the hub's annotations (read back, it is
// written in its canonical form: "DELETE, EVICT" reads back "DELETE,EVICT"); one that does not
// parse stays an annotation, and validation refuses it, naming it.

// V1beta1FieldsAnnotation carries, at v1alpha1, the v1beta1 fields v1alpha1 has no annotation for.
const V1beta1FieldsAnnotation = "inplace.dev/v1beta1-fields"

// pubV1beta1Fields is the JSON of V1beta1FieldsAnnotation.
type pubV1beta1Fields struct {
	IgnoredPodSelector *metav1.LabelSelector `json:"ignoredPodSelector,omitempty"`
}

// ParseProtectOperations reads the protect-operations annotation as OpenKruise does: comma
// separated, spaces around an item and empty items ignored, each one of DELETE, UPDATE, EVICT,
// RESIZE. ok is false when an item is none of them.
func ParseProtectOperations(value string) (ops []policy.PubOperation, bad string, ok bool) {
	for _, item := range strings.Split(value, ",") {
		op := policy.PubOperation(strings.TrimSpace(item))
		if op == "" {
			continue
		}
		if !slices.Contains(policy.PubOperations, op) {
			return nil, string(op), false
		}
		ops = append(ops, op)
	}
	return ops, "", true
}

// ParseProtectTotalReplicas reads the protect-total-replicas annotation: a decimal int32.
func ParseProtectTotalReplicas(value string) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 32)
	return int32(n), err
}

func Convert_v1alpha1_PodUnavailableBudget_To_policy_PodUnavailableBudget(in *PodUnavailableBudget, out *policy.PodUnavailableBudget, s conversion.Scope) error {
	if err := autoConvert_v1alpha1_PodUnavailableBudget_To_policy_PodUnavailableBudget(in, out, s); err != nil {
		return err
	}
	if len(in.Annotations) == 0 {
		return nil
	}
	annotations := maps.Clone(in.Annotations)
	if v, found := annotations[PubProtectOperationAnnotation]; found {
		if ops, _, ok := ParseProtectOperations(v); ok {
			out.Spec.ProtectOperations = ops
			delete(annotations, PubProtectOperationAnnotation)
		}
	}
	if v, found := annotations[PubProtectTotalReplicasAnnotation]; found {
		if n, err := ParseProtectTotalReplicas(v); err == nil {
			out.Spec.ProtectTotalReplicas = &n
			delete(annotations, PubProtectTotalReplicasAnnotation)
		}
	}
	if v, found := annotations[V1beta1FieldsAnnotation]; found {
		var fields pubV1beta1Fields
		if err := json.Unmarshal([]byte(v), &fields); err == nil {
			out.Spec.IgnoredPodSelector = fields.IgnoredPodSelector
			delete(annotations, V1beta1FieldsAnnotation)
		}
	}
	if len(annotations) == 0 {
		annotations = nil
	}
	out.Annotations = annotations
	return nil
}

func Convert_policy_PodUnavailableBudget_To_v1alpha1_PodUnavailableBudget(in *policy.PodUnavailableBudget, out *PodUnavailableBudget, s conversion.Scope) error {
	if err := autoConvert_policy_PodUnavailableBudget_To_v1alpha1_PodUnavailableBudget(in, out, s); err != nil {
		return err
	}
	// The annotations say what the fields say, and nothing when the fields say nothing (an
	// annotation a v1beta1 client set has no meaning there and must not mean something here).
	spec := in.Spec
	annotations := maps.Clone(in.Annotations)
	for _, k := range []string{PubProtectOperationAnnotation, PubProtectTotalReplicasAnnotation, V1beta1FieldsAnnotation} {
		delete(annotations, k)
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	if spec.ProtectOperations != nil {
		ops := make([]string, len(spec.ProtectOperations))
		for i, op := range spec.ProtectOperations {
			ops[i] = string(op)
		}
		annotations[PubProtectOperationAnnotation] = strings.Join(ops, ",")
	}
	if spec.ProtectTotalReplicas != nil {
		annotations[PubProtectTotalReplicasAnnotation] = strconv.FormatInt(int64(*spec.ProtectTotalReplicas), 10)
	}
	if spec.IgnoredPodSelector != nil {
		raw, err := json.Marshal(pubV1beta1Fields{IgnoredPodSelector: spec.IgnoredPodSelector})
		if err != nil {
			return err
		}
		annotations[V1beta1FieldsAnnotation] = string(raw)
	}
	if len(annotations) == 0 {
		annotations = nil
	}
	out.Annotations = annotations
	return nil
}

// Convert_policy_PodUnavailableBudgetSpec_To_v1alpha1_PodUnavailableBudgetSpec drops the fields
// v1alpha1 has no field for: the object's conversion writes them as annotations.
func Convert_policy_PodUnavailableBudgetSpec_To_v1alpha1_PodUnavailableBudgetSpec(in *policy.PodUnavailableBudgetSpec, out *PodUnavailableBudgetSpec, s conversion.Scope) error {
	return autoConvert_policy_PodUnavailableBudgetSpec_To_v1alpha1_PodUnavailableBudgetSpec(in, out, s)
}
