//! Criterion benchmarks: one full round through the core (fresh shuffled shoe, deal,
//! every seat decides, settle) with the simulator's fast card source, for 1 and 7 seats;
//! and the exact odds enumeration for 8 decks.
//!
//! ```text
//! cargo bench --bench round
//! ```

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use reddog::game::{Decks, Money, Paytable, Table};
use reddog::odds::{Analysis, Policy};
use reddog::sim::{FastShoe, chunk_rng, play_round};

fn one_round(c: &mut Criterion) {
    for decks in [1u32, 8] {
        let decks = Decks::new(decks).unwrap();
        let table = Table::default().with_decks(decks);
        let raise = Policy::Optimal.raise_set(decks, table.paytable());
        for seats in [1usize, 7] {
            let bets = vec![Money(500); seats];
            let mut shoe = FastShoe::new(decks, chunk_rng(1, 0));
            c.bench_function(&format!("round/{}deck/{seats}seat", decks.get()), |b| {
                b.iter(|| {
                    shoe.reshuffle();
                    black_box(play_round(&table, black_box(&bets), raise, &mut shoe).unwrap())
                })
            });
        }
    }
}

fn odds(c: &mut Criterion) {
    let decks = Decks::new(8).unwrap();
    c.bench_function("odds/8decks/analysis+optimal", |b| {
        b.iter(|| {
            let a = Analysis::new(black_box(decks), &Paytable::STANDARD);
            black_box(a.policy(Policy::Optimal))
        })
    });
}

criterion_group!(benches, one_round, odds);
criterion_main!(benches);
