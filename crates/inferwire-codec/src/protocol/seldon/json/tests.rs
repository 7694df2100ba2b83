use super::*;

fn decode(s: &str) -> Result<SeldonMessage> {
    decode_message(s.as_bytes(), &Limits::default())
}

fn encode(m: &SeldonMessage) -> String {
    let mut out = Vec::new();
    encode_message(m, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn numeric(m: &SeldonMessage) -> (&Tensor, Encoding) {
    match &m.payload {
        Payload::Data {
            array: Array::Numeric(t),
            encoding,
            ..
        } => (t, *encoding),
        other => panic!("not numeric: {other:?}"),
    }
}

#[test]
fn notebook_ndarray() {
    let m = decode(r#"{"data": {"ndarray": [[0, 1, 2]]}}"#).unwrap();
    let (t, enc) = numeric(&m);
    assert_eq!(enc, Encoding::Ndarray);
    assert_eq!(t.shape, vec![1, 3]);
    assert_eq!(t.data, TensorData::I64(vec![0, 1, 2]));
}

#[test]
fn notebook_tensor() {
    let m = decode(r#"{"data":{"tensor":{"shape":[1,3],"values":[0, 1, 2]}}}"#).unwrap();
    let (t, enc) = numeric(&m);
    assert_eq!(enc, Encoding::Tensor);
    assert_eq!(t.shape, vec![1, 3]);
}

#[test]
fn notebook_tftensor_content_and_int64val() {
    // 3 int64 values 0, 1, 2 as TensorFlow's make_tensor_proto + MessageToJson writes them.
    let m = decode(r#"{"data":{"tftensor":{"dtype":"DT_INT64","tensorShape":{"dim":[{"size":"3"}]},"tensorContent":"AAAAAAAAAAABAAAAAAAAAAIAAAAAAAAA"}}}"#).unwrap();
    assert_eq!(numeric(&m).0.data, TensorData::I64(vec![0, 1, 2]));
    let m = decode(r#"{"data":{"tftensor":{"dtype":"DT_INT64","tensorShape":{"dim":[{"size":"1"}]},"int64Val":["7"]}}}"#).unwrap();
    assert_eq!(numeric(&m).0.data, TensorData::I64(vec![7]));
}

#[test]
fn reply_shapes_match_the_notebook() {
    let one = Tensor::new(vec![1], TensorData::I64(vec![1])).unwrap();
    let mut meta = Meta::default();
    meta.request_path.insert("classifier".into(), "noop".into());
    for (enc, want) in [
        (
            Encoding::Ndarray,
            r#"{"data":{"names":[],"ndarray":[1]},"meta":{"requestPath":{"classifier":"noop"}}}"#,
        ),
        (
            Encoding::Tensor,
            r#"{"data":{"names":[],"tensor":{"shape":[1],"values":[1]}},"meta":{"requestPath":{"classifier":"noop"}}}"#,
        ),
        (
            Encoding::TfTensor,
            r#"{"data":{"names":[],"tftensor":{"dtype":"DT_INT64","tensorShape":{"dim":[{"size":"1"}]},"int64Val":["1"]}},"meta":{"requestPath":{"classifier":"noop"}}}"#,
        ),
    ] {
        let m = SeldonMessage {
            status: None,
            meta: meta.clone(),
            payload: Payload::Data {
                names: vec![],
                encoding: enc,
                array: Array::Numeric(one.clone()),
            },
        };
        assert_eq!(encode(&m), want);
    }
}

#[test]
fn round_trip_every_payload_kind() {
    let cases = [
        r#"{"data":{"names":["a","b"],"ndarray":[[1.5,2.0],[3.0,4.0]]},"meta":{}}"#,
        r#"{"data":{"names":[],"ndarray":[["a",1],["b",2]]},"meta":{}}"#,
        r#"{"data":{"names":[],"tensor":{"shape":[2,2],"values":[1,2,3,4]}},"meta":{}}"#,
        r#"{"binData":"AAEC","meta":{}}"#,
        r#"{"strData":"hello \"you\"","meta":{}}"#,
        r#"{"jsonData":{"a":[1,2,{"b":null}]},"meta":{}}"#,
        r#"{"status":{"code":400,"info":"x","reason":"BAD","status":"FAILURE"},"meta":{}}"#,
        r#"{"meta":{"puid":"p1","tags":{"t":1},"routing":{"r":0},"requestPath":{"m":"i"},"metrics":[{"key":"k","type":"GAUGE","value":2.0}]}}"#,
    ];
    for c in cases {
        let m = decode(c).unwrap();
        assert_eq!(encode(&m), c);
    }
}

#[test]
fn every_tftensor_dtype_round_trips_through_json() {
    use half::f16;
    let datas = vec![
        TensorData::Bool(vec![true, false]),
        TensorData::U8(vec![0, 255]),
        TensorData::U16(vec![0, 65535]),
        TensorData::U32(vec![0, u32::MAX]),
        TensorData::U64(vec![0, u64::MAX]),
        TensorData::I8(vec![-128, 127]),
        TensorData::I16(vec![-1, 2]),
        TensorData::I32(vec![i32::MIN, 2]),
        TensorData::I64(vec![i64::MIN, i64::MAX]),
        TensorData::F16(vec![f16::from_f32(0.5), f16::from_f32(-1.0)]),
        TensorData::F32(vec![0.5, f32::NAN]),
        TensorData::F64(vec![0.1, f64::INFINITY]),
        TensorData::Bytes(vec![
            bytes::Bytes::from_static(b"x"),
            bytes::Bytes::from_static(b"yz"),
        ]),
    ];
    for data in datas {
        for n in [1usize, 2] {
            let mut d = data.clone();
            crate::with_data!(&mut d, v => v.truncate(n));
            let t = Tensor::new(vec![n], d).unwrap();
            let m = SeldonMessage {
                payload: Payload::Data {
                    names: vec![],
                    encoding: Encoding::TfTensor,
                    array: Array::Numeric(t.clone()),
                },
                ..Default::default()
            };
            let back = decode(&encode(&m)).unwrap();
            let (got, _) = numeric(&back);
            // NaN != NaN: compare the encodings instead.
            assert_eq!(encode(&back), encode(&m), "{t:?} -> {got:?}");
        }
    }
}

#[test]
fn errors_name_the_field() {
    let cases = [
        ("", "empty body"),
        ("{", "invalid JSON"),
        ("[1]", "invalid JSON"),
        (
            r#"{"data":{"tensor":{"shape":[2,2],"values":[1,2,3]}}}"#,
            "data.tensor: shape [2, 2] needs 4 values but 3 were given",
        ),
        (
            r#"{"data":{"tensor":{"shape":"x","values":[1]}}}"#,
            "data.tensor.shape",
        ),
        (
            r#"{"data":{"tensor":{"shape":[1],"values":["a"]}}}"#,
            "data.tensor: values: must be a flat list of numbers",
        ),
        (
            r#"{"data":{"tensor":{"shape":[-1],"values":[1]}}}"#,
            "negative",
        ),
        (
            r#"{"data":{"ndarray":5}}"#,
            "data.ndarray: must be a (nested) list, got a number",
        ),
        (
            r#"{"data":{"tftensor":{"dtype":"DT_NOPE"}}}"#,
            "data.tftensor.dtype",
        ),
        (
            r#"{"data":{"tftensor":{"dtype":"DT_INT64","tensorShape":{"dim":[{"size":"2"}]},"tensorContent":"AAAA"}}}"#,
            "tensor_content",
        ),
        (
            r#"{"data":{"tftensor":{"dtype":"DT_INT64","tensorContent":"!!"}}}"#,
            "invalid base64",
        ),
        (r#"{"data":{"ndarray":[1]},"strData":"x"}"#, "only one of"),
        (r#"{"binData":"***"}"#, "binData: invalid base64"),
        (
            r#"{"meta":{"metrics":[{"key":"k","type":"NOPE"}]}}"#,
            "meta.metrics[0].type",
        ),
    ];
    for (body, want) in cases {
        let e = decode(body).unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::BadRequest, "{body}");
        assert!(
            e.message.contains(want),
            "{body}: {} does not contain {want}",
            e.message
        );
    }
}

#[test]
fn limits_are_checked_before_allocating() {
    let limits = Limits {
        max_elements: 10,
        ..Limits::default()
    };
    for body in [
        r#"{"data":{"tensor":{"shape":[1000000,1000000],"values":[1]}}}"#,
        r#"{"data":{"tensor":{"shape":[9223372036854775807,9223372036854775807],"values":[1]}}}"#,
        r#"{"data":{"tftensor":{"dtype":"DT_FLOAT","tensorShape":{"dim":[{"size":"100000000000"}]}}}}"#,
        r#"{"data":{"ndarray":[1,2,3,4,5,6,7,8,9,10,11]}}"#,
    ] {
        let e = decode_message(body.as_bytes(), &limits).unwrap_err();
        assert_eq!(
            e.kind,
            crate::ErrorKind::BadRequest,
            "{body}: {}",
            e.message
        );
        assert!(e.message.contains("limit"), "{}", e.message);
    }
}

#[test]
fn non_numeric_output_in_tensor_encoding_is_an_output_error() {
    let m = SeldonMessage {
        payload: Payload::Data {
            names: vec![],
            encoding: Encoding::Tensor,
            array: Array::Json(serde_json::json!(["a"])),
        },
        ..Default::default()
    };
    let e = encode_message(&m, &mut Vec::new()).unwrap_err();
    assert_eq!(e.kind, crate::ErrorKind::BadOutput);
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn ndarray_int_round_trip(rows in 1usize..5, cols in 1usize..6, seed in any::<i64>()) {
            let values: Vec<i64> = (0..rows * cols).map(|i| seed.wrapping_mul(i as i64 + 1)).collect();
            let t = Tensor::new(vec![rows, cols], TensorData::I64(values)).unwrap();
            for enc in [Encoding::Ndarray, Encoding::TfTensor] {
                let m = SeldonMessage {
                    payload: Payload::Data { names: vec![], encoding: enc, array: Array::Numeric(t.clone()) },
                    ..Default::default()
                };
                let back = decode(&encode(&m)).unwrap();
                prop_assert_eq!(numeric(&back).0, &t);
            }
        }

        #[test]
        fn ndarray_float_round_trip(values in proptest::collection::vec(-1e300f64..1e300, 1..50)) {
            let t = Tensor::new(vec![values.len()], TensorData::F64(values)).unwrap();
            let m = SeldonMessage {
                payload: Payload::Data { names: vec![], encoding: Encoding::Ndarray, array: Array::Numeric(t.clone()) },
                ..Default::default()
            };
            let back = decode(&encode(&m)).unwrap();
            let got = numeric(&back).0;
            // Integral floats come back as floats too ("2.0" parses as a float).
            prop_assert_eq!(got, &t);
        }

        #[test]
        fn garbage_never_panics(body in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode_message(&body, &Limits::default());
        }
    }
}

fn slow(body: &str) -> Result<SeldonMessage> {
    let m: MessageIn = parse(body.as_bytes())?;
    message_from(m, &Limits::default())
}

#[test]
fn fast_path_agrees_with_the_general_path() {
    let bodies = [
        r#"{"data": {"ndarray": [[0, 1, 2]]}}"#,
        r#"{"data":{"tensor":{"shape":[1,3],"values":[0, 1, 2]}}}"#,
        r#"{"data":{"tensor":{"values":[0.5, 1, 2]}}}"#,
        r#"{"data":{"tftensor":{"dtype":"DT_INT64","tensorShape":{"dim":[{"size":"3"}]},"tensorContent":"AAAAAAAAAAABAAAAAAAAAAIAAAAAAAAA"}}}"#,
        r#" {"meta": {"puid": "x", "tags": {"a": [1]}}, "data": {"names": ["a", "b\"c"], "ndarray": [[1.5, -2e3], [true, 4]]}} "#,
        r#"{"data": {"names": ["a"], "ndarray": [["x", 1]]}}"#,
        r#"{"meta": {"puid": "y"}, "data": {"names": ["a", "b\"c"], "ndarray": [[1.5, -2e3], [3, 4]]}}"#,
        r#"{"data": {"ndarray": [[1, 2], [3]]}}"#,
        r#"{"data": {"ndarray": [1, 2]}, "strData": "x"}"#,
        r#"{"data": {"tensor": {"shape": [2, 2], "values": [1, 2, 3]}}}"#,
        r#"{"data": {"ndarray": [1, 2]}} trailing"#,
        r#"{"data": {"ndarray": [1, 2], "ndarray": [3]}}"#,
        r#"{"data": {"ndarray": [1, 2]}, "meta": {"metrics": [{"key": "k", "type": "NOPE"}]}}"#,
        r#"{"status": {"code": 1}, "data": {"ndarray": []}}"#,
        r#"{"d\u0061ta": {"ndarray": [1]}}"#,
    ];
    for body in bodies {
        let fast = decode_fast(body.as_bytes(), &Limits::default());
        match (fast, slow(body)) {
            (Some(Ok(f)), Ok(s)) => assert_eq!(f, s, "{body}"),
            (Some(Err(_)), _) => panic!("the fast path must not word errors: {body}"),
            (None, _) => {} // left to the general path
            (Some(Ok(f)), Err(e)) => {
                panic!("fast path accepted what the general path refuses: {body}: {f:?} vs {e}")
            }
        }
    }
    // The shapes the notebook sends do take the fast path.
    for body in bodies[..4].iter().chain(&bodies[6..7]) {
        assert!(
            decode_fast(body.as_bytes(), &Limits::default()).is_some(),
            "{body}"
        );
    }
}

mod fast_props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn fast_and_general_agree_on_numeric_arrays(
            rows in 1usize..4,
            values in proptest::collection::vec(prop_oneof![
                any::<i64>().prop_map(|x| x.to_string()),
                (-1e9f64..1e9).prop_map(|x| format!("{x}")),
                Just("1e5".to_string()),
                Just("-0".to_string()),
            ], 1..12),
        ) {
            let row = values.join(", ");
            let nd = vec![format!("[{row}]"); rows].join(",");
            for body in [
                format!(r#"{{"data": {{"ndarray": [{nd}]}}}}"#),
                format!(r#"{{"data": {{"tensor": {{"values": [{row}]}}}}}}"#),
            ] {
                let fast = decode_fast(body.as_bytes(), &Limits::default());
                let s = slow(&body);
                if let Some(f) = fast {
                    prop_assert_eq!(f.unwrap(), s.unwrap());
                }
            }
        }
    }
}

#[test]
fn tftensor_value_is_the_json_mapping_writer_output() {
    let cases = [
        TensorData::F64(vec![1.5, -2.0, 3.25]),
        TensorData::I64(vec![7]),
        TensorData::U8(vec![1, 2, 3, 4]),
        TensorData::F16(vec![half::f16::from_f32(0.5), half::f16::from_f32(2.0)]),
        TensorData::Bool(vec![true, false]),
        TensorData::Bytes(vec![Bytes::from_static(b"ab"), Bytes::from_static(b"c")]),
    ];
    for data in cases {
        let t = Tensor::new(vec![1, data.len()], data).unwrap();
        let mut out = Vec::new();
        write_tftensor(&t, &mut out);
        let written: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(tftensor_value(&t), written, "{t:?}");
    }
}
