package sidecarset

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Results of a Pod's sidecar upgrade step, the label of podUpgrades.
const (
	resultStarted       = "started"
	resultWaiting       = "waiting"
	resultFailed        = "failed"
	resultNotUpgradable = "not_upgradable"
	resultHotReset      = "hot_upgrade_reset"
)

// podUpgrades counts, per SidecarSet, the in-place upgrade steps the controller asked of Pods and
// how they went: started, waiting (the Pod's container was busy with another update, 409, or a
// PodUnavailableBudget had no unit left, 429),
// failed, not_upgradable (changes beyond images; marked SidecarSetUpgradable=False) and
// hot_upgrade_reset (the second step of a hot upgrade).
var podUpgrades = metrics.NewCounterVec(&metrics.CounterOpts{
	Namespace:      "inplace_controller",
	Subsystem:      Name,
	Name:           "pod_upgrades_total",
	Help:           "In-place upgrade steps of injected sidecars asked of Pods, by SidecarSet and result.",
	StabilityLevel: metrics.ALPHA,
}, []string{"sidecarset", "result"})

func init() {
	legacyregistry.MustRegister(podUpgrades)
}
