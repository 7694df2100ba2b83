//! Generates the tonic service traits for `proto/prediction.proto` and
//! `proto/grpc_service.proto` (V2); the message types
//! themselves come from inferwire-codec (extern paths), so there is one definition.
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Read when the script runs, not when it was compiled: a target directory shared by
    // two checkouts reuses the compiled script, which must find this checkout's protos.
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    println!("cargo:rerun-if-changed={}", root.display());
    let fds = protox::compile(
        [
            "prediction.proto",
            "grpc_service.proto",
            "model_repository.proto",
        ],
        [&root],
    )?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_transport(false)
        .codec_path("crate::grpc::codec::SeldonCodec")
        .extern_path(".seldon.protos", "::inferwire_codec::pb::seldon::protos")
        .extern_path(".tensorflow", "::inferwire_codec::pb::tensorflow")
        .extern_path(".inference", "::inferwire_codec::pb::inference")
        .compile_fds(fds)?;
    Ok(())
}
