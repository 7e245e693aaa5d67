//! The stateless gRPC service (`reddog.v1.RedDog`) around the game core and the provably
//! fair deal. It keeps no per-round memory: every round travels in a sealed token, so any
//! replica holding the key ring serves any call.
//!
//! - [`proto`]: the generated API types, client and server;
//! - [`convert`]: request validation and response building;
//! - [`token`]: the key ring and the sealed token format;
//! - [`state`]: what tokens carry;
//! - [`api`]: the RPC handlers;
//! - [`error`]: `EngineError` → gRPC status with `google.rpc` details;
//! - [`metrics`], [`telemetry`], [`log_writer`]: Prometheus metrics, logs (written in
//!   batches off the RPC path) and OTLP traces;
//! - [`server`]: health, reflection, limits and graceful shutdown ([`run`]).

pub mod api;
pub mod convert;
pub mod error;
pub mod log_writer;
pub mod metrics;
pub mod proto;
pub mod rules;
pub mod server;
pub mod state;
pub mod telemetry;
pub mod token;

pub use api::{EngineConfig, RedDogService};
pub use server::{LIVENESS, SERVICE_NAME, ServeError, ServerConfig, run};
pub use token::KeyRing;
