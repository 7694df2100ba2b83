//! V2 over REST: the JSON request (with the binary tensor extension: a JSON header of
//! `Inference-Header-Content-Length` bytes, then the inputs' raw data in order) and the
//! JSON response (outputs asked for in binary go after the JSON, in order).
use bytes::Bytes;
use half::{bf16, f16};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::binary;
use super::message::*;
use crate::error::{Cause, CodecError, Result};
use crate::json::{numbers, write};
use crate::limits::Limits;
use crate::tensor::{DType, Tensor, TensorData};

#[derive(Deserialize)]
struct Header<'a> {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    parameters: Option<Parameters>,
    #[serde(borrow)]
    inputs: Vec<RawInput<'a>>,
    #[serde(default)]
    outputs: Option<Vec<RawRequested>>,
}

#[derive(Deserialize)]
struct RawInput<'a> {
    name: String,
    shape: Vec<i64>,
    datatype: String,
    #[serde(default)]
    parameters: Option<Parameters>,
    #[serde(borrow, default)]
    data: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct RawRequested {
    name: String,
    #[serde(default)]
    parameters: Option<Parameters>,
}

/// Decodes an inference request. `header_len` is `Inference-Header-Content-Length` when
/// the client used the binary extension: the JSON is that many bytes, the rest of `body`
/// is the inputs' binary data.
pub fn decode_request(
    body: Bytes,
    header_len: Option<usize>,
    limits: &Limits,
) -> Result<InferRequest> {
    decode_request_with(body, header_len, limits, &NoSharedMemory)
}

/// `decode_request`, reading the inputs passed by reference (Triton's shared-memory
/// parameters) from `shm`.
pub fn decode_request_with(
    body: Bytes,
    header_len: Option<usize>,
    limits: &Limits,
    shm: &dyn SharedInputs,
) -> Result<InferRequest> {
    let (header, mut blobs) = match header_len {
        None => (body.clone(), Bytes::new()),
        Some(n) if n > body.len() => {
            return Err(CodecError::bad_request(format!(
                "Inference-Header-Content-Length is {n} but the body has only {} bytes",
                body.len()
            )))
        }
        Some(n) => (body.slice(..n), body.slice(n..)),
    };
    let (parts, top) = match fast::header(&header, limits) {
        Some(found) => found?,
        None => serde_header(&header)?,
    };
    unique_names("inputs", parts.iter().map(|p| p.name.as_str()))?;
    if let Some(outputs) = &top.outputs {
        unique_names("outputs", outputs.iter().map(|o| o.name.as_str()))?;
    }
    let mut inputs = Vec::with_capacity(parts.len());
    for (i, input) in parts.into_iter().enumerate() {
        inputs.push(finish_input(
            &format!("inputs[{i}]"),
            input,
            &mut blobs,
            limits,
            shm,
        )?);
    }
    if !blobs.is_empty() {
        return Err(CodecError::bad_request(format!(
            "the body has {} bytes of binary data that no input's binary_data_size accounts for",
            blobs.len()
        ))
        .because(Cause::BinaryLeft));
    }
    let request = InferRequest {
        id: top.id.unwrap_or_default(),
        parameters: top.parameters.unwrap_or_default(),
        inputs,
        outputs: top
            .outputs
            .unwrap_or_default()
            .into_iter()
            .map(|o| RequestedOutput {
                name: o.name,
                parameters: o.parameters.unwrap_or_default(),
            })
            .collect(),
    };
    request.check_parameters()?;
    Ok(request)
}

/// The request's fields other than `inputs`.
#[derive(Default)]
struct Top {
    id: Option<String>,
    parameters: Option<Parameters>,
    outputs: Option<Vec<RawRequested>>,
}

/// An input before its data is typed: `data` already parsed by the fast path, or its
/// JSON text.
struct Parts<'a> {
    name: String,
    shape: Vec<i64>,
    datatype: String,
    parameters: Option<Parameters>,
    data: Option<Data<'a>>,
}

