package history

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

func testOwner(name string, uid types.UID) Owner {
	obj := &metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid}
	return Owner{
		Object: obj,
		Ref: &metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: name, UID: uid,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)},
		Labels: map[string]string{"app": name},
	}
}

// dataOf is revision data, JSON as the fake clientset wants it.
func dataOf(s string) []byte { return []byte(fmt.Sprintf(`{"d":%q}`, s)) }

// revisionOf is the owner's revision of data numbered n, with a UID for Truncate's precondition.
func revisionOf(o Owner, data string, n int64) *appsv1.ControllerRevision {
	r := o.NewRevision(dataOf(data), n, 0)
	r.UID = types.UID(r.Name)
	return r
}

func names(revisions []*appsv1.ControllerRevision) []string {
	var out []string
	for _, r := range revisions {
		out = append(out, r.Name)
	}
	return out
}

func TestLimit(t *testing.T) {
	for _, tc := range []struct {
		limit *int32
		want  int
	}{
		{nil, DefaultRevisionHistoryLimit},
		{ptr.To[int32](0), 0},
		{ptr.To[int32](3), 3},
		{ptr.To[int32](-1), 0},
	} {
		if got := Limit(tc.limit); got != tc.want {
			t.Errorf("Limit(%v) = %d, want %d", ptr.Deref(tc.limit, -99), got, tc.want)
		}
	}
}

func TestNewRevision(t *testing.T) {
	o := testOwner("web", "uid-web")
	r := o.NewRevision([]byte(`{"a":1}`), 3, 2)
	if want := RevisionName("web", HashRevision([]byte(`{"a":1}`), ptr.To[int32](2))); r.Name != want {
		t.Errorf("name %s, want %s", r.Name, want)
	}
	if r.Namespace != "ns" || r.Revision != 3 || string(r.Data.Raw) != `{"a":1}` || r.Labels["app"] != "web" ||
		!metav1.IsControlledBy(r, o.Object) {
		t.Errorf("revision %+v", r)
	}
	// The labels are a copy: changing the revision's does not change the owner's.
	r.Labels["x"] = "y"
	if _, ok := o.Labels["x"]; ok {
		t.Error("the revision shares the owner's labels map")
	}
}

// TestNewRevisionChangeCause: a revision carries its owner's kubernetes.io/change-cause (what
// `rollout history` shows per revision) and none of its other annotations.
func TestNewRevisionChangeCause(t *testing.T) {
	o := testOwner("web", "uid-web")
	if r := o.NewRevision([]byte(`{"a":1}`), 1, 0); len(r.Annotations) != 0 {
		t.Errorf("owner without change-cause: revision annotations %v, want none", r.Annotations)
	}
	o.Object.SetAnnotations(map[string]string{
		ChangeCauseAnnotation:                              "kubectl inplace set image clone/web main=app:v2",
		"kubectl.kubernetes.io/last-applied-configuration": `{"big":"manifest"}`,
	})
	r := o.NewRevision([]byte(`{"a":2}`), 2, 0)
	if want := map[string]string{ChangeCauseAnnotation: "kubectl inplace set image clone/web main=app:v2"}; !maps.Equal(r.Annotations, want) {
		t.Errorf("revision annotations %v, want %v", r.Annotations, want)
	}
	// Data alone names a revision: the cause does not change its hash.
	if plain := testOwner("web", "uid-web").NewRevision([]byte(`{"a":2}`), 2, 0); plain.Name != r.Name {
		t.Errorf("revision name %s with a change-cause, %s without", r.Name, plain.Name)
	}
}

