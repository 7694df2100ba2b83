package validate

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// What the test asks inferwire's Python side: whether `inferwire ARGS[0] --help` is
// torchserve's usage (the image's ENTRYPOINT is `inferwire`, so KServe's args follow
// it), and what torchserve/cli.py's parse makes of the rest with each service envelope
// KServe sets in TS_SERVICE_ENVELOPE. KServe's mount path (argv[1]) is made in a
// temporary folder holding a config.properties (argv[2]) and an empty model store, and
// the args are parsed with their paths moved there; the paths come back as KServe's.
const torchserveArgsScript = `
import contextlib, io, json, os, shutil, sys, tempfile
from inferwire import cli
from inferwire.torchserve.cli import parse
mount, config, envelopes, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4:]
usage = io.StringIO()
with contextlib.redirect_stdout(usage):
    try:
        code = cli.main([args[0], "--help"])
    except SystemExit as e:
        code = e.code
dispatched = code == 0 and usage.getvalue().startswith("usage: inferwire torchserve")
root = os.path.realpath(tempfile.mkdtemp())
local = root + mount
os.makedirs(local + "/model-store")
os.makedirs(local + "/config")
shutil.copy(config, local + "/config/config.properties")
served = [a.replace(mount, local) for a in args[1:]]
parsed = {}
for envelope in envelopes:
    c = parse(served, {"TS_SERVICE_ENVELOPE": envelope}, root)
    parsed[envelope] = {
        "envelope": c.envelope,
        "settings": c.settings,
        "model_store": c.model_store.replace(local, mount),
        "config_file": c.config_file.replace(local, mount),
    }
shutil.rmtree(root)
print(json.dumps({"dispatched": dispatched, "parsed": parsed}))
`