enum Data<'a> {
    /// Numbers the fast path read, and the text they came from.
    Parsed(TensorData, &'a [u8]),
    Text(&'a [u8]),
}

/// The general path: serde reads the whole header (and words every structural error
/// with its path), keeping each input's `data` as text.
fn serde_header(header: &[u8]) -> Result<(Vec<Parts<'_>>, Top)> {
    let raw: Header<'_> = crate::json::deserialize(header)?;
    let parts = raw
        .inputs
        .into_iter()
        .map(|i| Parts {
            name: i.name,
            shape: i.shape,
            datatype: i.datatype,
            parameters: i.parameters,
            data: i.data.map(|d| Data::Text(d.get().as_bytes())),
        })
        .collect();
    Ok((
        parts,
        Top {
            id: raw.id,
            parameters: raw.parameters,
            outputs: raw.outputs,
        },
    ))
}

/// One tensor of the JSON (`field`: where it is, `inputs[i]` or `outputs[i]`), typed.
fn finish_input(
    field: &str,
    input: Parts<'_>,
    blobs: &mut Bytes,
    limits: &Limits,
    shm: &dyn SharedInputs,
) -> Result<InferInput> {
    let field = field.to_owned();
    let (dtype, count, shape) = declared(&field, &input.datatype, &input.shape, limits)?;
    let parameters = input.parameters.unwrap_or_default();
    if let Some(at) = shared_memory_ref(&parameters, &field)? {
        if input.data.is_some() || parameters.contains_key("binary_data_size") {
            return Err(CodecError::bad_request(format!(
                "{field}: has data and shared_memory_region; send one or the other"
            )));
        }
        return Ok(InferInput {
            tensor: shared_input(shm, &field, &at, dtype, shape)
                .map_err(|e| e.of_input(&input.name))?,
            name: input.name,
            parameters,
        });
    }
    let tensor = match parameters.get("binary_data_size") {
        Some(size) => {
            let size = size.as_u64().ok_or_else(|| {
                CodecError::bad_request(format!(
                    "{field}.parameters.binary_data_size: must be a byte count, got {size}"
                ))
            })? as usize;
            if size > blobs.len() {
                return Err(CodecError::bad_request(format!(
                    "{field}.parameters.binary_data_size: {size} bytes, but only {} bytes of \
                     binary data are left after the JSON header",
                    blobs.len()
                ))
                .because(Cause::BinaryShort {
                    input: input.name,
                    missing: size - blobs.len(),
                }));
            }
            binary::from_bytes(blobs.split_to(size), dtype, shape, &field)
                .map_err(|e| e.of_input(&input.name))?
        }
        None => match input.data {
            None => {
                return Err(CodecError::bad_request(format!(
                    "{field}.data: missing (send data, or binary_data_size with the binary \
                     tensor extension)"
                )))
            }
            Some(Data::Text(text)) => json_tensor(text, dtype, shape, count, &field, limits)?,
            // Strings, and integers past i64's range (read as floats), go the general way.
            Some(Data::Parsed(data, text))
                if dtype == DType::Bytes
                    || (dtype == DType::U64 && matches!(data, TensorData::F64(_))) =>
            {
                json_tensor(text, dtype, shape, count, &field, limits)?
            }
            Some(Data::Parsed(data, _)) => typed_tensor(data, dtype, shape, count, &field)?,
        },
    };
    Ok(InferInput {
        name: input.name,
        tensor,
        parameters,
    })
}

/// The usual request in one pass: the top-level object and each input walked with the
/// scanner, small fields read by serde, `data` parsed straight into a typed buffer.
mod fast {
    use super::*;
    use crate::json::scan;

    /// `None`: not the usual shape (or not valid JSON): the serde path decides, and
    /// words any error.
    pub(super) fn header<'a>(
        b: &'a [u8],
        limits: &Limits,
    ) -> Option<Result<(Vec<Parts<'a>>, Top)>> {
        let mut top = Top::default();
        let mut inputs = None;
        let start = scan::ws(b, 0);
        let end = scan::object(b, start, |key, at| {
            if key == "inputs" {
                // Not skipped first: the inputs hold the data, read once, here.
                return match input_list(b, at, limits)? {
                    Ok((parts, end)) => {
                        inputs = Some(Ok(parts));
                        Some(end)
                    }
                    Err(e) => {
                        inputs = Some(Err(e));
                        None
                    }
                };
            }
            let end = scan::skip_value(b, at)?;
            let value = &b[at..end];
            match key {
                "id" => top.id = Some(serde_json::from_slice(value).ok()?),
                "parameters" => top.parameters = serde_json::from_slice(value).ok()?,
                "outputs" => top.outputs = serde_json::from_slice(value).ok()?,
                // Skipped, but it must be JSON all the same (the scanner does not check).
                _ => valid(value)?,
            }
            Some(end)
        });
        if let Some(Err(e)) = inputs {
            return Some(Err(e));
        }
        if scan::ws(b, end?) != b.len() {
            return None;
        }
        match inputs? {
            Ok(parts) => Some(Ok((parts, top))),
            Err(e) => Some(Err(e)),
        }
    }

    /// `Some` when `value` is well-formed JSON; else the general decoder words the error.
    fn valid(value: &[u8]) -> Option<()> {
        serde_json::from_slice::<serde::de::IgnoredAny>(value)
            .ok()
            .map(|_| ())
    }

    /// The inputs and the index just past the list.
    fn input_list<'a>(
        b: &'a [u8],
        at: usize,
        limits: &Limits,
    ) -> Option<Result<(Vec<Parts<'a>>, usize)>> {
        if b.get(at) != Some(&b'[') {
            return None;
        }
        let mut out = Vec::new();
        let mut j = scan::ws(b, at + 1);
        if b.get(j) == Some(&b']') {
            return Some(Ok((out, j + 1)));
        }
        loop {
            let (parts, end) = match input(b, j, limits)? {
                Ok(found) => found,
                Err(e) => return Some(Err(e)),
            };
            out.push(parts);
            j = scan::ws(b, end);
            match b.get(j)? {
                b',' => j = scan::ws(b, j + 1),
                b']' => return Some(Ok((out, j + 1))),
                _ => return None,
            }
        }
    }

    fn input<'a>(b: &'a [u8], at: usize, limits: &Limits) -> Option<Result<(Parts<'a>, usize)>> {
        let (mut name, mut shape, mut datatype, mut parameters, mut data) =
            (None, None, None, None, None);
        let mut failed = None;
        let end = scan::object(b, at, |key, v| {
            if key == "data" {
                return match numbers::parse_array_prefix(&b[v..], *limits) {
                    Ok(Some((t, len))) => {
                        data = Some(Data::Parsed(t.data, &b[v..v + len]));
                        Some(v + len)
                    }
                    Ok(None) => {
                        let end = scan::skip_value(b, v)?;
                        data = Some(Data::Text(&b[v..end]));
                        Some(end)
                    }
                    Err(e) => {
                        failed = Some(e);
                        None
                    }
                };
            }
            let end = scan::skip_value(b, v)?;
            let value = &b[v..end];
            match key {
                "name" => name = Some(serde_json::from_slice(value).ok()?),
                "shape" => shape = Some(serde_json::from_slice(value).ok()?),
                "datatype" => datatype = Some(serde_json::from_slice(value).ok()?),
                "parameters" => parameters = serde_json::from_slice(value).ok()?,
                _ => valid(value)?,
            }
            Some(end)
        });
        if let Some(e) = failed {
            return Some(Err(e));
        }
        let end = end?;
        Some(Ok((
            Parts {
                name: name?,
                shape: shape?,
                datatype: datatype?,
                parameters,
                data,
            },
            end,
        )))
    }
}

