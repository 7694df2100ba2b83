//! Every gRPC method the server answers, each described once: its full path, what a caller
//! needs (`Access`), the metrics route it is counted under and what serves it. The auth
//! layer, the metrics and `FastPredict` read this table; a method not in it needs the
//! predict scope (tonic then answers UNIMPLEMENTED). To add a method, add a row here (the
//! test below compares the table with the services' descriptors).
use crate::auth::Access;
use crate::metrics::{Protocol, Route};
use crate::observe::Observed;

/// One gRPC method.
#[derive(Debug)]
pub struct Rpc {
    /// `/package.Service/Method`.
    pub path: &'static str,
    pub access: Access,
    /// The route it is counted under in the request metrics; `None`: not counted.
    pub metric: Option<Route>,
    pub handler: Handler,
    /// What a call that changes something needs, where it differs from `access`: one
    /// method both reads and changes Triton's trace and logging settings, so its handler
    /// checks this once the message says it changes them (`grpc::auth::admit_change`).
    pub change_access: Option<Access>,
    /// Served only in this dialect (`v2_dialect`), as REST's `Route::dialect`; `None`:
    /// in every dialect.
    pub dialect: Option<&'static str>,
}

/// What serves a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handler {
    /// `grpc::predict`: the wire bytes decoded in one pass (it takes the method over from
    /// the generated server).
    FastPredict,
    /// `grpc::seldon::SeldonService`, through the generated server.
    Seldon,
    /// `grpc::v2::V2Service`, through the generated server.
    V2,
    /// `grpc::health`.
    Health,
    /// tonic-reflection.
    Reflection,
    /// `grpc::torchserve::TorchServeService`, through the generated server.
    TorchServe,
    /// `grpc::torchserve_management::TorchServeManagement`, on its own port.
    TorchServeManagement,
}

impl Rpc {
    /// The method's name, for the access log.
    pub fn name(&self) -> &'static str {
        self.path.rsplit('/').next().unwrap_or(self.path)
    }

    /// Whether a server in `dialect` serves it.
    pub fn served_in(&self, dialect: &str) -> bool {
        self.dialect.is_none_or(|d| d == dialect)
    }

    /// What is recorded about one call, counted under the method's route.
    pub fn observe(&self) -> Observed {
        Observed::new(Protocol::Grpc, self.metric.unwrap_or(Route::Other))
    }
}

const fn rpc(path: &'static str, access: Access, metric: Option<Route>, handler: Handler) -> Rpc {
    Rpc {
        path,
        access,
        metric,
        handler,
        change_access: None,
        dialect: None,
    }
}

use Handler::{FastPredict, Health, Reflection, Seldon, TorchServe, TorchServeManagement, V2};

pub const SELDON_PREDICT: Rpc = rpc(
    "/seldon.protos.Seldon/Predict",
    Access::PREDICT,
    Some(Route::Predict),
    FastPredict,
);
pub const SELDON_FEEDBACK: Rpc = rpc(
    "/seldon.protos.Seldon/SendFeedback",
    Access::PREDICT,
    Some(Route::Feedback),
    Seldon,
);
pub const SELDON_MODEL_METADATA: Rpc = rpc(
    "/seldon.protos.Seldon/ModelMetadata",
    Access::PREDICT,
    Some(Route::Metadata),
    Seldon,
);
pub const SELDON_GRAPH_METADATA: Rpc = rpc(
    "/seldon.protos.Seldon/GraphMetadata",
    Access::PREDICT,
    Some(Route::Metadata),
    Seldon,
);
pub const MODEL_PREDICT: Rpc = rpc(
    "/seldon.protos.Model/Predict",
    Access::PREDICT,
    Some(Route::Predict),
    FastPredict,
);
pub const MODEL_FEEDBACK: Rpc = rpc(
    "/seldon.protos.Model/SendFeedback",
    Access::PREDICT,
    Some(Route::Feedback),
    Seldon,
);
pub const MODEL_METADATA: Rpc = rpc(
    "/seldon.protos.Model/Metadata",
    Access::PREDICT,
    Some(Route::Metadata),
    Seldon,
);
pub const GENERIC_TRANSFORM_INPUT: Rpc = component(
    "/seldon.protos.Generic/TransformInput",
    Route::TransformInput,
);
pub const GENERIC_TRANSFORM_OUTPUT: Rpc = component(
    "/seldon.protos.Generic/TransformOutput",
    Route::TransformOutput,
);
pub const GENERIC_ROUTE: Rpc = component("/seldon.protos.Generic/Route", Route::Route);
pub const GENERIC_AGGREGATE: Rpc = component("/seldon.protos.Generic/Aggregate", Route::Aggregate);
pub const GENERIC_FEEDBACK: Rpc = component("/seldon.protos.Generic/SendFeedback", Route::Feedback);
pub const ROUTER_ROUTE: Rpc = component("/seldon.protos.Router/Route", Route::Route);
pub const ROUTER_FEEDBACK: Rpc = component("/seldon.protos.Router/SendFeedback", Route::Feedback);
pub const TRANSFORMER_TRANSFORM_INPUT: Rpc = component(
    "/seldon.protos.Transformer/TransformInput",
    Route::TransformInput,
);
pub const OUTPUT_TRANSFORMER_TRANSFORM_OUTPUT: Rpc = component(
    "/seldon.protos.OutputTransformer/TransformOutput",
    Route::TransformOutput,
);
pub const COMBINER_AGGREGATE: Rpc =
    component("/seldon.protos.Combiner/Aggregate", Route::Aggregate);

