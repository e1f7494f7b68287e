// Package features holds OpenKruise's feature gates, which inplace-apiserver, inplace-controller
// and inplace-daemon all accept in --feature-gates: the string an OpenKruise user sets
// (`featureGates` in its chart) parses unchanged. Every gate of OpenKruise v1.9.0 is registered
// with its default and stage, also those whose behaviour inplace has always or that do not apply
// to it (see the README's table); a name inplace does not know is logged and ignored (Flag), so a
// gate of a newer OpenKruise never stops a program from starting.
//
// Code reads a gate with Enabled, as kube code reads utilfeature.DefaultFeatureGate.
package features

import (
	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/component-base/featuregate"
)

// OpenKruise's gates (pkg/features/kruise_features.go in openkruise/kruise), by their names.
const (
	KruiseDaemon                              featuregate.Feature = "KruiseDaemon"
	PodWebhook                                featuregate.Feature = "PodWebhook"
	CloneSetShortHash                         featuregate.Feature = "CloneSetShortHash"
	KruisePodReadinessGate                    featuregate.Feature = "KruisePodReadinessGate"
	PreDownloadImageForInPlaceUpdate          featuregate.Feature = "PreDownloadImageForInPlaceUpdate"
	CloneSetPartitionRollback                 featuregate.Feature = "CloneSetPartitionRollback"
	ResourcesDeletionProtection               featuregate.Feature = "ResourcesDeletionProtection"
	PodUnavailableBudgetDeleteGate            featuregate.Feature = "PodUnavailableBudgetDeleteGate"
	PodUnavailableBudgetUpdateGate            featuregate.Feature = "PodUnavailableBudgetUpdateGate"
	WorkloadSpread                            featuregate.Feature = "WorkloadSpread"
	DaemonWatchingPod                         featuregate.Feature = "DaemonWatchingPod"
	TemplateNoDefaults                        featuregate.Feature = "TemplateNoDefaults"
	InPlaceUpdateEnvFromMetadata              featuregate.Feature = "InPlaceUpdateEnvFromMetadata"
	StatefulSetAutoDeletePVC                  featuregate.Feature = "StatefulSetAutoDeletePVC"
	SidecarSetPatchPodMetadataDefaultsAllowed featuregate.Feature = "SidecarSetPatchPodMetadataDefaultsAllowed"
	SidecarTerminator                         featuregate.Feature = "SidecarTerminator"
	PodProbeMarkerGate                        featuregate.Feature = "PodProbeMarkerGate"
	PreDownloadImageForDaemonSetUpdate        featuregate.Feature = "PreDownloadImageForDaemonSetUpdate"
	CloneSetEventHandlerOptimization          featuregate.Feature = "CloneSetEventHandlerOptimization"
	// PreparingUpdateAsUpdate makes scaling count a Pod waiting in PreparingUpdate (held by the
	// inPlaceUpdate hook) as one at the update revision: a Pod created meanwhile keeps the
	// partition at the current revision instead of taking the update revision too.
	PreparingUpdateAsUpdate               featuregate.Feature = "PreparingUpdateAsUpdate"
	ImagePullJobGate                      featuregate.Feature = "ImagePullJobGate"
	ResourceDistributionGate              featuregate.Feature = "ResourceDistributionGate"
	DeletionProtectionForCRDCascadingGate featuregate.Feature = "DeletionProtectionForCRDCascadingGate"
	EnhancedLivenessProbeGate             featuregate.Feature = "EnhancedLivenessProbe"
	// RecreatePodWhenChangeVCTInCloneSetGate makes a CloneSet under InPlaceIfPossible recreate
	// (not update in place) a Pod whose revision had other volumeClaimTemplates than the update
	// revision, so the Pod comes back with new PVCs of the new templates.
	RecreatePodWhenChangeVCTInCloneSetGate   featuregate.Feature = "RecreatePodWhenChangeVCTInCloneSetGate"
	StatefulSetStartOrdinal                  featuregate.Feature = "StatefulSetStartOrdinal"
	PodIndexLabel                            featuregate.Feature = "PodIndexLabel"
	EnableExternalCerts                      featuregate.Feature = "EnableExternalCerts"
	StatefulSetAutoResizePVCGate             featuregate.Feature = "StatefulSetAutoResizePVCGate"
	ForceDeleteTimeoutExpectationFeatureGate featuregate.Feature = "ForceDeleteTimeoutExpectationGate"
	InPlaceWorkloadVerticalScaling           featuregate.Feature = "InPlaceWorkloadVerticalScaling"
	EnablePodProbeMarkerOnServerless         featuregate.Feature = "EnablePodProbeMarkerOnServerless"
	EnableSortSidecarContainerByName         featuregate.Feature = "EnableSortSidecarContainerByName"
	InPlacePodVerticalScaling                featuregate.Feature = "InPlacePodVerticalScaling"

	// ContainerLaunchPostStartBarrier is inplace's own (not OpenKruise's): the Pod webhook holds
	// back containers of a lower launch priority with a postStart hook that inplace-daemon answers
	// (no object per Pod) instead of OpenKruise's barrier ConfigMap per Pod, whenever the hook
	// keeps the order exactly (see package launchpriority). Off: every ordered Pod gets the
	// ConfigMap barrier, as with OpenKruise.
	ContainerLaunchPostStartBarrier featuregate.Feature = "ContainerLaunchPostStartBarrier"
)

