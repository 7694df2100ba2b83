package validate

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
)

const chartDir = "../helm/inferwire"

// A values set, and what the chart must make of it.
type valueSet struct {
	values string
	kinds  map[string]int // objects rendered, by kind
	grace  float64        // server.gracePeriod in force
	// The /models volume: its source ("" when baked into the image) and read-only.
	models   string
	readOnly bool
	tls      string // "", "tls" or "mtls"
	auth     []string
	// INFERWIRE_ALLOW_UNAUTHENTICATED_REPOSITORY is set: only with
	// repository.allowUnauthenticated and auth off.
	openRepository bool
}

var base = map[string]int{"Deployment": 1, "Service": 1, "PodDisruptionBudget": 1}

func kinds(extra map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		if v == 0 {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

var valueSets = map[string]valueSet{
	// A model repository baked into the image.
	"defaults": {values: ``, kinds: kinds(nil), grace: 30},
	// Every option on: a class from a PVC folder, batching, workers, auth (tokens,
	// logins, a shared signing key), TLS, the HPA with a queue metric, a ServiceMonitor.
	"everything": {
		values: `
replicaCount: 3
model: {spec: "model.py:IrisLikeClassifier", source: pvc, pvc: {claimName: models, subPath: iris},
        parameters: '[{"name": "threshold", "value": "0.7", "type": "FLOAT"}]', name: iris, version: "2"}
server: {workers: 4, maxBatchSize: 16, maxBatchDelay: 0.002, timeout: 2, gracePeriod: 45}
auth: {enabled: true, secretName: inferwire-auth, tokensKey: tokens, usersKey: users, signingKeyKey: signing-key}
repository: {allowUnauthenticated: true}  # with auth on, tokens decide: not passed on
tls: {enabled: true, secretName: inferwire-tls}
autoscaling:
  enabled: true
  minReplicas: 2
  maxReplicas: 20
  extraMetrics:
    - type: Pods
      pods:
        metric: {name: inferwire_queue_depth}
        target: {type: AverageValue, averageValue: "8"}
  behavior:
    scaleDown: {stabilizationWindowSeconds: 300}
serviceMonitor: {enabled: true, labels: {release: prometheus}}
env: [{name: INFERWIRE_MAX_BODY_BYTES, value: "1048576"}]
nodeSelector: {kubernetes.io/arch: amd64}
podAnnotations: {team: ml}
topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway,
     labelSelector: {matchLabels: {app.kubernetes.io/name: inferwire}}}
`,
		kinds:  kinds(map[string]int{"HorizontalPodAutoscaler": 1, "ServiceMonitor": 1}),
		grace:  45,
		models: "pvc", readOnly: true, tls: "tls",
		auth: []string{"INFERWIRE_AUTH_TOKENS", "INFERWIRE_AUTH_USERS", "INFERWIRE_AUTH_SECRET"},
	},
	// A small class from a ConfigMap, mutual TLS (the probes cannot present a client
	// certificate), no PodDisruptionBudget.
	"mutual-tls-configmap": {
		values: `
model: {spec: "model.py:IrisLikeClassifier", source: configMap, configMap: {name: iris-model}}
tls: {enabled: true, secretName: inferwire-tls, clientCaKey: ca.crt}
podDisruptionBudget: {enabled: false}
`,
		kinds: kinds(map[string]int{"PodDisruptionBudget": 0}), grace: 30,
		models: "configMap", readOnly: true, tls: "mtls",
	},
	// A model repository in a node's folder, logins only, a fractional grace period.
	"repository-hostpath": {
		values: `
model: {source: hostPath, hostPath: {path: /srv/models}}
server: {gracePeriod: 12.5}
auth: {enabled: true, secretName: logins, tokensKey: "", usersKey: users}
`,
		kinds: kinds(nil), grace: 12.5, models: "hostPath", readOnly: true,
		auth: []string{"INFERWIRE_AUTH_USERS"},
	},
	// A writable repository on a PVC, for models published at run time, on a trusted
	// network without auth (the explicit opt-in).
	"repository-pvc-writable": {
		values: `
model: {source: pvc, pvc: {claimName: repository, readOnly: false}}
repository: {allowUnauthenticated: true}
`,
		kinds: kinds(nil), grace: 30, models: "pvc", readOnly: false, openRepository: true,
	},
}

// Values the chart must refuse, with the message it gives.
var badValues = map[string]string{
	"model: {source: s3}":                                 "at '/model/source': value must be one of",
	"model: {source: pvc}":                                "model.pvc.claimName is required",
	"model: {source: hostPath}":                           "model.hostPath.path is required",
	"auth: {enabled: true}":                               "auth.secretName is required",
	"auth: {enabled: true, secretName: a, tokensKey: ''}": "auth.enabled needs auth.tokensKey or auth.usersKey",
	"tls: {enabled: true}":                                "tls.secretName is required",
	"repository: {allowUnauthenticated: 'yes'}":           "at '/repository/allowUnauthenticated'",
	"server: {workers: 2, wrokers: 3}":                    "wrokers",
	"modle: {spec: model.py}":                             "modle",
}

func render(dir, values string) (map[string]string, error) {
	chart, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart: %v", err)
	}
	vals, err := chartutil.ReadValues([]byte(values))
	if err != nil {
		return nil, fmt.Errorf("values: %v", err)
	}
	opts := chartutil.ReleaseOptions{Name: "iris", Namespace: "models", Revision: 1, IsInstall: true}
	// The library's default cluster (1.20) is older than any this chart is for; as
	// `helm install` does, the chart's kubeVersion must accept the cluster's.
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = chartutil.KubeVersion{Version: "v1.30.0", Major: "1", Minor: "30"}
	if !chartutil.IsCompatibleRange(chart.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("the chart's kubeVersion %q excludes Kubernetes %s", chart.Metadata.KubeVersion, caps.KubeVersion)
	}
	// As `helm install` does: the values are checked against values.schema.json.
	top, err := chartutil.ToRenderValues(chart, vals, opts, caps)
	if err != nil {
		return nil, err
	}
	// Strict: a template that reads a value the chart does not define fails.
	return engine.Engine{Strict: true}.Render(chart, top)
}

var (
	crdsOnce sync.Once
	crds     map[string]crdSchema
	crdsErr  error
)

func kserveCRDs(t *testing.T) map[string]crdSchema {
	t.Helper()
	crdsOnce.Do(func() { crds, crdsErr = kserveSchemas() })
	if crdsErr != nil {
		t.Fatal(crdsErr)
	}
	return crds
}

// renderObjects renders the chart and decodes every object it makes.
func renderObjects(t *testing.T, dir, values string) []Object {
	t.Helper()
	out, err := render(dir, values)
	if err != nil {
		t.Fatal(err)
	}
	files := make([]string, 0, len(out))
	for f := range out {
		files = append(files, f)
	}
	sort.Strings(files)
	var objs []Object
	for _, f := range files {
		if !strings.HasSuffix(f, ".yaml") {
			continue
		}
		for _, doc := range Documents(out[f]) {
			obj, err := Decode(doc, nil)
			if err != nil {
				t.Fatalf("%s: %v\n%s", f, err, doc)
			}
			objs = append(objs, obj)
		}
	}
	return objs
}

func TestChartRendersIntoValidObjects(t *testing.T) {
	names := make([]string, 0, len(valueSets))
	for n := range valueSets {
		names = append(names, n)
	}
	sort.Strings(names)
	settings := serverSettings(t)
	for _, name := range names {
		set := valueSets[name]
		t.Run(name, func(t *testing.T) {
			got := map[string]int{}
			var dep *appsv1.Deployment
			for _, obj := range renderObjects(t, chartDir, set.values) {
				got[obj.Kind]++
				if d, ok := obj.Value.(*appsv1.Deployment); ok {
					dep = d
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(set.kinds) {
				t.Fatalf("rendered %v, want %v", got, set.kinds)
			}
			checkDeployment(t, dep, set, settings)
			pods := dep.Spec.Template.Labels
			for _, obj := range renderObjects(t, chartDir, set.values) {
				checkSelects(t, obj, dep.Name, pods)
			}
		})
	}
}

func TestChartRefusesBadValues(t *testing.T) {
	for values, want := range badValues {
		_, err := render(chartDir, values)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("values %s: error %v, want one saying %q", values, err, want)
		}
	}
}

// serverSettings reads every INFERWIRE_* variable the server knows from the generated
// settings table, so that the chart cannot set one that does not exist.
func serverSettings(t *testing.T) map[string]bool {
	t.Helper()
	text, err := os.ReadFile("../../docs/reference/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, m := range regexp.MustCompile("`(INFERWIRE_[A-Z_]+)`").FindAllStringSubmatch(string(text), -1) {
		known[m[1]] = true
	}
	if !known["INFERWIRE_GRACE_PERIOD"] || len(known) < 30 {
		t.Fatalf("settings table not found: %v", known)
	}
	return known
}

func checkDeployment(t *testing.T, d *appsv1.Deployment, set valueSet, settings map[string]bool) {
	t.Helper()
	spec := d.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	checkContainer(t, c, spec, set.tls, true)
	env := envOf(c)
	for name := range env {
		if !settings[name] {
			t.Errorf("env %s is no inferwire setting (docs/reference/configuration.md)", name)
		}
	}
	if got, _ := strconv.ParseFloat(env["INFERWIRE_GRACE_PERIOD"], 64); got != set.grace {
		t.Errorf("INFERWIRE_GRACE_PERIOD %q, want %v", env["INFERWIRE_GRACE_PERIOD"], set.grace)
	}
	if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.String() != "0" {
		t.Error("rolling updates must keep every replica until its replacement is ready (maxUnavailable 0)")
	}
	if (d.Spec.Replicas == nil) != (set.kinds["HorizontalPodAutoscaler"] == 1) {
		t.Error("replicas must be set exactly when no HPA owns them")
	}
	// Where /models comes from.
	var mount *corev1.VolumeMount
	for i, m := range c.VolumeMounts {
		if m.MountPath == "/models" {
			mount = &c.VolumeMounts[i]
		}
	}
	switch {
	case set.models == "" && mount != nil:
		t.Error("a model baked into the image must not be hidden by a volume")
	case set.models != "" && mount == nil:
		t.Fatalf("no volume at /models for model.source %s", set.models)
	case mount != nil:
		v := volume(spec, mount.Name)
		source := map[bool]string{v.PersistentVolumeClaim != nil: "pvc", v.HostPath != nil: "hostPath", v.ConfigMap != nil: "configMap"}[true]
		if source != set.models || mount.ReadOnly != set.readOnly {
			t.Errorf("/models from %s (read-only %v), want %s (%v)", source, mount.ReadOnly, set.models, set.readOnly)
		}
	}
	for _, key := range set.auth {
		if env[key] == "" && !fromSecret(c, key) {
			t.Errorf("%s not set with auth on", key)
		}
	}
	if (env["INFERWIRE_ALLOW_UNAUTHENTICATED_REPOSITORY"] == "true") != set.openRepository {
		t.Errorf("INFERWIRE_ALLOW_UNAUTHENTICATED_REPOSITORY is %q, want it set: %v",
			env["INFERWIRE_ALLOW_UNAUTHENTICATED_REPOSITORY"], set.openRepository)
	}
	if set.tls != "" && (env["INFERWIRE_TLS_CERT"] == "" || env["INFERWIRE_TLS_KEY"] == "") {
		t.Error("TLS on but no certificate or key")
	}
	if (set.tls == "mtls") != (env["INFERWIRE_TLS_CLIENT_CA"] != "") {
		t.Error("INFERWIRE_TLS_CLIENT_CA must be set exactly with mutual TLS")
	}
}

// checkContainer holds the rules every inferwire container here follows, in the chart
// and in the plain manifests: named ports, probes on /live and /ready, a drain that
// fits in the grace period, no root.
// Seldon's operator adds the ports itself (ownPorts false).
func checkContainer(t *testing.T, c corev1.Container, pod corev1.PodSpec, tls string, ownPorts bool) {
	t.Helper()
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ownPorts && (ports["http"] != 9000 || ports["grpc"] != 5000) {
		t.Errorf("container ports %v, want http 9000 and grpc 5000", ports)
	}
	probes := []struct {
		name string
		p    *corev1.Probe
		path string
	}{{"startup", c.StartupProbe, "/live"}, {"liveness", c.LivenessProbe, "/live"}, {"readiness", c.ReadinessProbe, "/ready"}}
	for _, pr := range probes {
		checkProbe(t, pr.name, pr.p, pr.path, "http", tls)
	}
	env := envOf(c)
	drain := 30.0 // the server's default --grace-period
	if v, ok := env["INFERWIRE_GRACE_PERIOD"]; ok {
		drain, _ = strconv.ParseFloat(v, 64)
	}
	pause := preStopSeconds(t, c)
	if g := pod.TerminationGracePeriodSeconds; g == nil || float64(*g) <= pause+drain {
		t.Errorf("terminationGracePeriodSeconds %v must exceed the preStop pause (%v s) and the drain (%v s)",
			g, pause, drain)
	}
	nonRoot := func(sc *corev1.SecurityContext, psc *corev1.PodSecurityContext) bool {
		if sc != nil && sc.RunAsNonRoot != nil {
			return *sc.RunAsNonRoot
		}
		return psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot
	}
	if !nonRoot(c.SecurityContext, pod.SecurityContext) {
		t.Error("the container must run as non-root (runAsNonRoot)")
	}
	if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation must be false")
	}
}

func checkProbe(t *testing.T, name string, p *corev1.Probe, path, port, tls string) {
	t.Helper()
	switch {
	case p == nil:
		t.Errorf("no %s probe", name)
	case tls == "mtls":
		// The kubelet cannot present a client certificate: a TCP check is all it can do.
		if p.TCPSocket == nil || p.TCPSocket.Port.String() != port {
			t.Errorf("%s probe under mutual TLS: want a TCP check on %s", name, port)
		}
	case p.HTTPGet == nil:
		t.Errorf("%s probe: want an HTTP GET", name)
	default:
		scheme := map[string]corev1.URIScheme{"": corev1.URISchemeHTTP, "tls": corev1.URISchemeHTTPS}[tls]
		g := p.HTTPGet
		if g.Path != path || g.Port.String() != port || (g.Scheme != scheme && !(g.Scheme == "" && scheme == corev1.URISchemeHTTP)) {
			t.Errorf("%s probe: %s %s on %s, want %s %s on %s", name, g.Scheme, g.Path, g.Port.String(), scheme, path, port)
		}
	}
}

func preStopSeconds(t *testing.T, c corev1.Container) float64 {
	t.Helper()
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		t.Error("no preStop pause before the drain: Services still send to a pod that has begun draining")
		return 0
	}
	if s := c.Lifecycle.PreStop.Sleep; s != nil {
		return float64(s.Seconds)
	}
	if e := c.Lifecycle.PreStop.Exec; e != nil && len(e.Command) == 2 && e.Command[0] == "sleep" {
		secs, err := strconv.ParseFloat(e.Command[1], 64)
		if err == nil {
			return secs
		}
	}
	t.Errorf("preStop %+v: want a sleep", c.Lifecycle.PreStop)
	return 0
}

