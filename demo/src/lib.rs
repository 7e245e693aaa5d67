//! `reddog-demo`: the reference platform for the Red Dog engine.
//!
//! The engine is stateless and owns the rules, the randomness and the outcomes; a platform
//! owns players, money and limits. This crate is a small but complete platform, meant to be
//! read and copied: it talks to the engine only over its public gRPC API ([`engine`]),
//! signs players in with sessions that expire and a per-client back-off ([`accounts`]),
//! keeps a double-entry ledger in SQLite ([`ledger`], [`db`]), enforces the sheets' limits
//! ([`limits`], [`players`]), runs rounds in the order the fairness protocol demands and
//! finishes them after a crash ([`rounds`]), and serves a playable table whose browser
//! verifies every reveal by itself ([`web`], `static/`).

#![forbid(unsafe_code)]

pub mod accounts;
pub mod db;
pub mod engine;
pub mod ledger;
pub mod limits;
pub mod players;
pub mod round_state;
pub mod rounds;
pub mod web;