/// `data` (flat or nested, the protocol allows both) as a tensor of `dtype` and `shape`.
fn json_tensor(
    text: &[u8],
    dtype: DType,
    shape: Vec<usize>,
    count: usize,
    field: &str,
    limits: &Limits,
) -> Result<Tensor> {
    let data_field = format!("{field}.data");
    let data = if dtype == DType::Bytes {
        TensorData::Bytes(strings(text, &data_field)?)
    } else {
        // The fast path reads numbers straight into a typed buffer; other shapes of JSON
        // (a scalar, mixed ints and floats across rows) take the generic path.
        match numbers::parse_array(text, *limits)? {
            // Integers past i64's range read as floats there: UINT64 needs them exact.
            Some(t) if dtype == DType::U64 && matches!(t.data, TensorData::F64(_)) => {
                generic_numbers(text, &data_field)?
            }
            Some(t) => t.data,
            None => generic_numbers(text, &data_field)?,
        }
    };
    typed_tensor(data, dtype, shape, count, field)
}

/// Numbers read from `field`'s `data` as a tensor of `dtype` and `shape`.
fn typed_tensor(
    data: TensorData,
    dtype: DType,
    shape: Vec<usize>,
    count: usize,
    field: &str,
) -> Result<Tensor> {
    let field = format!("{field}.data");
    if data.len() != count {
        return Err(CodecError::bad_request(format!(
            "{field}: {} values for shape {shape:?}, which needs {count}",
            data.len()
        )));
    }
    Tensor::new(shape, cast(data, dtype, &field)?)
}

fn leaves<'v>(v: &'v Value, out: &mut Vec<&'v Value>) {
    match v {
        Value::Array(items) => items.iter().for_each(|x| leaves(x, out)),
        other => out.push(other),
    }
}

