package validate

import (
	"encoding/json"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Seldon Core 1's SeldonDeployment (machinelearning.seldon.io/v1). Seldon's Go module
// (github.com/seldonio/seldon-core/operator) is not served by the module proxy this
// project can reach, so its spec types are transcribed here, field for field, from
// operator/apis/machinelearning.seldon.io/v1/seldondeployment_types.go at v1.18.2.
// Pod specs, containers, resources and HPA metrics are the Kubernetes types
// themselves, so a strict decode checks them as strictly as a Deployment.
//
// Two fields hold types from outside k8s.io/api that are not transcribed: the KEDA
// spec and the autoscaling/v2beta1 metrics (removed from k8s.io/api). They are kept as
// raw JSON, known by name, and their contents are not checked; the manifests here do
// not use them.

type SeldonDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              SeldonDeploymentSpec `json:"spec,omitempty"`
}

type SeldonDeploymentSpec struct {
	Name        string            `json:"name,omitempty"`
	Predictors  []PredictorSpec   `json:"predictors"`
	OauthKey    string            `json:"oauth_key,omitempty"`
	OauthSecret string            `json:"oauth_secret,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Protocol    string            `json:"protocol,omitempty"`
	Transport   string            `json:"transport,omitempty"`
	Replicas    *int32            `json:"replicas,omitempty"`
	ServerType  string            `json:"serverType,omitempty"`
}

type PredictorSpec struct {
	Name                    string                      `json:"name"`
	Graph                   PredictiveUnit              `json:"graph"`
	ComponentSpecs          []*SeldonPodSpec            `json:"componentSpecs,omitempty"`
	Replicas                *int32                      `json:"replicas,omitempty"`
	Annotations             map[string]string           `json:"annotations,omitempty"`
	EngineResources         corev1.ResourceRequirements `json:"engineResources,omitempty"`
	Labels                  map[string]string           `json:"labels,omitempty"`
	SvcOrchSpec             SvcOrchSpec                 `json:"svcOrchSpec,omitempty"`
	Traffic                 int32                       `json:"traffic,omitempty"`
	Explainer               *Explainer                  `json:"explainer,omitempty"`
	Shadow                  bool                        `json:"shadow,omitempty"`
	SSL                     *SeldonSSL                  `json:"ssl,omitempty"`
	ProgressDeadlineSeconds *int32                      `json:"progressDeadlineSeconds,omitempty"`
}

type SeldonSSL struct {
	CertSecretName string `json:"certSecretName,omitempty"`
}

type SvcOrchSpec struct {
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	Env       []*corev1.EnvVar             `json:"env,omitempty"`
	Replicas  *int32                       `json:"replicas,omitempty"`
}

type Explainer struct {
	Type                    string            `json:"type,omitempty"`
	ModelURI                string            `json:"modelUri,omitempty"`
	ServiceAccountName      string            `json:"serviceAccountName,omitempty"`
	ContainerSpec           corev1.Container  `json:"containerSpec,omitempty"`
	Config                  map[string]string `json:"config,omitempty"`
	Endpoint                *SeldonEndpoint   `json:"endpoint,omitempty"`
	EnvSecretRefName        string            `json:"envSecretRefName,omitempty"`
	StorageInitializerImage string            `json:"storageInitializerImage,omitempty"`
	Replicas                *int32            `json:"replicas,omitempty"`
	InitParameters          string            `json:"initParameters,omitempty"`
}

// SeldonObjectMeta is Seldon's own subset of ObjectMeta for component pods.
type SeldonObjectMeta struct {
	Name                       string                  `json:"name,omitempty"`
	GenerateName               string                  `json:"generateName,omitempty"`
	Namespace                  string                  `json:"namespace,omitempty"`
	SelfLink                   string                  `json:"selfLink,omitempty"`
	UID                        string                  `json:"uid,omitempty"`
	ResourceVersion            string                  `json:"resourceVersion,omitempty"`
	Generation                 int64                   `json:"generation,omitempty"`
	CreationTimestamp          *metav1.Time            `json:"creationTimestamp,omitempty"`
	DeletionTimestamp          *metav1.Time            `json:"deletionTimestamp,omitempty"`
	DeletionGracePeriodSeconds *int64                  `json:"deletionGracePeriodSeconds,omitempty"`
	Labels                     map[string]string       `json:"labels,omitempty"`
	Annotations                map[string]string       `json:"annotations,omitempty"`
	OwnerReferences            []metav1.OwnerReference `json:"ownerReferences,omitempty"`
	Finalizers                 []string                `json:"finalizers,omitempty"`
	ClusterName                string                  `json:"clusterName,omitempty"`
}

type SeldonPodSpec struct {
	Metadata SeldonObjectMeta `json:"metadata,omitempty"`
	Spec     corev1.PodSpec   `json:"spec,omitempty"`
	HpaSpec  *SeldonHpaSpec   `json:"hpaSpec,omitempty"`
	Replicas *int32           `json:"replicas,omitempty"`
	KedaSpec *json.RawMessage `json:"kedaSpec,omitempty"` // KEDA's types: not checked
	PdbSpec  *SeldonPdbSpec   `json:"pdbSpec,omitempty"`
}

type SeldonHpaSpec struct {
	MinReplicas *int32                     `json:"minReplicas,omitempty"`
	MaxReplicas int32                      `json:"maxReplicas"`
	Metrics     []json.RawMessage          `json:"metrics,omitempty"` // autoscaling/v2beta1: not checked
	Metricsv2   []autoscalingv2.MetricSpec `json:"metricsv2,omitempty"`
}

type SeldonPdbSpec struct {
	MinAvailable   *intstr.IntOrString `json:"minAvailable,omitempty"`
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

type SeldonEndpoint struct {
	ServiceHost string `json:"service_host,omitempty"`
	ServicePort int32  `json:"service_port,omitempty"`
	Type        string `json:"type,omitempty"`
	HTTPPort    int32  `json:"httpPort,omitempty"`
	GRPCPort    int32  `json:"grpcPort,omitempty"`
}

type SeldonParameter struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Type  string `json:"type"`
}

type PredictiveUnit struct {
	Name                    string            `json:"name"`
	Children                []PredictiveUnit  `json:"children,omitempty"`
	Type                    *string           `json:"type,omitempty"`
	Implementation          *string           `json:"implementation,omitempty"`
	Methods                 *[]string         `json:"methods,omitempty"`
	Endpoint                *SeldonEndpoint   `json:"endpoint,omitempty"`
	Parameters              []SeldonParameter `json:"parameters,omitempty"`
	ModelURI                string            `json:"modelUri,omitempty"`
	ServiceAccountName      string            `json:"serviceAccountName,omitempty"`
	EnvSecretRefName        string            `json:"envSecretRefName,omitempty"`
	StorageInitializerImage string            `json:"storageInitializerImage,omitempty"`
	Logger                  *SeldonLogger     `json:"logger,omitempty"`
}

type SeldonLogger struct {
	URL  *string `json:"url,omitempty"`
	Mode string  `json:"mode,omitempty"`
}

// The string enums of the same file: Go's decoder takes any string for them, the
// operator does not.
var seldonEnums = map[string][]string{
	"protocol":       {"seldon", "tensorflow", "kfserving", "v2"},
	"transport":      {"rest", "grpc"},
	"serverType":     {"rpc", "kafka"},
	"unit type":      {"UNKNOWN_TYPE", "ROUTER", "COMBINER", "MODEL", "TRANSFORMER", "OUTPUT_TRANSFORMER"},
	"endpoint type":  {"REST", "GRPC"},
	"parameter type": {"INT", "FLOAT", "DOUBLE", "STRING", "BOOL"},
}
