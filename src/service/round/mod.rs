//! The round protocol: the RPCs of `reddog.v1.RedDog`.
//!
//! - [`api`]: the RPC handlers;
//! - [`convert`]: request validation into the core's types, and response building;
//! - [`token`], [`state`]: the key ring and the sealed token format; what tokens carry;
//! - [`sandbox`]: forced deals on sandbox tables;
//! - [`refusal_log`]: refused tokens logged at a bounded rate.

pub(crate) mod api;
pub(crate) mod convert;
pub(crate) mod refusal_log;
pub(crate) mod sandbox;
pub(crate) mod state;
pub(crate) mod token;