/// A method of Seldon's other graph component services (`grpc::components`).
const fn component(path: &'static str, metric: Route) -> Rpc {
    rpc(path, Access::PREDICT, Some(metric), Seldon)
}

pub const V2_INFER: Rpc = rpc(
    "/inference.GRPCInferenceService/ModelInfer",
    Access::PREDICT,
    Some(Route::Infer),
    V2,
);

/// Triton's streaming (`grpc::stream`): auth once per call; each request on it counted.
pub const V2_STREAM_INFER: Rpc = rpc(
    "/inference.GRPCInferenceService/ModelStreamInfer",
    Access::PREDICT,
    Some(Route::InferStream),
    V2,
);

/// Triton's trace and logging settings: read with the predict scope, changed as the
/// repository API is.
pub const TRACE_SETTING: Rpc = Rpc {
    change_access: Some(Access::REPOSITORY_WRITE),
    ..rpc(
        "/inference.GRPCInferenceService/TraceSetting",
        Access::PREDICT,
        None,
        V2,
    )
};
pub const LOG_SETTINGS: Rpc = Rpc {
    change_access: Some(Access::REPOSITORY_WRITE),
    ..rpc(
        "/inference.GRPCInferenceService/LogSettings",
        Access::PREDICT,
        None,
        V2,
    )
};

/// TorchServe's inference service (`inferwire torchserve` only): open to inferwire's own
/// auth as its REST routes are; TorchServe's token is checked by the service.
const fn torchserve(method: &'static str, access: Access, metric: Route) -> Rpc {
    Rpc {
        dialect: Some("torchserve"),
        ..rpc(method, access, Some(metric), TorchServe)
    }
}

pub const TS_PING: Rpc = torchserve(
    "/org.pytorch.serve.grpc.inference.InferenceAPIsService/Ping",
    Access::OPEN,
    Route::Health,
);
pub const TS_PREDICTIONS: Rpc = torchserve(
    "/org.pytorch.serve.grpc.inference.InferenceAPIsService/Predictions",
    Access::PREDICT,
    Route::Infer,
);
pub const TS_STREAM_PREDICTIONS: Rpc = torchserve(
    "/org.pytorch.serve.grpc.inference.InferenceAPIsService/StreamPredictions",
    Access::PREDICT,
    Route::InferStream,
);
/// Each request on the stream is counted.
pub const TS_STREAM_PREDICTIONS2: Rpc = torchserve(
    "/org.pytorch.serve.grpc.inference.InferenceAPIsService/StreamPredictions2",
    Access::PREDICT,
    Route::InferStream,
);

/// TorchServe's management service (`inferwire torchserve` only, on
/// `grpc_management_port`): open to inferwire's own auth as its REST routes are, not
/// counted as they are not; TorchServe's token is checked by the service.
const fn torchserve_management(method: &'static str) -> Rpc {
    Rpc {
        dialect: Some("torchserve"),
        ..rpc(method, Access::OPEN, None, TorchServeManagement)
    }
}

