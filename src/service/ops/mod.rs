//! Operations: what an operator reads about a running engine.
//!
//! - [`metrics`]: one Application's metrics registry;
//! - [`log_writer`], [`telemetry`]: diagnostic logs written in batches off the RPC path, and
//!   OTLP traces.

pub(crate) mod log_writer;
pub(crate) mod metrics;
pub(crate) mod telemetry;
