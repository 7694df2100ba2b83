//! KServe's V2 gRPC protocol as TorchServe's KServe image serves it (protocol grpc-v2,
//! envelope `kservev2`) on its wrapper's gRPC port (`kserve_grpc_port`, 8081): health,
//! readiness and metadata as the gRPC port's V2 service answers them, and `ModelInfer` as
//! the wrapper forwards it. The wrapper writes the request's tensors as V2's JSON request
//! and hands it to TorchServe's `Predictions` as the input `data`, where the envelope
//! (`inferwire/torchserve/envelope.py`) reads its `inputs`; the handler's V2 JSON reply
//! comes back as a `ModelInferResponse`. Here the same: the core's V2 codecs write and
//! read the JSON, `grpc::torchserve::predict` runs it. BYTES elements go base64-encoded,
//! as the wrapper sends them. The other V2 methods are not the wrapper's: UNIMPLEMENTED.
use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use inferwire_codec::pb::inference as pb;
use inferwire_codec::protocol::v2::{json, proto, InferRequest};
use inferwire_codec::TensorData;
use serde_json::Map;
use tonic::{Request, Response, Status};

use super::generated_torchserve::inference::PredictionsRequest;
use super::generated_v2::grpc_inference_service_server::GrpcInferenceService;
use super::methods;
use super::timeout::client_timeout;
use super::v2::V2Service;
use crate::app::App;
use crate::error::{Kind, ServeError};

#[derive(Clone)]
pub struct KServeV2(pub Arc<App>);

impl KServeV2 {
    fn v2(&self) -> V2Service {
        V2Service(self.0.clone())
    }
}

type Result<T> = std::result::Result<Response<T>, Status>;

/// The input name under which the wrapper hands the JSON to TorchServe's `Predictions`.
const DATA: &str = "data";

/// The V2 JSON body the envelope reads: the request's tensors, BYTES elements in base64
/// (the wrapper's `base64.b64encode`), so that bytes that are not UTF-8 travel too.
fn json_body(app: &App, req: pb::ModelInferRequest) -> std::result::Result<Bytes, ServeError> {
    let model = req.model_name.clone();
    let request = proto::from_pb(req, &app.config.limits)
        .map_err(|e| app.config.dialect.invalid_grpc(e, &model))?;
    Ok(written(request)?)
}

/// `json_body`'s writing, of a decoded request.
fn written(mut request: InferRequest) -> std::result::Result<Bytes, inferwire_codec::CodecError> {
    for input in &mut request.inputs {
        if let TensorData::Bytes(items) = &mut input.tensor.data {
            for item in items.iter_mut() {
                *item = Bytes::from(base64_simd::STANDARD.encode_to_string(&item[..]));
            }
        }
    }
    let mut out = Vec::new();
    json::encode_request(&request, &mut out)?;
    Ok(Bytes::from(out))
}

/// A failed call as KServe's model server answers it: the status of the error's kind, the
/// handler's own words where it said why (the envelope names the field).
fn status(e: ServeError) -> Status {
    crate::rest::kserve::handler_said(e).to_status()
}

#[tonic::async_trait]
impl GrpcInferenceService for KServeV2 {
    async fn server_live(
        &self,
        req: Request<pb::ServerLiveRequest>,
    ) -> Result<pb::ServerLiveResponse> {
        self.v2().server_live(req).await
    }

    async fn server_ready(
        &self,
        req: Request<pb::ServerReadyRequest>,
    ) -> Result<pb::ServerReadyResponse> {
        self.v2().server_ready(req).await
    }

    async fn model_ready(
        &self,
        req: Request<pb::ModelReadyRequest>,
    ) -> Result<pb::ModelReadyResponse> {
        self.v2().model_ready(req).await
    }

    async fn server_metadata(
        &self,
        req: Request<pb::ServerMetadataRequest>,
    ) -> Result<pb::ServerMetadataResponse> {
        self.v2().server_metadata(req).await
    }

    async fn model_metadata(
        &self,
        req: Request<pb::ModelMetadataRequest>,
    ) -> Result<pb::ModelMetadataResponse> {
        self.v2().model_metadata(req).await
    }

    /// The wrapper's `_grpc_predict`: the request as V2's JSON to the handler through
    /// TorchServe's `Predictions` path, under its token rule; the handler's V2 JSON
    /// reply decoded, answered raw unless the request sent typed contents.
    async fn model_infer(
        &self,
        req: Request<pb::ModelInferRequest>,
    ) -> Result<pb::ModelInferResponse> {
        let app = &self.0;
        super::torchserve::admit(app, req.metadata())?;
        let client = client_timeout(req.metadata());
        let req = req.into_inner();
        if req.model_name.is_empty() {
            return Err(Status::invalid_argument(
                "model_name: empty; name the model to infer with",
            ));
        }
        let raw = app.config.dialect.raw_grpc_reply(proto::reply_raw(&req));
        let (model_name, model_version) = (req.model_name.clone(), req.model_version.clone());
        let body = json_body(app, req).map_err(status)?;
        let forwarded = PredictionsRequest {
            model_name,
            model_version,
            input: BTreeMap::from([(DATA.to_owned(), body)]),
            ..Default::default()
        };
        let mut replies = super::torchserve::predict(
            app,
            forwarded,
            client,
            &methods::V2_INFER,
            false,
            Map::new(),
        )
        .await
        .map_err(|(e, _)| status(e))?;
        let reply = replies.pop().unwrap_or_default();
        let response = json::decode_response(&reply, &app.config.limits).map_err(|e| {
            status(ServeError::new(
                Kind::Model,
                format!(
                    "the handler's reply is not V2's JSON response (the kservev2 envelope \
                     writes one): {}",
                    e.message
                ),
            ))
        })?;
        Ok(Response::new(proto::to_pb(response, raw)))
    }

