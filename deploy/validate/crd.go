package validate

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// KServe's Go types (pkg/apis/serving/...) do build, but they pull in about 1,200
// packages (cloud SDKs, Knative, controller-runtime) and five minutes of compiling on
// a two-core machine. The CustomResourceDefinitions that KServe generates from those
// same types are in its module, so its objects are checked against them instead, the
// way the API server checks a custom resource: unknown fields are what pruning would
// drop, and the schema's types, enums and required fields are validated by
// apiextensions-apiserver's own validator.
const (
	kserveModule = "github.com/kserve/kserve"
	// The module proxy serves this release; its hash is checked on download.
	kserveVersion = "v0.15.2"
	kserveSum     = "h1:uph7Umk331fvBMrHHpTJNDt6+lf3IAuyiskaQw8wIAk="
)

// crdSchema checks objects of one kind and version against its CRD.
type crdSchema struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
}

// check returns one message per unknown field and per schema violation.
func (s crdSchema) check(doc []byte) []string {
	obj, err := unstructured(doc)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	opts := structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}
	for _, path := range pruning.PruneWithOptions(obj, s.structural, true, opts) {
		problems = append(problems, fmt.Sprintf("unknown field %q", path))
	}
	if len(problems) > 0 {
		return problems // the pruned object would hide what the schema says about them
	}
	for _, e := range apiservervalidation.ValidateCustomResource(nil, obj, s.validator) {
		problems = append(problems, e.Error())
	}
	return problems
}

// unstructured decodes YAML as the API server decodes JSON: whole numbers as int64.
func unstructured(doc []byte) (map[string]any, error) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(j, &obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// kserveDir is KServe's module (the module cache, or the module proxy on first use),
// its hash checked.
func kserveDir() (string, error) {
	mod := kserveModule + "@" + kserveVersion
	out, err := exec.Command("go", "mod", "download", "-json", mod).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %v", mod, err)
	}
	var info struct{ Dir, Sum, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s %v", mod, info.Error, err)
	}
	if info.Sum != kserveSum {
		return "", fmt.Errorf("%s: hash %s, want %s", mod, info.Sum, kserveSum)
	}
	return info.Dir, nil
}

// kserveSchemas loads KServe's CRDs from its module, by "group/version/Kind".
func kserveSchemas() (map[string]crdSchema, error) {
	dir, err := kserveDir()
	if err != nil {
		return nil, err
	}
	schemas := map[string]crdSchema{}
	for _, name := range []string{"servingruntimes", "clusterservingruntimes", "inferenceservices"} {
		path := filepath.Join(dir, "config/crd/full/serving.kserve.io_"+name+".yaml")
		if err := loadCRD(path, schemas); err != nil {
			return nil, err
		}
	}
	return schemas, nil
}

func loadCRD(path string, into map[string]crdSchema) error {
	text, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(text, &crd); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return fmt.Errorf("%s: version %s has no schema", path, v.Name)
		}
		var internal apiextensions.JSONSchemaProps
		err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(
			v.Schema.OpenAPIV3Schema, &internal, nil)
		if err != nil {
			return fmt.Errorf("%s %s: %v", path, v.Name, err)
		}
		structural, err := structuralschema.NewStructural(&internal)
		if err != nil {
			return fmt.Errorf("%s %s: not a structural schema: %v", path, v.Name, err)
		}
		validator, _, err := apiservervalidation.NewSchemaValidator(&internal)
		if err != nil {
			return fmt.Errorf("%s %s: %v", path, v.Name, err)
		}
		key := crd.Spec.Group + "/" + v.Name + "/" + crd.Spec.Names.Kind
		into[key] = crdSchema{structural: structural, validator: validator}
	}
	return nil
}
