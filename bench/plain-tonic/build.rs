//! Generates the `reddog.v1` server and client with `tonic-prost-build`'s default settings
//! (tonic's own prost codec), from the repository's `proto/`, parsed by `protox` so that no
//! `protoc` has to be installed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=../../proto");
    let fds = protox::compile(["reddog/v1/reddog.proto"], ["../../proto"])?;
    tonic_prost_build::configure().compile_fds(fds)?;
    Ok(())
}