/// The table.
pub static METHODS: &[Rpc] = &[
    SELDON_PREDICT,
    SELDON_FEEDBACK,
    SELDON_MODEL_METADATA,
    SELDON_GRAPH_METADATA,
    MODEL_PREDICT,
    MODEL_FEEDBACK,
    MODEL_METADATA,
    GENERIC_TRANSFORM_INPUT,
    GENERIC_TRANSFORM_OUTPUT,
    GENERIC_ROUTE,
    GENERIC_AGGREGATE,
    GENERIC_FEEDBACK,
    ROUTER_ROUTE,
    ROUTER_FEEDBACK,
    TRANSFORMER_TRANSFORM_INPUT,
    OUTPUT_TRANSFORMER_TRANSFORM_OUTPUT,
    COMBINER_AGGREGATE,
    rpc(
        "/inference.GRPCInferenceService/ServerLive",
        Access::OPEN,
        None,
        V2,
    ),
    rpc(
        "/inference.GRPCInferenceService/ServerReady",
        Access::OPEN,
        None,
        V2,
    ),
    rpc(
        "/inference.GRPCInferenceService/ModelReady",
        Access::OPEN,
        None,
        V2,
    ),
    rpc(
        "/inference.GRPCInferenceService/ServerMetadata",
        Access::PREDICT,
        None,
        V2,
    ),
    rpc(
        "/inference.GRPCInferenceService/ModelMetadata",
        Access::PREDICT,
        None,
        V2,
    ),
    V2_INFER,
    V2_STREAM_INFER,
    rpc(
        "/inference.GRPCInferenceService/RepositoryIndex",
        Access::REPOSITORY_READ,
        None,
        V2,
    ),
    rpc(
        "/inference.GRPCInferenceService/RepositoryModelLoad",
        Access::REPOSITORY_WRITE,
        None,
        V2,
    ),
    rpc(
        "/inference.GRPCInferenceService/RepositoryModelUnload",
        Access::REPOSITORY_WRITE,
        None,
        V2,
    ),
    // MLServer's deprecated repository service: the same three methods.
    rpc(
        "/inference.model_repository.ModelRepositoryService/RepositoryIndex",
        Access::REPOSITORY_READ,
        None,
        V2,
    ),
    rpc(
        "/inference.model_repository.ModelRepositoryService/RepositoryModelLoad",
        Access::REPOSITORY_WRITE,
        None,
        V2,
    ),
    rpc(
        "/inference.model_repository.ModelRepositoryService/RepositoryModelUnload",
        Access::REPOSITORY_WRITE,
        None,
        V2,
    ),
    rpc(
        "/inference.GRPCInferenceService/ModelStatistics",
        Access::PREDICT,
        None,
        V2,
    ),
    rpc(
        "/inference.GRPCInferenceService/ModelConfig",
        Access::PREDICT,
        None,
        V2,
    ),
    rpc(
        "/inference.GRPCInferenceService/SystemSharedMemoryStatus",
        Access::PREDICT,
        None,
        V2,
    ),
    rpc(
        "/inference.GRPCInferenceService/SystemSharedMemoryRegister",
        crate::shared_memory::REGISTER,
        None,
        V2,
    ),
    rpc(
        "/inference.GRPCInferenceService/SystemSharedMemoryUnregister",
        crate::shared_memory::REGISTER,
        None,
        V2,
    ),
    rpc(
        "/inference.GRPCInferenceService/CudaSharedMemoryStatus",
        Access::PREDICT,
        None,
        V2,
    ),
    rpc(
        "/inference.GRPCInferenceService/CudaSharedMemoryRegister",
        crate::shared_memory::REGISTER,
        None,
        V2,
    ),
    rpc(
        "/inference.GRPCInferenceService/CudaSharedMemoryUnregister",
        crate::shared_memory::REGISTER,
        None,
        V2,
    ),
    TRACE_SETTING,
    LOG_SETTINGS,
    TS_PING,
    TS_PREDICTIONS,
    TS_STREAM_PREDICTIONS,
    TS_STREAM_PREDICTIONS2,
    torchserve_management("/org.pytorch.serve.grpc.management.ManagementAPIsService/DescribeModel"),
    torchserve_management("/org.pytorch.serve.grpc.management.ManagementAPIsService/ListModels"),
    torchserve_management("/org.pytorch.serve.grpc.management.ManagementAPIsService/RegisterModel"),
    torchserve_management("/org.pytorch.serve.grpc.management.ManagementAPIsService/ScaleWorker"),
    torchserve_management("/org.pytorch.serve.grpc.management.ManagementAPIsService/SetDefault"),
    torchserve_management(
        "/org.pytorch.serve.grpc.management.ManagementAPIsService/UnregisterModel",
    ),
    rpc("/grpc.health.v1.Health/Check", Access::OPEN, None, Health),
    rpc("/grpc.health.v1.Health/Watch", Access::OPEN, None, Health),
    rpc(
        "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        Access::OPEN,
        None,
        Reflection,
    ),
    rpc(
        "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
        Access::OPEN,
        None,
        Reflection,
    ),
];

