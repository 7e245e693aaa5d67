//! Red Dog engine: the stateless gRPC service ([`service`]), the audit trail's readers
//! ([`audit`]) and the certification evidence ([`certify`]) around the core crate
//! `reddog-core`: the rules ([`game`]), exact odds ([`odds`]), a simulator ([`sim`]), the
//! provably fair deal ([`fairness`]) and the ids and size limits every layer shares
//! ([`ids`]), re-exported here so `reddog::game::…` paths hold.
//! [`proto`] is the generated gRPC API; [`testing`] is what tests, fuzz targets, benches and
//! examples use beyond [`service`]'s public items.
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]
// Module docs link to crate-private modules: read them with `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

pub mod audit;
pub mod certify;
pub mod error;
pub mod proto;
pub mod service;
pub mod testing;

pub use error::EngineError;
pub use reddog_core::{fairness, game, ids, odds, sim};
