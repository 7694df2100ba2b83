// Package validate checks the deployment files offline: the Helm chart is rendered with
// Helm's own engine for several sets of values, and every rendered object and every
// plain manifest is decoded strictly (an unknown or misspelled field is an error) into
// the Kubernetes API's Go types, or, for KServe's kinds, checked against the
// CustomResourceDefinition schemas KServe publishes in its Go module. A few semantic
// rules follow: probes on the named port, a grace period longer than the drain, ...
package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const chartDir = "../helm/inferwire"

// The KServe release whose CRDs the manifests are checked against.
const kserveModule = "github.com/kserve/kserve@v0.15.2"

// Values sets the chart is rendered with: the defaults, and every option on.
var valueSets = map[string]string{
	"defaults": ``,
	"everything": `
replicaCount: 3
model: {spec: "model.py:IrisLikeClassifier", source: pvc, pvc: {claimName: models, subPath: iris},
        parameters: '[{"name": "threshold", "value": "0.7", "type": "FLOAT"}]', name: iris, version: "2"}
server: {workers: 4, maxBatchSize: 16, maxBatchDelay: 0.002, timeout: 2, gracePeriod: 45}
auth: {enabled: true, secretName: inferwire-tokens}
tls: {enabled: true, secretName: inferwire-tls}
autoscaling: {enabled: true, minReplicas: 2, maxReplicas: 20}
serviceMonitor: {enabled: true, labels: {release: prometheus}}
env: [{name: INFERWIRE_MAX_BODY_BYTES, value: "1048576"}]
nodeSelector: {kubernetes.io/arch: amd64}
`,
	"mutual-tls-configmap": `
model: {spec: "model.py:IrisLikeClassifier", source: configMap, configMap: {name: iris-model}}
tls: {enabled: true, secretName: inferwire-tls, clientCaKey: ca.crt}
podDisruptionBudget: {enabled: false}
`,
}

func render(t *testing.T, values string) map[string]string {
	t.Helper()
	chart, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("loading the chart: %v", err)
	}
	vals, err := chartutil.ReadValues([]byte(values))
	if err != nil {
		t.Fatalf("values: %v", err)
	}
	opts := chartutil.ReleaseOptions{Name: "iris", Namespace: "models", Revision: 1, IsInstall: true}
	caps := chartutil.DefaultCapabilities.Copy()
	top, err := chartutil.ToRenderValues(chart, vals, opts, caps)
	if err != nil {
		t.Fatalf("values against the chart: %v", err)
	}
	out, err := engine.Render(chart, top)
	if err != nil {
		t.Fatalf("rendering: %v", err)
	}
	return out
}

// documents splits a YAML stream into its non-empty documents.
func documents(text string) []string {
	var docs []string
	for _, d := range strings.Split("\n"+text, "\n---") {
		if strings.TrimSpace(stripComments(d)) != "" {
			docs = append(docs, d)
		}
	}
	return docs
}

func stripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// decodeStrict decodes doc into a new value of the Go type for its kind; unknown
// fields and wrong types are errors. CRD kinds without Go types here return nil.
func decodeStrict(doc []byte) (any, typeMeta, error) {
	var tm typeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, tm, err
	}
	var obj any
	switch tm.APIVersion + "/" + tm.Kind {
	case "apps/v1/Deployment":
		obj = &appsv1.Deployment{}
	case "v1/Service":
		obj = &corev1.Service{}
	case "autoscaling/v2/HorizontalPodAutoscaler":
		obj = &autoscalingv2.HorizontalPodAutoscaler{}
	case "policy/v1/PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	case "monitoring.coreos.com/v1/ServiceMonitor":
		obj = &monitoringv1.ServiceMonitor{}
	case "serving.kserve.io/v1alpha1/ServingRuntime", "serving.kserve.io/v1beta1/InferenceService",
		"machinelearning.seldon.io/v1/SeldonDeployment":
		return nil, tm, nil // checked against their schemas (KServe here, Seldon in Python)
	default:
		return nil, tm, fmt.Errorf("no type known for %s %s", tm.APIVersion, tm.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, tm, err
	}
	return obj, tm, nil
}

