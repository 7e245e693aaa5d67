//! Developer tools for the Red Dog engine, never shipped in the `reddog` binary: the
//! audit-trail generator ([`generate`]) that the `audit-gen` binary, the engine's tests and the
//! audit-log benchmarks use, and (as binaries) `audit-gen` and the HTTP/2 `flood` tool.
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod generate;
