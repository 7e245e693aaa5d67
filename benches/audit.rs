//! The cost of one audit event on the thread that logs it, through the subscriber
//! `reddog serve` installs (`telemetry::fmt_layer` over a `BatchWriter`, `info` filter),
//! writing to a sink: text and JSON. The writer thread's share (one `write(2)` per batch) is
//! not on the logging thread; the gRPC benchmark (`scripts/bench-grpc.sh`) measures the whole
//! process.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use reddog::service::telemetry::{BatchWriter, LogFormat, fmt_layer};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::{EnvFilter, Layer};

fn audit(c: &mut Criterion) {
    let mut g = c.benchmark_group("audit_event");
    for (name, format) in [("text", LogFormat::Text), ("json", LogFormat::Json)] {
        let writer = BatchWriter::start(std::io::sink());
        let sub = tracing_subscriber::registry()
            .with(fmt_layer(format, false, writer.clone()).with_filter(EnvFilter::new("info")));
        let commitment = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".to_string();
        tracing::subscriber::with_default(sub, || {
            g.bench_function(name, |b| {
                b.iter(|| {
                    // The fields of the `round_started` event (src/service/api.rs).
                    tracing::info!(
                        target: "reddog::audit",
                        event = "round_started",
                        round_id = %black_box("bench-round-0001"),
                        commitment = %commitment,
                        nonce = black_box(7u64),
                        seats = 1usize,
                        total_bet = 1000u64,
                        hand_class = "non_consecutive",
                        spread = 4u8,
                        cards = %format_args!("{} {}", "Tc", "4h"),
                    );
                })
            });
            // A filtered-out event: the cost of a disabled DEBUG callsite.
            g.bench_function(format!("{name}/debug_filtered_out"), |b| {
                b.iter(|| tracing::debug!(target: "reddog::service::api", code = black_box(3u64), "rpc refused"))
            });
        });
        writer.close(Duration::from_secs(5));
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = audit
}
criterion_main!(benches);
