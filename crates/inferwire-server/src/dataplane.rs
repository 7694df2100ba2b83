//! Operations that REST and gRPC both serve and that are no protocol's own, so that
//! neither imports the other (as MLServer's `handlers/dataplane.py`): each transport
//! turns the result into its wire shape. The rest of the shared logic (predict, infer,
//! feedback, health) is `App`'s (app.rs).
use serde_json::{json, Value};

use crate::error::ServeError;
use crate::models::Served;

/// The model's metadata in V2's shape: the model's `init_metadata()` supplies versions,
/// platform, inputs and outputs; name and version come from the server.
pub async fn model_metadata(model: &Served) -> Result<Value, ServeError> {
    let meta = model.runner.metadata(None).await?;
    let tensors = |key: &str| -> Vec<Value> {
        meta.get(key)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .map(|t| {
                        json!({
                            "name": t.get("name").and_then(Value::as_str).unwrap_or_default(),
                            "datatype": t.get("datatype").and_then(Value::as_str).unwrap_or("BYTES"),
                            "shape": t.get("shape").cloned().unwrap_or_else(|| json!([-1])),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let versions: Vec<Value> = if model.version.is_empty() {
        meta.get("versions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    } else {
        vec![Value::from(model.version.clone())]
    };
    Ok(json!({
        "name": model.name,
        "versions": versions,
        "platform": meta.get("platform").and_then(Value::as_str).unwrap_or("inferwire"),
        "inputs": tensors("inputs"),
        "outputs": tensors("outputs"),
    }))
}
