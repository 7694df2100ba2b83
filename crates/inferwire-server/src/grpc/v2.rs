//! V2's `inference.GRPCInferenceService`: health, metadata and `ModelInfer` with typed or
//! raw contents (answered raw unless the request sent typed contents: `proto::reply_raw`).
use std::sync::Arc;
use std::time::Instant;

use inferwire_codec::pb::inference as pb;
use inferwire_codec::protocol::v2::{proto, InferRequest};
use serde_json::Value;
use tonic::{Request, Response, Status};

use super::generated_v2::grpc_inference_service_server::GrpcInferenceService;
use super::generated_v2::model_repository::model_repository_service_server::ModelRepositoryService;
use super::methods;
use super::timeout::client_timeout;
use crate::app::App;
use crate::error::ServeError;
use crate::metrics::{Code, Encoding};

#[derive(Clone)]
pub struct V2Service(pub Arc<App>);

type Result<T> = std::result::Result<Response<T>, Status>;

/// A `ModelInferRequest` (unary or on a stream) as the model gets it: decoded (inputs in
/// shared memory read), and what the dialect adds (`Dialect::prepare`).
pub(super) fn decode(
    app: &App,
    req: pb::ModelInferRequest,
    headers: Option<Value>,
) -> std::result::Result<InferRequest, ServeError> {
    let model = req.model_name.clone();
    let mut request = proto::from_pb_with(
        req,
        &app.config.limits,
        &app.shared_memory.reader(app.config.max_body_bytes),
    )
    .map_err(|e| app.config.dialect.invalid_grpc(e, &model))?;
    app.config.dialect.prepare(&mut request, headers);
    Ok(request)
}

#[tonic::async_trait]
impl GrpcInferenceService for V2Service {
    async fn server_live(
        &self,
        _: Request<pb::ServerLiveRequest>,
    ) -> Result<pb::ServerLiveResponse> {
        Ok(Response::new(pb::ServerLiveResponse {
            live: self.0.not_live_because().is_none(),
        }))
    }

    async fn server_ready(
        &self,
        _: Request<pb::ServerReadyRequest>,
    ) -> Result<pb::ServerReadyResponse> {
        Ok(Response::new(pb::ServerReadyResponse {
            ready: self.0.is_ready(),
        }))
    }

    /// A model that is not loaded (unknown, unloaded, or another version) is not ready:
    /// `ready: false`, not an error, as health checkers expect.
    async fn model_ready(
        &self,
        req: Request<pb::ModelReadyRequest>,
    ) -> Result<pb::ModelReadyResponse> {
        let r = req.into_inner();
        let loaded = self.0.models.servable(&r.name, &r.version).await.is_ok();
        Ok(Response::new(pb::ModelReadyResponse {
            ready: loaded && self.0.is_ready(),
        }))
    }

    async fn server_metadata(
        &self,
        _: Request<pb::ServerMetadataRequest>,
    ) -> Result<pb::ServerMetadataResponse> {
        let id = &self.0.config.identity;
        Ok(Response::new(pb::ServerMetadataResponse {
            name: id.name.clone(),
            version: id.version.clone(),
            extensions: id.extensions.clone(),
        }))
    }

