package validate

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
)

// What the test asks inferwire's Python side: whether `inferwire ARGS[0] --help` is
// tritonserver's usage (the image's ENTRYPOINT is `inferwire`, so KServe's args follow
// it), and the settings triton/cli.py's parse makes of the rest, as they stand and with
// the `--model-control-mode=explicit` KServe adds to an InferenceService without a
// storageUri (SetTritonDefaults).
const tritonArgsScript = `
import contextlib, io, json, sys
from inferwire import cli
from inferwire.triton.cli import parse
args = sys.argv[1:]
usage = io.StringIO()
with contextlib.redirect_stdout(usage):
    try:
        code = cli.main([args[0], "--help"])
    except SystemExit as e:
        code = e.code
dispatched = code == 0 and usage.getvalue().startswith("usage: inferwire tritonserver")
print(json.dumps({
    "dispatched": dispatched,
    "settings": parse(args[1:])[0],
    "explicit": parse(args[1:] + ["--model-control-mode=explicit"])[0],
}))
`

// KServe's own kserve-tritonserver runtime, with deploy/kserve/kserve-tritonserver-image.json
// applied: the patch replaces Triton's image (nvcr.io/nvidia/tritonserver) with
// inferwire's and changes nothing else, the result is a valid ClusterServingRuntime, and
// the command the container runs (the image's ENTRYPOINT, then the runtime's args) is
// `inferwire tritonserver` with options triton/cli.py accepts, serving the folder where
// KServe mounts the model on the ports KServe routes to and scrapes.
func TestKServeTritonRuntimeWithOnlyTheImageChanged(t *testing.T) {
	runtime, container := patchedKServeRuntime(t, "kserve-tritonserver", "kserve-tritonserver:replace", "inferwire:0.1.0")
	spec := runtime["spec"].(map[string]any)

	// Kubernetes runs ENTRYPOINT + args when the container sets args and no command.
	if _, ok := container["command"]; ok {
		t.Fatalf("KServe's runtime sets command %v: the image's ENTRYPOINT no longer runs", container["command"])
	}
	stages, _ := parseDockerfile(t, "../docker/Dockerfile")
	var entrypoint []string
	for _, c := range stages[len(stages)-1].Commands {
		if e, ok := c.(*instructions.EntrypointCommand); ok {
			entrypoint = e.CmdLine
		}
	}
	if !slices.Equal(entrypoint, []string{"inferwire"}) {
		t.Fatalf("the image's ENTRYPOINT %v: KServe's args start with tritonserver, which needs inferwire before it", entrypoint)
	}
	var args []string
	for _, a := range container["args"].([]any) {
		args = append(args, a.(string))
	}
	if len(args) == 0 || args[0] != "tritonserver" {
		t.Fatalf("KServe's runtime runs %v: want tritonserver first", args)
	}

	python := filepath.Join(repoRoot, ".venv/bin/python")
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("%s: the project's virtualenv runs triton/cli.py (scripts/test.sh makes it)", python)
	}
	cmd := exec.Command(python, append([]string{"-c", tritonArgsScript}, args...)...)
	var stderr []byte
	out, err := cmd.Output()
	if e, ok := err.(*exec.ExitError); ok {
		stderr = e.Stderr
	}
	if err != nil {
		t.Fatalf("inferwire tritonserver %v: %v\n%s", args[1:], err, stderr)
	}
	var got struct {
		Dispatched         bool
		Settings, Explicit map[string]any
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !got.Dispatched {
		t.Errorf("`inferwire %s --help` is not tritonserver's usage: inferwire/cli.py no longer dispatches it", args[0])
	}

	// Where KServe mounts the model, and the port its Service sends requests to
	// (pkg/constants in KServe's module); the gRPC port is the runtime's own, which an
	// InferenceService names in its ports for gRPC.
	constants, err := os.ReadFile(filepath.Join(mustKServeDir(t), "pkg/constants/constants.go"))
	if err != nil {
		t.Fatal(err)
	}
	mount := kserveConstant(t, constants, "DefaultModelLocalMountPath")
	httpPort := kserveConstant(t, constants, "InferenceServiceDefaultHttpPort")
	annotations := spec["annotations"].(map[string]any)
	want := map[string]any{
		"model_repository": mount,
		"http_port":        number(t, httpPort),
		"grpc_port":        float64(9000),
		"metrics_port":     number(t, annotations["prometheus.kserve.io/port"].(string)),
		"metrics_endpoint": annotations["prometheus.kserve.io/path"],
		"v2_dialect":       "triton",
	}
	for _, settings := range []map[string]any{got.Settings, got.Explicit} {
		for k, v := range want {
			if settings[k] != v {
				t.Errorf("inferwire tritonserver %v: %s is %v, want %v", args[1:], k, settings[k], v)
			}
		}
	}
	if got.Explicit["load_models_at_startup"] != false {
		t.Errorf("--model-control-mode=explicit: load_models_at_startup %v, want false (Triton's explicit mode)", got.Explicit["load_models_at_startup"])
	}

	// The protocols and model formats KServe matches InferenceServices against; the
	// formats docs/deploy.md says inferwire serves of them are listed there.
	var protocols, formats []string
	for _, p := range spec["protocolVersions"].([]any) {
		protocols = append(protocols, p.(string))
	}
	for _, f := range spec["supportedModelFormats"].([]any) {
		if name := f.(map[string]any)["name"].(string); !slices.Contains(formats, name) {
			formats = append(formats, name)
		}
	}
	slices.Sort(formats)
	if !slices.Equal(protocols, []string{"v2", "grpc-v2"}) {
		t.Errorf("KServe's runtime speaks %v: want v2 and grpc-v2", protocols)
	}
	if !slices.Equal(formats, []string{"onnx", "pytorch", "tensorflow", "tensorrt", "triton"}) {
		t.Errorf("KServe's runtime takes formats %v: update docs/deploy.md's list", formats)
	}
}

func mustKServeDir(t *testing.T) string {
	t.Helper()
	dir, err := kserveDir()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// kserveConstant is the string constant NAME of KServe's pkg/constants.
func kserveConstant(t *testing.T, source []byte, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*(?:const\s+)?` + name + `\s*=\s*"([^"]*)"`).FindSubmatch(source)
	if m == nil {
		t.Fatalf("KServe's pkg/constants no longer defines %s", name)
	}
	return string(m[1])
}

// number is a port as encoding/json decodes the settings' numbers.
func number(t *testing.T, s string) float64 {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: not a port", s)
	}
	return float64(n)
}
