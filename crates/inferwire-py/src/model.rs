//! `Model` for a Python model: the executor thread takes the GIL here, and only here.
use inferwire_codec::protocol::seldon::proto;
use inferwire_codec::protocol::seldon::reply::{predict_payload, Output};
use inferwire_codec::protocol::seldon::{
    Feedback, Meta, Metric, MetricType, Payload, SeldonMessage,
};
use inferwire_codec::protocol::v2::{InferOutput, InferRequest};
use inferwire_codec::Limits;
use inferwire_codec::{Tensor, TensorData};
use inferwire_server::{
    Answer, Inferred, Model, ModelError, ModelErrorKind, Pieces, Prediction, SeldonOps,
};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use crate::{stream, thread_state};
use std::sync::Arc;

use crate::convert::{
    json_to_py, message_to_py, meta_to_py, payload_to_py, py_to_json, py_to_output, py_to_tensor,
    tensor_to_numpy,
};

/// The Python adapter (`inferwire.contract.Adapter`) wrapping the user's model.
pub struct PyModel {
    adapter: Py<PyAny>,
    predict: Py<PyAny>,
    predict_raw: Option<Py<PyAny>>,
    wants_meta: bool,
    /// `predict_raw` gets lists instead of numpy arrays (`--raw-arrays list`).
    raw_lists: bool,
    /// The operations the class answers with a low-level method (`*_raw`, `*_rest`,
    /// `*_grpc`): they get the request as a dict and answer the reply themselves.
    raw_ops: Vec<String>,
    errors: Arc<Errors>,
    /// Whether the class yields its answers (`predict_stream`, or a generator `predict`).
    streams: bool,
    /// What a V2 request is handed to the adapter as (`contract.Request`).
    request_type: Py<PyAny>,
    /// Whether a dynamic batch reaches the adapter as a list of requests (`infer_many`).
    infers_many: bool,
    /// BYTES inputs as lists of bytes, and outputs given as such lists read without numpy
    /// (`contract.Adapter.bytes_as_lists`).
    bytes_lists: bool,
}

/// How a Python exception becomes a `ModelError`; shared with the streams' iterators.
pub struct Errors {
    bad_request: Py<PyAny>,
    /// The adapter's `error_reply`: the HTTP status and body an exception carries.
    error_reply: Py<PyAny>,
}

impl PyModel {
    pub fn new(adapter: Bound<'_, PyAny>) -> PyResult<Self> {
        let py = adapter.py();
        let has_raw: bool = adapter.getattr("has_predict_raw")?.extract()?;
        Ok(Self {
            predict: adapter.getattr("predict")?.unbind(),
            predict_raw: if has_raw {
                Some(adapter.getattr("predict_raw")?.unbind())
            } else {
                None
            },
            wants_meta: adapter.getattr("wants_meta")?.extract()?,
            raw_ops: adapter.getattr("raw_ops")?.extract()?,
            raw_lists: adapter.getattr("raw_arrays_as_lists")?.extract()?,
            streams: adapter.getattr("streams")?.extract()?,
            request_type: adapter.getattr("request_type")?.unbind(),
            infers_many: adapter.getattr("infers_many")?.extract()?,
            bytes_lists: adapter.getattr("bytes_as_lists")?.extract()?,
            errors: Arc::new(Errors {
                bad_request: py
                    .import("inferwire.errors")?
                    .getattr("BadRequest")?
                    .unbind(),
                error_reply: adapter.getattr("error_reply")?.unbind(),
            }),
            adapter: adapter.unbind(),
        })
    }

    fn error(&self, py: Python<'_>, e: PyErr) -> ModelError {
        self.errors.of(py, e)
    }
}

