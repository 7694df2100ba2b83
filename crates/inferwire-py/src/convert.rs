//! Values across the boundary: tensors to numpy (zero-copy), model results back to Rust.
use bytes::Bytes;
use inferwire_codec::protocol::seldon::json::tftensor_value;
use inferwire_codec::protocol::seldon::reply::Output;
use inferwire_codec::protocol::seldon::{Array, Encoding, Meta, Payload, SeldonMessage};
use inferwire_codec::{Tensor, TensorData};
use numpy::{Element, PyArray1, PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

static NUMPY: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn numpy(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    NUMPY
        .get_or_try_init(py, || py.import("numpy").map(Bound::unbind))
        .map(|m| m.bind(py))
}

fn vec_to_numpy<'py, T: Element>(
    py: Python<'py>,
    v: Vec<T>,
    shape: &[usize],
) -> PyResult<Bound<'py, PyAny>> {
    // `from_vec` hands the Vec to numpy as the array's base: no copy of the elements.
    let flat = PyArray1::from_vec(py, v);
    if shape.len() == 1 {
        return Ok(flat.into_any());
    }
    Ok(flat.reshape(shape.to_vec())?.into_any())
}

/// A tensor as a numpy array that owns the tensor's buffer.
pub fn tensor_to_numpy<'py>(py: Python<'py>, t: Tensor) -> PyResult<Bound<'py, PyAny>> {
    let shape = t.shape;
    match t.data {
        TensorData::Bool(v) => vec_to_numpy(py, v, &shape),
        TensorData::U8(v) => vec_to_numpy(py, v, &shape),
        TensorData::U16(v) => vec_to_numpy(py, v, &shape),
        TensorData::U32(v) => vec_to_numpy(py, v, &shape),
        TensorData::U64(v) => vec_to_numpy(py, v, &shape),
        TensorData::I8(v) => vec_to_numpy(py, v, &shape),
        TensorData::I16(v) => vec_to_numpy(py, v, &shape),
        TensorData::I32(v) => vec_to_numpy(py, v, &shape),
        TensorData::I64(v) => vec_to_numpy(py, v, &shape),
        TensorData::F16(v) => vec_to_numpy(py, v, &shape),
        // numpy has no bfloat16: widened to float32, which holds every value exactly.
        TensorData::BF16(v) => vec_to_numpy(py, v.iter().map(|x| x.to_f32()).collect(), &shape),
        TensorData::F32(v) => vec_to_numpy(py, v, &shape),
        TensorData::F64(v) => vec_to_numpy(py, v, &shape),
        TensorData::Bytes(v) => {
            let items = PyList::new(py, v.iter().map(|b| PyBytes::new(py, b)))?;
            let arr = numpy(py)?.getattr("array")?.call1((items, "object"))?;
            arr.call_method1("reshape", (PyTuple::new(py, &shape)?,))
        }
    }
}

/// The value a model's `predict` receives for a request payload. A numeric array is moved
/// into numpy, not copied: the reply needs only the payload's kind and encoding.
pub fn payload_to_py<'py>(py: Python<'py>, p: &mut Payload) -> PyResult<Bound<'py, PyAny>> {
    Ok(match p {
        Payload::None => py.None().into_bound(py),
        Payload::Data {
            array: Array::Numeric(t),
            ..
        } => {
            let empty = Tensor {
                shape: vec![0],
                data: TensorData::F64(Vec::new()),
            };
            tensor_to_numpy(py, std::mem::replace(t, empty))?
        }
        // Strings or mixed lists: numpy decides the dtype, as in Seldon.
        Payload::Data {
            array: Array::Json(v),
            ..
        } => numpy(py)?.getattr("array")?.call1((json_to_py(py, v)?,))?,
        Payload::Bin(b) | Payload::Custom { value: b, .. } => PyBytes::new(py, b).into_any(),
        Payload::Str(s) => PyString::new(py, s).into_any(),
        Payload::Json(v) => json_to_py(py, v)?,
    })
}

