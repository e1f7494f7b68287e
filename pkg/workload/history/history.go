// Package history holds what the workload controllers (CloneSet, SidecarSet, Advanced
// StatefulSet and DaemonSet) share about their ControllerRevisions: kube's controller-history
// naming and hashing, and their order; and, for a workload whose revisions live in its namespace
// under its control (Owner), finding or creating the revision of its data (annotated with the
// workload's kubernetes.io/change-cause) with kube's collision counts, and truncating its
// history. It knows nothing of what a revision's data is: each controller encodes its own (a
// CloneSet's is a patch of its Pod template).
package history

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/rand"
)

// maxRevisionPrefix keeps revision names (prefix, "-", hash) within 253 characters, as kube's
// controller history does.
const maxRevisionPrefix = 223

// HashRevision is kube's controller history hash: fnv-32 of the data, salted with the collision
// count, safely encoded.
func HashRevision(data []byte, collisionCount *int32) string {
	h := fnv.New32()
	h.Write(data)
	if collisionCount != nil {
		h.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// RevisionName is <owner>-<hash>.
func RevisionName(owner, hash string) string {
	if len(owner) > maxRevisionPrefix {
		owner = owner[:maxRevisionPrefix]
	}
	return owner + "-" + hash
}

// SortRevisions orders revisions oldest first: by revision number, then creation, then name.
func SortRevisions(revisions []*appsv1.ControllerRevision) {
	sort.SliceStable(revisions, func(i, j int) bool {
		a, b := revisions[i], revisions[j]
		if a.Revision != b.Revision {
			return a.Revision < b.Revision
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
}
