package validate

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
)

// KServe's own kserve-mlserver runtime, with deploy/kserve/kserve-mlserver-image.json
// applied: the patch replaces MLServer's image with inferwire's drop-in and changes
// nothing else, the result is a valid ClusterServingRuntime, and the variables KServe
// gives the container are ones `inferwire start` reads.
func TestKServeMLServerRuntimeWithOnlyTheImageChanged(t *testing.T) {
	_, container := patchedKServeRuntime(t, "kserve-mlserver", "mlserver:replace", "inferwire-mlserver:0.1.0")
	var env []string
	for _, e := range container["env"].([]any) {
		env = append(env, e.(map[string]any)["name"].(string))
	}
	slices.Sort(env)
	// MODELS_DIR is for MLServer's image's shell; MLSERVER_MODELS_DIR (set by the image)
	// is where `inferwire start` looks, as `mlserver start $MLSERVER_MODELS_DIR` does.
	want := []string{"MLSERVER_GRPC_PORT", "MLSERVER_HTTP_PORT", "MLSERVER_MODEL_IMPLEMENTATION", "MODELS_DIR"}
	if !slices.Equal(env, want) {
		t.Errorf("KServe's runtime sets %v, want %v: check what inferwire start reads", env, want)
	}
	read, err := os.ReadFile(filepath.Join(repoRoot, "python/inferwire/mlserver/settings.py"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{`f"MLSERVER_{key.upper()}"`, `f"MLSERVER_MODEL_{key.upper()}"`} {
		if !bytes.Contains(read, []byte(v)) {
			t.Errorf("inferwire/mlserver/settings.py no longer reads the variables as %s", v)
		}
	}
}

// The MLServer drop-in image: inferwire's image, MLServer's libraries, MLServer's start.
func TestMLServerDockerfile(t *testing.T) {
	stages, metaArgs := parseDockerfile(t, "../docker/Dockerfile.mlserver")
	if len(metaArgs) != 1 || metaArgs[0].Args[0].Key != "BASE" || *metaArgs[0].Args[0].Value != "inferwire:0.1.0" {
		t.Errorf("the global ARGs %v: want BASE=inferwire:0.1.0", metaArgs)
	}
	if len(stages) != 1 || stages[0].BaseName != "${BASE}" {
		t.Fatalf("want one stage from ${BASE}")
	}
	var user, installs string
	var exposed, cmd []string
	env := map[string]string{}
	for _, c := range stages[0].Commands {
		switch c := c.(type) {
		case *instructions.UserCommand:
			user = c.User
		case *instructions.RunCommand:
			installs += strings.Join(c.CmdLine, " ")
		case *instructions.ExposeCommand:
			exposed = append(exposed, c.Ports...)
		case *instructions.CmdCommand:
			cmd = c.CmdLine
		case *instructions.EnvCommand:
			for _, kv := range c.Env {
				env[kv.Key] = kv.Value
			}
		}
	}
	if user != "10001:10001" {
		t.Errorf("the image ends as USER %q: want the base image's 10001:10001", user)
	}
	for _, lib := range []string{"scikit-learn==", "xgboost-cpu==", "lightgbm==", "mlserver==1.7.1", "pandas==2."} {
		if !strings.Contains(installs, lib) {
			t.Errorf("the image does not install %s", lib)
		}
	}
	slices.Sort(exposed)
	if !slices.Equal(exposed, []string{"8080", "8081", "8082"}) || !slices.Equal(cmd, []string{"start"}) {
		t.Errorf("EXPOSE %v CMD %v: want MLServer's ports 8080-8082 and inferwire start", exposed, cmd)
	}
	if env["MLSERVER_MODELS_DIR"] != "/mnt/models" {
		t.Errorf("MLSERVER_MODELS_DIR %q: want /mnt/models, where KServe mounts the model", env["MLSERVER_MODELS_DIR"])
	}
}
