package history

import "testing"

func TestEqualData(t *testing.T) {
	inplace := `{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"image":"app:v1","name":"main","resources":{}}]}}}}`
	// What OpenKruise v1.9 (k8s.io/apimachinery v0.32) stores for the same template.
	kruise := `{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"app":"web"}},"spec":{"containers":[{"image":"app:v1","name":"main","resources":{}}]}}}}`
	other := `{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"app":"web"}},"spec":{"containers":[{"image":"app:v2","name":"main","resources":{}}]}}}}`
	for _, c := range []struct {
		name string
		a, b string
		want bool
	}{
		{"same bytes", inplace, inplace, true},
		{"OpenKruise's null creationTimestamp", kruise, inplace, true},
		{"another image", other, inplace, false},
		{"an empty object is not a null", `{"a":{}}`, `{}`, false},
		{"not JSON", `{`, `{}`, false},
	} {
		if got := EqualData([]byte(c.a), []byte(c.b)); got != c.want {
			t.Errorf("%s: EqualData = %v, want %v", c.name, got, c.want)
		}
	}
}
