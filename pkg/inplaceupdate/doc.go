// Package inplaceupdate is the in-place update engine: pure logic over *corev1.Pod values that the
// pods/inplaceupdate subresource, the controllers and the daemon share. It does no I/O: every
// function takes a Pod (and the time, where time matters) and returns what to write; the caller
// writes it.
//
// The flow:
//
//  1. CalculateSpec (two Pod templates, for workload controllers) or SpecFromRequest (a
//     pods/inplaceupdate body against the live Pod) decides whether the change can be made in place
//     and returns an UpdateSpec.
//  2. Begin(pod, spec, now) returns the first Step: Pod conditions to set through pods/status, the
//     Pod to write (state annotation, revision label, labels/annotations, first batch of images),
//     and the container resources to send through pods/resize.
//  3. Progress(pod, now) is called whenever the Pod changes (and after Step.RequeueAfter): it ends a
//     grace period, judges the current batch of containers done from what the kubelet and the daemon
//     report, starts the next batch once the previous one is ready, and finally marks the update
//     completed and sets InPlaceUpdateReady back to True.
//  4. Meanwhile ImagesToWatch tells a node agent (inplace-daemon) which new images an update's last
//     batch waits for; once the kubelet took them over (KubeletObservedSpec, or the container
//     runtime runs them), HandedOverConditions sets InPlaceUpdateReady True ahead of the kubelet's
//     report of the new containers (Progress still completes the update).
//
// All progress lives in the Pod itself (annotation apps.kruise.io/inplace-update-state, OpenKruise's
// InPlaceUpdateState), so any program may be killed at any moment and a later Progress resumes.
//
// The state annotation is a superset of OpenKruise's: besides OpenKruise's fields it carries
// containerResources (resources of the current batch, so an interrupted resize is sent again),
// envRestartContainers (containers of the current batch that the daemon must restart to see new
// env-from-metadata values, each with the containerID it had before) and completedTimestamp (set
// when the update is over; OpenKruise keeps the annotation without such a mark). OpenKruise's
// decoders ignore unknown fields, so the annotation stays readable by OpenKruise tooling.
package inplaceupdate
