//! Red Dog without a wire: the rules ([`game`]), exact odds ([`odds`]), a simulator
//! ([`sim`]), the provably fair deal ([`fairness`]) and the ids and size limits every
//! layer shares ([`ids`]). Plain functions and types; no gRPC, async runtime or protobuf.
//! Each module has its own error type that says what happened; the service maps them to
//! its protocol's statuses.
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod fairness;
pub mod game;
pub mod ids;
pub mod odds;
pub mod sim;