impl Errors {
    pub fn of(&self, py: Python<'_>, e: PyErr) -> ModelError {
        let value = e.value(py);
        if e.is_instance(py, self.bad_request.bind(py)) {
            return ModelError {
                kind: ModelErrorKind::BadInput,
                message: value.to_string(),
                body: None,
            };
        }
        if let Some(e) = self.status_error(value) {
            return e;
        }
        let name = value
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "Exception".into());
        ModelError {
            kind: ModelErrorKind::Raised,
            message: format!("{name}: {value}"),
            body: None,
        }
    }

    /// An exception that carries its HTTP status (Seldon's convention), read by
    /// `error_reply` as `(status, message, body or None)`; None for any other exception,
    /// or when reading it fails (then it is an ordinary 500).
    fn status_error(&self, value: &Bound<'_, PyAny>) -> Option<ModelError> {
        let reply = self.error_reply.bind(value.py()).call1((value,)).ok()?;
        let (status, message, body): (u16, String, Option<String>) = reply.extract().ok()?;
        Some(ModelError {
            kind: ModelErrorKind::Status(status),
            message,
            body: body.map(String::into_boxed_str),
        })
    }
}

impl PyModel {
    /// Reads the adapter's `(output, names, tags, metrics)`.
    fn answer(&self, result: &Bound<'_, PyAny>) -> PyResult<Answer> {
        let t = result.cast::<PyTuple>()?;
        let output = t.get_item(0)?;
        let mut answer = Answer::default();
        if !output.is_none() {
            answer.output = Some(py_to_output(&output)?);
            let names = t.get_item(1)?;
            if let Ok(n) = names.extract::<usize>() {
                // Seldon's default names for n columns, written here rather than in Python.
                answer.names = (0..n).map(|i| format!("t:{i}")).collect();
            } else if !names.is_none() {
                answer.names = names.extract()?;
            }
        }
        let tags = t.get_item(2)?;
        if !tags.is_none() {
            if let serde_json::Value::Object(o) = py_to_json(&tags)? {
                answer.tags = o;
            }
        }
        let metrics = t.get_item(3)?;
        if !metrics.is_none() {
            answer.metrics = metrics_from(&metrics)?;
        }
        // A graph's adapter adds what its walk took: {"routing": .., "requestPath": ..}.
        if t.len() > 4 {
            let walk = t.get_item(4)?;
            if let Some(routing) = walk.get_item("routing").ok().filter(|r| !r.is_none()) {
                answer.routing = routing.extract()?;
            }
            if let Some(path) = walk.get_item("requestPath").ok().filter(|p| !p.is_none()) {
                answer.request_path = path.extract()?;
            }
        }
        Ok(answer)
    }

    /// The adapter's result as the reply to `request`.
    fn message(
        &self,
        request: &Payload,
        request_meta: &Meta,
        result: &Bound<'_, PyAny>,
    ) -> PyResult<SeldonMessage> {
        Ok(self
            .answer(result)?
            .into_message(request, &request_meta.tags))
    }

    /// `predict(X, names, meta)` through the adapter.
    fn call_predict<'py>(
        &self,
        py: Python<'py>,
        msg: &mut SeldonMessage,
    ) -> PyResult<Bound<'py, PyAny>> {
        let x = payload_to_py(py, &mut msg.payload)?;
        let names = match &msg.payload {
            Payload::Data { names, .. } => PyList::new(py, names)?,
            _ => PyList::empty(py),
        };
        let meta = if self.wants_meta {
            meta_to_py(py, &msg.meta)?.into_any()
        } else {
            py.None().into_bound(py)
        };
        self.predict.bind(py).call1((x, names, meta))
    }

    fn is_raw(&self, op: &str) -> bool {
        self.raw_ops.iter().any(|o| o == op)
    }

    /// A graph component's operation on one message: the low-level method with the
    /// request as a dict, or the adapter's method of the same name with `(X, names,
    /// meta)`, its result shaped as predict's.
    fn component(&self, op: &str, mut msg: SeldonMessage) -> Result<Prediction, ModelError> {
        self.with_gil(|py| {
            let adapter = self.adapter.bind(py);
            if self.is_raw(op) {
                // Kept for a `*_raw` that declines (SeldonNotImplementedError).
                let kept = msg.clone();
                let request = message_to_py(py, msg, self.raw_lists)?;
                let out = adapter.call_method1("call_raw", (op, request))?;
                if !declined(&out) {
                    return Ok(Prediction::Raw(py_to_output(&out)?));
                }
                msg = kept;
            }
            let x = payload_to_py(py, &mut msg.payload)?;
            let names = payload_names(py, &msg.payload)?;
            let meta = meta_to_py(py, &msg.meta)?;
            let result = adapter.call_method1(op, (x, names, meta))?;
            Ok(Prediction::Message(self.message(
                &msg.payload,
                &msg.meta,
                &result,
            )?))
        })
    }

    /// Runs `f` holding the GIL; a Python exception becomes the model's error.
    fn with_gil<T>(&self, f: impl FnOnce(Python<'_>) -> PyResult<T>) -> Result<T, ModelError> {
        Python::attach(|py| f(py).map_err(|e| self.error(py, e)))
    }
}

