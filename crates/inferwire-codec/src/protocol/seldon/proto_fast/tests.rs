//! The one-pass reader must agree with prost's path on every message, and take the common
//! ones itself.
use bytes::Bytes;
use proptest::prelude::*;
use prost::Message;
use prost_types::{value::Kind, ListValue, Value as PValue};

use super::decode;
use crate::limits::Limits;
use crate::pb::seldon::protos as pb;
use crate::pb::tensorflow::{tensor_shape_proto::Dim, DataType, TensorProto, TensorShapeProto};
use crate::protocol::seldon::proto::{decode_message, from_pb};
use crate::protocol::seldon::{Array, Encoding, Payload};

fn via_prost(
    buf: &[u8],
    limits: &Limits,
) -> Result<crate::protocol::seldon::SeldonMessage, String> {
    let m = pb::SeldonMessage::decode(buf)
        .map_err(|e| format!("malformed protobuf SeldonMessage: {e}"))?;
    from_pb(m, limits).map_err(|e| e.to_string())
}

fn agree(buf: &[u8], limits: &Limits) {
    let ours = decode_message(Bytes::copy_from_slice(buf), limits).map_err(|e| e.to_string());
    assert_eq!(ours, via_prost(buf, limits));
}

fn num(x: f64) -> PValue {
    PValue {
        kind: Some(Kind::NumberValue(x)),
    }
}

fn list(values: Vec<PValue>) -> PValue {
    PValue {
        kind: Some(Kind::ListValue(ListValue { values })),
    }
}

fn with_data(d: pb::default_data::DataOneof, names: Vec<String>) -> pb::SeldonMessage {
    pb::SeldonMessage {
        meta: Some(pb::Meta {
            puid: "p1".into(),
            ..Default::default()
        }),
        data_oneof: Some(pb::seldon_message::DataOneof::Data(pb::DefaultData {
            names,
            data_oneof: Some(d),
        })),
        ..Default::default()
    }
}

#[test]
fn rectangular_ndarray_is_read_in_one_pass() {
    let rows = (0..3)
        .map(|r| list((0..4).map(|c| num(f64::from(r * 4 + c))).collect()))
        .collect();
    let m = with_data(
        pb::default_data::DataOneof::Ndarray(ListValue { values: rows }),
        vec!["a".into()],
    );
    let buf = Bytes::from(m.encode_to_vec());
    let got = decode(&buf, &Limits::default())
        .expect("fast path")
        .unwrap();
    let Payload::Data {
        names,
        encoding,
        array: Array::Numeric(t),
    } = &got.payload
    else {
        panic!("{got:?}")
    };
    assert_eq!(
        (names.as_slice(), *encoding),
        (&["a".to_string()][..], Encoding::Ndarray)
    );
    assert_eq!(t.shape, vec![3, 4]);
    assert_eq!(
        t.data.to_f64_vec().unwrap(),
        (0..12).map(f64::from).collect::<Vec<_>>()
    );
    assert_eq!(got.meta.puid, "p1");
    agree(&buf, &Limits::default());
}

#[test]
fn packed_tensor_is_read_in_one_pass() {
    let m = with_data(
        pb::default_data::DataOneof::Tensor(pb::Tensor {
            shape: vec![2, 2],
            values: vec![1.0, 2.5, -3.0, 4.0],
        }),
        vec![],
    );
    let buf = Bytes::from(m.encode_to_vec());
    assert!(decode(&buf, &Limits::default()).is_some());
    agree(&buf, &Limits::default());
}

#[test]
fn unpacked_tensor_fields_are_accepted() {
    // Tensor { shape: 2 (unpacked), shape: 1, values: 1.5 (unpacked), values: 2.5 }.
    let mut tensor = vec![0x08, 2, 0x08, 1, 0x11];
    tensor.extend(1.5f64.to_le_bytes());
    tensor.push(0x11);
    tensor.extend(2.5f64.to_le_bytes());
    let mut data = vec![0x12, tensor.len() as u8];
    data.extend(&tensor);
    let mut msg = vec![0x1a, data.len() as u8];
    msg.extend(&data);
    let got = decode(&Bytes::from(msg.clone()), &Limits::default())
        .expect("fast path")
        .unwrap();
    let Payload::Data {
        array: Array::Numeric(t),
        ..
    } = &got.payload
    else {
        panic!()
    };
    assert_eq!(
        (t.shape.clone(), t.data.to_f64_vec().unwrap()),
        (vec![2, 1], vec![1.5, 2.5])
    );
    agree(&msg, &Limits::default());
}

#[test]
fn tftensor_content_is_read_in_one_pass() {
    let t = TensorProto {
        dtype: DataType::DtInt64 as i32,
        tensor_shape: Some(TensorShapeProto {
            dim: vec![Dim {
                size: 3,
                name: String::new(),
            }],
            unknown_rank: false,
        }),
        tensor_content: Bytes::from(
            [1i64, -2, 3]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect::<Vec<_>>(),
        ),
        ..Default::default()
    };
    let buf =
        Bytes::from(with_data(pb::default_data::DataOneof::Tftensor(t), vec![]).encode_to_vec());
    assert!(decode(&buf, &Limits::default()).is_some());
    agree(&buf, &Limits::default());
}

