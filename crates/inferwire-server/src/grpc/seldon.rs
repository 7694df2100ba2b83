//! The Seldon gRPC services. Both services share one implementation.
use std::sync::Arc;

use inferwire_codec::media::{self, Media};
use inferwire_codec::pb::seldon::protos as pb;
use inferwire_codec::protocol::seldon::reply::Output;
use inferwire_codec::protocol::seldon::{proto, Array, Payload, SeldonMessage};
use serde_json::Value;
use tonic::{Request, Response, Status};

use super::generated::{model_server, seldon_server};
use super::methods::{self, Rpc};
use super::timeout::client_timeout;
use crate::app::App;
use crate::error::{Kind, ServeError};
use crate::metrics::{Code, Encoding};
use crate::model::Prediction;
use crate::observe::Observed;

#[derive(Clone)]
pub struct SeldonService(pub Arc<App>);

type Result<T> = std::result::Result<Response<T>, Status>;

impl SeldonService {
    /// Predict with a decoded request; `grpc::predict` decodes the wire bytes.
    pub async fn predict_message(
        &self,
        msg: SeldonMessage,
        deadline: Option<std::time::Instant>,
    ) -> std::result::Result<pb::SeldonMessage, Status> {
        let run = async { reply_to_pb(crate::seldon::predict(&self.0, msg, deadline).await?) };
        run.await.map_err(|e: ServeError| e.to_status())
    }

    /// Predict with a `binData` in the media `content_type` names, decoded as the same
    /// body over REST would be; the reply's `binData` is encoded in the media `accept`
    /// asks for (default: the request's), whose type is returned beside it.
    pub async fn predict_bin_media(
        &self,
        mut msg: SeldonMessage,
        content_type: &str,
        accept: Option<String>,
        deadline: Option<std::time::Instant>,
        obs: &mut Observed,
    ) -> std::result::Result<(pb::SeldonMessage, String), Status> {
        let run = async {
            let bin = match std::mem::take(&mut msg.payload) {
                Payload::Bin(bin) => bin,
                other => {
                    return Err(ServeError::new(
                        Kind::BadRequest,
                        format!(
                            "x-content-type describes binData, but this message carries {}",
                            other.kind()
                        ),
                    ))
                }
            };
            let media = match Media::from_content_type(Some(content_type))? {
                Some(Media::Seldon) => match Media::refine_json(&bin) {
                    Media::Seldon => {
                        return Err(ServeError::new(
                            Kind::BadRequest,
                            "binData with x-content-type application/json holds a plain JSON \
                             object or an array layout, not a SeldonMessage",
                        ))
                    }
                    other => other,
                },
                Some(m) => m,
                None => {
                    return Err(ServeError::new(
                        Kind::UnsupportedMedia,
                        format!(
                            "unsupported x-content-type {content_type:?}: send {}",
                            media::ACCEPTED
                        ),
                    ))
                }
            };
            obs.encoding = Encoding::of_media(&media);
            let meta = std::mem::take(&mut msg.meta);
            let (bytes, target, meta) = crate::seldon::predict_media(
                &self.0,
                None,
                &media,
                bin,
                meta,
                accept.as_deref(),
                deadline,
            )
            .await?;
            let reply = SeldonMessage {
                status: None,
                meta,
                payload: Payload::Bin(bytes),
            };
            Ok((proto::to_pb(reply)?, target.content_type().to_owned()))
        };
        run.await.map_err(|e: ServeError| e.to_status())
    }

    /// The generated servers' `Predict`, unused while `grpc::predict` serves the method.
    async fn predict(&self, req: Request<pb::SeldonMessage>) -> Result<pb::SeldonMessage> {
        let start = std::time::Instant::now();
        let deadline = self.0.deadline(start, client_timeout(req.metadata()));
        let msg = proto::from_pb(req.into_inner(), &self.0.config.limits)
            .map_err(|e| ServeError::from(e).to_status())?;
        self.predict_message(msg, deadline).await.map(Response::new)
    }

    pub(super) async fn feedback(
        &self,
        req: Request<pb::Feedback>,
        rpc: &Rpc,
    ) -> Result<pb::SeldonMessage> {
        let app = &self.0;
        let mut obs = rpc.observe();
        obs.model = app.default_slot();
        let run = async {
            let f = proto::feedback_from_pb(req.into_inner(), &app.config.limits)?;
            let reply = crate::seldon::feedback(app, f).await?;
            Ok(proto::to_pb(reply)?)
        };
        let result = run.await.map_err(|e: ServeError| e.to_status());
        obs.finish(app, Code::of_grpc(&result), rpc.name());
        result.map(Response::new)
    }

    /// The default model's metadata as the model gives it (a whole graph's has `models`),
    /// counted under `rpc`.
    async fn metadata_json(&self, rpc: &Rpc) -> std::result::Result<Value, Status> {
        let mut obs = rpc.observe();
        obs.model = self.0.default_slot();
        let result = crate::seldon::metadata(&self.0)
            .await
            .map_err(|e| e.to_status());
        obs.finish(&self.0, Code::of_grpc(&result), rpc.name());
        result
    }

    async fn metadata(&self, rpc: &Rpc) -> Result<pb::SeldonModelMetadata> {
        Ok(Response::new(metadata_to_pb(
            &self.metadata_json(rpc).await?,
        )))
    }
}