fn parse_value(text: &[u8], field: &str) -> Result<Value> {
    serde_json::from_slice(text).map_err(|e| CodecError::bad_request(format!("{field}: {e}")))
}

fn strings(text: &[u8], field: &str) -> Result<Vec<Bytes>> {
    let v = parse_value(text, field)?;
    let mut flat = Vec::new();
    leaves(&v, &mut flat);
    flat.into_iter()
        .map(|x| match x {
            Value::String(s) => Ok(Bytes::copy_from_slice(s.as_bytes())),
            other => Err(CodecError::bad_request(format!(
                "{field}: BYTES elements are strings, got {other}"
            ))),
        })
        .collect()
}

fn generic_numbers(text: &[u8], field: &str) -> Result<TensorData> {
    let v = parse_value(text, field)?;
    let mut flat = Vec::new();
    leaves(&v, &mut flat);
    if flat.iter().all(|x| x.is_boolean()) && !flat.is_empty() {
        return Ok(TensorData::Bool(
            flat.iter().filter_map(|x| x.as_bool()).collect(),
        ));
    }
    if flat.iter().all(|x| x.is_i64()) {
        return Ok(TensorData::I64(
            flat.iter().filter_map(|x| x.as_i64()).collect(),
        ));
    }
    if flat.iter().all(|x| x.is_u64() || x.is_i64()) {
        // Past i64's range: only UINT64 can hold these.
        if let Some(v) = flat
            .iter()
            .map(|x| x.as_u64())
            .collect::<Option<Vec<u64>>>()
        {
            return Ok(TensorData::U64(v));
        }
    }
    flat.iter()
        .map(|x| {
            x.as_f64()
                .or_else(|| x.as_str().and_then(numbers::non_finite))
                .ok_or_else(|| {
                    CodecError::bad_request(format!(
                        "{field}: expected numbers (or \"NaN\", \"Infinity\", \"-Infinity\"), \
                         got {x}"
                    ))
                })
        })
        .collect::<Result<Vec<f64>>>()
        .map(TensorData::F64)
}

/// Numbers as read from JSON (i64, u64, f64 or bool) → the declared datatype, refusing
/// values that do not fit rather than wrapping them.
fn cast(data: TensorData, to: DType, field: &str) -> Result<TensorData> {
    let name = datatype_name(to);
    let out_of_range = |x: &dyn std::fmt::Display| {
        CodecError::bad_request(format!("{field}: {x} does not fit in {name}"))
    };
    macro_rules! ints {
        ($v:expr, $t:ty, $variant:ident) => {
            TensorData::$variant(
                $v.into_iter()
                    .map(|x| <$t>::try_from(x).map_err(|_| out_of_range(&x)))
                    .collect::<Result<_>>()?,
            )
        };
    }
    let integral = |v: Vec<f64>| -> Result<Vec<i64>> {
        v.into_iter()
            .map(|x| {
                if x.fract() == 0.0 && x >= i64::MIN as f64 && x <= i64::MAX as f64 {
                    Ok(x as i64)
                } else {
                    Err(CodecError::bad_request(format!(
                        "{field}: {name} elements are integers, got {x}"
                    )))
                }
            })
            .collect()
    };
    Ok(match (data, to) {
        (TensorData::Bytes(v), DType::Bytes) => TensorData::Bytes(v),
        (TensorData::Bool(v), DType::Bool) => TensorData::Bool(v),
        (TensorData::Bool(_), _) => {
            return Err(CodecError::bad_request(format!(
                "{field}: true/false values for a {name} input (BOOL takes them)"
            )))
        }
        (_, DType::Bool) => {
            return Err(CodecError::bad_request(format!(
                "{field}: BOOL elements are true or false"
            )))
        }
        (TensorData::U64(v), DType::U64) => TensorData::U64(v),
        (TensorData::U64(v), DType::F64) => {
            TensorData::F64(v.into_iter().map(|x| x as f64).collect())
        }
        (TensorData::U64(v), _) => return Err(out_of_range(&v.first().copied().unwrap_or(0))),
        (TensorData::F64(v), DType::F64) => TensorData::F64(v),
        // A finite number that the narrower type would make infinite (1e39 as FP32) is
        // refused, not turned into Infinity; NaN and the infinities themselves pass.
        (TensorData::F64(v), DType::F32) => {
            TensorData::F32(numbers::narrow(v, |x| x as f32, name).map_err(|e| e.in_field(field))?)
        }
        (TensorData::F64(v), DType::F16) => {
            TensorData::F16(numbers::narrow(v, f16::from_f64, name).map_err(|e| e.in_field(field))?)
        }
        (TensorData::F64(v), DType::BF16) => TensorData::BF16(
            numbers::narrow(v, bf16::from_f64, name).map_err(|e| e.in_field(field))?,
        ),
        (TensorData::F64(v), int) => return cast(TensorData::I64(integral(v)?), int, field),
        (TensorData::I64(v), DType::I64) => TensorData::I64(v),
        (TensorData::I64(v), DType::F64) => {
            TensorData::F64(v.into_iter().map(|x| x as f64).collect())
        }
        (TensorData::I64(v), DType::F32) => {
            TensorData::F32(v.into_iter().map(|x| x as f32).collect())
        }
        (TensorData::I64(v), DType::F16) => {
            let v = v.into_iter().map(|x| x as f64).collect();
            TensorData::F16(numbers::narrow(v, f16::from_f64, name).map_err(|e| e.in_field(field))?)
        }
        (TensorData::I64(v), DType::BF16) => {
            let v = v.into_iter().map(|x| x as f64).collect();
            TensorData::BF16(
                numbers::narrow(v, bf16::from_f64, name).map_err(|e| e.in_field(field))?,
            )
        }
        (TensorData::I64(v), DType::I32) => ints!(v, i32, I32),
        (TensorData::I64(v), DType::I16) => ints!(v, i16, I16),
        (TensorData::I64(v), DType::I8) => ints!(v, i8, I8),
        (TensorData::I64(v), DType::U64) => ints!(v, u64, U64),
        (TensorData::I64(v), DType::U32) => ints!(v, u32, U32),
        (TensorData::I64(v), DType::U16) => ints!(v, u16, U16),
        (TensorData::I64(v), DType::U8) => ints!(v, u8, U8),
        (other, _) => {
            return Err(CodecError::bad_request(format!(
                "{field}: {:?} values for a {name} input",
                other.dtype()
            )))
        }
    })
}

