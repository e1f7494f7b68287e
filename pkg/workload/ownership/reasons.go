package ownership

// The reasons of the Events a workload (CloneSet, Advanced StatefulSet, Advanced DaemonSet) writes
// about the Pods and claims it owns: OpenKruise's and kube's, so tools that read them still match.
const (
	ReasonInvalidSelector            = "InvalidSelector"
	ReasonSuccessfulCreate           = "SuccessfulCreate"
	ReasonFailedCreate               = "FailedCreate"
	ReasonSuccessfulDelete           = "SuccessfulDelete"
	ReasonFailedDelete               = "FailedDelete"
	ReasonSuccessfulUpdatePodInPlace = "SuccessfulUpdatePodInPlace"
	ReasonFailedUpdatePodInPlace     = "FailedUpdatePodInPlace"
	// ReasonPodLifecyclePrefix followed by the lifecycle state a Pod entered (PreparingDelete...).
	ReasonPodLifecyclePrefix = "PodLifecycle"
)
