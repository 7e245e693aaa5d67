//! The stateless gRPC service (`reddog.v1.RedDog`) around the game core and the provably
//! fair deal. It keeps no per-round memory: every round travels in a sealed token, so any
//! replica holding the key ring serves any call.
//!
//! - [`proto`]: the generated API types, client and server;
//! - [`convert`]: request validation and response building;
//! - [`token`]: the key ring and the sealed token format;
//! - [`state`]: what tokens carry;
//! - [`tables`]: the named tables a process serves, with their currencies;
//! - [`api`]: the RPC handlers;
//! - [`error`]: `EngineError` → gRPC status with `google.rpc` details;
//! - [`build_info`]: version, commit and build date compiled in;
//! - [`audit_record`], [`audit_sink`]: the audit trail — typed records, chained by hash,
//!   written by their own sink whatever the log level;
//! - [`metrics`], [`telemetry`], [`log_writer`], [`refusal_log`]: Prometheus metrics,
//!   diagnostic logs (tracing-subscriber's formats, written in batches off the RPC path,
//!   client-triggered lines bounded) and OTLP traces;
//! - [`app`]: [`Settings`] and [`Application`] — how the binary and the tests build and run
//!   the server;
//! - [`limits`]: [`TransportLimits`], the transport's configuration;
//! - [`server`]: health, reflection, limits and graceful shutdown;
//! - [`transport`], [`guard`], [`tls`]: connection admission (handshake and idle deadlines,
//!   accept back-off), the global concurrency cap with load shedding, the per-call timeout,
//!   and TLS with reload.

pub mod accept;
pub mod api;
pub mod app;
pub mod audit_record;
pub mod audit_sink;
pub mod build_info;
pub mod certified;
pub mod codec;
pub mod convert;
pub mod error;
pub mod guard;
pub mod limits;
pub mod log_writer;
pub mod metrics;
pub mod proto;
pub mod refusal_log;
pub mod rules;
pub mod sandbox;
pub mod server;
pub mod signing;
pub mod state;
pub mod tables;
pub mod telemetry;
pub mod tls;
pub mod token;
pub mod transport;

pub use api::{Clock, EngineConfig, RedDogService};
pub use app::{
    Application, AuditOutput, AuditSettings, KeyRingSource, Settings, SettingsError, TlsSettings, TransportLimits,
};
pub use server::{LIVENESS, MAX_REQUEST_BYTES, SERVICE_NAME, ServeError};
pub use token::KeyRing;
