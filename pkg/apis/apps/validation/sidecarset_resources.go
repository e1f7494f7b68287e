package validation

import (
	"regexp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/resourceexpr"
)

var targetContainersModes = []apps.TargetContainersModeType{apps.TargetContainersModeSum, apps.TargetContainersModeMax}

// validateResourcesPolicy checks a sidecar's resourcesPolicy as OpenKruise v1.9 does (its webhook
// and its CRD schema): not together with resources, only on a native-sidecar init container, a
// mode of sum or max, a regex that compiles, and at least one expression, each of which parses.
// An expression is also type-checked here (OpenKruise finds cpu*cpu only when a Pod is created).
func validateResourcesPolicy(c *apps.SidecarContainer, initContainer bool, fldPath *field.Path) field.ErrorList {
	p := c.ResourcesPolicy
	if p == nil {
		return nil
	}
	fldPath = fldPath.Child("resourcesPolicy")
	var allErrs field.ErrorList
	if len(c.Resources.Limits) > 0 || len(c.Resources.Requests) > 0 {
		// The policy computes the resources; both would leave it unclear which wins.
		return append(allErrs, field.Forbidden(fldPath, "resourcesPolicy and resources cannot be configured together"))
	}
	if initContainer && (c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways) {
		allErrs = append(allErrs, field.Forbidden(fldPath,
			"resourcesPolicy is only supported for init containers with restartPolicy Always (native sidecars)"))
	}
	if p.TargetContainersMode == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("targetContainersMode"), "sum or max"))
	} else {
		allErrs = append(allErrs, validateEnum(p.TargetContainersMode, targetContainersModes, fldPath.Child("targetContainersMode"))...)
	}
	regexPath := fldPath.Child("targetContainersNameRegex")
	if p.TargetContainersNameRegex == "" {
		allErrs = append(allErrs, field.Required(regexPath, "a regular expression of the target containers' names"))
	} else if _, err := regexp.Compile(p.TargetContainersNameRegex); err != nil {
		allErrs = append(allErrs, field.Invalid(regexPath, p.TargetContainersNameRegex, err.Error()))
	}

	exprPath := fldPath.Child("resourcesExpr")
	limits, requests := p.ResourcesExpr.Limits, p.ResourcesExpr.Requests
	if limits == nil && requests == nil {
		return append(allErrs, field.Required(exprPath, "at least one of limits or requests must be configured"))
	}
	if limits != nil {
		allErrs = append(allErrs, validateResourceExpr(limits.CPU, resourceexpr.ExprCPU, exprPath.Child("limits", "cpu"))...)
		allErrs = append(allErrs, validateResourceExpr(limits.Memory, resourceexpr.ExprMemory, exprPath.Child("limits", "memory"))...)
	}
	if requests != nil {
		allErrs = append(allErrs, validateResourceExpr(requests.CPU, resourceexpr.ExprCPU, exprPath.Child("requests", "cpu"))...)
		allErrs = append(allErrs, validateResourceExpr(requests.Memory, resourceexpr.ExprMemory, exprPath.Child("requests", "memory"))...)
	}
	return allErrs
}

// validateResourceExpr parses an expression; an empty one leaves the resource unset. The error
// names the column of what is wrong.
func validateResourceExpr(expr string, v resourceexpr.Variable, fldPath *field.Path) field.ErrorList {
	if expr == "" {
		return nil
	}
	if _, err := resourceexpr.Parse(expr, v); err != nil {
		return field.ErrorList{field.Invalid(fldPath, expr, err.Error())}
	}
	return nil
}