/// The row for a request's path.
pub fn find(path: &str) -> Option<&'static Rpc> {
    METHODS.iter().find(|m| m.path == path)
}

/// What a call to `path` needs: its row's access; an unknown method needs the predict
/// scope, so that its UNIMPLEMENTED says nothing to a caller without a token.
pub fn access(path: &str) -> Access {
    find(path).map_or(Access::PREDICT, |m| m.access)
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    /// Every method with what it needs and how it is counted: a method cannot be added,
    /// nor its access changed, without this list changing.
    #[test]
    fn every_method_with_its_access() {
        let listed: Vec<String> = METHODS
            .iter()
            .map(|m| {
                let metric = m.metric.map_or("-", Route::label);
                let access = match m.change_access {
                    Some(change) => format!("{} change:{}", m.access.name(), change.name()),
                    None => m.access.name().to_owned(),
                };
                let only = m.dialect.map(|d| format!(" {d}-only")).unwrap_or_default();
                format!("{} {access} {metric} {:?}{only}", m.path, m.handler)
            })
            .collect();
        let expected = [
            "/seldon.protos.Seldon/Predict predict predict FastPredict",
            "/seldon.protos.Seldon/SendFeedback predict feedback Seldon",
            "/seldon.protos.Seldon/ModelMetadata predict metadata Seldon",
            "/seldon.protos.Seldon/GraphMetadata predict metadata Seldon",
            "/seldon.protos.Model/Predict predict predict FastPredict",
            "/seldon.protos.Model/SendFeedback predict feedback Seldon",
            "/seldon.protos.Model/Metadata predict metadata Seldon",
            "/seldon.protos.Generic/TransformInput predict transform-input Seldon",
            "/seldon.protos.Generic/TransformOutput predict transform-output Seldon",
            "/seldon.protos.Generic/Route predict route Seldon",
            "/seldon.protos.Generic/Aggregate predict aggregate Seldon",
            "/seldon.protos.Generic/SendFeedback predict feedback Seldon",
            "/seldon.protos.Router/Route predict route Seldon",
            "/seldon.protos.Router/SendFeedback predict feedback Seldon",
            "/seldon.protos.Transformer/TransformInput predict transform-input Seldon",
            "/seldon.protos.OutputTransformer/TransformOutput predict transform-output Seldon",
            "/seldon.protos.Combiner/Aggregate predict aggregate Seldon",
            "/inference.GRPCInferenceService/ServerLive open - V2",
            "/inference.GRPCInferenceService/ServerReady open - V2",
            "/inference.GRPCInferenceService/ModelReady open - V2",
            "/inference.GRPCInferenceService/ServerMetadata predict - V2",
            "/inference.GRPCInferenceService/ModelMetadata predict - V2",
            "/inference.GRPCInferenceService/ModelInfer predict infer V2",
            "/inference.GRPCInferenceService/ModelStreamInfer predict infer-stream V2",
            "/inference.GRPCInferenceService/RepositoryIndex repository-read - V2",
            "/inference.GRPCInferenceService/RepositoryModelLoad repository-write - V2",
            "/inference.GRPCInferenceService/RepositoryModelUnload repository-write - V2",
            "/inference.model_repository.ModelRepositoryService/RepositoryIndex repository-read - V2",
            "/inference.model_repository.ModelRepositoryService/RepositoryModelLoad repository-write - V2",
            "/inference.model_repository.ModelRepositoryService/RepositoryModelUnload repository-write - V2",
            "/inference.GRPCInferenceService/ModelStatistics predict - V2",
            "/inference.GRPCInferenceService/ModelConfig predict - V2",
            "/inference.GRPCInferenceService/SystemSharedMemoryStatus predict - V2",
            "/inference.GRPCInferenceService/SystemSharedMemoryRegister publish - V2",
            "/inference.GRPCInferenceService/SystemSharedMemoryUnregister publish - V2",
            "/inference.GRPCInferenceService/CudaSharedMemoryStatus predict - V2",
            "/inference.GRPCInferenceService/CudaSharedMemoryRegister publish - V2",
            "/inference.GRPCInferenceService/CudaSharedMemoryUnregister publish - V2",
            "/inference.GRPCInferenceService/TraceSetting predict change:repository-write - V2",
            "/inference.GRPCInferenceService/LogSettings predict change:repository-write - V2",
            "/org.pytorch.serve.grpc.inference.InferenceAPIsService/Ping open health TorchServe torchserve-only",
            "/org.pytorch.serve.grpc.inference.InferenceAPIsService/Predictions predict infer TorchServe torchserve-only",
            "/org.pytorch.serve.grpc.inference.InferenceAPIsService/StreamPredictions predict infer-stream TorchServe torchserve-only",
            "/org.pytorch.serve.grpc.inference.InferenceAPIsService/StreamPredictions2 predict infer-stream TorchServe torchserve-only",
            "/org.pytorch.serve.grpc.management.ManagementAPIsService/DescribeModel open - TorchServeManagement torchserve-only",
            "/org.pytorch.serve.grpc.management.ManagementAPIsService/ListModels open - TorchServeManagement torchserve-only",
            "/org.pytorch.serve.grpc.management.ManagementAPIsService/RegisterModel open - TorchServeManagement torchserve-only",
            "/org.pytorch.serve.grpc.management.ManagementAPIsService/ScaleWorker open - TorchServeManagement torchserve-only",
            "/org.pytorch.serve.grpc.management.ManagementAPIsService/SetDefault open - TorchServeManagement torchserve-only",
            "/org.pytorch.serve.grpc.management.ManagementAPIsService/UnregisterModel open - TorchServeManagement torchserve-only",
            "/grpc.health.v1.Health/Check open - Health",
            "/grpc.health.v1.Health/Watch open - Health",
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo open - Reflection",
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo open - Reflection",
        ];
        assert_eq!(listed, expected);
    }

    /// The table has exactly the methods of the services the server registers.
    #[test]
    fn the_table_is_every_served_method() {
        let mut served = Vec::new();
        for set in [
            inferwire_codec::pb::FILE_DESCRIPTOR_SET,
            tonic_health::pb::FILE_DESCRIPTOR_SET,
            tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET,
            tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
            super::super::generated_torchserve::FILE_DESCRIPTOR_SET,
            super::super::generated_torchserve::MANAGEMENT_FILE_DESCRIPTOR_SET,
        ] {
            let set = prost_types::FileDescriptorSet::decode(set).unwrap();
            for file in set.file {
                for service in &file.service {
                    for method in &service.method {
                        served.push(format!(
                            "/{}.{}/{}",
                            file.package(),
                            service.name(),
                            method.name()
                        ));
                    }
                }
            }
        }
        let mut table: Vec<String> = METHODS.iter().map(|m| m.path.to_owned()).collect();
        served.sort();
        table.sort();
        assert_eq!(table, served);
    }

    #[test]
    fn unknown_methods_need_a_token() {
        assert_eq!(access("/grpc.health.v1.Health/Check"), Access::OPEN);
        assert_eq!(access("/grpc.health.v1.Health/Nope"), Access::PREDICT);
        assert_eq!(
            access("/inference.GRPCInferenceService/Nope"),
            Access::PREDICT
        );
        assert_eq!(
            access("/inference.GRPCInferenceService/ServerLive/x"),
            Access::PREDICT
        );
        assert_eq!(access(""), Access::PREDICT);
        assert_eq!(V2_INFER.name(), "ModelInfer");
        // The cases auth.rs tested before the table.
        assert_eq!(
            access("/inference.GRPCInferenceService/ModelInfer"),
            Access::PREDICT
        );
        assert_eq!(access("/seldon.protos.Seldon/Predict"), Access::PREDICT);
        assert_eq!(
            access("/inference.GRPCInferenceService/RepositoryModelLoad"),
            Access::REPOSITORY_WRITE
        );
        assert_eq!(
            access("/inference.GRPCInferenceService/RepositoryIndex"),
            Access::REPOSITORY_READ
        );
    }
}
