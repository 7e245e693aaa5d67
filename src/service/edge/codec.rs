//! The protobuf codec of the generated RedDog server and client (`build.rs` names it with
//! `codec_path`): prost's encoding and decoding, with one difference. A *request* message
//! prost cannot decode (bad UTF-8, a wrong wire type, a truncated field) is the caller's
//! mistake: it is answered INVALID_ARGUMENT with `ErrorInfo` reason `MALFORMED_REQUEST` and a
//! `BadRequest` naming the field path, where tonic's own codec answers INTERNAL. A *response*
//! that does not decode (on the client side) stays INTERNAL, as in tonic.
//!
//! Which messages are requests is a type-level fact ([`ApiMessage::IS_REQUEST`], implemented
//! next to the generated code in `proto`), so a new RPC whose messages are not marked does not
//! compile.
//!
//! The generated server builds the codec with `Default`, so the codec holds no handle on its
//! application's metrics: it marks an undecodable request's answer with the [`UNDECODABLE`]
//! header, and [`crate::service::edge::guard::Guarded`] counts it in `reddog_undecodable_requests_total`
//! and removes the header before the answer leaves.
//!
//! The codec also sizes each call's buffers to its message ([`CALL_BUFFER_BYTES`]) instead of
//! tonic's default 8 KiB per call.

use std::marker::PhantomData;

use prost::Message;
use tonic::Status;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic_prost::ProstEncoder;

use crate::error::EngineError;

/// The header marking the answer to a request the codec could not decode (see the module
/// docs): removed by [`crate::service::edge::guard::Guarded`], never sent.
pub(crate) const UNDECODABLE: &str = "reddog-undecodable";

/// The first allocation of a call's encode buffer and of its decode buffer, in bytes.
///
/// tonic starts both at 8 KiB. The encode buffer's allocation is not freed when the answer is
/// encoded: the answer's bytes are a slice of it, queued in the HTTP/2 connection until they
/// are written to the socket. Under `h2load -c 256 -m 100` (25,600 streams in flight, their
/// answers queued for the socket) those 8 KiB allocations were 188 of the server's 224 MiB
/// peak (heaptrack; docs/RELIABILITY.md, "Floods and limits"). The encoder reserves each
/// answer's exact length ([`ApiEncoder`]) and tonic's decoder each request's announced length,
/// so a larger message costs one reallocation and a smaller one nothing (CommitSeed's answer,
/// 319 bytes, fits).
pub(crate) const CALL_BUFFER_BYTES: usize = 512;

fn call_buffers() -> BufferSettings {
    // The second value batches the messages of streaming calls (the API has none): tonic's
    // default, which `BufferSettings` does not expose.
    BufferSettings::new(CALL_BUFFER_BYTES, 32 * 1024)
}

/// A message of the `reddog.v1` API, marked as a request (decoded by the server) or a
/// response (decoded by a client).
pub(crate) trait ApiMessage: Message + Default + Send + 'static {
    /// True for a request message: a decode failure is then the caller's mistake.
    const IS_REQUEST: bool;
}

/// Prost's codec with request decode errors answered as the caller's mistake (module docs).
#[derive(Debug, Clone)]
pub(crate) struct ApiCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for ApiCodec<T, U> {
    fn default() -> Self {
        ApiCodec(PhantomData)
    }
}

impl<T, U> Codec for ApiCodec<T, U>
where
    T: Message + Send + 'static,
    U: ApiMessage,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ApiEncoder<T>;
    type Decoder = ApiDecoder<U>;

    fn encoder(&mut self) -> ApiEncoder<T> {
        ApiEncoder(ProstEncoder::new(call_buffers()))
    }

    fn decoder(&mut self) -> ApiDecoder<U> {
        ApiDecoder(PhantomData)
    }
}

/// Encodes a `T` with prost into a buffer grown once, to the message's exact length.
#[derive(Debug)]
pub(crate) struct ApiEncoder<T>(ProstEncoder<T>);

impl<T: Message> Encoder for ApiEncoder<T> {
    type Item = T;
    type Error = Status;

    fn encode(&mut self, item: T, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        buf.reserve(item.encoded_len());
        self.0.encode(item, buf)
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.0.buffer_settings()
    }
}

