//! Every label value the request metrics use, derived from the enums they count: a route
//! label from `Route`, an encoding from the request's payload or media, a status from the
//! HTTP status or gRPC code of the reply. Each mapping is an exhaustive match, so a new
//! route, payload, media, error kind or gRPC code cannot go unlabelled.
use inferwire_codec::media::Media;
use inferwire_codec::protocol::seldon::{self, Payload};

use crate::error::Kind;

/// Declares a label enum with `ALL` (every variant, in order: a variant's index is its
/// series' slot) and `label`, so that neither can miss a variant.
macro_rules! labels {
    ($(#[$m:meta])* pub enum $name:ident { $($(#[$vm:meta])* $v:ident => $label:literal,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name { $($(#[$vm])* $v,)* }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$v,)*];

            pub const fn label(self) -> &'static str {
                match self { $($name::$v => $label,)* }
            }
        }
    };
}

labels! {
    /// What a request asked for, as the `route` label says it.
    pub enum Route {
        Predict => "predict",
        Feedback => "feedback",
        Health => "health",
        Metadata => "metadata",
        Other => "other",
        /// V2 `infer`.
        Infer => "infer",
        /// A streamed inference: REST `infer_stream` / `generate_stream`, gRPC
        /// `ModelStreamInfer`.
        InferStream => "infer-stream",
        /// Triton's `generate` (not streamed).
        Generate => "generate",
        /// Seldon's other graph component types.
        TransformInput => "transform-input",
        TransformOutput => "transform-output",
        Route => "route",
        Aggregate => "aggregate",
    }
}

labels! {
    /// How a request's payload was encoded (`encoding`): Seldon's payload kinds (as
    /// `Payload::kind` spells them), V2's (`json` and `binary` over REST, `typed` and
    /// `raw` contents over gRPC), the other body media (as `Media::name` spells them),
    /// and `none` for requests without one.
    pub enum Encoding {
        Ndarray => "ndarray",
        Tensor => "tensor",
        TfTensor => "tftensor",
        JsonData => "jsonData",
        BinData => "binData",
        StrData => "strData",
        CustomData => "customData",
        Json => "json",
        Binary => "binary",
        Typed => "typed",
        Raw => "raw",
        Npy => "npy",
        Msgpack => "msgpack",
        JsonList => "json-list",
        JsonBase64 => "json-base64",
        PlainJson => "plain-json",
        Bytes => "bytes",
        Multipart => "multipart",
        /// A SeldonMessage body (counted by its payload kind instead; never a request's).
        SeldonJson => "seldon-json",
        /// Replies only.
        Text => "text",
        None => "none",
    }
}

impl Encoding {
    pub fn of_payload(payload: &Payload) -> Self {
        match payload {
            Payload::None => Encoding::None,
            Payload::Data { encoding, .. } => match encoding {
                seldon::Encoding::Ndarray => Encoding::Ndarray,
                seldon::Encoding::Tensor => Encoding::Tensor,
                seldon::Encoding::TfTensor => Encoding::TfTensor,
            },
            Payload::Bin(_) => Encoding::BinData,
            Payload::Str(_) => Encoding::StrData,
            Payload::Json(_) => Encoding::JsonData,
            Payload::Custom { .. } => Encoding::CustomData,
        }
    }

    pub fn of_media(media: &Media) -> Self {
        use inferwire_codec::arrays::json::Layout;
        match media {
            Media::Seldon => Encoding::SeldonJson,
            Media::PlainJson => Encoding::PlainJson,
            Media::ArrayJson(Layout::List) => Encoding::JsonList,
            Media::ArrayJson(Layout::Base64) => Encoding::JsonBase64,
            Media::Npy => Encoding::Npy,
            Media::Msgpack => Encoding::Msgpack,
            Media::Bytes(_) => Encoding::Bytes,
            Media::Multipart(_) => Encoding::Multipart,
            Media::Text => Encoding::Text,
        }
    }
}

/// A reply's status, as the `code` label says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Http(u16),
    Grpc(tonic::Code),
}

/// Every HTTP status a REST reply carries: success, a handler's own (201 for a publish,
/// 503 from a readiness probe) and each error kind's (checked below, at compile time).
const HTTP: [u16; 17] = [
    200, 201, 400, 401, 403, 404, 405, 406, 408, 413, 415, 422, 429, 500, 501, 503, 504,
];
const HTTP_LABELS: [&str; HTTP.len()] = [
    "200", "201", "400", "401", "403", "404", "405", "406", "408", "413", "415", "422", "429",
    "500", "501", "503", "504",
];

const fn http_slot(status: u16) -> Option<usize> {
    let mut i = 0;
    while i < HTTP.len() {
        if HTTP[i] == status {
            return Some(i);
        }
        i += 1;
    }
    None
}

// Every error kind's HTTP status has its own label (`Kind::ALL` lists every kind).
const _: () = {
    let mut i = 0;
    while i < Kind::ALL.len() {
        assert!(
            http_slot(Kind::ALL[i].http_status()).is_some(),
            "an error kind's HTTP status has no metrics label: add it to HTTP"
        );
        i += 1;
    }
};

/// The gRPC codes, in their numeric order (`tonic::Code as usize`).
const GRPC: usize = 17;

