//! `cargo +nightly fuzz run round`: see [`harness::round`] (fuzz/harness.rs) for the properties.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::round(data));
