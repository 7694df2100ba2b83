package validate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// patchedKServeRuntime is KServe's own config/runtimes/NAME.yaml with deploy/kserve's
// NAME-image.json applied. The patch must be one replace of the first container's image
// (which KServe's file names placeholder, for its kustomization to fill in) by want, so
// that the result differs from KServe's runtime there only; the result must pass the
// ClusterServingRuntime CRD. It returns the patched runtime and its first container.
func patchedKServeRuntime(t *testing.T, name, placeholder, want string) (runtime, container map[string]any) {
	t.Helper()
	dir, err := kserveDir()
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(dir, "config/runtimes", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	patchText, err := os.ReadFile(filepath.Join("../kserve", name+"-image.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ops []struct {
		Op, Path string
		Value    any
	}
	if err := json.Unmarshal(patchText, &ops); err != nil {
		t.Fatal(err)
	}
	if len(ops) != 1 || ops[0].Op != "replace" || ops[0].Path != "/spec/containers/0/image" {
		t.Fatalf("the patch must replace the image and nothing else: %+v", ops)
	}
	if runtime, err = unstructured(text); err != nil {
		t.Fatal(err)
	}
	container = runtime["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	if container["image"] != placeholder {
		t.Fatalf("KServe's runtime names image %v: the patch's path no longer points at it", container["image"])
	}
	image, _ := ops[0].Value.(string)
	if image != want {
		t.Errorf("image %q: want %s, the tag deploy/docker documents", image, want)
	}
	container["image"] = image
	doc, err := yaml.Marshal(runtime)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(doc, kserveCRDs(t)); err != nil {
		t.Fatal(err)
	}
	return runtime, container
}
