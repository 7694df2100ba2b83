package validate

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

const repoRoot = "../.."

// No Docker engine runs where this is tested, so the image is not built here. The
// Dockerfile is parsed by BuildKit's own parser and linter (what `docker build --check`
// runs first), and its shape is checked: what it copies exists, the wheel is built as
// the project's scripts build it, and the runtime stage is slim, non-root and serves
// /models on 9000 and 5000.
// parseDockerfile parses and lints a Dockerfile as BuildKit does before a build: a
// parser warning or a lint finding is an error.
func parseDockerfile(t *testing.T, path string) ([]instructions.Stage, []instructions.ArgCommand) {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ast, err := parser.Parse(bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ast.Warnings {
		t.Errorf("parser: %s", w.Short)
	}
	var lint []string
	linterWarn := func(rule, description, url, msg string, location []parser.Range) {
		lint = append(lint, rule+": "+msg)
	}
	stages, metaArgs, err := instructions.Parse(ast.AST, linter.New(&linter.Config{Warn: linterWarn}))
	if err != nil {
		t.Fatal(err)
	}
	if len(lint) > 0 {
		t.Errorf("BuildKit's linter: %v", lint)
	}
	return stages, metaArgs
}

func TestDockerfile(t *testing.T) {
	stages, metaArgs := parseDockerfile(t, "../docker/Dockerfile")
	if len(metaArgs) != 1 || metaArgs[0].Args[0].Key != "PYTHON_VERSION" || *metaArgs[0].Args[0].Value != "3.11" {
		t.Errorf("the global ARGs %v: want PYTHON_VERSION=3.11", metaArgs)
	}
	if len(stages) != 2 || stages[0].Name != "build" || stages[1].Name != "runtime" {
		t.Fatalf("want two stages, build and runtime: %d", len(stages))
	}
	build, runtime := stages[0], stages[1]
	for _, s := range stages {
		if s.BaseName != "python:${PYTHON_VERSION}-slim-bookworm" {
			t.Errorf("stage %s from %s, want the slim Python image", s.Name, s.BaseName)
		}
	}

	var runs []string
	for _, c := range build.Commands {
		switch c := c.(type) {
		case *instructions.RunCommand:
			runs = append(runs, strings.Join(c.CmdLine, " "))
		case *instructions.CopyCommand:
			// Everything the build copies is in the repository.
			for _, src := range c.SourcePaths {
				if _, err := os.Stat(filepath.Join(repoRoot, src)); err != nil {
					t.Errorf("the build copies %s: %v", src, err)
				}
			}
		}
	}
	joined := strings.Join(runs, "\n")
	// The wheel is the one users install: made by the project's wheel script, whose
	// pinned tools (scripts/wheel-tools.txt) are in pyproject.toml's maturin range.
	for _, want := range []string{"WHEEL_DIR=/wheels bash scripts/build-wheels.sh", "--default-toolchain \"${RUST_VERSION}\""} {
		if !strings.Contains(joined, want) {
			t.Errorf("the build stage does not run %q", want)
		}
	}
	script, _ := os.ReadFile(filepath.Join(repoRoot, "scripts/build-wheels.sh"))
	for _, want := range []string{"scripts/wheel-tools.txt", "--zig --compatibility manylinux_2_28", "--features bench,pyo3/abi3-py310", "WHEEL_PYTHON"} {
		if !bytes.Contains(script, []byte(want)) {
			t.Errorf("scripts/build-wheels.sh no longer has %q", want)
		}
	}
	pyproject, _ := os.ReadFile(filepath.Join(repoRoot, "pyproject.toml"))
	tools, _ := os.ReadFile(filepath.Join(repoRoot, "scripts/wheel-tools.txt"))
	pin := regexp.MustCompile(`(?m)^maturin==1\.(\d+)\.\d+$`).FindSubmatch(tools)
	if !bytes.Contains(pyproject, []byte(`"maturin>=1.7,<2"`)) || pin == nil {
		t.Error("pyproject.toml's maturin range or scripts/wheel-tools.txt's maturin pin changed: check they agree")
	} else if minor, _ := strconv.Atoi(string(pin[1])); minor < 7 {
		t.Errorf("scripts/wheel-tools.txt pins maturin 1.%d, below pyproject.toml's 1.7", minor)
	}
	cargo, _ := os.ReadFile(filepath.Join(repoRoot, "Cargo.toml"))
	rust := argDefault(build.Commands, "RUST_VERSION")
	if !bytes.Contains(cargo, []byte(`rust-version = "`+strings.TrimSuffix(rust, ".0")+`"`)) {
		t.Errorf("RUST_VERSION %s is not Cargo.toml's rust-version", rust)
	}
	// The crates the workspace names are all copied in.
	for _, member := range []string{"crates/inferwire-codec", "crates/inferwire-server", "crates/inferwire-bench", "crates/inferwire-trees", "crates/inferwire-py"} {
		if !bytes.Contains(cargo, []byte(`"`+member+`"`)) {
			t.Errorf("Cargo.toml no longer names %s: update this list", member)
		}
	}

	var user, workdir string
	var exposed, entrypoint, cmd []string
	var env []string
	for _, c := range runtime.Commands {
		switch c := c.(type) {
		case *instructions.CopyCommand:
			if c.From == "build" && !slices.Equal(c.SourcePaths, []string{"/wheels"}) {
				t.Errorf("the runtime stage takes %v from the build, want only the wheel", c.SourcePaths)
			}
			if c.From == "" && (len(c.SourcePaths) != 1 || c.SourcePaths[0] != "${MODEL_DIR}" || c.DestPath != "/models") {
				t.Errorf("the runtime stage copies %v to %s, want only ${MODEL_DIR} to /models", c.SourcePaths, c.DestPath)
			}
		case *instructions.UserCommand:
			user = c.User
		case *instructions.WorkdirCommand:
			workdir = c.Path
		case *instructions.ExposeCommand:
			exposed = append(exposed, c.Ports...)
		case *instructions.EntrypointCommand:
			entrypoint = c.CmdLine
		case *instructions.CmdCommand:
			cmd = c.CmdLine
		case *instructions.EnvCommand:
			for _, kv := range c.Env {
				env = append(env, kv.Key)
			}
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	if uid == "" || uid == "0" || uid == "root" || strings.Trim(uid, "0123456789") != "" {
		t.Errorf("USER %q: want a numeric non-root user", user)
	}
	slices.Sort(exposed)
	if workdir != "/models" || !slices.Equal(exposed, []string{"5000", "9000"}) {
		t.Errorf("WORKDIR %s, EXPOSE %v: want /models, 9000 and 5000", workdir, exposed)
	}
	if !slices.Equal(entrypoint, []string{"inferwire"}) || !slices.Equal(cmd, []string{"serve", "--model-repository", "/models"}) {
		t.Errorf("ENTRYPOINT %v CMD %v: want inferwire serve --model-repository /models", entrypoint, cmd)
	}
	for _, key := range env {
		if strings.HasPrefix(key, "INFERWIRE_") {
			t.Errorf("ENV %s: the image must leave settings to the deployment (it would override Seldon's port variables)", key)
		}
	}
	model := argDefault(runtime.Commands, "MODEL_DIR")
	if st, err := os.Stat(filepath.Join(repoRoot, model)); err != nil || !st.IsDir() {
		t.Errorf("MODEL_DIR's default %s is not a folder of the repository", model)
	}
}

// The build context leaves out build outputs, virtualenvs and the extension that
// `maturin develop` leaves beside the Python sources.
func TestDockerignore(t *testing.T) {
	text, err := os.ReadFile("../docker/Dockerfile.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(text), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	for _, want := range []string{".git", "target", ".venv*", ".tools", "**/*.so"} {
		if !slices.Contains(lines, want) {
			t.Errorf("Dockerfile.dockerignore does not leave out %s", want)
		}
	}
	for _, l := range lines {
		for _, needed := range []string{"crates", "proto", "python", "Cargo.lock", "deploy"} {
			if l == needed {
				t.Errorf("Dockerfile.dockerignore leaves out %s, which the build copies", l)
			}
		}
	}
}

func argDefault(cmds []instructions.Command, name string) string {
	for _, c := range cmds {
		if a, ok := c.(*instructions.ArgCommand); ok {
			for _, kv := range a.Args {
				if kv.Key == name && kv.Value != nil {
					return *kv.Value
				}
			}
		}
	}
	return ""
}
