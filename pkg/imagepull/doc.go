// Package imagepull is the logic of image pre-pull (OpenKruise's ImagePullJob, ImageListPullJob
// and NodeImage), pure like pkg/inplaceupdate: functions over typed v1alpha1 objects and the
// time, no clients, no I/O. The controllers and the daemon read the objects, call these functions
// and write what they return.
//
// The model: each node has one NodeImage, named after it. Its spec is the images the node should
// have — per image name, tags, each with the owners (ImagePullJobs) that want it, a pull policy
// and a version; its status is what the node's daemon did, per tag and version. Jobs never talk
// to a node: they write tags into NodeImage specs and read NodeImage statuses. The version is the
// handshake: a spec change that must cause a new pull bumps it, and a status only counts for the
// version it names.
//
// The ImagePullJob controller, per job:
//
//  1. TargetNodes(job, nodes, pods): the nodes to pull on (the caller passes nodes that have a
//     NodeImage).
//  2. JobStatus(job, their NodeImages, secrets, now): the job's status and the nodes whose
//     NodeImage lacks the job's tag (NotSynced). It writes the status; once completed, a status
//     is final, and TTLLeft says when to delete the job. DeadlineLeft says when to requeue.
//  3. NodesToStart(job, status.Active, NotSynced): the nodes to write now, within the job's
//     parallelism; for each, MergeJob(nodeImage.Spec, &nodeImage.Status, job, secrets, now,
//     rand.Int31n) gives the new spec (PullSecretRefs(job) are the secrets unless the controller
//     copies them elsewhere).
//  4. When a job is deleted, RemoveJob(spec, job.UID) on each NodeImage.
//
// The NodeImage controller, per NodeImage: GC(spec, status, UIDs of existing jobs, now) drops
// owners that are gone and tags past their TTL; it requeues after NextGC.
//
// The ImageListPullJob controller, per list job: Children(listJob, ImagePullJobs of its namespace)
// says which ImagePullJobs (one per image, NewChild) to create and delete; ListJobStatus(listJob,
// actions.Current, now) is its status. It labels the list job itself with TemplateHash.
//
// The daemon (pkg/daemon/imagepuller, in inplace-daemon on each node) keys images as SplitImage
// does, pulls every tag of its NodeImage's spec whose version it has not reported (timeout,
// backoffLimit and activeDeadlineSeconds from the tag's pullPolicy, credentials from the image's
// pullSecrets), and writes the status: per tag with that version, and the counts. It is the only
// writer of NodeImage status.
//
// Behaviour follows OpenKruise v1.9 (pkg/controller/{imagepulljob,nodeimage,imagelistpulljob});
// where it differs, the function's comment says so and why.
package imagepull