/// `predict_raw` results become messages: a dict is read as a SeldonMessage, other
/// values travel as `jsonData`, `strData` or `binData`.
pub(super) fn reply_to_pb(reply: Prediction) -> std::result::Result<pb::SeldonMessage, ServeError> {
    let msg = match reply {
        Prediction::Message(m) => m,
        Prediction::Raw(Output::Json(Value::Object(o))) => {
            proto::json_object_to_message(&o, &Default::default()).map_err(|e| {
                ServeError::new(
                    crate::error::Kind::Model,
                    format!("predict_raw returned a dict that is not a SeldonMessage: {e}"),
                )
            })?
        }
        Prediction::Raw(Output::Json(v)) | Prediction::Raw(Output::Array(Array::Json(v))) => {
            SeldonMessage {
                payload: Payload::Json(v),
                ..Default::default()
            }
        }
        Prediction::Raw(Output::Array(Array::Numeric(t))) => SeldonMessage {
            payload: Payload::Json(proto::tensor_to_json(&t)),
            ..Default::default()
        },
        Prediction::Raw(Output::Str(s)) => SeldonMessage {
            payload: Payload::Str(s),
            ..Default::default()
        },
        Prediction::Raw(Output::Bin(b)) => SeldonMessage {
            payload: Payload::Bin(b),
            ..Default::default()
        },
    };
    Ok(proto::to_pb(msg)?)
}

/// The node metadata of a whole graph's metadata (`inferwire.graph`), or None for a
/// model's own.
fn graph_models(v: &Value) -> Option<&serde_json::Map<String, Value>> {
    v.get("models").and_then(Value::as_object)
}

/// Seldon's graph metadata JSON (`name`, `models`, `graphinputs`, `graphoutputs`).
fn graph_to_pb(g: &Value) -> pb::SeldonGraphMetadata {
    let edges = metadata_to_pb(&serde_json::json!({
        "inputs": g["graphinputs"],
        "outputs": g["graphoutputs"],
    }));
    pb::SeldonGraphMetadata {
        name: g["name"].as_str().unwrap_or_default().to_owned(),
        models: graph_models(g)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), metadata_to_pb(v)))
                    .collect()
            })
            .unwrap_or_default(),
        inputs: edges.inputs,
        outputs: edges.outputs,
    }
}

fn metadata_to_pb(v: &Value) -> pb::SeldonModelMetadata {
    let s = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let tensors = |k: &str| -> Vec<pb::SeldonMessageMetadata> {
        v.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|t| pb::SeldonMessageMetadata {
                        messagetype: t
                            .get("messagetype")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .into(),
                        schema: t.get("schema").map(proto::json_to_value),
                        name: t
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .into(),
                        datatype: t
                            .get("datatype")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .into(),
                        shape: t
                            .get("shape")
                            .and_then(Value::as_array)
                            .map(|d| d.iter().filter_map(Value::as_i64).collect())
                            .unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    pb::SeldonModelMetadata {
        name: s("name"),
        versions: v
            .get("versions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
        platform: s("platform"),
        inputs: tensors("inputs"),
        outputs: tensors("outputs"),
        // A map of strings in Seldon's proto; REST keeps any JSON value, gRPC its text.
        custom: v
            .get("custom")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, x)| {
                        let text = x.as_str().map_or_else(|| x.to_string(), str::to_owned);
                        (k.clone(), text)
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

#[tonic::async_trait]
impl seldon_server::Seldon for SeldonService {
    async fn predict(&self, req: Request<pb::SeldonMessage>) -> Result<pb::SeldonMessage> {
        SeldonService::predict(self, req).await
    }

    async fn send_feedback(&self, req: Request<pb::Feedback>) -> Result<pb::SeldonMessage> {
        self.feedback(req, &methods::SELDON_FEEDBACK).await
    }

    async fn model_metadata(
        &self,
        req: Request<pb::SeldonModelMetadataRequest>,
    ) -> Result<pb::SeldonModelMetadata> {
        let name = req.into_inner().name;
        let v = self.metadata_json(&methods::SELDON_MODEL_METADATA).await?;
        // A graph answers for the node the request names.
        let node = graph_models(&v).and_then(|m| m.get(&name));
        Ok(Response::new(metadata_to_pb(node.unwrap_or(&v))))
    }

    async fn graph_metadata(&self, _req: Request<()>) -> Result<pb::SeldonGraphMetadata> {
        let v = self.metadata_json(&methods::SELDON_GRAPH_METADATA).await?;
        if graph_models(&v).is_some() {
            return Ok(Response::new(graph_to_pb(&v)));
        }
        // One model: a graph of one node.
        let model = metadata_to_pb(&v);
        Ok(Response::new(pb::SeldonGraphMetadata {
            name: self.0.models.default_name().to_string(),
            inputs: model.inputs.clone(),
            outputs: model.outputs.clone(),
            models: [(self.0.models.default_name().to_string(), model)]
                .into_iter()
                .collect(),
        }))
    }
}

#[tonic::async_trait]
impl model_server::Model for SeldonService {
    async fn predict(&self, req: Request<pb::SeldonMessage>) -> Result<pb::SeldonMessage> {
        SeldonService::predict(self, req).await
    }

    async fn send_feedback(&self, req: Request<pb::Feedback>) -> Result<pb::SeldonMessage> {
        self.feedback(req, &methods::MODEL_FEEDBACK).await
    }

    async fn metadata(&self, _req: Request<()>) -> Result<pb::SeldonModelMetadata> {
        SeldonService::metadata(self, &methods::MODEL_METADATA).await
    }
}