/// Decodes a `U` with prost; see the module docs for its errors.
#[derive(Debug, Clone)]
pub(crate) struct ApiDecoder<U>(PhantomData<U>);

impl<U: ApiMessage> Decoder for ApiDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        U::decode(buf).map(Some).map_err(|e| {
            if U::IS_REQUEST {
                let mut status = undecodable(&e);
                status.metadata_mut().insert(UNDECODABLE, tonic::metadata::MetadataValue::from_static("1"));
                status
            } else {
                Status::internal(e.to_string())
            }
        })
    }

    fn buffer_settings(&self) -> BufferSettings {
        call_buffers()
    }
}

/// INVALID_ARGUMENT for a request prost could not decode, naming the field path prost reports
/// (`seats.bet`), or `request` when it names none.
///
/// prost keeps the path in a private stack that only its `Display` shows, innermost first:
/// "failed to decode Protobuf message: Inner.field: Outer.field: description". The test
/// `decode_errors_name_the_field_path` decodes real bad messages with prost, so a change of
/// that format fails it.
fn undecodable(error: &prost::DecodeError) -> Status {
    let text = error.to_string();
    let mut rest = text.strip_prefix("failed to decode Protobuf message: ").unwrap_or(&text);
    let mut path = Vec::new();
    while let Some((head, tail)) = rest.split_once(": ") {
        let Some((msg, field)) = head.split_once('.') else { break };
        let ident = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !(ident(msg) && ident(field)) {
            break;
        }
        path.push(field);
        rest = tail;
    }
    path.reverse();
    let field = if path.is_empty() { "request".to_string() } else { path.join(".") };
    EngineError::MalformedRequest { field, reason: format!("the request message is not valid protobuf: {rest}") }.into()
}

/// Marks each message the RPCs carry as a request or a response for the codec.
macro_rules! api_messages {
    ($is_request:literal: $($message:ident),* $(,)?) => {$(
        impl ApiMessage for crate::proto::$message {
            const IS_REQUEST: bool = $is_request;
        }
    )*};
}

api_messages!(true: GetRulesRequest, ListTablesRequest, CommitSeedRequest, StartRoundRequest, DecideRequest, SettleRequest);
api_messages!(false: GetRulesResponse, ListTablesResponse, CommitSeedResponse, StartRoundResponse, DecideResponse, SettleResponse);

#[cfg(test)]
mod tests {
    use tonic::Code;
    use tonic_types::StatusExt;

    use super::*;

    // Stand-ins with the shape of the API's StartRoundRequest and SeatBet (the real messages
    // are checked end to end in tests/it/transport.rs); defined here so that the codec does
    // not import the generated module that names it.
    #[derive(Clone, PartialEq, prost::Message)]
    struct SeatBet {
        #[prost(uint64, tag = "1")]
        bet: u64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    struct StartRoundRequest {
        #[prost(string, tag = "1")]
        round_id: String,
        #[prost(message, repeated, tag = "5")]
        seats: Vec<SeatBet>,
    }

    fn field_of(bytes: &[u8]) -> (Status, String) {
        let err = StartRoundRequest::decode(bytes).expect_err("not a valid message");
        let status = undecodable(&err);
        let field =
            status.get_error_details().bad_request().expect("BadRequest details").field_violations[0].field.clone();
        (status, field)
    }

    #[test]
    fn decode_errors_name_the_field_path() {
        // round_id (field 1, a string) holding bytes that are not UTF-8.
        let (status, field) = field_of(&[0x0a, 0x02, 0xff, 0xfe]);
        assert_eq!(status.code(), Code::InvalidArgument);
        assert_eq!(field, "round_id");
        assert!(status.message().starts_with("round_id: the request message is not valid protobuf: "), "{status:?}");
        // round_id announcing 5 bytes, carrying 1.
        assert_eq!(field_of(&[0x0a, 0x05, b'a']).1, "round_id");
        // seats (field 5) holding a SeatBet whose bet (field 1, a varint) is sent
        // length-delimited: the path runs outermost first.
        assert_eq!(field_of(&[0x2a, 0x03, 0x0a, 0x01, b'x']).1, "seats.bet");
        // A key of field number 0 belongs to no field: the whole request.
        assert_eq!(field_of(&[0x00, 0x01]).1, "request");
    }
}