func TestChartRendersIntoValidObjects(t *testing.T) {
	names := make([]string, 0, len(valueSets))
	for n := range valueSets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			kinds := map[string]int{}
			var grace float64
			if name == "everything" {
				grace = 45
			} else {
				grace = 30
			}
			for file, text := range render(t, valueSets[name]) {
				if !strings.HasSuffix(file, ".yaml") {
					continue
				}
				for _, doc := range documents(text) {
					obj, tm, err := decodeStrict([]byte(doc))
					if err != nil {
						t.Fatalf("%s: %v\n%s", file, err, doc)
					}
					kinds[tm.Kind]++
					switch o := obj.(type) {
					case *appsv1.Deployment:
						checkDeployment(t, o, name, grace)
					case *corev1.Service:
						checkService(t, o)
					}
				}
			}
			want := map[string]int{"Deployment": 1, "Service": 1, "PodDisruptionBudget": 1}
			switch name {
			case "everything":
				want["HorizontalPodAutoscaler"] = 1
				want["ServiceMonitor"] = 1
			case "mutual-tls-configmap":
				delete(want, "PodDisruptionBudget")
			}
			if fmt.Sprint(kinds) != fmt.Sprint(want) {
				t.Errorf("rendered kinds %v, want %v", kinds, want)
			}
		})
	}
}

func checkDeployment(t *testing.T, d *appsv1.Deployment, set string, drain float64) {
	t.Helper()
	spec := d.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers", len(spec.Containers))
	}
	c := spec.Containers[0]
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["http"] != 9000 || ports["grpc"] != 5000 {
		t.Errorf("container ports %v, want http 9000 and grpc 5000", ports)
	}
	for name, p := range map[string]*corev1.Probe{
		"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe,
	} {
		if p == nil {
			t.Fatalf("no %s probe", name)
		}
		want := map[string]string{"startup": "/live", "liveness": "/live", "readiness": "/ready"}[name]
		switch {
		case p.HTTPGet != nil:
			if p.HTTPGet.Path != want || p.HTTPGet.Port.String() != "http" {
				t.Errorf("%s probe: %s on %s, want %s on http", name, p.HTTPGet.Path, p.HTTPGet.Port.String(), want)
			}
		case p.TCPSocket != nil && set == "mutual-tls-configmap":
			// The kubelet cannot present a client certificate.
		default:
			t.Errorf("%s probe is neither an HTTP GET nor (with mutual TLS) a TCP check", name)
		}
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env["INFERWIRE_GRACE_PERIOD"] != fmt.Sprint(drain) {
		t.Errorf("INFERWIRE_GRACE_PERIOD %q, want %v", env["INFERWIRE_GRACE_PERIOD"], drain)
	}
	if g := spec.TerminationGracePeriodSeconds; g == nil || float64(*g) <= drain {
		t.Errorf("terminationGracePeriodSeconds %v must exceed the drain (%v s)", g, drain)
	}
	if sc := spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Error("the pod must run as non-root")
	}
	if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable.String() != "0" {
		t.Error("rolling updates must keep every replica until its replacement is ready")
	}
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		t.Error("no preStop pause before the drain")
	}
	if set == "everything" {
		for _, key := range []string{"INFERWIRE_AUTH_TOKENS", "INFERWIRE_TLS_CERT", "INFERWIRE_TLS_KEY"} {
			if env[key] == "" {
				t.Errorf("%s not set with auth and TLS on", key)
			}
		}
		if d.Spec.Replicas != nil {
			t.Error("with autoscaling the Deployment must leave replicas to the HPA")
		}
	}
}