pub fn json_to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let items = a
                .iter()
                .map(|x| json_to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        Value::Object(o) => {
            let d = PyDict::new(py);
            for (k, x) in o {
                d.set_item(k, json_to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

pub fn meta_to_py<'py>(py: Python<'py>, m: &Meta) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    if !m.puid.is_empty() {
        d.set_item("puid", &m.puid)?;
    }
    if !m.tags.is_empty() {
        d.set_item("tags", json_to_py(py, &Value::Object(m.tags.clone()))?)?;
    }
    if !m.routing.is_empty() {
        d.set_item("routing", m.routing.clone().into_pyobject(py)?)?;
    }
    if !m.request_path.is_empty() {
        d.set_item("requestPath", m.request_path.clone().into_pyobject(py)?)?;
    }
    if !m.metrics.is_empty() {
        let list = PyList::empty(py);
        for x in &m.metrics {
            let md = PyDict::new(py);
            md.set_item("key", &x.key)?;
            md.set_item("type", x.kind.name())?;
            md.set_item("value", x.value)?;
            md.set_item("tags", x.tags.clone().into_pyobject(py)?)?;
            list.append(md)?;
        }
        d.set_item("metrics", list)?;
    }
    Ok(d)
}

/// The whole request as the dict `predict_raw` receives: the REST JSON form of the
/// message. Arrays are numpy arrays that own the decoded buffer (no Python object per
/// element), or lists when `lists` is set (as the Seldon wrapper gives over REST).
pub fn message_to_py(py: Python<'_>, m: SeldonMessage, lists: bool) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    let array = |t: Tensor| -> PyResult<Bound<'_, PyAny>> {
        let a = tensor_to_numpy(py, t)?;
        if lists {
            a.call_method0("tolist")
        } else {
            Ok(a)
        }
    };
    let meta = meta_to_py(py, &m.meta)?;
    match m.payload {
        Payload::None => {}
        Payload::Data {
            names,
            encoding,
            array: values,
        } => {
            let data = PyDict::new(py);
            data.set_item("names", PyList::new(py, &names)?)?;
            match (encoding, values) {
                (_, Array::Json(v)) => data.set_item("ndarray", json_to_py(py, &v)?)?,
                (Encoding::Ndarray, Array::Numeric(t)) => data.set_item("ndarray", array(t)?)?,
                (Encoding::Tensor, Array::Numeric(t)) => {
                    let td = PyDict::new(py);
                    td.set_item("shape", PyList::new(py, &t.shape)?)?;
                    let flat = Tensor {
                        shape: vec![t.len()],
                        data: t.data,
                    };
                    td.set_item("values", array(flat)?)?;
                    data.set_item("tensor", td)?;
                }
                (Encoding::TfTensor, Array::Numeric(t)) => {
                    data.set_item("tftensor", json_to_py(py, &tftensor_value(&t))?)?
                }
            }
            d.set_item("data", data)?;
        }
        Payload::Bin(b) => d.set_item("binData", base64_simd::STANDARD.encode_to_string(b))?,
        Payload::Str(s) => d.set_item("strData", s)?,
        Payload::Json(v) => d.set_item("jsonData", json_to_py(py, &v)?)?,
        Payload::Custom { type_url, value } => {
            let c = PyDict::new(py);
            c.set_item("@type", type_url)?;
            c.set_item("value", base64_simd::STANDARD.encode_to_string(value))?;
            d.set_item("customData", c)?;
        }
    }
    if !meta.is_empty() {
        d.set_item("meta", meta)?;
    }
    Ok(d)
}

fn numpy_to_tensor(arr: &Bound<'_, PyUntypedArray>) -> PyResult<Option<Tensor>> {
    fn take<T: Element>(arr: &Bound<'_, PyUntypedArray>) -> PyResult<Option<Vec<T>>> {
        let Ok(typed) = arr.cast::<PyArrayDyn<T>>() else {
            return Ok(None);
        };
        // `to_vec` copies memory order, which is row-major only for a C-contiguous
        // array: any other (a Fortran-ordered result, a strided view) is made C-ordered
        // first.
        if typed.is_c_contiguous() {
            return Ok(Some(typed.to_vec()?));
        }
        let c = numpy(arr.py())?
            .getattr("ascontiguousarray")?
            .call1((typed,))?;
        Ok(Some(c.cast::<PyArrayDyn<T>>()?.to_vec()?))
    }
    let shape = arr.shape().to_vec();
    macro_rules! try_types {
        ($($t:ty => $variant:ident),*) => {$(
            if let Some(v) = take::<$t>(arr)? {
                return Ok(Some(Tensor { shape, data: TensorData::$variant(v) }));
            }
        )*};
    }
    try_types!(i64 => I64, f64 => F64, f32 => F32, i32 => I32, bool => Bool, u8 => U8, i8 => I8,
               i16 => I16, u16 => U16, u32 => U32, u64 => U64, half::f16 => F16);
    Ok(None)
}

/// Reads a model's result: numpy arrays (copied once into Rust), lists and scalars
/// (made numpy arrays first, as Seldon does), bytes, str, dicts.
pub fn py_to_output(obj: &Bound<'_, PyAny>) -> PyResult<Output> {
    let py = obj.py();
    if let Ok(arr) = obj.cast::<PyUntypedArray>() {
        return array_output(arr);
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Output::Bin(Bytes::copy_from_slice(b.as_bytes())));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Output::Str(s.to_str()?.to_owned()));
    }
    if obj.cast::<PyDict>().is_ok() {
        return Ok(Output::Json(py_to_json(obj)?));
    }
    let arr = numpy(py)?.getattr("asarray")?.call1((obj,))?;
    match arr.cast::<PyUntypedArray>() {
        Ok(a) => array_output(a),
        Err(_) => Ok(Output::Json(py_to_json(obj)?)),
    }
}