/// Whether a low-level method declined (`call_raw` answered `NotImplemented`).
fn declined(out: &Bound<'_, PyAny>) -> bool {
    out.is(out.py().NotImplemented())
}

/// A message's column names (empty for payloads without them).
fn payload_names<'py>(py: Python<'py>, payload: &Payload) -> PyResult<Bound<'py, PyList>> {
    match payload {
        Payload::Data { names, .. } => PyList::new(py, names),
        _ => Ok(PyList::empty(py)),
    }
}

/// A low-level method's reply as a message: a dict is read as a SeldonMessage (as
/// Seldon returns it), any other value travels as the payload a predict reply would.
fn raw_message(out: Output) -> PyResult<SeldonMessage> {
    match out {
        Output::Json(serde_json::Value::Object(o)) => {
            proto::json_object_to_message(&o, &Limits::default()).map_err(|e| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "the low-level method returned a dict that is not a SeldonMessage: {e}"
                ))
            })
        }
        other => Ok(SeldonMessage {
            payload: predict_payload(&Payload::None, other, Vec::new()),
            ..SeldonMessage::default()
        }),
    }
}

fn metrics_from(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Metric>> {
    let mut out = Vec::new();
    for item in obj.try_iter()? {
        let item = item?;
        let d = item.cast::<PyDict>()?;
        let key: String = d
            .get_item("key")?
            .map(|k| k.extract())
            .transpose()?
            .unwrap_or_default();
        let kind: String = d
            .get_item("type")?
            .map(|k| k.extract())
            .transpose()?
            .unwrap_or_else(|| "COUNTER".into());
        let value: f32 = d
            .get_item("value")?
            .map(|k| k.extract())
            .transpose()?
            .unwrap_or_default();
        let tags = match d.get_item("tags")? {
            Some(t) if !t.is_none() => t.extract()?,
            _ => Default::default(),
        };
        let kind = MetricType::from_name(&kind).ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "metrics(): type {kind:?} must be COUNTER, GAUGE or TIMER"
            ))
        })?;
        out.push(Metric {
            key,
            kind,
            value,
            tags,
        });
    }
    Ok(out)
}

/// Seldon's message-level operations: the adapter's `predict` (and `predict_raw`), its
/// component methods and their low-level forms.
impl SeldonOps for PyModel {
    fn predict(&self, mut msg: SeldonMessage) -> Result<Prediction, ModelError> {
        self.with_gil(|py| {
            if let Some(raw) = &self.predict_raw {
                let request = message_to_py(py, msg, self.raw_lists)?;
                let out = raw.bind(py).call1((request,))?;
                return Ok(Prediction::Raw(py_to_output(&out)?));
            }
            let result = self.call_predict(py, &mut msg)?;
            Ok(Prediction::Message(self.message(
                &msg.payload,
                &msg.meta,
                &result,
            )?))
        })
    }

    fn predict_batch(&self, mut msg: SeldonMessage) -> Result<Answer, ModelError> {
        self.with_gil(|py| {
            if self.predict_raw.is_some() {
                return Err(pyo3::exceptions::PyTypeError::new_err(
                    "a model with predict_raw cannot be batched (max_batch_size must be 1)",
                ));
            }
            let result = self.call_predict(py, &mut msg)?;
            self.answer(&result)
        })
    }

    fn transform_input(&self, msg: SeldonMessage) -> Result<Prediction, ModelError> {
        self.component("transform_input", msg)
    }

    fn transform_output(&self, msg: SeldonMessage) -> Result<Prediction, ModelError> {
        self.component("transform_output", msg)
    }

    fn route(&self, msg: SeldonMessage) -> Result<Prediction, ModelError> {
        self.component("route", msg)
    }

