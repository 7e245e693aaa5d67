//! Generates the gRPC code for `proto/reddog/v1/*.proto` with `tonic-prost-build`, parsing the
//! protos with `protox` so no `protoc` has to be installed. The encoded descriptor set is
//! written to `OUT_DIR/reddog_descriptor.bin` for server reflection.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let fds = protox::compile(["reddog/v1/reddog.proto"], ["proto"])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out.join("reddog_descriptor.bin"),
        prost::Message::encode_to_vec(&fds),
    )?;
    tonic_prost_build::configure().compile_fds(fds)?;
    Ok(())
}
