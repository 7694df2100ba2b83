//! Generates the tonic service traits for `proto/prediction.proto` and
//! `proto/grpc_service.proto` (V2); the message types
//! themselves come from inferwire-codec (extern paths), so there is one definition.
//! TorchServe's inference and management services (`proto/torchserve_inference.proto`,
//! `proto/torchserve_management.proto`) are the server's alone: their messages are
//! generated here, with a descriptor set each for reflection. OTLP's trace messages
//! (`proto/otlp_trace.proto`), which the trace exporter sends, are generated here too.
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
            "torchserve_inference.proto",
            "torchserve_management.proto",
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
        // TorchServe's inputs and replies as `Bytes` (the V2 request's BYTES elements,
        // uncopied), its inputs in name order.
        .bytes(".org.pytorch.serve.grpc.inference")
        .btree_map(".org.pytorch.serve.grpc.inference.PredictionsRequest.input")
        .compile_fds(fds)?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    for name in ["torchserve_inference", "torchserve_management"] {
        let mut torchserve = protox::Compiler::new([&root])?;
        torchserve.include_imports(true);
        torchserve.open_files([format!("{name}.proto")])?;
        std::fs::write(
            out.join(format!("{name}.bin")),
            torchserve.encode_file_descriptor_set(),
        )?;
    }
    let otlp = protox::compile(["otlp_trace.proto"], [&root])?;
    prost_build::Config::new().compile_fds(otlp)?;
    Ok(())
}
