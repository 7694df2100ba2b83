//! Generic JSON values: the fallback for data that is not a numeric array.
use serde_json::Value;

/// Groups a flat list of values into nested arrays of the given shape.
pub fn nest(shape: &[usize], flat: Vec<Value>) -> Value {
    match shape {
        [] => flat.into_iter().next().unwrap_or(Value::Null),
        [_] => Value::Array(flat),
        [n, rest @ ..] => {
            let step: usize = rest.iter().product();
            let mut it = flat.into_iter();
            Value::Array(
                (0..*n)
                    .map(|_| nest(rest, it.by_ref().take(step).collect()))
                    .collect(),
            )
        }
    }
}