    fn aggregate(&self, msgs: Vec<SeldonMessage>) -> Result<Prediction, ModelError> {
        // Seldon's wrapper reads each message's payload before calling `aggregate` (a
        // `*_raw` gets the messages as they are).
        if !self.is_raw("aggregate") {
            if let Some(i) = msgs.iter().position(|m| matches!(m.payload, Payload::None)) {
                return Err(ModelError::bad_input(format!(
                    "aggregate: seldonMessages[{i}] has none of data, binData, strData, jsonData"
                )));
            }
        }
        self.with_gil(|py| {
            let adapter = self.adapter.bind(py);
            let mut msgs = msgs;
            if self.is_raw("aggregate") {
                let list = PyList::empty(py);
                for m in msgs.iter().cloned() {
                    list.append(message_to_py(py, m, self.raw_lists)?)?;
                }
                let request = PyDict::new(py);
                request.set_item("seldonMessages", list)?;
                let out = adapter.call_method1("call_raw", ("aggregate", request))?;
                if !declined(&out) {
                    return Ok(Prediction::Raw(py_to_output(&out)?));
                }
            }
            let xs = PyList::empty(py);
            let names = PyList::empty(py);
            for m in &mut msgs {
                xs.append(payload_to_py(py, &mut m.payload)?)?;
                names.append(payload_names(py, &m.payload)?)?;
            }
            let result = adapter.call_method1("aggregate", (xs, names))?;
            // Seldon's reply: shaped as the first message, with every message's tags
            // and metrics merged before the combiner's own.
            let mut meta = Meta::default();
            let mut metrics = Vec::new();
            for m in &mut msgs {
                meta.tags.extend(std::mem::take(&mut m.meta.tags));
                metrics.append(&mut m.meta.metrics);
            }
            let mut reply = self.message(&msgs[0].payload, &meta, &result)?;
            metrics.append(&mut reply.meta.metrics);
            reply.meta.metrics = metrics;
            Ok(Prediction::Message(reply))
        })
    }

    fn send_feedback(&self, f: Feedback) -> Result<SeldonMessage, ModelError> {
        self.with_gil(|py| {
            if self.is_raw("send_feedback") {
                let request = PyDict::new(py);
                for (key, m) in [
                    ("request", &f.request),
                    ("response", &f.response),
                    ("truth", &f.truth),
                ] {
                    if let Some(m) = m.clone() {
                        request.set_item(key, message_to_py(py, m, self.raw_lists)?)?;
                    }
                }
                request.set_item("reward", f.reward)?;
                let out = self
                    .adapter
                    .bind(py)
                    .call_method1("call_raw", ("send_feedback", request))?;
                if !declined(&out) {
                    return raw_message(py_to_output(&out)?);
                }
            }
            let mut request = f.request.unwrap_or_default();
            let features = payload_to_py(py, &mut request.payload)?;
            let names = match &request.payload {
                Payload::Data { names, .. } => PyList::new(py, names)?,
                _ => PyList::empty(py),
            };
            let truth = match f.truth {
                Some(mut t) => payload_to_py(py, &mut t.payload)?,
                None => py.None().into_bound(py),
            };
            let routing = PyDict::new(py);
            if let Some(resp) = &f.response {
                for (k, v) in &resp.meta.routing {
                    routing.set_item(k, v)?;
                }
            }
            let result = self
                .adapter
                .bind(py)
                .call_method1("send_feedback", (features, names, f.reward, truth, routing))?;
            self.message(&request.payload, &Meta::default(), &result)
        })
    }

    fn health_status(&self) -> Result<SeldonMessage, ModelError> {
        self.with_gil(|py| {
            if self.is_raw("health_status") {
                let out = self
                    .adapter
                    .bind(py)
                    .call_method1("call_raw", ("health_status", py.None()))?;
                if !declined(&out) {
                    return raw_message(py_to_output(&out)?);
                }
            }
            let result = self.adapter.bind(py).call_method0("health_status")?;
            self.message(&Payload::None, &Meta::default(), &result)
        })
    }
}

impl Model for PyModel {
    fn metadata(&self) -> Result<serde_json::Value, ModelError> {
        self.with_gil(|py| py_to_json(&self.adapter.bind(py).call_method0("metadata")?))
    }

