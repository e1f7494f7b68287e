package pub

import "strings"

// StayInServiceContainersKey is inplace's own annotation (OpenKruise has none) on a CloneSet or
// an Advanced StatefulSet: a comma-separated list of containers of its Pod template that serve no
// traffic (a log shipper, a metrics agent). An in-place update that changes only containers of
// this list keeps the Pod in service: InPlaceUpdateReady stays True and no grace period is
// waited, so the Pod stays in its Services' endpoints while those containers restart
// (pods/inplaceupdate spec.stayInService). The Pod still counts against maxUnavailable until the
// update completes (its lifecycle state is Updating). An update that also changes another
// container takes the Pod out of service as usual. An Advanced DaemonSet refuses the annotation:
// its Pods have no lifecycle state to hold them to maxUnavailable while they stay Ready.
const StayInServiceContainersKey = "inplace.dev/stay-in-service-containers"

// StayInServiceContainers are the container names of the StayInServiceContainersKey annotation
// (spaces around names and empty entries ignored); nil when it is not set.
func StayInServiceContainers(annotations map[string]string) []string {
	var names []string
	for _, n := range strings.Split(annotations[StayInServiceContainersKey], ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return names
}