fn array_output(arr: &Bound<'_, PyUntypedArray>) -> PyResult<Output> {
    if let Some(t) = numpy_to_tensor(arr)? {
        return Ok(Output::Array(Array::Numeric(t)));
    }
    Ok(Output::Array(Array::Json(py_to_json(
        &arr.call_method0("tolist")?,
    )?)))
}

/// Any JSON-like Python value (numpy arrays and scalars included) → JSON.
pub fn py_to_json(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.cast::<PyInt>().is_ok() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Ok(Number::from_f64(obj.extract::<f64>()?).map_or(Value::Null, Value::Number));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(Number::from_f64(f.value()).map_or(Value::Null, Value::Number));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_str()?.to_owned()));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut m = Map::new();
        for (k, v) in d.iter() {
            let key = match k.cast::<PyString>() {
                Ok(s) => s.to_str()?.to_owned(),
                Err(_) => k.str()?.to_str()?.to_owned(),
            };
            m.insert(key, py_to_json(&v)?);
        }
        return Ok(Value::Object(m));
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Value::String(
            base64_simd::STANDARD.encode_to_string(b.as_bytes()),
        ));
    }
    if obj.cast::<PyUntypedArray>().is_ok() || obj.hasattr("item")? && obj.hasattr("dtype")? {
        // numpy arrays and numpy scalars
        return py_to_json(&obj.call_method0("tolist")?);
    }
    if let Ok(iter) = obj.try_iter() {
        return Ok(Value::Array(
            iter.map(|x| py_to_json(&x?)).collect::<PyResult<_>>()?,
        ));
    }
    Err(PyTypeError::new_err(format!(
        "cannot encode a {} as JSON; return numbers, strings, lists, dicts or numpy arrays",
        obj.get_type().name()?
    )))
}

/// A V2 output: numpy arrays (or lists, made arrays) of numbers, booleans, or strings and
/// bytes (BYTES: str is sent as its UTF-8 bytes).
pub fn py_to_tensor(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Tensor> {
    let py = obj.py();
    let arr = match obj.cast::<PyUntypedArray>() {
        Ok(a) => a.clone(),
        Err(_) => numpy(py)?
            .getattr("asarray")?
            .call1((obj,))?
            .cast_into::<PyUntypedArray>()?,
    };
    if let Some(t) = numpy_to_tensor(&arr)? {
        return Ok(t);
    }
    let shape = arr.shape().to_vec();
    let flat = arr.call_method0("ravel")?.call_method0("tolist")?;
    let mut items = Vec::with_capacity(shape.iter().product());
    for item in flat.try_iter()? {
        let item = item?;
        if let Ok(b) = item.cast::<PyBytes>() {
            items.push(Bytes::copy_from_slice(b.as_bytes()));
        } else if let Ok(s) = item.cast::<PyString>() {
            items.push(Bytes::copy_from_slice(s.to_str()?.as_bytes()));
        } else {
            return Err(PyTypeError::new_err(format!(
                "output {name:?}: a {} array cannot be sent over V2 (numbers, booleans, str or \
                 bytes only); got an element of type {}",
                arr.dtype(),
                item.get_type().name()?
            )));
        }
    }
    Tensor::new(shape, TensorData::Bytes(items))
        .map_err(|e| PyTypeError::new_err(format!("output {name:?}: {}", e.message)))
}
