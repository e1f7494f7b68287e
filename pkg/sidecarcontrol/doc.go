// Package sidecarcontrol is SidecarSet injection as pure logic over a Pod and the SidecarSets that
// match it, with OpenKruise's semantics (pkg/control/sidecarcontrol and the Pod webhook's
// sidecarset.go), so that Pods injected here look the same as Pods OpenKruise injects. It does no
// I/O: the caller reads the SidecarSets, the namespace's labels and the clock, and writes the Pod.
// The Pod webhook (on CREATE), the sidecarsets/NAME/inject subresource and the SidecarSet
// controller share it.
//
// The flow:
//
//  1. Matches(pod, namespaceLabels, sidecarSet) says whether a SidecarSet injects into a Pod
//     (Pod active, SidecarSet not paused, spec.namespace, spec.namespaceSelector against the
//     namespace's labels, spec.selector against the Pod's labels) and, if not, why, in words for a
//     user; Matching filters a list with it, drops a base SidecarSet whose canary (IsCanary:
//     annotations apps.kruise.io/sidecarset-canary "true" and apps.kruise.io/sidecarset-base)
//     also matches, and sorts the result by name.
//  2. The caller resolves each matched SidecarSet to the revision to inject
//     (spec.injectionStrategy.revision names a ControllerRevision; that lookup is I/O and stays
//     with the caller) and calls Inject(pod, sidecarSets, now). Inject returns an injected copy:
//     spec.patchPodMetadata applied (PatchPodMetadata), containers and init containers placed
//     (BeforeAppContainer / AfterAppContainer, native sidecars among the init containers), volumes,
//     shared volume mounts, transferred env, imagePullSecrets, hot-upgrade pairs, and the Pod
//     annotations kruise.io/sidecarset-hash, kruise.io/sidecarset-hash-without-image and
//     kruise.io/sidecarset-injected-list that the SidecarSet controller later reads to upgrade
//     sidecars in place.
//  3. Hash and HashWithoutImage compute a SidecarSet's kruise.io/sidecarset-hash and
//     kruise.io/sidecarset-hash-without-image exactly as OpenKruise does; whoever stores a
//     SidecarSet sets them as annotations, and Inject copies them into the Pod (computing them when
//     a SidecarSet lacks them).
//  4. Conflicts(a, b) says why two SidecarSets that may select the same Pods cannot both exist (same
//     container or init container name, same volume name with different content, an annotation
//     both patch when one overwrites), as OpenKruise's SidecarSet validation judges;
//     ValidatePatchPodMetadata checks spec.patchPodMetadata against OpenKruise's allow-list.
//
// Inject covers Pod creation only. On a Pod UPDATE OpenKruise injects no containers (its default
// control never re-injects into an existing Pod) and only re-applies patchPodMetadata, which the
// caller can do with PatchPodMetadata.
package sidecarcontrol
