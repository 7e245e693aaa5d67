//! Red Dog engine: the rules ([`game`]), exact odds ([`odds`]), a simulator ([`sim`]), the
//! provably fair shuffle ([`fairness`]) and, around them, the stateless gRPC service.
#![forbid(unsafe_code)]

pub mod audit;
pub mod certify;
pub mod error;
pub mod fairness;
pub mod game;
pub mod odds;
pub mod service;
pub mod sim;

pub use error::EngineError;
