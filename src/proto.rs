//! Code generated from `proto/reddog/v1/reddog.proto` by `build.rs` (tonic-prost-build fed by
//! protox), and the encoded descriptor set that server reflection serves.
#![allow(missing_docs, clippy::all, clippy::pedantic)]

tonic::include_proto!("reddog.v1");

/// The encoded `FileDescriptorSet` of the `reddog.v1` protos, for server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/reddog_descriptor.bin"));