// KServe's own kserve-torchserve runtime, with deploy/kserve/kserve-torchserve-image.json
// applied: the patch replaces TorchServe's KServe image (pytorch/torchserve-kfs) with
// inferwire's and changes nothing else, the result is a valid ClusterServingRuntime, and
// the command the container runs (the image's ENTRYPOINT, then the runtime's args) is
// `inferwire torchserve` with options torchserve/cli.py accepts, serving the model store
// and config.properties where KServe mounts them, with the envelope KServe sets, on the
// port KServe's Service sends requests to and the metrics port its annotation scrapes.
func TestKServeTorchServeRuntimeWithOnlyTheImageChanged(t *testing.T) {
	runtime, container := patchedKServeRuntime(t, "kserve-torchserve", "kserve-torchserve:replace", "inferwire:0.1.0")
	spec := runtime["spec"].(map[string]any)

	// Kubernetes runs ENTRYPOINT + args when the container sets args and no command
	// (the ENTRYPOINT itself is checked by the Triton runtime's test).
	if _, ok := container["command"]; ok {
		t.Fatalf("KServe's runtime sets command %v: the image's ENTRYPOINT no longer runs", container["command"])
	}
	var args []string
	for _, a := range container["args"].([]any) {
		args = append(args, a.(string))
	}
	if len(args) == 0 || args[0] != "torchserve" || !slices.Contains(args, "--start") {
		t.Fatalf("KServe's runtime runs %v: want torchserve --start", args)
	}

	// The envelope: KServe templates TS_SERVICE_ENVELOPE from the InferenceService's
	// serviceEnvelope label, which it sets from the protocol version.
	dir := mustKServeDir(t)
	constants, err := os.ReadFile(filepath.Join(dir, "pkg/constants/constants.go"))
	if err != nil {
		t.Fatal(err)
	}
	label := kserveConstant(t, constants, "ServiceEnvelope")
	envelopes := []string{
		kserveConstant(t, constants, "ServiceEnvelopeKServe"),
		kserveConstant(t, constants, "ServiceEnvelopeKServeV2"),
	}
	var envValue any
	for _, e := range container["env"].([]any) {
		if e := e.(map[string]any); e["name"] == "TS_SERVICE_ENVELOPE" {
			envValue = e["value"]
		}
	}
	if envValue != "{{.Labels."+label+"}}" {
		t.Errorf("TS_SERVICE_ENVELOPE is %v: want KServe's %s label", envValue, label)
	}

	python := filepath.Join(repoRoot, ".venv/bin/python")
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("%s: the project's virtualenv runs torchserve/cli.py (scripts/test.sh makes it)", python)
	}
	mount := kserveConstant(t, constants, "DefaultModelLocalMountPath")
	config, err := filepath.Abs("testdata/torchserve/config.properties")
	if err != nil {
		t.Fatal(err)
	}
	which, _ := json.Marshal(envelopes)
	cmd := exec.Command(python, append([]string{"-c", torchserveArgsScript, mount, config, string(which)}, args...)...)
	var stderr []byte
	out, err := cmd.Output()
	if e, ok := err.(*exec.ExitError); ok {
		stderr = e.Stderr
	}
	if err != nil {
		t.Fatalf("inferwire torchserve %v: %v\n%s", args[1:], err, stderr)
	}
	var got struct {
		Dispatched bool
		Parsed     map[string]struct {
			Envelope   string
			ModelStore string `json:"model_store"`
			ConfigFile string `json:"config_file"`
			Settings   map[string]any
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !got.Dispatched {
		t.Errorf("`inferwire %s --help` is not torchserve's usage: inferwire/cli.py no longer dispatches it", args[0])
	}

	// The port KServe's Service sends requests to (its wrapper's, in TorchServe's image)
	// and the one its annotation scrapes (config.properties' metrics_address).
	httpPort := number(t, kserveConstant(t, constants, "InferenceServiceDefaultHttpPort"))
	annotations := spec["annotations"].(map[string]any)
	metricsPort := number(t, annotations["prometheus.kserve.io/port"].(string))
	for _, envelope := range envelopes {
		p, ok := got.Parsed[envelope]
		if !ok {
			t.Fatalf("TS_SERVICE_ENVELOPE=%s: not parsed: %s", envelope, out)
		}
		if p.Envelope != envelope {
			t.Errorf("TS_SERVICE_ENVELOPE=%s: the envelope served is %q", envelope, p.Envelope)
		}
		if p.ModelStore != mount+"/model-store" || p.ConfigFile != mount+"/config/config.properties" {
			t.Errorf("TS_SERVICE_ENVELOPE=%s: model store %s, config %s: want KServe's %s/model-store and %s/config/config.properties",
				envelope, p.ModelStore, p.ConfigFile, mount, mount)
		}
		if p.Settings["kserve_port"] != httpPort {
			t.Errorf("TS_SERVICE_ENVELOPE=%s: KServe's protocol on port %v, want %v (where KServe's Service sends)", envelope, p.Settings["kserve_port"], httpPort)
		}
		if p.Settings["metrics_port"] != metricsPort || p.Settings["metrics_endpoint"] != annotations["prometheus.kserve.io/path"] {
			t.Errorf("TS_SERVICE_ENVELOPE=%s: metrics on %v%v, want the annotation's %v%v", envelope,
				p.Settings["metrics_port"], p.Settings["metrics_endpoint"], metricsPort, annotations["prometheus.kserve.io/path"])
		}
		if p.Settings["http_port"] == httpPort {
			t.Errorf("TS_SERVICE_ENVELOPE=%s: TorchServe's inference API takes %v, KServe's port", envelope, httpPort)
		}
	}

	// --start without --foreground: the container's main process serves in the
	// foreground (TorchServe's image keeps the container up with its entrypoint instead).
	cli, err := os.ReadFile(filepath.Join(repoRoot, "python/inferwire/torchserve/cli.py"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(splitLines(cli), "        if os.getpid() != 1:") {
		t.Errorf("torchserve/cli.py no longer serves --start in the foreground as process 1: KServe's container would exit")
	}

	// The protocols and model formats KServe matches InferenceServices against.
	var protocols, formats []string
	for _, p := range spec["protocolVersions"].([]any) {
		protocols = append(protocols, p.(string))
	}
	for _, f := range spec["supportedModelFormats"].([]any) {
		formats = append(formats, f.(map[string]any)["name"].(string))
	}
	if !slices.Equal(protocols, []string{"v1", "v2", "grpc-v2"}) {
		t.Errorf("KServe's runtime speaks %v: want v1, v2 and grpc-v2 (docs/deploy.md lists what inferwire serves of them)", protocols)
	}
	if !slices.Equal(formats, []string{"pytorch"}) {
		t.Errorf("KServe's runtime takes formats %v: want pytorch", formats)
	}
}

func splitLines(b []byte) []string {
	var lines []string
	start := 0
	for i, c := range b {
		if c == '\n' {
			lines = append(lines, string(b[start:i]))
			start = i + 1
		}
	}
	return append(lines, string(b[start:]))
}
