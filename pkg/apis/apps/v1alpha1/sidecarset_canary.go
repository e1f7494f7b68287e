package v1alpha1

// SidecarSetCanaryBase reads a SidecarSet's annotations as OpenKruise master's IsCanarySidecarSet:
// the SidecarSet is a canary when SidecarSetCanaryAnnotation is exactly "true" (case matters: not
// "True", not "1") and SidecarSetBaseAnnotation is not empty. base is that annotation, returned
// whether or not the SidecarSet is a canary.
func SidecarSetCanaryBase(annotations map[string]string) (canary bool, base string) {
	base = annotations[SidecarSetBaseAnnotation]
	return annotations[SidecarSetCanaryAnnotation] == "true" && base != "", base
}
