package validate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each file in testdata/typos is a manifest with one mistake, and a first line
// "# want: TEXT" that the error must contain: the checks are shown to catch misspelled
// and miscapitalised fields, wrong types, duplicate keys and unknown kinds, in the
// built-in types, the Prometheus Operator's, Seldon's and KServe's schemas alike.
func TestTyposFail(t *testing.T) {
	files, _ := filepath.Glob("testdata/typos/*.yaml")
	if len(files) < 10 {
		t.Fatalf("typo fixtures not found: %v", files)
	}
	crds := kserveCRDs(t)
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(text), "\n")
		want, ok := strings.CutPrefix(first, "# want: ")
		if !ok {
			t.Fatalf("%s: the first line must be # want: ...", f)
		}
		docs := Documents(string(text))
		if len(docs) != 1 {
			t.Fatalf("%s: %d documents, want 1", f, len(docs))
		}
		_, err = Decode(docs[0], crds)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v\nwant one containing %q", filepath.Base(f), err, want)
		}
	}
}

// The same fixtures with their mistake undone decode: the errors above come from the
// mistake, not from something else in the fixture.
func TestTypoFixturesAreOtherwiseValid(t *testing.T) {
	fixed := map[string][2]string{
		"deployment-replica.yaml":        {"replica: 2", "replicas: 2"},
		"deployment-capitalized.yaml":    {"ReadinessProbe:", "readinessProbe:"},
		"service-port-word.yaml":         {"port: nine", "port: 9000"},
		"unknown-kind.yaml":              {"kind: Deploymnet", "kind: Deployment"},
		"servicemonitor-endpoint.yaml":   {"endpoint:", "endpoints:"},
		"hpa-duplicate.yaml":             {"  minReplicas: 3\n", ""},
		"servingruntime-field.yaml":      {"supportedModelFormat:", "supportedModelFormats:"},
		"servingruntime-type.yaml":       {"multiModel: maybe", "multiModel: false"},
		"servingruntime-container.yaml":  {"imag:", "image:"},
		"inferenceservice-field.yaml":    {"storageURI:", "storageUri:"},
		"inferenceservice-metadata.yaml": {"label:", "labels:"},
		"seldondeployment-field.yaml":    {"predictor:", "predictors:"},
		"seldondeployment-podspec.yaml":  {"imag:", "image:"},
	}
	crds := kserveCRDs(t)
	files, _ := filepath.Glob("testdata/typos/*.yaml")
	for _, f := range files {
		fix, ok := fixed[filepath.Base(f)]
		if !ok {
			t.Errorf("%s: say here how to undo its mistake", f)
			continue
		}
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(text), fix[0]) {
			t.Fatalf("%s has no %q", f, fix[0])
		}
		good := strings.Replace(string(text), fix[0], fix[1], 1)
		if _, err := Decode(Documents(good)[0], crds); err != nil {
			t.Errorf("%s, corrected: %v", filepath.Base(f), err)
		}
	}
}