func envOf(c corev1.Container) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	return env
}

func fromSecret(c corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			return true
		}
	}
	return false
}

func volume(spec corev1.PodSpec, name string) corev1.Volume {
	for _, v := range spec.Volumes {
		if v.Name == name {
			return v
		}
	}
	return corev1.Volume{}
}

// checkSelects: every object that points at the pods or the Deployment finds them.
func checkSelects(t *testing.T, obj Object, deployment string, pods map[string]string) {
	t.Helper()
	matches := func(sel map[string]string) bool {
		if len(sel) == 0 {
			return false
		}
		for k, v := range sel {
			if pods[k] != v {
				return false
			}
		}
		return true
	}
	switch o := obj.Value.(type) {
	case *corev1.Service:
		targets := map[string]string{}
		for _, p := range o.Spec.Ports {
			targets[p.Name] = p.TargetPort.String()
		}
		if targets["http"] != "http" || targets["grpc"] != "grpc" {
			t.Errorf("Service ports %v, want http and grpc to the named container ports", targets)
		}
		if !matches(o.Spec.Selector) {
			t.Errorf("the Service's selector %v does not select the pods %v", o.Spec.Selector, pods)
		}
	case *policyv1.PodDisruptionBudget:
		if o.Spec.Selector == nil || !matches(o.Spec.Selector.MatchLabels) {
			t.Error("the PodDisruptionBudget does not select the pods")
		}
	case *autoscalingv2.HorizontalPodAutoscaler:
		if ref := o.Spec.ScaleTargetRef; ref.Kind != "Deployment" || ref.Name != deployment {
			t.Errorf("the HPA scales %s %s, want Deployment %s", ref.Kind, ref.Name, deployment)
		}
	case *monitoringv1.ServiceMonitor:
		if len(o.Spec.Endpoints) != 1 || o.Spec.Endpoints[0].Port != "http" || o.Spec.Endpoints[0].Path != "/metrics" {
			t.Errorf("the ServiceMonitor scrapes %+v, want /metrics on the http port", o.Spec.Endpoints)
		}
		if !matches(o.Spec.Selector.MatchLabels) {
			t.Error("the ServiceMonitor does not select the Service") // same labels as the pods
		}
	}
}

