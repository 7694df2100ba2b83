//! Nested JSON arrays of numbers parsed straight into one typed buffer.
//!
//! This is the hot path for `ndarray` and `tensor.values`: no generic JSON tree and no
//! allocation per element. It accepts only rectangular arrays whose leaves are all
//! numbers or all booleans; anything else returns `Ok(None)` and the caller falls back
//! to a generic parser, which also produces the error message for malformed JSON.
use crate::error::{CodecError, Result};
use crate::limits::Limits;
use crate::tensor::{Tensor, TensorData};

/// The strings that stand for non-finite floats in JSON, both ways (protobuf's JSON
/// mapping spells them so): JSON has no number for them, and strict parsers refuse the
/// bare `NaN` that Python's json module writes.
pub fn non_finite(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// A rectangular array of numbers among which some are the strings `non_finite` reads:
/// its shape and float64 values. `None` for anything else, and, unless `names_alone`,
/// for an array of those strings with no number (in Seldon's `ndarray` that is a list of
/// strings, as numpy would have it).
pub fn with_non_finite(v: &serde_json::Value, names_alone: bool) -> Option<(Vec<usize>, Vec<f64>)> {
    use serde_json::Value;
    let mut shape = Vec::new();
    let mut probe = v;
    while let Value::Array(items) = probe {
        shape.push(items.len());
        probe = items.first()?;
    }
    fn walk(v: &Value, shape: &[usize], out: &mut Vec<f64>, numbers: &mut bool) -> Option<()> {
        match (v, shape.split_first()) {
            (Value::Array(items), Some((&n, rest))) if items.len() == n => {
                items.iter().try_for_each(|x| walk(x, rest, out, numbers))
            }
            (Value::Number(x), None) => {
                *numbers = true;
                out.push(x.as_f64()?);
                Some(())
            }
            (Value::String(s), None) => {
                out.push(non_finite(s)?);
                Some(())
            }
            _ => None,
        }
    }
    let mut out = Vec::new();
    let mut numbers = false;
    walk(v, &shape, &mut out, &mut numbers)?;
    (numbers || names_alone).then_some((shape, out))
}

/// `v` converted to a narrower float type, refusing finite values past its range (1e39
/// as float32) rather than making them infinite; NaN and the infinities pass.
pub fn narrow<T: Copy + Into<f64>>(
    v: Vec<f64>,
    to: impl Fn(f64) -> T,
    type_name: &str,
) -> Result<Vec<T>> {
    v.into_iter()
        .map(|x| {
            let y = to(x);
            if x.is_finite() && !y.into().is_finite() {
                Err(CodecError::bad_request(format!(
                    "{x:e} is past the range of {type_name}"
                )))
            } else {
                Ok(y)
            }
        })
        .collect()
}

enum Leaves {
    Unknown,
    Int(Vec<i64>),
    Float(Vec<f64>),
    Bool(Vec<bool>),
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    /// Length of each dimension, learned from the first array seen at each depth.
    shape: Vec<usize>,
    /// Depth at which leaves sit, fixed by the first leaf (or empty array) seen.
    rank: Option<usize>,
    leaves: Leaves,
    count: usize,
    limits: Limits,
}

/// Why the fast path gave up: `Fallback` is not an error, just "not for me".
enum Stop {
    Fallback,
    Limit(CodecError),
}

type Step<T> = std::result::Result<T, Stop>;

/// Parses `input` (one JSON value) as a rectangular numeric array.
pub fn parse_array(input: &[u8], limits: Limits) -> Result<Option<Tensor>> {
    Ok(match parse_array_prefix(input, limits)? {
        Some((t, end)) if input[end..].iter().all(u8::is_ascii_whitespace) => Some(t),
        _ => None,
    })
}

/// Parses the array at the start of `input` (after optional whitespace) and returns it
/// with the index just past its closing bracket; what follows is not looked at.
pub fn parse_array_prefix(input: &[u8], limits: Limits) -> Result<Option<(Tensor, usize)>> {
    let mut p = Parser {
        b: input,
        i: 0,
        shape: Vec::new(),
        rank: None,
        leaves: Leaves::Unknown,
        count: 0,
        limits,
    };
    p.ws();
    if p.peek() != Some(b'[') {
        return Ok(None);
    }
    match p.array(0) {
        Ok(()) => {}
        Err(Stop::Fallback) => return Ok(None),
        Err(Stop::Limit(e)) => return Err(e),
    }
    let end = p.i;
    let rank = p.rank.unwrap_or(p.shape.len());
    p.shape.truncate(rank);
    let data = match p.leaves {
        // Only empty arrays: numpy makes float64 of them.
        Leaves::Unknown => TensorData::F64(Vec::new()),
        Leaves::Int(v) => TensorData::I64(v),
        Leaves::Float(v) => TensorData::F64(v),
        Leaves::Bool(v) => TensorData::Bool(v),
    };
    Ok(Tensor::new(p.shape, data).ok().map(|t| (t, end)))
}

impl Parser<'_> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.i += 1;
        }
    }

    fn array(&mut self, depth: usize) -> Step<()> {
        if depth >= self.limits.max_depth {
            return Err(Stop::Fallback);
        }
        self.i += 1; // '['
        if self.shape.len() == depth {
            self.shape.push(usize::MAX); // length not known yet
        }
        let mut n = 0usize;
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            // An empty array is a leaf level: nothing may nest below it.
            return self.close(depth, 0, true);
        }
        loop {
            self.ws();
            match self.peek() {
                Some(b'[') => {
                    if self.rank.is_some_and(|r| r <= depth + 1) {
                        return Err(Stop::Fallback);
                    }
                    self.array(depth + 1)?;
                }
                Some(_) => {
                    match self.rank {
                        None => self.rank = Some(depth + 1),
                        Some(r) if r != depth + 1 => return Err(Stop::Fallback),
                        _ => {}
                    }
                    // An integer run stops before an element that is not a plain integer,
                    // which the general path below then parses.
                    if matches!(self.leaves, Leaves::Int(_) | Leaves::Unknown)
                        && matches!(self.peek(), Some(b'-' | b'0'..=b'9'))
                        && self.int_run(&mut n)?
                    {
                        return self.close(depth, n, false);
                    }
                    self.leaf()?;
                }
                None => return Err(Stop::Fallback),
            }
            n += 1;
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return self.close(depth, n, false);
                }
                _ => return Err(Stop::Fallback),
            }
        }
    }

    fn close(&mut self, depth: usize, n: usize, empty: bool) -> Step<()> {
        if empty {
            match self.rank {
                None => self.rank = Some(depth + 1),
                Some(r) if r != depth + 1 => return Err(Stop::Fallback),
                _ => {}
            }
        }
        let known = &mut self.shape[depth];
        if *known == usize::MAX {
            *known = n;
        } else if *known != n {
            return Err(Stop::Fallback); // ragged: numpy would make an object array
        }
        Ok(())
    }

    /// The hot loop: a run of plain integers (at most 18 digits) separated by commas.
    /// Returns true when it consumed the array's closing bracket; false when it stopped
    /// at the start of an element the general path must parse (`self.i` points there).
    fn int_run(&mut self, n: &mut usize) -> Step<bool> {
        if matches!(self.leaves, Leaves::Unknown) {
            // A guess from the bytes up to the first `]` (numbers here average more than
            // 4 bytes each): the whole of a flat array, a row of a nested one (which then
            // grows by doubling). Not from all the bytes left: a request of many small
            // inputs would reserve the rest of its body once per input.
            let rest = &self.b[self.i..];
            let extent = memchr::memchr(b']', rest).unwrap_or(rest.len());
            let guess = (extent / 4 + 1).min(self.limits.max_elements);
            self.leaves = Leaves::Int(Vec::with_capacity(guess));
        }
        let Leaves::Int(values) = &mut self.leaves else {
            return Ok(false);
        };
        let b = self.b;
        let mut i = self.i;
        loop {
            let start = i;
            let neg = b.get(i) == Some(&b'-');
            i += usize::from(neg);
            // At most 18 digits, which always fit: no overflow check in the loop.
            let digits = &b[i.min(b.len())..(i + 18).min(b.len())];
            let mut acc: u64 = 0;
            let mut nd = 0;
            for &c in digits {
                let d = c.wrapping_sub(b'0');
                if d > 9 {
                    break;
                }
                acc = acc * 10 + u64::from(d);
                nd += 1;
            }
            let first = digits.first().copied();
            i += nd;
            let plain = nd > 0
                && !(nd > 1 && first == Some(b'0'))
                && !matches!(b.get(i), Some(b'.' | b'e' | b'E' | b'0'..=b'9'));
            if !plain {
                self.i = start;
                return Ok(false);
            }
            self.count += 1;
            if self.count > self.limits.max_elements {
                return Err(Stop::Limit(CodecError::bad_request(format!(
                    "array has more than the limit of {} elements (the max_elements setting)",
                    self.limits.max_elements
                ))));
            }
            values.push(if neg { -(acc as i64) } else { acc as i64 });
            *n += 1;
            // The usual separators, ", " and ",", before the general case.
            match (b.get(i), b.get(i + 1)) {
                (Some(b','), Some(b' ')) => i += 2,
                (Some(b','), _) => i += 1,
                (Some(b']'), _) => {
                    self.i = i + 1;
                    return Ok(true);
                }
                _ => {
                    while let Some(b' ' | b'\n' | b'\r' | b'\t') = b.get(i) {
                        i += 1;
                    }
                    match b.get(i) {
                        Some(b',') => i += 1,
                        Some(b']') => {
                            self.i = i + 1;
                            return Ok(true);
                        }
                        _ => return Err(Stop::Fallback),
                    }
                }
            }
            while let Some(b' ' | b'\n' | b'\r' | b'\t') = b.get(i) {
                i += 1;
            }
        }
    }

    #[inline]
    fn leaf(&mut self) -> Step<()> {
        self.count += 1;
        if self.count > self.limits.max_elements {
            return Err(Stop::Limit(CodecError::bad_request(format!(
                "array has more than the limit of {} elements (the max_elements setting)",
                self.limits.max_elements
            ))));
        }
        match self.peek() {
            Some(b't') => self.boolean(b"true", true),
            Some(b'f') => self.boolean(b"false", false),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(Stop::Fallback),
        }
    }

    fn boolean(&mut self, word: &[u8], value: bool) -> Step<()> {
        if !self.b[self.i..].starts_with(word) {
            return Err(Stop::Fallback);
        }
        self.i += word.len();
        match &mut self.leaves {
            Leaves::Unknown => self.leaves = Leaves::Bool(vec![value]),
            Leaves::Bool(v) => v.push(value),
            _ => return Err(Stop::Fallback),
        }
        Ok(())
    }

    #[inline]
    fn number(&mut self) -> Step<()> {
        let start = self.i;
        let neg = self.b[self.i] == b'-';
        if neg {
            self.i += 1;
        }
        let digits = self.i;
        let mut acc: u64 = 0;
        let mut overflow = false;
        while let Some(c @ b'0'..=b'9') = self.peek() {
            match acc
                .checked_mul(10)
                .and_then(|a| a.checked_add(u64::from(c - b'0')))
            {
                Some(a) => acc = a,
                None => overflow = true,
            }
            self.i += 1;
        }
        let nd = self.i - digits;
        if nd == 0 || (nd > 1 && self.b[digits] == b'0') {
            return Err(Stop::Fallback); // not JSON
        }
        let is_float = matches!(self.peek(), Some(b'.' | b'e' | b'E'));
        if !is_float && !overflow {
            let as_int = if neg {
                if acc <= i64::MAX as u64 + 1 {
                    Some((acc as i64).wrapping_neg())
                } else {
                    None
                }
            } else {
                i64::try_from(acc).ok()
            };
            if let Some(x) = as_int {
                match &mut self.leaves {
                    Leaves::Int(v) => v.push(x),
                    Leaves::Float(v) => v.push(x as f64),
                    Leaves::Unknown => self.leaves = Leaves::Int(vec![x]),
                    Leaves::Bool(_) => return Err(Stop::Fallback),
                }
                return Ok(());
            }
        }
        // JSON's grammar, which fast_float is laxer than ("0." and "1e" are not JSON):
        // a fraction and an exponent each need at least one digit.
        let digits_from = |mut i: usize| {
            let from = i;
            while self.b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            (i > from).then_some(i)
        };
        let mut end = self.i;
        if self.b.get(end) == Some(&b'.') {
            end = digits_from(end + 1).ok_or(Stop::Fallback)?;
        }
        if let Some(b'e' | b'E') = self.b.get(end) {
            let sign = usize::from(matches!(self.b.get(end + 1), Some(b'+' | b'-')));
            end = digits_from(end + 1 + sign).ok_or(Stop::Fallback)?;
        }
        let (x, len) = fast_float2::parse_partial::<f64, _>(&self.b[start..end])
            .map_err(|_| Stop::Fallback)?;
        // Past float64's range (1e999): not a number JSON can hold; the general parser
        // refuses it with its position.
        if start + len != end || !x.is_finite() {
            return Err(Stop::Fallback);
        }
        self.i = end;
        self.push_float(x)
    }

    fn push_float(&mut self, x: f64) -> Step<()> {
        match &mut self.leaves {
            Leaves::Float(v) => v.push(x),
            Leaves::Int(ints) => {
                let mut v: Vec<f64> = Vec::with_capacity(ints.capacity());
                v.extend(ints.iter().map(|&i| i as f64));
                v.push(x);
                self.leaves = Leaves::Float(v);
            }
            Leaves::Unknown => self.leaves = Leaves::Float(vec![x]),
            Leaves::Bool(_) => return Err(Stop::Fallback),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_strings_both_ways() {
        let v: serde_json::Value =
            serde_json::from_str(r#"[[1, "NaN"], ["-Infinity", 2.5]]"#).unwrap();
        let (shape, values) = with_non_finite(&v, false).unwrap();
        assert_eq!(shape, vec![2, 2]);
        assert!(values[1].is_nan() && values[2] == f64::NEG_INFINITY && values[3] == 2.5);
        // Strings alone stay strings unless the caller knows the values are numbers.
        let names: serde_json::Value = serde_json::from_str(r#"["NaN"]"#).unwrap();
        assert!(with_non_finite(&names, false).is_none());
        assert!(with_non_finite(&names, true).is_some());
        // Ragged, or another string: not numbers.
        for bad in [r#"[[1, 2], [3]]"#, r#"[1, "nan"]"#, r#"[1, [2]]"#] {
            let v: serde_json::Value = serde_json::from_str(bad).unwrap();
            assert!(with_non_finite(&v, true).is_none(), "{bad}");
        }
        // Past float64's range is not taken as Infinity by the fast path.
        assert!(parse_array(b"[1, 1e999]", Limits::default())
            .unwrap()
            .is_none());
        let e = narrow(vec![1e39], |x| x as f32, "FP32")
            .unwrap_err()
            .to_string();
        assert!(e.contains("1e39 is past the range of FP32"), "{e}");
        assert!(narrow(vec![f64::NAN, f64::INFINITY, 3.0], |x| x as f32, "FP32").is_ok());
    }

    #[test]
    fn numbers_outside_json_grammar_are_not_taken() {
        // Found by fuzzing: fast_float reads "0." as 0.0; serde_json (and JSON) refuse it.
        for text in ["[0.]", "[1.e5]", "[1e]", "[1e+]", "[-1.]", "[2E-]"] {
            assert!(
                parse_array(text.as_bytes(), Limits::default())
                    .unwrap()
                    .is_none(),
                "{text}"
            );
        }
        for (text, x) in [
            ("[0.5]", 0.5),
            ("[1e5]", 1e5),
            ("[1E+2]", 100.0),
            ("[-2.5e-1]", -0.25),
        ] {
            let t = parse_array(text.as_bytes(), Limits::default())
                .unwrap()
                .unwrap();
            assert_eq!(t.data, TensorData::F64(vec![x]), "{text}");
        }
    }

    fn parse(s: &str) -> Option<Tensor> {
        parse_array(s.as_bytes(), Limits::default()).unwrap()
    }

    proptest::proptest! {
        #[test]
        fn integer_lists_match_serde(
            values in proptest::collection::vec(proptest::prop_oneof![
                0i64..10,
                0i64..100_000,
                -99_999_999i64..99_999_999,
                proptest::num::i64::ANY,
            ], 1..40),
            sep in proptest::sample::select(vec![",", ", ", " ,", ",\n  "]),
        ) {
            let text = format!(
                "[{}]",
                values.iter().map(i64::to_string).collect::<Vec<_>>().join(sep)
            );
            let got = parse(&text).expect("an integer array");
            proptest::prop_assert_eq!(got.shape, vec![values.len()]);
            let want: Vec<i64> = serde_json::from_str(&text).unwrap();
            proptest::prop_assert_eq!(got.data, TensorData::I64(want));
        }
    }

    #[test]
    fn integers_keep_their_type_and_shape() {
        let t = parse("[[1, 2, 3], [4, 5, -6]]").unwrap();
        assert_eq!(t.shape, vec![2, 3]);
        assert_eq!(t.data, TensorData::I64(vec![1, 2, 3, 4, 5, -6]));
    }

    #[test]
    fn one_float_makes_all_floats() {
        let t = parse("[1, 2.5, 3e2]").unwrap();
        assert_eq!(t.data, TensorData::F64(vec![1.0, 2.5, 300.0]));
    }

    #[test]
    fn booleans() {
        let t = parse("[true, false]").unwrap();
        assert_eq!(t.data, TensorData::Bool(vec![true, false]));
    }

    #[test]
    fn empty_arrays() {
        let t = parse("[]").unwrap();
        assert_eq!((t.shape, t.data), (vec![0], TensorData::F64(vec![])));
        let t = parse("[[], []]").unwrap();
        assert_eq!(t.shape, vec![2, 0]);
    }

    #[test]
    fn extremes() {
        let t = parse("[-9223372036854775808, 9223372036854775807]").unwrap();
        assert_eq!(t.data, TensorData::I64(vec![i64::MIN, i64::MAX]));
        let t = parse("[18446744073709551616]").unwrap();
        assert_eq!(t.data, TensorData::F64(vec![18446744073709551616.0]));
    }

    #[test]
    fn not_for_the_fast_path() {
        for s in [
            "[[1, 2], [3]]",
            "[1, [2]]",
            "[[1], 2]",
            "[\"a\"]",
            "[1, true]",
            "[null]",
            "[1,]",
            "[01]",
            "[1] x",
            "[[1], []]",
            "{}",
        ] {
            assert!(parse(s).is_none(), "{s}");
        }
    }

    #[test]
    fn integer_runs_hand_over_to_the_general_path() {
        let t = parse("[1, 2, 3.5, 4, 123456789012345678, 1234567890123456789, -0, 0]").unwrap();
        assert_eq!(
            t.data,
            TensorData::F64(vec![
                1.0,
                2.0,
                3.5,
                4.0,
                123456789012345678.0,
                1234567890123456789.0,
                0.0,
                0.0
            ])
        );
        let t = parse("[[ 1 , -2 ],[3,4 ] ]").unwrap();
        assert_eq!(t.data, TensorData::I64(vec![1, -2, 3, 4]));
        let t = parse("[1234567890123456789, -9223372036854775808]").unwrap();
        assert_eq!(t.data, TensorData::I64(vec![1234567890123456789, i64::MIN]));
        assert!(parse("[1, 2 3]").is_none());
        assert!(parse("[1, -]").is_none());
        assert!(parse("[1, 02]").is_none());
    }

    #[test]
    fn prefix_reports_the_end() {
        let (t, end) = parse_array_prefix(b" [1, 2] , 3", Limits::default())
            .unwrap()
            .unwrap();
        assert_eq!((t.len(), end), (2, 7));
    }

    #[test]
    fn element_limit() {
        let limits = Limits {
            max_elements: 2,
            ..Limits::default()
        };
        assert!(parse_array(b"[1, 2, 3]", limits).is_err());
    }
}