    async fn model_metadata(
        &self,
        req: Request<pb::ModelMetadataRequest>,
    ) -> Result<pb::ModelMetadataResponse> {
        let r = req.into_inner();
        let model = self
            .0
            .model(&r.name, &r.version)
            .await
            .map_err(|e| e.to_status())?;
        let as_written = self.0.config.dialect.metadata_as_written();
        let meta = crate::dataplane::model_metadata(&model, as_written)
            .await
            .map_err(|e| e.to_status())?;
        let tensors = |key: &str| {
            meta[key]
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .map(|t| pb::model_metadata_response::TensorMetadata {
                            name: t["name"].as_str().unwrap_or_default().into(),
                            datatype: t["datatype"].as_str().unwrap_or_default().into(),
                            shape: t["shape"]
                                .as_array()
                                .map(|d| d.iter().filter_map(Value::as_i64).collect())
                                .unwrap_or_default(),
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        Ok(Response::new(pb::ModelMetadataResponse {
            name: meta["name"].as_str().unwrap_or_default().into(),
            versions: meta["versions"]
                .as_array()
                .map(|v| {
                    v.iter()
                        .filter_map(|x| x.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            platform: meta["platform"].as_str().unwrap_or_default().into(),
            inputs: tensors("inputs"),
            outputs: tensors("outputs"),
        }))
    }

    async fn model_infer(
        &self,
        req: Request<pb::ModelInferRequest>,
    ) -> Result<pb::ModelInferResponse> {
        let app = &self.0;
        let rpc = &methods::V2_INFER;
        let mut obs = rpc.observe();
        if let Some(id) = req.metadata().get("x-request-id") {
            obs.id = id.to_str().unwrap_or_default().to_owned();
        }
        obs.traced(app, req.metadata().as_ref());
        let deadline = app.deadline(Instant::now(), client_timeout(req.metadata()));
        let headers = app
            .config
            .dialect
            .headers_for_model(req.metadata().as_ref());
        let req = req.into_inner();
        let by_reference = req.inputs.iter().any(|i| {
            i.parameters
                .contains_key(inferwire_codec::protocol::v2::SHARED_MEMORY_REGION)
        });
        obs.encoding = if by_reference || !req.raw_input_contents.is_empty() {
            Encoding::Raw
        } else {
            Encoding::Typed
        };
        let raw = app.config.dialect.raw_grpc_reply(proto::reply_raw(&req));
        let run = async {
            let model = app.model(&req.model_name, &req.model_version).await?;
            obs.model = model.slot;
            obs.served_by(&model.name, &model.version);
            let began = obs.clock();
            let mut request = decode(app, req, headers)?;
            obs.part("decode", began);
            obs.pass_context(&mut request.parameters);
            if obs.id.is_empty() {
                obs.id.clone_from(&request.id);
            }
            let began = obs.clock();
            let timing = obs.call_timing();
            let call =
                crate::dataplane::infer_timed(app, &model, request, deadline, timing.clone());
            let mut response = call.await?;
            obs.infer_part(began, timing.as_ref());
            let began = obs.clock();
            let trailers = app.config.dialect.reply_headers(&mut response);
            let reply = proto::to_pb(response, raw);
            obs.part("encode", began);
            Ok::<_, ServeError>((reply, trailers))
        };
        let result = run.await.map_err(|e| e.to_status());
        obs.finish(app, Code::of_grpc(&result), rpc.name());
        result.map(|(reply, trailers)| {
            let mut r = Response::new(reply);
            if !trailers.is_empty() {
                r.extensions_mut()
                    .insert(super::trailers::Trailing::from_pairs(trailers));
            }
            r
        })
    }

    type ModelStreamInferStream = super::stream::Replies;

    /// Triton's streaming (`grpc::stream`).
    async fn model_stream_infer(
        &self,
        req: Request<tonic::Streaming<pb::ModelInferRequest>>,
    ) -> Result<Self::ModelStreamInferStream> {
        Ok(Response::new(super::stream::Replies::new(
            self.0.clone(),
            req,
        )))
    }

    /// Triton's statistics extension: every loaded model when no name is given.
    async fn model_statistics(
        &self,
        req: Request<pb::ModelStatisticsRequest>,
    ) -> Result<pb::ModelStatisticsResponse> {
        let r = req.into_inner();
        let models = if r.name.is_empty() {
            self.0.models.all()
        } else {
            vec![self
                .0
                .models
                .get(&r.name, &r.version)
                .map_err(|e| e.to_status())?]
        };
        let stats = crate::dataplane::statistics(&models);
        let num = |v: &Value| v.as_u64().unwrap_or_default();
        let duration = |v: &Value| {
            Some(pb::StatisticDuration {
                count: num(&v["count"]),
                ns: num(&v["ns"]),
            })
        };
        let model_stats = stats["model_stats"]
            .as_array()
            .map(|all| {
                all.iter()
                    .map(|m| {
                        let i = &m["inference_stats"];
                        pb::ModelStatistics {
                            name: m["name"].as_str().unwrap_or_default().into(),
                            version: m["version"].as_str().unwrap_or_default().into(),
                            last_inference: num(&m["last_inference"]),
                            inference_count: num(&m["inference_count"]),
                            execution_count: num(&m["execution_count"]),
                            inference_stats: Some(pb::InferStatistics {
                                success: duration(&i["success"]),
                                fail: duration(&i["fail"]),
                                queue: duration(&i["queue"]),
                                compute_input: duration(&i["compute_input"]),
                                compute_infer: duration(&i["compute_infer"]),
                                compute_output: duration(&i["compute_output"]),
                                cache_hit: duration(&i["cache_hit"]),
                                cache_miss: duration(&i["cache_miss"]),
                            }),
                            batch_stats: vec![],
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(Response::new(pb::ModelStatisticsResponse { model_stats }))
    }

    /// Triton's model configuration extension.
    async fn model_config(
        &self,
        req: Request<pb::ModelConfigRequest>,
    ) -> Result<pb::ModelConfigResponse> {
        let r = req.into_inner();
        let model = self
            .0
            .model(&r.name, &r.version)
            .await
            .map_err(|e| e.to_status())?;
        let c = crate::dataplane::model_config(&model)
            .await
            .map_err(|e| e.to_status())?;
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        let data_type = |v: &Value| {
            pb::DataType::from_str_name(v.as_str().unwrap_or_default())
                .unwrap_or(pb::DataType::TypeInvalid) as i32
        };
        let dims = |v: &Value| -> Vec<i64> {
            v.as_array()
                .map(|d| d.iter().filter_map(Value::as_i64).collect())
                .unwrap_or_default()
        };
        let each = |key: &str| c[key].as_array().cloned().unwrap_or_default();
        Ok(Response::new(pb::ModelConfigResponse {
            config: Some(pb::ModelConfig {
                name: text(&c["name"]),
                platform: text(&c["platform"]),
                backend: text(&c["backend"]),
                max_batch_size: i32::try_from(c["max_batch_size"].as_u64().unwrap_or_default())
                    .unwrap_or(i32::MAX),
                input: each("input")
                    .iter()
                    .map(|t| pb::ModelInput {
                        name: text(&t["name"]),
                        data_type: data_type(&t["data_type"]),
                        dims: dims(&t["dims"]),
                    })
                    .collect(),
                output: each("output")
                    .iter()
                    .map(|t| pb::ModelOutput {
                        name: text(&t["name"]),
                        data_type: data_type(&t["data_type"]),
                        dims: dims(&t["dims"]),
                    })
                    .collect(),
                dynamic_batching: c.get("dynamic_batching").map(|d| pb::ModelDynamicBatching {
                    preferred_batch_size: vec![],
                    max_queue_delay_microseconds: d["max_queue_delay_microseconds"]
                        .as_u64()
                        .unwrap_or_default(),
                }),
            }),
        }))
    }

    /// Triton's shared-memory extension: the registry is `crate::shared_memory`.
    async fn system_shared_memory_status(
        &self,
        req: Request<pb::SystemSharedMemoryStatusRequest>,
    ) -> Result<pb::SystemSharedMemoryStatusResponse> {
        let name = req.into_inner().name;
        let regions = self
            .0
            .shared_memory
            .status((!name.is_empty()).then_some(name.as_str()))
            .map_err(|e| e.to_status())?;
        Ok(Response::new(pb::SystemSharedMemoryStatusResponse {
            regions: regions
                .into_iter()
                .map(|r| {
                    let status = pb::system_shared_memory_status_response::RegionStatus {
                        name: r.name.clone(),
                        key: r.key,
                        offset: r.offset,
                        byte_size: r.byte_size,
                    };
                    (r.name, status)
                })
                .collect(),
        }))
    }

    async fn system_shared_memory_register(
        &self,
        req: Request<pb::SystemSharedMemoryRegisterRequest>,
    ) -> Result<pb::SystemSharedMemoryRegisterResponse> {
        let r = req.into_inner();
        self.0
            .shared_memory
            .register(crate::shared_memory::Registration {
                name: r.name,
                key: r.key,
                offset: r.offset,
                byte_size: r.byte_size,
            })
            .map_err(|e| e.to_status())?;
        Ok(Response::new(pb::SystemSharedMemoryRegisterResponse {}))
    }

    async fn system_shared_memory_unregister(
        &self,
        req: Request<pb::SystemSharedMemoryUnregisterRequest>,
    ) -> Result<pb::SystemSharedMemoryUnregisterResponse> {
        let name = req.into_inner().name;
        self.0
            .shared_memory
            .unregister((!name.is_empty()).then_some(name.as_str()))
            .map_err(|e| e.to_status())?;
        Ok(Response::new(pb::SystemSharedMemoryUnregisterResponse {}))
    }

    /// CUDA shared memory: no region is ever registered (no GPU support).
    async fn cuda_shared_memory_status(
        &self,
        req: Request<pb::CudaSharedMemoryStatusRequest>,
    ) -> Result<pb::CudaSharedMemoryStatusResponse> {
        if !req.into_inner().name.is_empty() {
            return Err(crate::shared_memory::cuda_unsupported().to_status());
        }
        Ok(Response::new(pb::CudaSharedMemoryStatusResponse::default()))
    }

    async fn cuda_shared_memory_register(
        &self,
        _: Request<pb::CudaSharedMemoryRegisterRequest>,
    ) -> Result<pb::CudaSharedMemoryRegisterResponse> {
        Err(crate::shared_memory::cuda_unsupported().to_status())
    }

    async fn cuda_shared_memory_unregister(
        &self,
        _: Request<pb::CudaSharedMemoryUnregisterRequest>,
    ) -> Result<pb::CudaSharedMemoryUnregisterResponse> {
        Ok(Response::new(pb::CudaSharedMemoryUnregisterResponse {}))
    }

    /// Triton's trace extension: a request with settings changes them (the repository
    /// API's access), one without reads them.
    async fn trace_setting(
        &self,
        req: Request<pb::TraceSettingRequest>,
    ) -> Result<pb::TraceSettingResponse> {
        if !req.get_ref().settings.is_empty() {
            super::auth::admit_change(&self.0, &methods::TRACE_SETTING, req.metadata())?;
        }
        super::runtime_settings::trace(&self.0, req.into_inner())
            .await
            .map(Response::new)
            .map_err(|e| e.to_status())
    }

    /// Triton's logging extension, as `trace_setting`.
    async fn log_settings(
        &self,
        req: Request<pb::LogSettingsRequest>,
    ) -> Result<pb::LogSettingsResponse> {
        if !req.get_ref().settings.is_empty() {
            super::auth::admit_change(&self.0, &methods::LOG_SETTINGS, req.metadata())?;
        }
        super::runtime_settings::log(&self.0, req.get_ref())
            .map(Response::new)
            .map_err(|e| e.to_status())
    }

    async fn repository_index(
        &self,
        req: Request<pb::RepositoryIndexRequest>,
    ) -> Result<pb::RepositoryIndexResponse> {
        let ready_only = req.into_inner().ready;
        let index = self.0.models.index().await.map_err(|e| e.to_status())?;
        let text = |m: &Value, k: &str| m[k].as_str().unwrap_or_default().to_string();
        Ok(Response::new(pb::RepositoryIndexResponse {
            models: index
                .iter()
                .filter(|m| !ready_only || m["state"] == "READY")
                .map(|m| pb::repository_index_response::ModelIndex {
                    name: text(m, "name"),
                    version: text(m, "version"),
                    state: text(m, "state"),
                    reason: text(m, "reason"),
                })
                .collect(),
        }))
    }

    async fn repository_model_load(
        &self,
        req: Request<pb::RepositoryModelLoadRequest>,
    ) -> Result<pb::RepositoryModelLoadResponse> {
        let req = req.into_inner();
        let parameters = load_parameters(req.parameters);
        self.0
            .load_model(&req.model_name, parameters)
            .await
            .map_err(|e| e.to_status())?;
        Ok(Response::new(pb::RepositoryModelLoadResponse {}))
    }

    async fn repository_model_unload(
        &self,
        req: Request<pb::RepositoryModelUnloadRequest>,
    ) -> Result<pb::RepositoryModelUnloadResponse> {
        let name = req.into_inner().model_name;
        self.0
            .unload_model(&name)
            .await
            .map_err(|e| e.to_status())?;
        Ok(Response::new(pb::RepositoryModelUnloadResponse {}))
    }
}

/// MLServer's deprecated `inference.model_repository.ModelRepositoryService`: V2's own
/// repository methods under the name clients written for it call.
#[tonic::async_trait]
impl ModelRepositoryService for V2Service {
    async fn repository_index(
        &self,
        req: Request<pb::RepositoryIndexRequest>,
    ) -> Result<pb::RepositoryIndexResponse> {
        GrpcInferenceService::repository_index(self, req).await
    }

    async fn repository_model_load(
        &self,
        req: Request<pb::RepositoryModelLoadRequest>,
    ) -> Result<pb::RepositoryModelLoadResponse> {
        GrpcInferenceService::repository_model_load(self, req).await
    }

    async fn repository_model_unload(
        &self,
        req: Request<pb::RepositoryModelUnloadRequest>,
    ) -> Result<pb::RepositoryModelUnloadResponse> {
        GrpcInferenceService::repository_model_unload(self, req).await
    }
}

/// A load call's parameters as the repository takes them, the REST route's form: a JSON
/// object of scalars, bytes (Triton's `file:` contents) in base64.
fn load_parameters(
    parameters: std::collections::HashMap<String, pb::ModelRepositoryParameter>,
) -> serde_json::Value {
    use pb::model_repository_parameter::ParameterChoice as P;
    let out = parameters.into_iter().map(|(k, v)| {
        let value = match v.parameter_choice {
            Some(P::BoolParam(b)) => b.into(),
            Some(P::Int64Param(i)) => i.into(),
            Some(P::StringParam(s)) => s.into(),
            Some(P::BytesParam(b)) => base64_simd::STANDARD.encode_to_string(b).into(),
            None => serde_json::Value::Null,
        };
        (k, value)
    });
    serde_json::Value::Object(out.collect())
}