    /// The adapter's `custom_routes` (an MLModel's `@custom_handler` methods), if any.
    fn custom_routes(&self) -> Vec<(String, String)> {
        Python::attach(|py| {
            self.adapter
                .bind(py)
                .getattr("custom_routes")
                .and_then(|r| r.extract())
                .unwrap_or_default()
        })
    }

    /// The adapter's `custom(method, path, body)`: the reply's JSON as bytes.
    fn custom(
        &self,
        method: &str,
        path: &str,
        body: bytes::Bytes,
    ) -> Result<bytes::Bytes, ModelError> {
        self.with_gil(|py| {
            let data = pyo3::types::PyBytes::new(py, &body);
            let out = self
                .adapter
                .bind(py)
                .call_method1("custom", (method, path, data))?;
            let reply: Vec<u8> = out.extract()?;
            Ok(bytes::Bytes::from(reply))
        })
    }

    /// The adapter's `infer` gives its outputs, or `{"outputs": ..., "parameters": ...}`
    /// where the response has parameters of its own (an MLServer model's).
    fn infer(&self, req: InferRequest) -> Result<Inferred, ModelError> {
        self.with_gil(|py| {
            let args = infer_args(py, &self.request_type, req, self.bytes_lists)?;
            let out = self
                .adapter
                .bind(py)
                .call_method1(intern!(py, "infer"), args)?;
            inferred(&out, self.bytes_lists)
        })
    }

    fn infers_many(&self) -> bool {
        self.infers_many
    }

    /// The adapter's `infer_many(requests)`: one item per request, its outputs (as
    /// `infer` gives them) or the exception it failed with.
    fn infer_many(
        &self,
        reqs: Vec<InferRequest>,
    ) -> Result<Vec<Result<Inferred, ModelError>>, ModelError> {
        self.with_gil(|py| {
            let mut args = Vec::with_capacity(reqs.len());
            for req in reqs {
                args.push(infer_args(py, &self.request_type, req, self.bytes_lists)?.get_item(0)?);
            }
            let out = self
                .adapter
                .bind(py)
                .call_method1(intern!(py, "infer_many"), (PyList::new(py, args)?,))?;
            let mut answers = Vec::new();
            for item in out.try_iter()? {
                let item = item?;
                answers.push(
                    match item.cast_into::<pyo3::exceptions::PyBaseException>() {
                        Ok(exc) => Err(self.error(py, PyErr::from_value(exc.into_any()))),
                        Err(e) => inferred(&e.into_inner(), self.bytes_lists)
                            .map_err(|err| self.error(py, err)),
                    },
                );
            }
            Ok(answers)
        })
    }

    /// The adapter's `model_config()`: its configuration as Triton's JSON, or None.
    fn config(&self) -> Option<serde_json::Value> {
        Python::attach(|py| {
            let own = self.adapter.bind(py).call_method0("model_config").ok()?;
            (!own.is_none()).then(|| py_to_json(&own).ok()).flatten()
        })
    }

    fn streams(&self) -> bool {
        self.streams
    }

    fn infer_stream(&self, req: InferRequest) -> Result<Pieces, ModelError> {
        self.with_gil(|py| {
            let args = infer_args(py, &self.request_type, req, self.bytes_lists)?;
            let started = self.adapter.bind(py).call_method1("infer_stream", args)?;
            let (pieces, start): (Bound<'_, PyAny>, Bound<'_, PyAny>) = started.extract()?;
            Ok(if start.is_none() {
                stream::blocking(pieces, self.errors.clone())
            } else {
                stream::driven(start, self.errors.clone())
            })
        })
    }

    /// Every adapter answers Seldon's protocol (`inferwire.contract.Adapter`).
    fn seldon(&self) -> Option<&dyn SeldonOps> {
        Some(self)
    }

    fn thread_started(&self) {
        thread_state::attach_for_life();
    }

    fn thread_stopping(&self) {
        thread_state::release();
    }
}

