//! The cost of one audit record on the thread that writes it: the `round_settled` record of a
//! one-seat raised round (the largest record a round writes), serialised by serde behind its
//! envelope into the sink's reused buffer, hashed (SHA-256, the chain) and appended to the
//! writer's batch — exactly what a handler pays in `reddog serve`. The writer thread's share
//! (one `write(2)` per batch, here to a sink) is not on the handler's thread; the gRPC
//! benchmark (`scripts/bench-grpc.sh`) measures the whole process.

use std::borrow::Cow;
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use reddog::fairness::{ServerSeed, Transcript};
use reddog::game::{Card, Decision, HandClass, Money, Outcome, Rank, Rule, SeatSettlement, Spread, Suit, Table};
use reddog::service::Tables;
use reddog::service::{AuditOptions, AuditSink};
use reddog::testing::record::{self, DealClass, Event, Hex32, SeatMoney};

fn audit(c: &mut Criterion) {
    let table = Table::default();
    let tables = Tables::single(table.clone());
    let sink = AuditSink::start(std::io::sink(), AuditOptions::local(), &tables).expect("audit sink");
    let commitment = ServerSeed::from_bytes([7; 32]).commitment();
    let digest = [3u8; 32];
    let card = |r: u8, s| Card::new(Rank::new(r).unwrap(), s);
    let cards = [card(10, Suit::Clubs), card(4, Suit::Hearts), card(7, Suit::Spades)];
    let steps = vec![vec![(0usize, Decision::Raise)]];
    let seats = [SeatSettlement {
        seat: 0,
        bet: Money(1000),
        raised: true,
        stood_by_default: false,
        stake: Money(2000),
        outcome: Outcome::Win,
        rule: Rule::ThirdCardBetween,
        odds: 1,
        returned: Money(4000),
    }];
    let (hand_class, spread) = DealClass::of(HandClass::NonConsecutive(Spread::new(5).unwrap()));
    let mut g = c.benchmark_group("audit_record");
    g.bench_function("round_settled", |b| {
        b.iter(|| {
            let mut money = [SeatMoney::default(); reddog::game::MAX_SEATS];
            let event = Event::RoundSettled(record::RoundSettled {
                round_id: Cow::Borrowed(black_box("bench-round-0001")),
                table_id: Cow::Borrowed("default"),
                currency: Cow::Borrowed("EUR"),
                exponent: 2,
                commitment: commitment.into(),
                rules_digest: Hex32(digest),
                decks: 6,
                paytable: record::Odds(Cow::Borrowed(table.paytable())),
                step: 1,
                transcript: Transcript([9; 32]).into(),
                cards: record::Cards(Cow::Borrowed(&cards)),
                hand_class,
                spread,
                decisions: record::Steps(Cow::Borrowed(&steps)),
                seats: SeatMoney::all(&seats, &mut money),
                total_staked: 2000,
                total_returned: 4000,
                sandbox: false,
            });
            sink.record(black_box(event)).expect("recorded")
        })
    });
    g.finish();
    sink.stop(Duration::from_secs(5));
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = audit
}
criterion_main!(benches);
