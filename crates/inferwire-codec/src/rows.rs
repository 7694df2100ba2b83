//! Tensors joined and cut along their first axis: how dynamic batching turns several
//! requests into one model call and the model's answer back into one reply each.
use crate::tensor::{Tensor, TensorData};
use crate::with_data;

/// Rows in `t` (its first dimension; a 0-d tensor has no rows).
pub fn row_count(t: &Tensor) -> Option<usize> {
    t.shape.first().copied()
}

/// `parts` stacked along axis 0, copied once into one new buffer. Every part must have
/// the same dtype and the same dimensions after the first (the caller groups requests
/// so that they do).
pub fn concat(parts: &[&Tensor]) -> crate::Result<Tensor> {
    let Some(first) = parts.first() else {
        return Err(crate::CodecError::bad_request("no tensors to join"));
    };
    if first.shape.is_empty() {
        return Err(crate::CodecError::bad_request(
            "a 0-d tensor has no rows to join",
        ));
    }
    let mut shape = first.shape.clone();
    shape[0] = 0;
    for part in parts {
        if part.shape.len() != shape.len() || part.shape[1..] != shape[1..] {
            return Err(crate::CodecError::bad_request(format!(
                "cannot join a {:?} tensor to a {:?} one along the first axis",
                part.shape, first.shape
            )));
        }
        if part.dtype() != first.dtype() {
            return Err(crate::CodecError::bad_request(format!(
                "cannot join {:?} and {:?} elements",
                part.dtype(),
                first.dtype()
            )));
        }
        shape[0] += part.shape[0];
    }
    let total: usize = parts.iter().map(|p| p.len()).sum();
    macro_rules! join_all {
        ($($v:ident),*) => {
            match &first.data {
                $(TensorData::$v(v0) => {
                    let mut out = Vec::with_capacity(total);
                    out.extend_from_slice(v0);
                    for part in &parts[1..] {
                        // Every part has the first's dtype (checked above).
                        if let TensorData::$v(v) = &part.data {
                            out.extend_from_slice(v);
                        }
                    }
                    TensorData::$v(out)
                })*
            }
        };
    }
    let data = join_all!(Bool, U8, U16, U32, U64, I8, I16, I32, I64, F16, BF16, F32, F64, Bytes);
    Tensor::new(shape, data)
}

/// `t` cut into consecutive blocks of `rows[i]` rows each; the rows must add up to `t`'s
/// first dimension. The error says what the model returned, for its author.
pub fn split(t: Tensor, rows: &[usize]) -> crate::Result<Vec<Tensor>> {
    let total: usize = rows.iter().sum();
    if row_count(&t) != Some(total) {
        return Err(crate::CodecError::bad_output(format!(
            "with batching on, the model must return one row per input row: it returned \
             shape {:?} for {total} rows from {} requests",
            t.shape,
            rows.len()
        )));
    }
    let per_row: usize = t.shape[1..].iter().product();
    let mut out = Vec::with_capacity(rows.len());
    let mut start = 0;
    with_data!(&t.data, v => {
        for &n in rows {
            let end = start + n * per_row;
            let mut shape = t.shape.clone();
            shape[0] = n;
            out.push(Tensor {
                shape,
                data: v[start..end].to_vec().into(),
            });
            start = end;
        }
    });
    Ok(out)
}

macro_rules! from_vec {
    ($($t:ty => $v:ident),*) => {
        $(impl From<Vec<$t>> for TensorData {
            fn from(v: Vec<$t>) -> Self {
                TensorData::$v(v)
            }
        })*
    };
}
from_vec!(bool => Bool, u8 => U8, u16 => U16, u32 => U32, u64 => U64, i8 => I8, i16 => I16,
    i32 => I32, i64 => I64, half::f16 => F16, half::bf16 => BF16, f32 => F32, f64 => F64,
    bytes::Bytes => Bytes);

#[cfg(test)]
mod tests {
    use super::*;

    fn t(shape: &[usize], v: Vec<i64>) -> Tensor {
        Tensor::new(shape.to_vec(), TensorData::I64(v)).unwrap()
    }

    #[test]
    fn join_then_cut_gives_the_parts_back() {
        let a = t(&[1, 2], vec![1, 2]);
        let b = t(&[2, 2], vec![3, 4, 5, 6]);
        let c = t(&[0, 2], vec![]);
        let joined = concat(&[&a, &b, &c]).unwrap();
        assert_eq!(joined, t(&[3, 2], vec![1, 2, 3, 4, 5, 6]));
        assert_eq!(split(joined, &[1, 2, 0]).unwrap(), vec![a, b, c]);
    }

    #[test]
    fn mismatches_are_refused() {
        assert!(concat(&[&t(&[1, 2], vec![1, 2]), &t(&[1, 1], vec![3])]).is_err());
        let f = Tensor::new(vec![1], TensorData::F64(vec![1.0])).unwrap();
        assert!(concat(&[&t(&[1], vec![1]), &f]).is_err());
        assert!(concat(&[&t(&[], vec![1])]).is_err());
        let e = split(t(&[2], vec![1, 2]), &[1, 2]).unwrap_err();
        assert!(e.message.contains("one row per input row"), "{e:?}");
        assert!(split(t(&[], vec![1]), &[1]).is_err());
    }
}
