package validate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// manifest is one document of a plain manifest file.
type manifest struct {
	file string
	doc  []byte
	obj  Object
}

func plainManifests(t *testing.T) []manifest {
	t.Helper()
	var files []string
	for _, dir := range []string{"../kserve", "../seldon"} {
		found, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		files = append(files, found...)
	}
	if len(files) < 3 {
		t.Fatalf("manifests not found: %v", files)
	}
	crds := kserveCRDs(t)
	var out []manifest
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range Documents(string(text)) {
			obj, err := Decode(doc, crds)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, manifest{f, doc, obj})
		}
	}
	return out
}

func TestPlainManifestsDecodeStrictly(t *testing.T) {
	got := map[string]int{}
	for _, m := range plainManifests(t) {
		got[m.obj.Kind]++
	}
	for _, kind := range []string{"ServingRuntime", "InferenceService", "SeldonDeployment"} {
		if got[kind] == 0 {
			t.Errorf("no %s among the manifests (%v)", kind, got)
		}
	}
}

func TestSeldonDeploymentServesTheSeldonProtocol(t *testing.T) {
	for _, m := range plainManifests(t) {
		sd, ok := m.obj.Value.(*SeldonDeployment)
		if !ok {
			continue
		}
		checkSeldonEnums(t, sd)
		if sd.Spec.Protocol != "seldon" {
			t.Errorf("%s: protocol %q, want seldon", m.file, sd.Spec.Protocol)
		}
		for _, p := range sd.Spec.Predictors {
			units := map[string]bool{}
			var walk func(u PredictiveUnit)
			walk = func(u PredictiveUnit) {
				units[u.Name] = true
				for _, c := range u.Children {
					walk(c)
				}
			}
			walk(p.Graph)
			for _, cs := range p.ComponentSpecs {
				for _, c := range cs.Spec.Containers {
					if !units[c.Name] {
						t.Errorf("%s: container %s is no unit of the graph", m.file, c.Name)
					}
					if len(c.Args) == 0 || c.Args[0] != "serve" {
						t.Errorf("%s: container %s does not run `inferwire serve`", m.file, c.Name)
					}
					// Seldon's operator adds the ports, named http and grpc, and the
					// PREDICTIVE_UNIT_*_SERVICE_PORT variables the server reads, so
					// the container must not set ports or INFERWIRE_*_PORT itself.
					// Without a preStop of its own it would get a 10 s one.
					checkContainer(t, c, cs.Spec, "", false)
					env := envOf(c)
					if len(c.Ports) > 0 || env["INFERWIRE_HTTP_PORT"] != "" || env["INFERWIRE_GRPC_PORT"] != "" {
						t.Errorf("%s: container %s sets its own ports; Seldon assigns them", m.file, c.Name)
					}
				}
			}
		}
	}
}

func checkSeldonEnums(t *testing.T, sd *SeldonDeployment) {
	t.Helper()
	is := func(what, v string) {
		if v != "" && !slices.Contains(seldonEnums[what], v) {
			t.Errorf("SeldonDeployment %s: %s %q is not one of %v", sd.Name, what, v, seldonEnums[what])
		}
	}
	is("protocol", sd.Spec.Protocol)
	is("transport", sd.Spec.Transport)
	is("serverType", sd.Spec.ServerType)
	var walk func(u PredictiveUnit)
	walk = func(u PredictiveUnit) {
		if u.Type != nil {
			is("unit type", *u.Type)
		}
		if u.Endpoint != nil {
			is("endpoint type", u.Endpoint.Type)
		}
		for _, p := range u.Parameters {
			is("parameter type", p.Type)
		}
		for _, c := range u.Children {
			walk(c)
		}
	}
	for _, p := range sd.Spec.Predictors {
		walk(p.Graph)
	}
}

// The KServe kinds passed their CRDs' schemas; these are the rules beyond a schema.
func TestKServeRuntimeServesV2(t *testing.T) {
	var runtime struct {
		Metadata struct{ Name string }
		Spec     struct {
			Annotations           map[string]string
			SupportedModelFormats []struct{ Name string }
			ProtocolVersions      []string
			Containers            []corev1.Container
		}
	}
	var isvc struct {
		Spec struct {
			Predictor struct {
				Model struct {
					ModelFormat     struct{ Name string }
					Runtime         string
					ProtocolVersion string
				}
			}
		}
	}
	for _, m := range plainManifests(t) {
		switch m.obj.Kind {
		case "ServingRuntime":
			if err := yaml.Unmarshal(m.doc, &runtime); err != nil {
				t.Fatal(err)
			}
		case "InferenceService":
			if err := yaml.Unmarshal(m.doc, &isvc); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !slices.Contains(runtime.Spec.ProtocolVersions, "v2") {
		t.Errorf("the ServingRuntime advertises %v, want v2", runtime.Spec.ProtocolVersions)
	}
	if len(runtime.Spec.Containers) != 1 {
		t.Fatalf("%d containers in the ServingRuntime", len(runtime.Spec.Containers))
	}
	c := runtime.Spec.Containers[0]
	// KServe mounts the model's storageUri at /mnt/models and sends REST to the first
	// container port, 8080; V2's own health routes answer its probes.
	if !strings.Contains(strings.Join(c.Args, " "), "--model-repository /mnt/models") {
		t.Errorf("runtime args %v: want --model-repository /mnt/models", c.Args)
	}
	env := envOf(c)
	if len(c.Ports) == 0 || c.Ports[0].ContainerPort != 8080 || env["INFERWIRE_HTTP_PORT"] != "8080" {
		t.Errorf("REST must listen on 8080, the first container port: ports %v, INFERWIRE_HTTP_PORT %q",
			c.Ports, env["INFERWIRE_HTTP_PORT"])
	}
	// Annotations on spec reach the pods (on metadata they would stay on the runtime).
	if a := runtime.Spec.Annotations; a["prometheus.kserve.io/port"] != "8080" || a["prometheus.kserve.io/path"] != "/metrics" {
		t.Errorf("the runtime's pods must ask KServe to scrape /metrics on 8080: %v", a)
	}
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		want := map[string]string{"liveness": "/v2/health/live", "readiness": "/v2/health/ready"}[name]
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != want || p.HTTPGet.Port.IntValue() != 8080 {
			t.Errorf("runtime %s probe %+v: want GET %s on 8080", name, p, want)
		}
	}
	if sc := c.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Error("the runtime's container must run as non-root")
	}
	model := isvc.Spec.Predictor.Model
	if model.Runtime != runtime.Metadata.Name || model.ProtocolVersion != "v2" {
		t.Errorf("the InferenceService uses runtime %q over %q, want %q over v2",
			model.Runtime, model.ProtocolVersion, runtime.Metadata.Name)
	}
	formats := []string{}
	for _, f := range runtime.Spec.SupportedModelFormats {
		formats = append(formats, f.Name)
	}
	if !slices.Contains(formats, model.ModelFormat.Name) {
		t.Errorf("model format %q is not among the runtime's %v", model.ModelFormat.Name, formats)
	}
}