// defaultFeatureGates are OpenKruise v1.9.0's defaults and stages, unchanged.
var defaultFeatureGates = map[featuregate.Feature]featuregate.FeatureSpec{
	PodWebhook:        {Default: true, PreRelease: featuregate.Beta},
	KruiseDaemon:      {Default: true, PreRelease: featuregate.Beta},
	DaemonWatchingPod: {Default: true, PreRelease: featuregate.Beta},

	CloneSetShortHash:                         {Default: false, PreRelease: featuregate.Alpha},
	KruisePodReadinessGate:                    {Default: false, PreRelease: featuregate.Alpha},
	PreDownloadImageForInPlaceUpdate:          {Default: false, PreRelease: featuregate.Alpha},
	CloneSetPartitionRollback:                 {Default: false, PreRelease: featuregate.Alpha},
	ResourcesDeletionProtection:               {Default: false, PreRelease: featuregate.Beta},
	WorkloadSpread:                            {Default: true, PreRelease: featuregate.Beta},
	PodUnavailableBudgetDeleteGate:            {Default: true, PreRelease: featuregate.Beta},
	PodUnavailableBudgetUpdateGate:            {Default: false, PreRelease: featuregate.Alpha},
	TemplateNoDefaults:                        {Default: false, PreRelease: featuregate.Alpha},
	InPlaceUpdateEnvFromMetadata:              {Default: true, PreRelease: featuregate.Beta},
	StatefulSetAutoDeletePVC:                  {Default: true, PreRelease: featuregate.Beta},
	SidecarSetPatchPodMetadataDefaultsAllowed: {Default: false, PreRelease: featuregate.Alpha},
	SidecarTerminator:                         {Default: false, PreRelease: featuregate.Alpha},
	PodProbeMarkerGate:                        {Default: true, PreRelease: featuregate.Beta},
	PreDownloadImageForDaemonSetUpdate:        {Default: false, PreRelease: featuregate.Alpha},

	CloneSetEventHandlerOptimization:      {Default: false, PreRelease: featuregate.Alpha},
	PreparingUpdateAsUpdate:               {Default: false, PreRelease: featuregate.Alpha},
	ImagePullJobGate:                      {Default: false, PreRelease: featuregate.Alpha},
	ResourceDistributionGate:              {Default: false, PreRelease: featuregate.Alpha},
	DeletionProtectionForCRDCascadingGate: {Default: false, PreRelease: featuregate.Alpha},

	EnhancedLivenessProbeGate:                {Default: false, PreRelease: featuregate.Alpha},
	RecreatePodWhenChangeVCTInCloneSetGate:   {Default: false, PreRelease: featuregate.Alpha},
	StatefulSetStartOrdinal:                  {Default: false, PreRelease: featuregate.Alpha},
	PodIndexLabel:                            {Default: true, PreRelease: featuregate.Beta},
	EnableExternalCerts:                      {Default: false, PreRelease: featuregate.Alpha},
	StatefulSetAutoResizePVCGate:             {Default: false, PreRelease: featuregate.Alpha},
	ForceDeleteTimeoutExpectationFeatureGate: {Default: false, PreRelease: featuregate.Alpha},
	// On by default in inplace (off in OpenKruise v1.9.0): resources reaching a running Pod is
	// what inplace is for. Set it to false for OpenKruise's default, recreating the Pods.
	InPlaceWorkloadVerticalScaling:   {Default: true, PreRelease: featuregate.Alpha},
	EnablePodProbeMarkerOnServerless: {Default: false, PreRelease: featuregate.Alpha},
	EnableSortSidecarContainerByName: {Default: false, PreRelease: featuregate.Alpha},
	InPlacePodVerticalScaling:        {Default: false, PreRelease: featuregate.Alpha},

	ContainerLaunchPostStartBarrier: {Default: true, PreRelease: featuregate.Beta},
}

// DefaultMutableFeatureGate holds OpenKruise's gates for this process; --feature-gates sets it
// (Flag). It is separate from k8s.io/apiserver's gate, which holds kube's own gates: some names
// are in both (InPlacePodVerticalScaling) with other meanings and defaults.
var DefaultMutableFeatureGate featuregate.MutableFeatureGate = featuregate.NewFeatureGate()

// DefaultFeatureGate is DefaultMutableFeatureGate, read only.
var DefaultFeatureGate featuregate.FeatureGate = DefaultMutableFeatureGate

func init() {
	runtime.Must(DefaultMutableFeatureGate.Add(defaultFeatureGates))
}

// Enabled tells whether the gate is on in this process.
func Enabled(f featuregate.Feature) bool {
	return DefaultFeatureGate.Enabled(f)
}
