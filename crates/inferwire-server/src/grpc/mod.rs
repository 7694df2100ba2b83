//! gRPC: `seldon.protos.Seldon` and `seldon.protos.Model`, V2's
//! `inference.GRPCInferenceService`, TorchServe's `InferenceAPIsService` and
//! `ManagementAPIsService` (in its dialect only; the latter on its own port), KServe's V2
//! service as TorchServe's KServe image serves it (on `kserve_grpc_port`), plus health
//! and reflection.
mod auth;
mod body_guard;
pub mod codec;
mod components;
mod health;
mod incoming;
mod kserve;
pub(crate) mod methods;
mod predict;
mod runtime_settings;
mod seldon;
mod serve;
mod stream;
mod timeout;
mod torchserve;
mod torchserve_management;
mod trailers;
mod v2;

pub use serve::{serve, serve_kserve, serve_management};

#[allow(clippy::all)]
pub(crate) mod generated {
    include!(concat!(env!("OUT_DIR"), "/seldon.protos.rs"));
}

#[allow(clippy::all)]
pub(crate) mod generated_v2 {
    include!(concat!(env!("OUT_DIR"), "/inference.rs"));

    pub(crate) mod model_repository {
        include!(concat!(env!("OUT_DIR"), "/inference.model_repository.rs"));
    }
}

/// TorchServe's inference and management services (`proto/torchserve_inference.proto`,
/// `proto/torchserve_management.proto`), in modules that nest as their packages do (prost names `google.rpc.Status` by a relative path).
#[allow(clippy::all)]
pub(crate) mod generated_torchserve {
    pub(crate) mod org {
        pub(crate) mod pytorch {
            pub(crate) mod serve {
                pub(crate) mod grpc {
                    pub(crate) mod inference {
                        include!(concat!(
                            env!("OUT_DIR"),
                            "/org.pytorch.serve.grpc.inference.rs"
                        ));
                    }
                    pub(crate) mod management {
                        include!(concat!(
                            env!("OUT_DIR"),
                            "/org.pytorch.serve.grpc.management.rs"
                        ));
                    }
                }
            }
        }
    }
    pub(crate) mod google {
        pub(crate) mod rpc {
            include!(concat!(env!("OUT_DIR"), "/google.rpc.rs"));
        }
    }
    pub(crate) use org::pytorch::serve::grpc::{inference, management};

    /// The inference service's descriptors (and its imports'), for reflection.
    pub(crate) const FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/torchserve_inference.bin"));

    /// The management service's, for reflection on its port.
    pub(crate) const MANAGEMENT_FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/torchserve_management.bin"));
}
