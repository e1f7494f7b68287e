package reconcile

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// recordingInformer is the part of a SharedInformer Watch uses: it keeps the handler.
type recordingInformer struct {
	cache.SharedInformer
	handler cache.ResourceEventHandler
}

func (i *recordingInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	i.handler = h
	return nil, nil
}

// Watch hands each handler its objects as T, resolves a delete's tombstone, and passes over
// objects of another type.
func TestWatch(t *testing.T) {
	inf := &recordingInformer{}
	var got []string
	err := Watch(inf, "pods", Handlers[*corev1.Pod]{
		Add:    func(p *corev1.Pod) { got = append(got, "add "+p.Name) },
		Update: func(o, p *corev1.Pod) { got = append(got, "update "+o.Name+">"+p.Name) },
		Delete: func(p *corev1.Pod) { got = append(got, "delete "+p.Name) },
	})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(name string) *corev1.Pod { return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	inf.handler.OnAdd(pod("a"), false)
	inf.handler.OnUpdate(pod("a"), pod("b"))
	inf.handler.OnDelete(pod("c"))
	inf.handler.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/d", Obj: pod("d")})
	node := &corev1.Node{}
	inf.handler.OnAdd(node, false)
	inf.handler.OnUpdate(pod("e"), node)
	inf.handler.OnDelete(cache.DeletedFinalStateUnknown{Key: "n", Obj: node})
	want := []string{"add a", "update a>b", "delete c", "delete d"}
	if len(got) != len(want) {
		t.Fatalf("handled %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("handled %v, want %v", got, want)
			break
		}
	}
}

// OnChange calls its func with the new object of every event; OnEither with the old one of an
// update too.
func TestOnChangeAndOnEither(t *testing.T) {
	for name, tc := range map[string]struct {
		handlers func(func(*corev1.Pod)) Handlers[*corev1.Pod]
		want     string
	}{
		"OnChange": {OnChange[*corev1.Pod], "a b c"},
		"OnEither": {OnEither[*corev1.Pod], "a old b c"},
	} {
		var got []string
		h := tc.handlers(func(p *corev1.Pod) { got = append(got, p.Name) })
		h.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a"}})
		h.Update(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "old"}}, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b"}})
		h.Delete(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c"}})
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s called with %v, want [%s]", name, got, tc.want)
		}
	}
}