    type ModelStreamInferStream = super::stream::Replies;

    async fn model_stream_infer(
        &self,
        _: Request<tonic::Streaming<pb::ModelInferRequest>>,
    ) -> Result<Self::ModelStreamInferStream> {
        Err(not_the_wrapper_s("ModelStreamInfer"))
    }

    async fn model_statistics(
        &self,
        _: Request<pb::ModelStatisticsRequest>,
    ) -> Result<pb::ModelStatisticsResponse> {
        Err(not_the_wrapper_s("ModelStatistics"))
    }

    async fn model_config(
        &self,
        _: Request<pb::ModelConfigRequest>,
    ) -> Result<pb::ModelConfigResponse> {
        Err(not_the_wrapper_s("ModelConfig"))
    }

    async fn system_shared_memory_status(
        &self,
        _: Request<pb::SystemSharedMemoryStatusRequest>,
    ) -> Result<pb::SystemSharedMemoryStatusResponse> {
        Err(not_the_wrapper_s("SystemSharedMemoryStatus"))
    }

    async fn system_shared_memory_register(
        &self,
        _: Request<pb::SystemSharedMemoryRegisterRequest>,
    ) -> Result<pb::SystemSharedMemoryRegisterResponse> {
        Err(not_the_wrapper_s("SystemSharedMemoryRegister"))
    }

    async fn system_shared_memory_unregister(
        &self,
        _: Request<pb::SystemSharedMemoryUnregisterRequest>,
    ) -> Result<pb::SystemSharedMemoryUnregisterResponse> {
        Err(not_the_wrapper_s("SystemSharedMemoryUnregister"))
    }

    async fn cuda_shared_memory_status(
        &self,
        _: Request<pb::CudaSharedMemoryStatusRequest>,
    ) -> Result<pb::CudaSharedMemoryStatusResponse> {
        Err(not_the_wrapper_s("CudaSharedMemoryStatus"))
    }

    async fn cuda_shared_memory_register(
        &self,
        _: Request<pb::CudaSharedMemoryRegisterRequest>,
    ) -> Result<pb::CudaSharedMemoryRegisterResponse> {
        Err(not_the_wrapper_s("CudaSharedMemoryRegister"))
    }

    async fn cuda_shared_memory_unregister(
        &self,
        _: Request<pb::CudaSharedMemoryUnregisterRequest>,
    ) -> Result<pb::CudaSharedMemoryUnregisterResponse> {
        Err(not_the_wrapper_s("CudaSharedMemoryUnregister"))
    }

    async fn trace_setting(
        &self,
        _: Request<pb::TraceSettingRequest>,
    ) -> Result<pb::TraceSettingResponse> {
        Err(not_the_wrapper_s("TraceSetting"))
    }

    async fn log_settings(
        &self,
        _: Request<pb::LogSettingsRequest>,
    ) -> Result<pb::LogSettingsResponse> {
        Err(not_the_wrapper_s("LogSettings"))
    }

    async fn repository_index(
        &self,
        _: Request<pb::RepositoryIndexRequest>,
    ) -> Result<pb::RepositoryIndexResponse> {
        Err(not_the_wrapper_s("RepositoryIndex"))
    }

    async fn repository_model_load(
        &self,
        _: Request<pb::RepositoryModelLoadRequest>,
    ) -> Result<pb::RepositoryModelLoadResponse> {
        Err(not_the_wrapper_s("RepositoryModelLoad"))
    }

    async fn repository_model_unload(
        &self,
        _: Request<pb::RepositoryModelUnloadRequest>,
    ) -> Result<pb::RepositoryModelUnloadResponse> {
        Err(not_the_wrapper_s("RepositoryModelUnload"))
    }
}

/// A V2 method KServe's wrapper does not serve for TorchServe (Triton's extensions, the
/// repository: TorchServe's management API loads models).
fn not_the_wrapper_s(method: &str) -> Status {
    Status::unimplemented(format!(
        "inference.GRPCInferenceService/{method} is not served on KServe's gRPC port (its \
         health, readiness, metadata and ModelInfer are)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_s_bytes_go_in_base64_and_its_numbers_as_they_are() {
        let req = pb::ModelInferRequest {
            model_name: "m".into(),
            id: "r".into(),
            inputs: vec![
                pb::model_infer_request::InferInputTensor {
                    name: "s".into(),
                    datatype: "BYTES".into(),
                    shape: vec![1],
                    contents: Some(pb::InferTensorContents {
                        bytes_contents: vec![Bytes::from_static(b"\xff\x00")],
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                pb::model_infer_request::InferInputTensor {
                    name: "i".into(),
                    datatype: "INT64".into(),
                    shape: vec![2],
                    contents: Some(pb::InferTensorContents {
                        int64_contents: vec![3, -4],
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let body: serde_json::Value = serde_json::from_slice(
            &written(proto::from_pb(req, &inferwire_codec::Limits::default()).unwrap()).unwrap(),
        )
        .unwrap();
        assert_eq!(body["id"], "r");
        assert_eq!(body["inputs"][0]["data"], serde_json::json!(["/wA="]));
        assert_eq!(body["inputs"][1]["data"], serde_json::json!([3, -4]));
        assert_eq!(body["inputs"][1]["shape"], serde_json::json!([2]));
    }
}
