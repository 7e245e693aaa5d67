//! The stateless gRPC service (`reddog.v1.RedDog`) around the game core and the provably
//! fair deal. It keeps no per-round memory: every round travels in a sealed token, so any
//! replica holding the key ring serves any call.
//!
//! - [`proto`] (re-exported from [`crate::proto`]): the generated API types, client and server;
//! - [`convert`]: request validation and response building;
//! - [`token`]: the key ring and the sealed token format;
//! - [`state`]: what tokens carry;
//! - [`tables`]: the named tables a process serves, with their currencies;
//! - [`api`]: the RPC handlers;
//! - [`error`]: `EngineError` → gRPC status with `google.rpc` details;
//! - [`build_info`]: version, commit and build date compiled in;
//! - [`audit_record`], [`audit_sink`], [`audit_writer`]: the audit trail — the records typed
//!   in [`crate::audit::record`], chained by hash, written ahead of each answer by their own
//!   sink whatever the log level;
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

pub(crate) mod accept;
pub(crate) mod api;
pub(crate) mod app;
pub(crate) mod audit_record;
pub(crate) mod audit_sink;
pub(crate) mod audit_writer;
pub(crate) mod build_info;
pub(crate) mod certified;
pub(crate) mod codec;
pub(crate) mod convert;
pub(crate) mod error;
pub(crate) mod guard;
pub(crate) mod limits;
pub(crate) mod log_writer;
pub(crate) mod metrics;
pub(crate) mod refusal_log;
pub(crate) mod rules;
pub(crate) mod sandbox;
pub(crate) mod server;
pub(crate) mod signing;
pub(crate) mod state;
pub(crate) mod tables;
pub(crate) mod telemetry;
pub(crate) mod tls;
pub(crate) mod token;
pub(crate) mod transport;

// The public surface: what the binary (src/cli), an embedding program and the tests use.
// Everything else stays inside the crate; what only tests, fuzz targets, benches and
// examples need is in [`crate::testing`].
pub use crate::proto;
pub use api::{Clock, EngineConfig, RedDogService};
pub use app::{
    Application, AuditOutput, AuditSettings, KeyRingSource, Settings, SettingsError, TlsSettings, TransportLimits,
};
pub use audit_sink::{AuditOptions, AuditSink, CheckpointSigner, DEFAULT_CHECKPOINT_RECORDS, default_replica_id};
pub use certified::{Certified, CertifiedRules, CertifiedTable, Change, RulesSpec, own_binary_sha256};
pub use metrics::MetricsRegistry;
pub use rules::rtp;
pub use server::{LIVENESS, MAX_REQUEST_BYTES, SERVICE_NAME, ServeError, runtime, worker_threads};
pub use signing::ReceiptSigner;
pub use tables::{Currency, NamedTable, Tables};
pub use telemetry::{LogFormat, init as init_telemetry};
pub use token::{KeyList, KeyRing, KeyRingFile, SEALS_PER_KEY_BUDGET, SigningEntry, valid_key_id};
