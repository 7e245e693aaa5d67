//! Generates the engine's gRPC client from the engine's public schema,
//! `../proto/reddog/v1/reddog.proto`, exactly as any platform would: this crate does not
//! depend on the engine's library. `protox` parses the proto in pure Rust (no `protoc`).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=../proto");
    let fds = protox::compile(["reddog/v1/reddog.proto"], ["../proto"])?;
    tonic_prost_build::configure().build_server(false).compile_fds(fds)?;
    Ok(())
}
