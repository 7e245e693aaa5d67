//! Code generated from `proto/reddog/v1/reddog.proto` by `build.rs` (tonic-prost-build fed by
//! protox), and the encoded descriptor set that server reflection serves.
#![allow(missing_docs, clippy::all, clippy::pedantic)]

tonic::include_proto!("reddog.v1");

/// Marks each message the RPCs carry as a request or a response for the codec (see
/// [`crate::service::codec`]).
macro_rules! api_messages {
    ($is_request:literal: $($message:ty),* $(,)?) => {$(
        impl crate::service::codec::ApiMessage for $message {
            const IS_REQUEST: bool = $is_request;
        }
    )*};
}

api_messages!(true: GetRulesRequest, ListTablesRequest, CommitSeedRequest, StartRoundRequest, DecideRequest, SettleRequest);
api_messages!(false: GetRulesResponse, ListTablesResponse, CommitSeedResponse, StartRoundResponse, DecideResponse, SettleResponse);

/// The encoded `FileDescriptorSet` of the `reddog.v1` protos, for server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/reddog_descriptor.bin"));
