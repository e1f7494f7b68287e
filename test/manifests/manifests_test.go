package manifests

import "testing"

func TestDecode(t *testing.T) {
	objects, err := Decode("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n# empty\n---\n{\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\", \"metadata\": {\"name\": \"b\"}, \"spec\": {\"replicas\": 3}}\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(objects) != 2 || objects[0].GetName() != "a" || objects[1].GetKind() != "Deployment" {
		t.Fatalf("decoded %d objects: %v", len(objects), objects)
	}
	if n := Int(objects[1].Object, "spec", "replicas"); n != 3 {
		t.Errorf("spec.replicas of JSON: %d, want 3", n)
	}
	yamlObjects, _ := Decode("kind: Deployment\nspec: {replicas: 2}\n")
	if n := Int(yamlObjects[0].Object, "spec", "replicas"); n != 2 {
		t.Errorf("spec.replicas of YAML: %d, want 2", n)
	}
	if n := Int(objects[0].Object, "spec", "replicas"); n != 0 {
		t.Errorf("absent field: %d, want 0", n)
	}
	if _, err := Decode("kind: [\n"); err == nil {
		t.Error("a broken document: no error")
	}
}