/// Writes `r` as JSON into `out`. Outputs for which `binary(name)` holds are not written
/// as `data` but returned, in order, for the caller to append after the JSON (and the
/// JSON's length goes into `Inference-Header-Content-Length`).
pub fn encode_response(
    r: &InferResponse,
    binary: impl Fn(&str) -> bool,
    out: &mut Vec<u8>,
) -> Result<Vec<Bytes>> {
    let mut blobs = Vec::new();
    out.extend_from_slice(b"{\"model_name\":");
    write::string(&r.model_name, out);
    if !r.model_version.is_empty() {
        out.extend_from_slice(b",\"model_version\":");
        write::string(&r.model_version, out);
    }
    if !r.id.is_empty() {
        out.extend_from_slice(b",\"id\":");
        write::string(&r.id, out);
    }
    if !r.parameters.is_empty() {
        out.extend_from_slice(b",\"parameters\":");
        serde_json::to_writer(&mut *out, &r.parameters)
            .map_err(|e| CodecError::bad_output(e.to_string()))?;
    }
    out.extend_from_slice(b",\"outputs\":[");
    for (i, o) in r.outputs.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        tensor_head(&o.name, &o.tensor, out);
        let mut parameters = o.parameters.clone();
        // Written into the client's shared memory: metadata and parameters only.
        let by_reference = in_shared_memory(o);
        let as_blob = !by_reference && binary(&o.name);
        if as_blob {
            let raw = binary::to_bytes(&o.tensor.data);
            parameters.insert("binary_data_size".into(), Value::from(raw.len()));
            blobs.push(Bytes::from(raw));
        }
        if !parameters.is_empty() {
            out.extend_from_slice(b",\"parameters\":");
            serde_json::to_writer(&mut *out, &parameters)
                .map_err(|e| CodecError::bad_output(e.to_string()))?;
        }
        if !as_blob && !by_reference {
            out.extend_from_slice(b",\"data\":");
            write_flat(&o.name, &o.tensor.data, out)?;
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
    Ok(blobs)
}

/// A tensor's `{"name", "datatype", "shape"` (the object left open), as requests and
/// responses write it.
fn tensor_head(name: &str, tensor: &Tensor, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"name\":");
    write::string(name, out);
    out.extend_from_slice(b",\"datatype\":\"");
    out.extend_from_slice(datatype_name(tensor.dtype()).as_bytes());
    out.extend_from_slice(b"\",\"shape\":");
    write::flat(
        &tensor.shape.iter().map(|&d| d as u64).collect::<Vec<_>>(),
        out,
    );
}

