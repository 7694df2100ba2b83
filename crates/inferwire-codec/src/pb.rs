//! Types generated from `proto/` by prost (module paths follow the proto packages).
#![allow(clippy::all, missing_docs)]

pub mod tensorflow {
    include!(concat!(env!("OUT_DIR"), "/tensorflow.rs"));
}

pub mod seldon {
    pub mod protos {
        include!(concat!(env!("OUT_DIR"), "/seldon.protos.rs"));
    }
}

/// The Open Inference Protocol (V2), `inference.GRPCInferenceService`.
pub mod inference {
    include!(concat!(env!("OUT_DIR"), "/inference.rs"));
    pub use crate::stream_reply::ModelStreamInferResponse;
}

/// File descriptors of every proto, for gRPC server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/descriptor.bin"));