/// The label of a gRPC code: its name in the gRPC spec.
pub const fn grpc_label(code: tonic::Code) -> &'static str {
    use tonic::Code::*;
    match code {
        Ok => "OK",
        Cancelled => "CANCELLED",
        Unknown => "UNKNOWN",
        InvalidArgument => "INVALID_ARGUMENT",
        DeadlineExceeded => "DEADLINE_EXCEEDED",
        NotFound => "NOT_FOUND",
        AlreadyExists => "ALREADY_EXISTS",
        PermissionDenied => "PERMISSION_DENIED",
        ResourceExhausted => "RESOURCE_EXHAUSTED",
        FailedPrecondition => "FAILED_PRECONDITION",
        Aborted => "ABORTED",
        OutOfRange => "OUT_OF_RANGE",
        Unimplemented => "UNIMPLEMENTED",
        Internal => "INTERNAL",
        Unavailable => "UNAVAILABLE",
        DataLoss => "DATA_LOSS",
        Unauthenticated => "UNAUTHENTICATED",
    }
}

/// Status slots: the HTTP statuses, the gRPC codes, then `other` (an HTTP status no
/// reply of this server carries).
pub const CODES: usize = HTTP.len() + GRPC + 1;

impl Code {
    pub fn slot(self) -> usize {
        match self {
            Code::Http(status) => http_slot(status).unwrap_or(CODES - 1),
            Code::Grpc(code) => HTTP.len() + code as usize,
        }
    }

    /// The HTTP status of slot `i`; `None` for a gRPC code's slot and for `other`.
    pub fn http_status(i: usize) -> Option<u16> {
        HTTP.get(i).copied()
    }

    /// The label of slot `i`.
    pub fn label_of(i: usize) -> &'static str {
        if i < HTTP.len() {
            HTTP_LABELS[i]
        } else if i < HTTP.len() + GRPC {
            grpc_label(tonic::Code::from_i32((i - HTTP.len()) as i32))
        } else {
            "other"
        }
    }

    /// For the access log: the status number, or the gRPC code's name.
    pub fn text(self) -> std::borrow::Cow<'static, str> {
        match self {
            Code::Http(status) => status.to_string().into(),
            Code::Grpc(code) => grpc_label(code).into(),
        }
    }

    /// The code of a gRPC call's outcome.
    pub fn of_grpc<T>(result: &Result<T, tonic::Status>) -> Self {
        Code::Grpc(
            result
                .as_ref()
                .map_or_else(|s| s.code(), |_| tonic::Code::Ok),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferwire_codec::arrays::json::Layout;

    #[test]
    fn labels_match_the_codec_names() {
        use seldon::Encoding as E;
        for p in [
            Payload::None,
            Payload::Bin(Default::default()),
            Payload::Str(String::new()),
            Payload::Json(serde_json::Value::Null),
            Payload::Custom {
                type_url: String::new(),
                value: Default::default(),
            },
        ] {
            assert_eq!(Encoding::of_payload(&p).label(), p.kind());
        }
        for e in [E::Ndarray, E::Tensor, E::TfTensor] {
            assert_eq!(Encoding::of_payload(&data(e)).label(), e.name());
        }
        for m in [
            Media::Seldon,
            Media::PlainJson,
            Media::ArrayJson(Layout::List),
            Media::ArrayJson(Layout::Base64),
            Media::Npy,
            Media::Msgpack,
            Media::Bytes("image/png".into()),
            Media::Multipart("b".into()),
            Media::Text,
        ] {
            assert_eq!(Encoding::of_media(&m).label(), m.name());
        }
    }

    fn data(encoding: seldon::Encoding) -> Payload {
        Payload::Data {
            names: vec![],
            encoding,
            array: seldon::Array::Json(serde_json::Value::Null),
        }
    }

    #[test]
    fn every_status_has_its_own_label() {
        // The bug this fixes: 401, 403 and 406 (and UNAUTHENTICATED, PERMISSION_DENIED)
        // were all counted as "other".
        for kind in Kind::ALL {
            let slot = Code::Http(kind.http_status()).slot();
            assert_eq!(Code::label_of(slot), kind.http_status().to_string());
            let slot = Code::Grpc(kind.grpc_code()).slot();
            assert_eq!(Code::label_of(slot), grpc_label(kind.grpc_code()));
        }
        for (status, label) in [(401, "401"), (403, "403"), (406, "406"), (201, "201")] {
            assert_eq!(Code::label_of(Code::Http(status).slot()), label);
        }
        assert_eq!(Code::label_of(Code::Http(302).slot()), "other");
        assert_eq!(Code::label_of(Code::Http(0).slot()), "other");
        for (code, label) in [
            (tonic::Code::Unauthenticated, "UNAUTHENTICATED"),
            (tonic::Code::PermissionDenied, "PERMISSION_DENIED"),
            (tonic::Code::Ok, "OK"),
        ] {
            assert_eq!(Code::label_of(Code::Grpc(code).slot()), label);
        }
        // Every slot's label is distinct.
        let labels: std::collections::HashSet<_> = (0..CODES).map(Code::label_of).collect();
        assert_eq!(labels.len(), CODES);
        for (i, status) in HTTP.iter().enumerate() {
            assert_eq!(HTTP_LABELS[i], status.to_string());
        }
    }
}