/// Writes `r` as V2's JSON request, as a client sends it: each input's `data` flat (BYTES
/// elements as strings, which must be UTF-8), its parameters, and the outputs asked for.
/// For a server that hands a model the request's JSON (TorchServe's KServe envelope).
pub fn encode_request(r: &InferRequest, out: &mut Vec<u8>) -> Result<()> {
    out.push(b'{');
    if !r.id.is_empty() {
        out.extend_from_slice(b"\"id\":");
        write::string(&r.id, out);
        out.push(b',');
    }
    if !r.parameters.is_empty() {
        out.extend_from_slice(b"\"parameters\":");
        serde_json::to_writer(&mut *out, &r.parameters)
            .map_err(|e| CodecError::bad_request(e.to_string()))?;
        out.push(b',');
    }
    out.extend_from_slice(b"\"inputs\":[");
    for (i, input) in r.inputs.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        tensor_head(&input.name, &input.tensor, out);
        if !input.parameters.is_empty() {
            out.extend_from_slice(b",\"parameters\":");
            serde_json::to_writer(&mut *out, &input.parameters)
                .map_err(|e| CodecError::bad_request(e.to_string()))?;
        }
        out.extend_from_slice(b",\"data\":");
        write_flat(&input.name, &input.tensor.data, out).map_err(|_| {
            CodecError::bad_request(format!(
                "inputs[{i}] ({:?}): holds bytes that are not UTF-8, which the JSON body \
                 cannot carry",
                input.name
            ))
        })?;
        out.push(b'}');
    }
    out.push(b']');
    if !r.outputs.is_empty() {
        out.extend_from_slice(b",\"outputs\":[");
        for (i, o) in r.outputs.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"name\":");
            write::string(&o.name, out);
            if !o.parameters.is_empty() {
                out.extend_from_slice(b",\"parameters\":");
                serde_json::to_writer(&mut *out, &o.parameters)
                    .map_err(|e| CodecError::bad_request(e.to_string()))?;
            }
            out.push(b'}');
        }
        out.push(b']');
    }
    out.push(b'}');
    Ok(())
}

#[derive(Deserialize)]
struct ResponseHeader<'a> {
    #[serde(default)]
    model_name: Option<String>,
    #[serde(default)]
    model_version: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    parameters: Option<Parameters>,
    #[serde(borrow)]
    outputs: Vec<RawInput<'a>>,
}

/// Decodes V2's JSON response (without the binary extension), as a client reads it: its
/// outputs typed as `decode_request` types inputs, errors naming `outputs[i]`. For a
/// server whose model answers in that JSON (TorchServe's KServe envelope).
pub fn decode_response(body: &[u8], limits: &Limits) -> Result<InferResponse> {
    let raw: ResponseHeader<'_> = crate::json::deserialize(body)?;
    unique_names("outputs", raw.outputs.iter().map(|o| o.name.as_str()))?;
    let mut outputs = Vec::with_capacity(raw.outputs.len());
    for (i, o) in raw.outputs.into_iter().enumerate() {
        let parts = Parts {
            name: o.name,
            shape: o.shape,
            datatype: o.datatype,
            parameters: o.parameters,
            data: o.data.map(|d| Data::Text(d.get().as_bytes())),
        };
        let t = finish_input(
            &format!("outputs[{i}]"),
            parts,
            &mut Bytes::new(),
            limits,
            &NoSharedMemory,
        )?;
        outputs.push(InferOutput {
            name: t.name,
            tensor: t.tensor,
            parameters: t.parameters,
        });
    }
    Ok(InferResponse {
        model_name: raw.model_name.unwrap_or_default(),
        model_version: raw.model_version.unwrap_or_default(),
        id: raw.id.unwrap_or_default(),
        parameters: raw.parameters.unwrap_or_default(),
        outputs,
    })
}