#[test]
fn limits_give_the_same_errors() {
    let small = Limits {
        max_elements: 5,
        max_depth: 2,
    };
    let rows = (0..3).map(|_| list(vec![num(1.0), num(2.0)])).collect();
    agree(
        &with_data(
            pb::default_data::DataOneof::Ndarray(ListValue { values: rows }),
            vec![],
        )
        .encode_to_vec(),
        &small,
    );
    let deep = list(vec![list(vec![num(1.0)])]);
    agree(
        &with_data(
            pb::default_data::DataOneof::Ndarray(ListValue { values: vec![deep] }),
            vec![],
        )
        .encode_to_vec(),
        &small,
    );
    let t = pb::Tensor {
        shape: vec![2, 3],
        values: vec![0.0; 6],
    };
    agree(
        &with_data(pb::default_data::DataOneof::Tensor(t), vec![]).encode_to_vec(),
        &small,
    );
    let t = pb::Tensor {
        shape: vec![2, 2],
        values: vec![0.0; 3],
    };
    agree(
        &with_data(pb::default_data::DataOneof::Tensor(t), vec![]).encode_to_vec(),
        &Limits::default(),
    );
}

/// Found by the fuzzer: a key wider than 32 bits in `tensor` (tag 1711276031), which prost
/// refuses; the one-pass reader once skipped it as an unknown field.
#[test]
fn a_key_wider_than_32_bits_is_refused_as_prost_does() {
    let buf = [
        18, 0, 26, 28, 18, 26, 33, 179, 18, 4, 240, 253, 253, 221, 255, 249, 255, 255, 255, 50, 98,
        10, 10, 10, 8, 2, 32, 1, 34, 2, 8, 0,
    ];
    assert!(via_prost(&buf, &Limits::default()).is_err());
    agree(&buf, &Limits::default());
}

/// Lists of numbers, strings, booleans, nulls and nested lists, rectangular or not.
fn arb_value() -> impl Strategy<Value = PValue> {
    let leaf = prop_oneof![
        8 => (-1e9f64..1e9).prop_map(num),
        1 => "[a-z]{0,3}".prop_map(|s| PValue { kind: Some(Kind::StringValue(s)) }),
        1 => any::<bool>().prop_map(|b| PValue { kind: Some(Kind::BoolValue(b)) }),
        1 => Just(PValue { kind: Some(Kind::NullValue(0)) }),
    ];
    leaf.prop_recursive(3, 40, 6, |inner| {
        prop_oneof![
            // Rectangular: n copies of the same shape with fresh numbers.
            (1usize..4, 0usize..4, -1e6f64..1e6).prop_map(|(n, m, x)| {
                list(
                    (0..n)
                        .map(|i| list((0..m).map(|j| num(x + (i * 7 + j) as f64)).collect()))
                        .collect(),
                )
            }),
            proptest::collection::vec(inner, 0..5).prop_map(list),
        ]
    })
}

fn arb_message() -> impl Strategy<Value = pb::SeldonMessage> {
    use pb::default_data::DataOneof as D;
    let data = prop_oneof![
        proptest::collection::vec(arb_value(), 0..5)
            .prop_map(|values| D::Ndarray(ListValue { values })),
        arb_value().prop_map(|v| match v.kind {
            Some(Kind::ListValue(l)) => D::Ndarray(l),
            other => D::Ndarray(ListValue {
                values: vec![PValue { kind: other }]
            }),
        }),
        (
            proptest::collection::vec(-1i32..4, 0..3),
            proptest::collection::vec(-1e9f64..1e9, 0..12)
        )
            .prop_map(|(shape, values)| D::Tensor(pb::Tensor { shape, values })),
        proptest::collection::vec(any::<i64>(), 0..10).prop_map(|v| D::Tftensor(TensorProto {
            dtype: DataType::DtInt64 as i32,
            tensor_shape: Some(TensorShapeProto {
                dim: vec![Dim {
                    size: v.len() as i64,
                    name: String::new()
                }],
                unknown_rank: false
            }),
            int64_val: v,
            ..Default::default()
        })),
    ];
    (
        data,
        proptest::collection::vec("[a-z]{1,3}", 0..3),
        "[a-z0-9]{0,6}",
    )
        .prop_map(|(d, names, puid)| {
            let mut m = with_data(d, names);
            m.meta.as_mut().unwrap().puid = puid;
            m
        })
}

proptest! {
    #[test]
    fn agrees_with_prost(m in arb_message()) {
        agree(&m.encode_to_vec(), &Limits::default());
    }

    #[test]
    fn agrees_on_truncated_and_corrupted_bytes(m in arb_message(), cut in any::<prop::sample::Index>(), flip in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut buf = m.encode_to_vec();
        if !buf.is_empty() {
            let i = flip.index(buf.len());
            buf[i] = byte;
            buf.truncate(cut.index(buf.len() + 1));
        }
        agree(&buf, &Limits::default());
    }
}