func checkService(t *testing.T, s *corev1.Service) {
	t.Helper()
	got := map[string]string{}
	for _, p := range s.Spec.Ports {
		got[p.Name] = p.TargetPort.String()
	}
	if got["http"] != "http" || got["grpc"] != "grpc" {
		t.Errorf("service ports %v, want http and grpc to the named container ports", got)
	}
}

func TestPlainManifestsDecodeStrictly(t *testing.T) {
	files, _ := filepath.Glob("../kserve/*.yaml")
	seldon, _ := filepath.Glob("../seldon/*.yaml")
	files = append(files, seldon...)
	if len(files) < 3 {
		t.Fatalf("manifests not found: %v", files)
	}
	schemas := kserveSchemas(t)
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range documents(string(text)) {
			_, tm, err := decodeStrict([]byte(doc))
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if schema, ok := schemas[tm.APIVersion+"/"+tm.Kind]; ok {
				var obj map[string]any
				if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
					t.Fatal(err)
				}
				// CRDs leave metadata to the API server, which reads it as ObjectMeta.
				meta, _ := yaml.Marshal(obj["metadata"])
				if err := yaml.UnmarshalStrict(meta, &metav1.ObjectMeta{}); err != nil {
					t.Errorf("%s: metadata: %v", f, err)
				}
				delete(obj, "metadata")
				if errs := checkSchema(obj, schema, ""); len(errs) > 0 {
					t.Errorf("%s (%s) against KServe's CRD:\n  %s", f, tm.Kind, strings.Join(errs, "\n  "))
				}
			} else if tm.APIVersion != "machinelearning.seldon.io/v1" {
				t.Errorf("%s: no schema for %s %s", f, tm.APIVersion, tm.Kind)
			}
		}
	}
}

// A typo must fail: the checks are shown to catch misspelled fields, wrong types and
// unknown kinds, in the built-in types and in KServe's schemas alike.
func TestTyposAreCaught(t *testing.T) {
	bad := []string{
		"apiVersion: apps/v1\nkind: Deployment\nspec:\n  replica: 2\n",
		"apiVersion: v1\nkind: Service\nspec:\n  ports: [{name: http, port: nine}]\n",
		"apiVersion: apps/v1\nkind: Deploymnet\n",
		"apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nspec:\n  endpoint: []\n",
	}
	for _, doc := range bad {
		if _, _, err := decodeStrict([]byte(doc)); err == nil {
			t.Errorf("accepted:\n%s", doc)
		}
	}
	schemas := kserveSchemas(t)
	rt := schemas["serving.kserve.io/v1alpha1/ServingRuntime"]
	for _, doc := range []string{
		"spec: {supportedModelFormat: []}",
		"spec: {multiModel: maybe}",
		"spec: {containers: [{name: c, imag: x}]}",
	} {
		var obj any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		if errs := checkSchema(obj, rt, ""); len(errs) == 0 {
			t.Errorf("the ServingRuntime schema accepted %s", doc)
		}
	}
}

// kserveSchemas reads the openAPIV3Schema of KServe's CRDs from its Go module (fetched
// from the module proxy into the module cache), by "group/version/Kind".
func kserveSchemas(t *testing.T) map[string]map[string]any {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", kserveModule).Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v", kserveModule, err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download %s: %s %v", kserveModule, mod.Error, err)
	}
	schemas := map[string]map[string]any{}
	for _, name := range []string{"servingruntimes", "inferenceservices"} {
		path := filepath.Join(mod.Dir, "config/crd/full", "serving.kserve.io_"+name+".yaml")
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var crd struct {
			Spec struct {
				Group    string
				Names    struct{ Kind string }
				Versions []struct {
					Name   string
					Schema struct {
						OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
					}
				}
			}
		}
		if err := yaml.Unmarshal(bytes.TrimSpace(text), &crd); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, v := range crd.Spec.Versions {
			schemas[crd.Spec.Group+"/"+v.Name+"/"+crd.Spec.Names.Kind] = v.Schema.OpenAPIV3Schema
		}
	}
	return schemas
}