/// What `infer` gave: its outputs, or `{"outputs": ..., "parameters": ...}` with the
/// response's own parameters.
fn inferred(out: &Bound<'_, PyAny>, bytes_lists: bool) -> PyResult<Inferred> {
    let py = out.py();
    if let Ok(dict) = out.cast::<PyDict>() {
        let outputs = match dict.get_item(intern!(py, "outputs"))? {
            Some(o) => outputs_read(&o, bytes_lists)?,
            None => Vec::new(),
        };
        let parameters = match dict.get_item(intern!(py, "parameters"))? {
            Some(p) => match crate::convert::py_to_json(&p)? {
                serde_json::Value::Object(m) => m,
                _ => Default::default(),
            },
            None => Default::default(),
        };
        return Ok(Inferred {
            outputs,
            parameters,
        });
    }
    Ok(Inferred {
        outputs: outputs_read(out, bytes_lists)?,
        parameters: Default::default(),
    })
}

/// `infer`'s and `infer_stream`'s argument, the adapter's `request_type`
/// (`contract.Request`): inputs (numpy arrays by name), the request's parameters, the
/// outputs it asked for, and each input's parameters. With `bytes_lists`, a BYTES input
/// is the list of its elements (flat), not a numpy array.
fn infer_args<'py>(
    py: Python<'py>,
    request_type: &Py<PyAny>,
    req: InferRequest,
    bytes_lists: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let requested: Vec<String> = req.outputs.iter().map(|o| o.name.clone()).collect();
    let inputs = PyDict::new(py);
    let input_parameters = PyDict::new(py);
    for input in req.inputs {
        if !input.parameters.is_empty() {
            let p = json_to_py(py, &serde_json::Value::Object(input.parameters))?;
            input_parameters.set_item(&input.name, p)?;
        }
        let value = match input.tensor.data {
            TensorData::Bytes(items) if bytes_lists => {
                PyList::new(py, items.iter().map(|b| PyBytes::new(py, b)))?.into_any()
            }
            _ => tensor_to_numpy(py, input.tensor)?,
        };
        inputs.set_item(input.name, value)?;
    }
    let parameters = json_to_py(py, &serde_json::Value::Object(req.parameters))?;
    let id = req.id;
    let request =
        request_type
            .bind(py)
            .call1((inputs, parameters, requested, input_parameters, id))?;
    PyTuple::new(py, [request])
}

/// The adapter's `[(name, value), ...]` as V2 outputs; a third item, a dict, is the
/// output's parameters (MLServer's runtimes mark outputs with their `content_type`).
pub fn outputs_from(out: &Bound<'_, PyAny>) -> PyResult<Vec<InferOutput>> {
    outputs_read(out, false)
}

/// `outputs_from`; with `bytes_lists`, a value that is a list of bytes is a BYTES tensor
/// of that length, read without numpy.
fn outputs_read(out: &Bound<'_, PyAny>, bytes_lists: bool) -> PyResult<Vec<InferOutput>> {
    let mut outputs = Vec::new();
    for item in out.try_iter()? {
        let pair = item?;
        let pair = pair.cast::<PyTuple>()?;
        let name: String = pair.get_item(0)?.extract()?;
        let value = pair.get_item(1)?;
        let tensor = match value.cast::<PyList>() {
            Ok(list) if bytes_lists => bytes_tensor(list, &name)?,
            _ => py_to_tensor(&value, &name)?,
        };
        let parameters = match pair.len() {
            3 => match crate::convert::py_to_json(&pair.get_item(2)?)? {
                serde_json::Value::Object(m) => m,
                _ => Default::default(),
            },
            _ => Default::default(),
        };
        outputs.push(InferOutput {
            name,
            tensor,
            parameters,
        });
    }
    Ok(outputs)
}

/// A list of bytes as a one-dimensional BYTES tensor.
fn bytes_tensor(list: &Bound<'_, PyList>, name: &str) -> PyResult<Tensor> {
    let mut items = Vec::with_capacity(list.len());
    for item in list.iter() {
        let b = item.cast::<PyBytes>().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "output {name:?}: a list of bytes expected, got an element of type {}",
                item.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
        items.push(bytes::Bytes::copy_from_slice(b.as_bytes()));
    }
    Ok(Tensor {
        shape: vec![items.len()],
        data: TensorData::Bytes(items),
    })
}
