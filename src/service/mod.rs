//! The stateless gRPC service (`reddog.v1.RedDog`) around the game core and the provably
//! fair deal. It keeps no per-round memory: every round travels in a sealed token, so any
//! replica holding the key ring serves any call.
//!
//! Its rooms, each importing only the rooms below it (`scripts/check-layers.py --strict`):
//!
//! - [`app`], [`server`]: [`Settings`] and [`Application`] (how the binary and the tests build
//!   and run the engine), and the server around the RPCs: health, reflection, drain;
//! - [`round`]: the round protocol — the RPC handlers, request conversion, the sealed token and
//!   what it carries, sandbox deals, bounded refusal logs;
//! - [`edge`]: the network edge — connection admission and fair shares, TLS, the per-call
//!   guard (queue bound, timeout, shedding), the codec, the `/metrics` listener;
//! - [`evidence`]: the audit trail's sink and records (typed in [`crate::audit::record`]) and
//!   the receipt signer;
//! - [`ops`]: each Application's metrics registry, diagnostic logs (batched off the RPC path)
//!   and OTLP traces;
//! - [`rules`]: the tables a process serves, their certification, the `GetRules` answer;
//! - [`error`], [`build_info`]: `EngineError` → gRPC status with `google.rpc` details; the
//!   version, commit and build date compiled in.

pub(crate) mod app;
pub(crate) mod build_info;
pub(crate) mod edge;
pub(crate) mod error;
pub(crate) mod evidence;
pub(crate) mod ops;
pub(crate) mod round;
pub(crate) mod rules;
pub(crate) mod server;

// The public surface: what the binary (src/cli), an embedding program and the tests use.
// Everything else stays inside the crate; what only tests, fuzz targets, benches and
// examples need is in [`crate::testing`].
pub use crate::proto;
pub use app::{
    Application, AuditOutput, AuditSettings, KeyRingSource, Settings, SettingsError, TlsSettings, TransportLimits,
};
pub use evidence::audit_sink::{
    AuditOptions, AuditSink, CheckpointSigner, DEFAULT_CHECKPOINT_RECORDS, default_replica_id,
};
pub use evidence::signing::ReceiptSigner;
pub use ops::metrics::MetricsRegistry;
pub use ops::telemetry::{LogFormat, init as init_telemetry};
pub use round::api::{Clock, EngineConfig, RedDogService};
pub use round::token::{KeyList, KeyRing, KeyRingFile, SEALS_PER_KEY_BUDGET, SigningEntry, valid_key_id};
pub use rules::certified::{Certified, CertifiedRules, CertifiedTable, Change, RulesSpec, own_binary_sha256};
pub use rules::get_rules::rtp;
pub use rules::tables::{Currency, NamedTable, Tables};
pub use server::{LIVENESS, MAX_REQUEST_BYTES, SERVICE_NAME, ServeError, runtime, worker_threads};