// TestManageKeepsChangeCause: a new template's revision takes the owner's change-cause now; an
// older template brought back keeps the cause it was created with (kube's StatefulSet).
func TestManageKeepsChangeCause(t *testing.T) {
	o := testOwner("web", "uid-web")
	o.Object.SetAnnotations(map[string]string{ChangeCauseAnnotation: "v1"})
	r1 := revisionOf(o, "a", 1)
	o.Object.SetAnnotations(map[string]string{ChangeCauseAnnotation: "v2"})
	r2 := revisionOf(o, "b", 2)
	client := fake.NewClientset(r1, r2)
	o.Object.SetAnnotations(map[string]string{ChangeCauseAnnotation: "v3"})
	res, err := Manage(context.Background(), client.AppsV1(), o, dataOf("c"), []*appsv1.ControllerRevision{r1, r2}, r2.Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Update.Annotations[ChangeCauseAnnotation]; got != "v3" || res.Update.Revision != 3 {
		t.Errorf("new template: revision #%d with change-cause %q, want #3 with v3", res.Update.Revision, got)
	}
	o.Object.SetAnnotations(map[string]string{ChangeCauseAnnotation: "undo"})
	res, err = Manage(context.Background(), client.AppsV1(), o, dataOf("a"), []*appsv1.ControllerRevision{r1, r2, res.Update}, r2.Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Update.Annotations[ChangeCauseAnnotation]; res.Update.Name != r1.Name || res.Update.Revision != 4 || got != "v1" {
		t.Errorf("older template back: %s #%d with change-cause %q, want %s #4 with v1", res.Update.Name, res.Update.Revision, got, r1.Name)
	}
}

func TestManage(t *testing.T) {
	o := testOwner("web", "uid-web")
	r1, r2, r3 := revisionOf(o, "a", 1), revisionOf(o, "b", 2), revisionOf(o, "c", 3)
	for _, tc := range []struct {
		name      string
		data      string
		revisions []*appsv1.ControllerRevision
		current   string
		// wantUpdate is the name of the update revision, wantNumber its number, wantCurrent the
		// current one's; wantVerb the write made ("" none).
		wantUpdate, wantCurrent, wantVerb string
		wantNumber                        int64
	}{
		{"first", "a", nil, "", r1.Name, r1.Name, "create", 1},
		{"unchanged", "c", []*appsv1.ControllerRevision{r1, r2, r3}, r2.Name, r3.Name, r2.Name, "", 3},
		{"new data", "d", []*appsv1.ControllerRevision{r1, r2, r3}, r3.Name, revisionOf(o, "d", 4).Name, r3.Name, "create", 4},
		{"back to older data", "a", []*appsv1.ControllerRevision{r1, r2, r3}, r3.Name, r1.Name, r3.Name, "update", 4},
		{"current gone", "c", []*appsv1.ControllerRevision{r2, r3}, r1.Name, r3.Name, r3.Name, "", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			for _, r := range tc.revisions {
				objs = append(objs, r)
			}
			client := fake.NewClientset(objs...)
			client.ClearActions()
			res, err := Manage(context.Background(), client.AppsV1(), o, dataOf(tc.data), tc.revisions, tc.current, 0)
			if err != nil {
				t.Fatal(err)
			}
			if res.Update.Name != tc.wantUpdate || res.Update.Revision != tc.wantNumber || res.Current.Name != tc.wantCurrent || res.CollisionCount != 0 {
				t.Errorf("update %s #%d current %s collisions %d; want %s #%d %s 0",
					res.Update.Name, res.Update.Revision, res.Current.Name, res.CollisionCount, tc.wantUpdate, tc.wantNumber, tc.wantCurrent)
			}
			var verbs []string
			for _, a := range client.Actions() {
				verbs = append(verbs, a.GetVerb())
			}
			if want := slices.DeleteFunc([]string{tc.wantVerb}, func(v string) bool { return v == "" }); !slices.Equal(verbs, want) {
				t.Errorf("writes %v, want %v", verbs, want)
			}
		})
	}
}

func TestCreateCollision(t *testing.T) {
	o, other := testOwner("web", "uid-web"), testOwner("web", "uid-other")
	for _, tc := range []struct {
		name  string
		taken *appsv1.ControllerRevision
		// want is the collision count the revision is created (or found) with.
		want int32
	}{
		{"free name", nil, 0},
		{"taken by other data", func() *appsv1.ControllerRevision {
			r := revisionOf(o, "a", 1)
			r.Data.Raw = dataOf("other")
			return r
		}(), 1},
		{"taken by another owner", func() *appsv1.ControllerRevision {
			r := revisionOf(other, "a", 1)
			r.Name = revisionOf(o, "a", 1).Name
			return r
		}(), 1},
		{"created by an earlier sync", revisionOf(o, "a", 1), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			if tc.taken != nil {
				if _, err := client.AppsV1().ControllerRevisions("ns").Create(context.Background(), tc.taken, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			var collisions int32
			got, err := Create(context.Background(), client.AppsV1(), o.Object, o.NewRevision(dataOf("a"), 1, 0), &collisions)
			if err != nil {
				t.Fatal(err)
			}
			want := RevisionName("web", HashRevision(dataOf("a"), ptr.To(tc.want)))
			if collisions != tc.want || got.Name != want || string(got.Data.Raw) != string(dataOf("a")) {
				t.Errorf("created %s (data %s) with %d collisions, want %s with %d", got.Name, got.Data.Raw, collisions, want, tc.want)
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	o := testOwner("web", "uid-web")
	var all []*appsv1.ControllerRevision
	for i := 1; i <= 5; i++ {
		all = append(all, revisionOf(o, fmt.Sprint(i), int64(i)))
	}
	for _, tc := range []struct {
		name  string
		live  []string
		limit int
		want  []string
	}{
		{"within the limit", nil, 5, nil},
		{"oldest first", nil, 3, []string{all[0].Name, all[1].Name}},
		{"live kept", []string{all[0].Name, all[4].Name}, 1, []string{all[1].Name, all[2].Name}},
		{"no history", []string{all[4].Name}, 0, names(all[:4])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			for _, r := range all {
				objs = append(objs, r)
			}
			client := fake.NewClientset(objs...)
			client.ClearActions()
			if err := Truncate(context.Background(), client.AppsV1(), all, sets.New(tc.live...), tc.limit); err != nil {
				t.Fatal(err)
			}
			var deleted []string
			for _, a := range client.Actions() {
				d := a.(k8stesting.DeleteAction)
				if uid := d.GetDeleteOptions().Preconditions.UID; uid == nil || string(*uid) != d.GetName() {
					t.Errorf("deletion of %s without its UID as precondition", d.GetName())
				}
				deleted = append(deleted, d.GetName())
			}
			if !slices.Equal(deleted, tc.want) {
				t.Errorf("deleted %v, want %v", deleted, tc.want)
			}
		})
	}
}

// TestManageOwnerAnnotations: the owner's Annotations go on a new revision and on an older one
// brought back, and leave the newest one, unchanged, as it is (a CloneSet's volumeClaimTemplates
// hash, as OpenKruise keeps it).
func TestManageOwnerAnnotations(t *testing.T) {
	o := testOwner("web", "uid-web")
	o.Annotations = map[string]string{"hash": "1"}
	r1 := revisionOf(o, "a", 1)
	o.Annotations = map[string]string{"hash": "2"}
	r2 := revisionOf(o, "b", 2)
	client := fake.NewClientset(r1, r2)
	o.Annotations = map[string]string{"hash": "3"}
	res, err := Manage(context.Background(), client.AppsV1(), o, dataOf("b"), []*appsv1.ControllerRevision{r1, r2}, r2.Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Update.Annotations["hash"]; res.Update.Name != r2.Name || got != "2" {
		t.Errorf("unchanged data: %s with hash %q, want %s with 2", res.Update.Name, got, r2.Name)
	}
	res, err = Manage(context.Background(), client.AppsV1(), o, dataOf("a"), []*appsv1.ControllerRevision{r1, r2}, r2.Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Update.Annotations["hash"]; res.Update.Name != r1.Name || got != "3" {
		t.Errorf("older data back: %s with hash %q, want %s with 3", res.Update.Name, got, r1.Name)
	}
	res, err = Manage(context.Background(), client.AppsV1(), o, dataOf("c"), []*appsv1.ControllerRevision{r1, r2}, r2.Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Update.Annotations["hash"]; got != "3" {
		t.Errorf("new data: hash %q, want 3", got)
	}
}