// A typo in a template fails: the chart is copied, one field misspelled, and rendered.
func TestChartTypoFails(t *testing.T) {
	for _, typo := range []struct{ file, from, to, want string }{
		{"deployment.yaml", "readinessProbe:", "readinesProbe:", `unknown field "spec.template.spec.containers[0].readinesProbe"`},
		{"deployment.yaml", "terminationGracePeriodSeconds:", "TerminationGracePeriodSeconds:", "unknown field"},
		{"service.yaml", "targetPort: grpc", "targetPort: [grpc]", "cannot unmarshal"},
		{"deployment.yaml", ".Values.server.gracePeriod", ".Values.server.gracePeriood", "gracePeriood"},
		{"hpa.yaml", "apiVersion: autoscaling/v2", "apiVersion: autoscaling/v3", "no Go type or schema known"},
	} {
		dir := copyChart(t)
		path := filepath.Join(dir, "templates", typo.file)
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(text), typo.from) {
			t.Fatalf("%s has no %q", typo.file, typo.from)
		}
		bad := strings.Replace(string(text), typo.from, typo.to, 1)
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		err = renderAndDecode(dir, valueSets["everything"].values)
		if err == nil || !strings.Contains(err.Error(), typo.want) {
			t.Errorf("%s with %q: error %v, want one saying %q", typo.file, typo.to, err, typo.want)
		}
	}
}

func renderAndDecode(dir, values string) error {
	out, err := render(dir, values)
	if err != nil {
		return err
	}
	for f, text := range out {
		if !strings.HasSuffix(f, ".yaml") {
			continue
		}
		for _, doc := range Documents(text) {
			if _, err := Decode(doc, nil); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
		}
	}
	return nil
}

func copyChart(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "inferwire")
	err := filepath.WalkDir(chartDir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(chartDir, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
