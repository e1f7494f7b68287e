// Package containerrecreate is the logic of ContainerRecreateRequests (CRRs) that admission,
// inplace-controller and inplace-daemon share, with no I/O: which requests are active, in which
// order the requests of one Pod run, and when a request is done.
//
// Who writes what (each field has one writer, so no clock is ever compared with another's):
//
//   - admission (inplace-apiserver) fills, on CREATE, the labels crr.apps.kruise.io/pod-uid,
//     crr.apps.kruise.io/node-name and crr.apps.kruise.io/active, and each container's
//     statusContext (the container instance to replace), preStop and ports, from the live Pod.
//   - inplace-daemon, on the Pod's node, owns status.phase Pending and Recreating and
//     status.containerRecreateStates. It handles one request of a Pod at a time (Order), stops
//     containers through CRI, and judges a container recreated from what CRI and the kubelet
//     report: a running instance whose id differs from statusContext.containerID (or whose
//     attempt is higher than statusContext.restartCount) and that the kubelet reports ready. Any
//     wait (unreadyGracePeriodSeconds, minStartedSeconds) is measured from when the daemon itself
//     observed the start of the wait, on its own clock.
//   - inplace-controller owns status.phase Completed, status.completionTime and status.message,
//     removes the active label, takes the Pod out of service for unreadyGracePeriodSeconds
//     (KruisePodReady) and brings it back, and enforces activeDeadlineSeconds and
//     ttlSecondsAfterFinished, all on its own clock. It also records the Pod's status of the new
//     container instances in the annotation crr.apps.kruise.io/sync-container-statuses (v1beta1's
//     status.containerStatusSnapshot); nothing reads it back.
//
// A request names container instances (statusContext), not containers: one that an earlier
// request (or a crash) already replaced is recreated already, so two requests made back to back
// for the same container restart it once, and both complete.
package containerrecreate
