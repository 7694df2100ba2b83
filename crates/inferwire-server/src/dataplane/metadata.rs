//! What REST and gRPC both answer of a model besides inference: its V2 metadata, Triton's
//! statistics and model configuration. Each transport turns the result into its wire
//! shape, so neither imports the other.
use serde_json::{json, Value};

use crate::error::ServeError;
use crate::models::Served;

/// The model's metadata in V2's shape: the model's `init_metadata()` supplies versions,
/// platform, inputs and outputs; name and version come from the server. `as_written`
/// (MLServer's dialect): the versions as the model's settings write them, and the
/// model's and each tensor's `parameters` (content types) kept, as MLServer answers.
pub async fn model_metadata(model: &Served, as_written: bool) -> Result<Value, ServeError> {
    let meta = model.runner.metadata(None).await?;
    let tensors = |key: &str| -> Vec<Value> {
        meta.get(key)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .map(|t| {
                        let mut out = json!({
                            "name": t.get("name").and_then(Value::as_str).unwrap_or_default(),
                            "datatype": t.get("datatype").and_then(Value::as_str).unwrap_or("BYTES"),
                            "shape": t.get("shape").cloned().unwrap_or_else(|| json!([-1])),
                        });
                        if let Some(p) = t.get("parameters").filter(|_| as_written) {
                            out["parameters"] = p.clone();
                        }
                        out
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let versions: Vec<Value> = if as_written || model.version.is_empty() {
        meta.get("versions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    } else {
        vec![Value::from(model.version.clone())]
    };
    let mut out = json!({
        "name": model.name,
        "versions": versions,
        "platform": meta.get("platform").and_then(Value::as_str).unwrap_or("inferwire"),
        "inputs": tensors("inputs"),
        "outputs": tensors("outputs"),
    });
    // MLServer's metadata also carries the model's parameters (its content type).
    if let Some(p) = meta.get("parameters").filter(|_| as_written) {
        out["parameters"] = p.clone();
    }
    Ok(out)
}

/// Triton's statistics extension for the models given (all loaded ones, or one), in
/// its JSON shape: `{"model_stats": [...]}`. An inference is one request (Seldon
/// `predict` or V2 `infer`), also when batching joined it with others; an execution is
/// one model call (a batch's joined call counts once).
pub fn statistics(models: &[std::sync::Arc<Served>]) -> Value {
    let mut models: Vec<&Served> = models.iter().map(AsRef::as_ref).collect();
    models.sort_by(|a, b| a.name.cmp(&b.name));
    json!({"model_stats": models.iter().map(|m| model_statistics(m)).collect::<Vec<_>>()})
}

fn model_statistics(model: &Served) -> Value {
    let s = model.runner.stats();
    let pair = |(count, ns): (u64, u64)| json!({"count": count, "ns": ns});
    let zero = pair((0, 0));
    // perf_analyzer parses every reported version as a number (a crash on ""): a model
    // without versions is reported as Triton numbers a single one, "1".
    let version = if model.version.is_empty() {
        "1"
    } else {
        model.version.as_str()
    };
    json!({
        "name": model.name,
        "version": version,
        "last_inference": s.last_inference_ms,
        "inference_count": s.success.0,
        "execution_count": s.executions,
        "inference_stats": {
            "success": pair(s.success),
            "fail": pair(s.fail),
            "queue": pair((s.success.0, s.queue_ns)),
            // inferwire decodes inputs and encodes outputs outside the model call, in
            // the transport, untimed per model: counted with compute_infer (clients such
            // as perf_analyzer require the three counts to agree), 0 ns. It has no
            // response cache.
            "compute_input": pair((s.compute.0, 0)),
            "compute_infer": pair(s.compute),
            "compute_output": pair((s.compute.0, 0)),
            "cache_hit": zero,
            "cache_miss": zero,
        },
        "batch_stats": [],
    })
}

/// Triton's model configuration extension, in its JSON shape: the model's own (a Triton
/// repository's config), else what the model's metadata
/// says of its tensors, and the server's batching settings (`max_batch_size` 0 when not
/// batching, as Triton says of a model without a batch dimension).
pub async fn model_config(model: &Served) -> Result<Value, ServeError> {
    if let Some(own) = &model.config {
        return Ok(own.clone());
    }
    let meta = model_metadata(model, false).await?;
    let (max_batch, delay) = model.runner.batching();
    let batching = max_batch > 1;
    let tensors = |key: &str| -> Vec<Value> {
        meta[key]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|t| {
                        json!({
                            "name": t["name"],
                            "data_type": triton_type(t["datatype"].as_str().unwrap_or("BYTES")),
                            "dims": config_dims(&t["shape"], batching),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut config = json!({
        "name": model.name,
        "platform": meta["platform"],
        "backend": "inferwire",
        "max_batch_size": if batching { max_batch } else { 0 },
        "input": tensors("inputs"),
        "output": tensors("outputs"),
    });
    if batching {
        config["dynamic_batching"] = json!({
            "max_queue_delay_microseconds": u64::try_from(delay.as_micros()).unwrap_or(u64::MAX),
        });
    }
    Ok(config)
}

/// A V2 datatype as Triton's model configuration names it (`FP32` → `TYPE_FP32`).
pub fn triton_type(datatype: &str) -> String {
    match datatype {
        "BYTES" => "TYPE_STRING".into(),
        "BOOL" | "UINT8" | "UINT16" | "UINT32" | "UINT64" | "INT8" | "INT16" | "INT32"
        | "INT64" | "FP16" | "FP32" | "FP64" | "BF16" => format!("TYPE_{datatype}"),
        _ => "TYPE_INVALID".into(),
    }
}

/// A tensor's dims for the configuration: its metadata shape (-1 where unknown), less
/// the leading batch dimension when batching, as Triton leaves it out then.
fn config_dims(shape: &Value, batching: bool) -> Vec<i64> {
    let dims: Vec<i64> = shape
        .as_array()
        .map(|d| d.iter().map(|x| x.as_i64().unwrap_or(-1)).collect())
        .unwrap_or_else(|| vec![-1]);
    if batching && dims.len() > 1 {
        dims[1..].to_vec()
    } else {
        dims
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_types_as_triton() {
        assert_eq!(triton_type("FP32"), "TYPE_FP32");
        assert_eq!(triton_type("BYTES"), "TYPE_STRING");
        assert_eq!(triton_type("what"), "TYPE_INVALID");
    }

    #[test]
    fn leaves_the_batch_dimension_out_when_batching() {
        assert_eq!(config_dims(&json!([-1, 3]), true), vec![3]);
        assert_eq!(config_dims(&json!([-1, 3]), false), vec![-1, 3]);
        assert_eq!(config_dims(&json!([-1]), true), vec![-1]);
        assert_eq!(config_dims(&Value::Null, false), vec![-1]);
    }
}
