//! Compiles `proto/` with protox (pure Rust: no `protoc` on the build machine) into prost types.
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Read when the script runs, not when it was compiled: a target directory shared by
    // two checkouts reuses the compiled script, which must find this checkout's protos.
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    let files = [
        "prediction.proto",
        "grpc_service.proto",
        "model_repository.proto",
    ];
    for f in [
        "prediction.proto",
        "grpc_service.proto",
        "model_repository.proto",
        "tensorflow/core/framework",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(f).display());
    }
    let fds = protox::compile(files, [&root])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out.join("descriptor.bin"),
        prost::Message::encode_to_vec(&fds),
    )?;
    let mut config = prost_build::Config::new();
    // Byte payloads stay `Bytes`: slices of the request body, not copies.
    config.bytes(["."]);
    // Written by hand (`stream_reply.rs`): it may also encode as MLServer's bare reply.
    config.extern_path(
        ".inference.ModelStreamInferResponse",
        "crate::stream_reply::ModelStreamInferResponse",
    );
    config.compile_fds(fds)?;
    Ok(())
}
