//! The integration tests, as one test binary (one link instead of one per file): the real
//! server on `127.0.0.1:0` through a generated client, the real binary as a child process,
//! property tests, the test vectors and the statistics.
//!
//! Run one group with a filter, e.g. `cargo test --test it service_errors::`; the long
//! `#[ignore]`d runs with `cargo test --release --test it <module>:: -- --ignored --nocapture`.

mod common;

mod audit_log;
mod audit_sink_faults;
mod audit_trail;
mod certify;
mod cli_json;
mod dishonest_platform;
mod drain;
mod ed25519_edges;
mod error_table;
mod fairness_cli;
mod fairness_stats;
mod fairness_vectors;
mod faults;
mod fleet;
mod fuzz_corpus;
mod hidden_until_shown;
mod lockouts;
mod odds_match_every_deal;
mod operator_errors;
mod otlp_traces;
mod receipts;
mod reconfigured_tables_and_retried_calls;
mod report;
mod reveal_vectors;
mod round_properties;
mod rules_by_example;
mod rules_travel;
mod sandbox;
mod service_errors;
mod service_failover;
mod service_logs;
mod service_metrics;
mod service_rounds;
mod service_tables;
mod simulator_agrees;
mod soak;
mod tls;
mod token_budget;
mod transport;
