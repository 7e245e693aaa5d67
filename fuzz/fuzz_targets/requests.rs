//! `cargo +nightly fuzz run requests`: see [`harness::requests`] (fuzz/harness.rs) for the properties.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::requests(data));