pub(crate) fn write_flat(name: &str, data: &TensorData, out: &mut Vec<u8>) -> Result<()> {
    if write::flat_data(data, out) {
        return Ok(());
    }
    let TensorData::Bytes(items) = data else {
        return Ok(());
    };
    out.push(b'[');
    for (i, b) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let s = std::str::from_utf8(b).map_err(|_| {
            CodecError::bad_output(format!(
                "output {name:?} holds bytes that are not UTF-8, which JSON cannot carry: \
                 ask for it with binary_data (or use gRPC)"
            ))
        })?;
        write::string(s, out);
    }
    out.push(b']');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(body: &str) -> Result<InferRequest> {
        decode_request(Bytes::from(body.to_string()), None, &Limits::default())
    }

    #[test]
    fn a_request_written_as_json_reads_back_the_same() {
        let body = r#"{"id":"r1","parameters":{"p":1},"inputs":[
            {"name":"f","shape":[2,2],"datatype":"FP32","data":[1.5,2,3,4]},
            {"name":"i","shape":[2],"datatype":"INT64","data":[-1,9007199254740993]},
            {"name":"s","shape":[2],"datatype":"BYTES","parameters":{"q":"x"},"data":["a","\u00e9\""]}],
            "outputs":[{"name":"o"}]}"#;
        let r = decode(body).unwrap();
        let mut out = Vec::new();
        encode_request(&r, &mut out).unwrap();
        let again = decode_request(Bytes::from(out), None, &Limits::default()).unwrap();
        assert_eq!(again, r);
        let mut bad = r;
        bad.inputs[2].tensor.data = TensorData::Bytes(vec![Bytes::from_static(b"\xff")]);
        let e = encode_request(&bad, &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("inputs[2]"), "{e}");
    }

    #[test]
    fn a_response_read_from_json_names_its_outputs_in_errors() {
        let body = br#"{"id":"1","model_name":"m","model_version":null,"outputs":[
            {"name":"a","datatype":"INT64","shape":[2],"data":[1,2]},
            {"name":"b","datatype":"BYTES","shape":[1],"data":["x"]}]}"#;
        let r = decode_response(body, &Limits::default()).unwrap();
        assert_eq!(
            (
                r.id.as_str(),
                r.model_name.as_str(),
                r.model_version.as_str()
            ),
            ("1", "m", "")
        );
        assert_eq!(r.outputs[0].tensor.data, TensorData::I64(vec![1, 2]));
        assert_eq!(r.outputs[1].tensor.shape, vec![1]);
        let bad = br#"{"outputs":[{"name":"a","datatype":"INT64","shape":[3],"data":[1,2]}]}"#;
        let e = decode_response(bad, &Limits::default()).unwrap_err();
        assert!(e.to_string().contains("outputs[0]"), "{e}");
        assert!(decode_response(b"{}", &Limits::default()).is_err());
    }

    #[test]
    fn an_unknown_key_must_still_hold_json() {
        // Found by the v2_json fuzz target: the fast path skipped it without checking.
        let bad = r#"{"inputs": [{"name": "s", "shape": [1], "datatype": "INT64", "data": [1],
            "extra": {"k": s"r"t}}]}"#;
        assert!(decode(bad).is_err());
        let top = r#"{"x": [1 2], "inputs": []}"#;
        assert!(decode(top).is_err());
        let control = "{\"inputs\": [], \"par\u{0}ams\": 1}";
        assert!(decode(control).is_err());
        let fine = r#"{"x": {"y": [1, "2"]}, "inputs": [{"name": "s", "shape": [1],
            "datatype": "INT64", "data": [1], "extra": null}]}"#;
        assert!(decode(fine).is_ok());
    }

    #[test]
    fn every_datatype_from_json() {
        for (name, dtype) in DATATYPES {
            let data = match dtype {
                DType::Bool => "[[true,false]]",
                DType::Bytes => "[\"a\",\"b\"]",
                DType::F16 | DType::BF16 | DType::F32 | DType::F64 => "[1.5, 2]",
                _ => "[[1, 2]]",
            };
            let body = format!(
                r#"{{"inputs":[{{"name":"x","shape":[1,2],"datatype":"{name}","data":{data}}}]}}"#
            );
            let r = decode(&body).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            assert_eq!(r.inputs[0].tensor.dtype(), dtype, "{name}");
            assert_eq!(r.inputs[0].tensor.shape, vec![1, 2]);
        }
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (
                r#"{"inputs":[{"name":"x","shape":[2],"datatype":"FP8","data":[1,2]}]}"#,
                "inputs[0].datatype: \"FP8\" is not a V2 datatype",
            ),
            (
                r#"{"inputs":[{"name":"x","shape":[3],"datatype":"INT32","data":[1,2]}]}"#,
                "inputs[0].data: 2 values for shape [3]",
            ),
            (
                r#"{"inputs":[{"name":"x","shape":[1],"datatype":"INT8","data":[300]}]}"#,
                "inputs[0].data: 300 does not fit in INT8",
            ),
            (
                r#"{"inputs":[{"name":"x","shape":[1],"datatype":"INT32","data":[1.5]}]}"#,
                "INT32 elements are integers, got 1.5",
            ),
            (
                r#"{"inputs":[{"name":"x","shape":[1],"datatype":"INT32"}]}"#,
                "inputs[0].data: missing",
            ),
            (
                r#"{"inputs":[{"name":"x","shape":[-1],"datatype":"INT32","data":[1]}]}"#,
                "inputs[0].shape",
            ),
            (
                r#"{"inputs":[{"name":"x","datatype":"INT32","data":[1]}]}"#,
                "inputs[0]: missing field `shape`",
            ),
            (
                r#"{"inputs":[{"name":"x","shape":[1],"datatype":"BYTES","data":[1]}]}"#,
                "BYTES elements are strings",
            ),
            (
                r#"{"inputs":[{"name":"x","shape":[1],"datatype":"BOOL","data":[1]}]}"#,
                "BOOL elements are true or false",
            ),
        ];
        for (body, want) in cases {
            let e = decode(body).unwrap_err();
            assert!(e.message.contains(want), "{body}: {}", e.message);
        }
    }

    #[test]
    fn binary_extension() {
        let header = r#"{"inputs":[{"name":"a","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":8}},{"name":"b","shape":[1],"datatype":"BYTES","parameters":{"binary_data_size":7}}],"outputs":[{"name":"o","parameters":{"binary_data":true}}]}"#;
        let mut body = header.as_bytes().to_vec();
        body.extend_from_slice(&1.5f32.to_le_bytes());
        body.extend_from_slice(&(-2.0f32).to_le_bytes());
        body.extend_from_slice(&3u32.to_le_bytes());
        body.extend_from_slice(b"abc");
        let r = decode_request(
            Bytes::from(body.clone()),
            Some(header.len()),
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(r.inputs[0].tensor.data, TensorData::F32(vec![1.5, -2.0]));
        assert_eq!(
            r.inputs[1].tensor.data,
            TensorData::Bytes(vec![Bytes::from_static(b"abc")])
        );
        let binary = r.binary_outputs();
        assert!(binary.wants("o") && !binary.wants("p"));
        let e = decode_request(
            Bytes::from(body.clone()),
            Some(body.len() + 1),
            &Limits::default(),
        );
        assert!(e
            .unwrap_err()
            .message
            .contains("Inference-Header-Content-Length"));
        let e = decode_request(
            Bytes::from(body[..body.len() - 2].to_vec()),
            Some(header.len()),
            &Limits::default(),
        );
        let e = e.unwrap_err();
        assert!(e
            .message
            .contains("inputs[1].parameters.binary_data_size: 7 bytes"));
        let short = Cause::BinaryShort {
            input: "b".into(),
            missing: 2,
        };
        assert_eq!(e.cause.as_deref(), Some(&short));
        // The facts a dialect words its own way: data of the wrong size, data left over.
        let mut extra = body.clone();
        extra.push(0);
        let e = decode_request(Bytes::from(extra), Some(header.len()), &Limits::default());
        assert_eq!(e.unwrap_err().cause.as_deref(), Some(&Cause::BinaryLeft));
        let wrong = header.replace("\"binary_data_size\":8", "\"binary_data_size\":6");
        let mut body = wrong.as_bytes().to_vec();
        body.extend_from_slice(&[0; 6 + 7]);
        let e = decode_request(Bytes::from(body), Some(wrong.len()), &Limits::default());
        let size = Cause::DataSize {
            input: "a".into(),
            expected: 8,
            got: 6,
        };
        assert_eq!(e.unwrap_err().cause.as_deref(), Some(&size));
    }

    #[test]
    fn response_json_and_binary() {
        let r = InferResponse {
            model_name: "m".into(),
            id: "1".into(),
            outputs: vec![
                InferOutput {
                    name: "a".into(),
                    tensor: Tensor::new(vec![2], TensorData::I64(vec![1, 2])).unwrap(),
                    parameters: Parameters::new(),
                },
                InferOutput {
                    name: "b".into(),
                    tensor: Tensor::new(vec![1], TensorData::Bytes(vec![Bytes::from_static(b"x")]))
                        .unwrap(),
                    parameters: Parameters::new(),
                },
            ],
            ..Default::default()
        };
        let mut out = Vec::new();
        let blobs = encode_response(&r, |n| n == "b", &mut out).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["outputs"][0]["data"], serde_json::json!([1, 2]));
        assert_eq!(v["outputs"][0]["datatype"], "INT64");
        assert_eq!(v["outputs"][1]["parameters"]["binary_data_size"], 5);
        assert_eq!(blobs, vec![Bytes::from_static(&[1, 0, 0, 0, b'x'])]);
    }
}
