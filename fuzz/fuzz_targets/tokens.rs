//! `cargo +nightly fuzz run tokens`: see [`harness::tokens`] (fuzz/harness.rs) for the properties.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::tokens(data));
