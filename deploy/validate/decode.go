// Package validate checks deploy/ offline, with no cluster: the Helm chart is rendered by
// Helm's own engine for several sets of values, and every object it makes, and every
// plain manifest, is decoded strictly into the Go type of its kind, so that a
// misspelled field, a wrong type or an unknown kind is an error. KServe's kinds are
// checked against the CRDs KServe publishes (crd.go), Seldon's against its transcribed
// types (seldon.go). The tests add the rules that matter to users: probes, the drain,
// named ports, a non-root user, and the Dockerfile's shape.
package validate

import (
	"encoding/json"
	"fmt"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// typed maps "apiVersion/Kind" to a new value of its Go type.
var typed = map[string]func() any{
	"apps/v1/Deployment":                            func() any { return &appsv1.Deployment{} },
	"v1/Service":                                    func() any { return &corev1.Service{} },
	"autoscaling/v2/HorizontalPodAutoscaler":        func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"policy/v1/PodDisruptionBudget":                 func() any { return &policyv1.PodDisruptionBudget{} },
	"monitoring.coreos.com/v1/ServiceMonitor":       func() any { return &monitoringv1.ServiceMonitor{} },
	"machinelearning.seldon.io/v1/SeldonDeployment": func() any { return &SeldonDeployment{} },
}

// Object is one decoded YAML document.
type Object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Value is the typed object; for kinds checked against a CRD schema, the metadata
	// (decoded strictly into ObjectMeta) is all there is.
	Value any `json:"-"`
}

// Decode decodes one document into the Go type of its kind, strictly: unknown and
// duplicate fields are errors, and field names are matched case-sensitively, as the
// API server's strict field validation does. Kinds in crds are checked against those
// schemas. Any other kind is an error.
func Decode(doc []byte, crds map[string]crdSchema) (Object, error) {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return Object{}, err
	}
	var obj Object
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, &obj); err != nil {
		return obj, err
	}
	key := obj.APIVersion + "/" + obj.Kind
	if schema, ok := crds[key]; ok {
		if problems := schema.check(doc); len(problems) > 0 {
			return obj, fmt.Errorf("%s against its CRD:\n  %s", key, strings.Join(problems, "\n  "))
		}
		// The schema saw everything but metadata, which the API server checks itself.
		var top struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Metadata   metav1.ObjectMeta `json:"metadata"`
			Spec       json.RawMessage   `json:"spec"`
			Status     json.RawMessage   `json:"status"`
		}
		if err := strict(j, &top); err != nil {
			return obj, err
		}
		obj.Value = &top.Metadata
		return obj, nil
	}
	newValue, ok := typed[key]
	if !ok {
		return obj, fmt.Errorf("no Go type or schema known for apiVersion %q kind %q", obj.APIVersion, obj.Kind)
	}
	obj.Value = newValue()
	return obj, strict(j, obj.Value)
}

func strict(j []byte, into any) error {
	strictErrs, err := sigsjson.UnmarshalStrict(j, into)
	if err != nil {
		return err
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			msgs[i] = e.Error()
		}
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return nil
}

// Documents splits a YAML stream into its documents, leaving out empty ones.
func Documents(text string) [][]byte {
	var docs [][]byte
	for _, d := range strings.Split("\n"+text, "\n---") {
		body := d
		if i := strings.IndexByte(body, '\n'); i >= 0 {
			body = body[i+1:] // the rest of the separator line
		}
		empty := true
		for _, line := range strings.Split(body, "\n") {
			if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
				empty = false
				break
			}
		}
		if !empty {
			docs = append(docs, []byte(body))
		}
	}
	return docs
}
