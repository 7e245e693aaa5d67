//! The exact odds, checked against brute force: every ordered deal of three distinct cards
//! of a 1- and a 2-deck shoe played through the real round code (`Round::start`, `decide`,
//! `settle`), with integer money, must give exactly the enumeration's EV and variance.

use num_rational::Ratio;
use reddog::game::{Card, Decks, Money, Paytable, StackedDeck, Table};
use reddog::odds::{Analysis, Exact, Policy};
use reddog::sim::play_round;

const BET: u64 = 500;

/// Σnet and Σnet² over every ordered deal, in minor units, and the number of deals.
fn brute_force(decks: u8, paytable: &Paytable, policy: Policy) -> (i128, i128, i128) {
    let table =
        Table::default().with_decks(Decks::new(u32::from(decks)).unwrap()).with_paytable(paytable.clone()).unwrap();
    let raise = policy.raise_set(table.decks(), paytable);
    let cards: Vec<Card> = (0..table.decks().cards()).map(|p| Card::from_code((p % 52) as u8).unwrap()).collect();
    let (mut sum, mut sum_sq, mut deals) = (0i128, 0i128, 0i128);
    for (i, &a) in cards.iter().enumerate() {
        for (j, &b) in cards.iter().enumerate() {
            if j == i {
                continue;
            }
            for (k, &c) in cards.iter().enumerate() {
                if k == i || k == j {
                    continue;
                }
                let s = play_round(&table, &[Money(BET)], raise, &mut StackedDeck::new([a, b, c])).unwrap();
                let seat = s.seats[0];
                let net = i128::from(seat.returned.minor()) - i128::from(seat.stake.minor());
                sum += net;
                sum_sq += net * net;
                deals += 1;
            }
        }
    }
    (sum, sum_sq, deals)
}

fn check(decks: u8, paytable: &Paytable, policy: Policy) {
    let (sum, sum_sq, deals) = brute_force(decks, paytable, policy);
    let n = i128::from(decks) * 52;
    assert_eq!(deals, n * (n - 1) * (n - 2));
    let bet = i128::from(BET);
    let ev = Ratio::new(sum, deals * bet);
    let second_moment = Ratio::new(sum_sq, deals * bet * bet);
    let exact = Analysis::new(Decks::new(u32::from(decks)).unwrap(), paytable).policy(policy);
    assert_eq!(ev, exact.ev, "{decks} deck(s), {policy}");
    assert_eq!(second_moment, exact.expected_net_squared, "{decks} deck(s), {policy}");
    assert_eq!(second_moment - ev * ev, exact.variance);
}

#[test]
fn every_one_deck_deal_through_the_round_code_gives_the_exact_figures() {
    for policy in [Policy::Never, Policy::Always, Policy::RaiseAtLeast(7), Policy::RaiseAtLeast(3), Policy::Optimal] {
        check(1, &Paytable::STANDARD, policy);
    }
}

#[test]
fn every_one_deck_deal_agrees_under_an_unusual_paytable() {
    let paytable = Paytable::new([9, 7, 5, 3, 2, 2, 1, 1, 1, 1, 1], 30).unwrap();
    check(1, &paytable, Policy::Optimal);
    check(1, &paytable, Policy::Always);
}

#[test]
fn every_two_deck_deal_through_the_round_code_gives_the_exact_figures() {
    check(2, &Paytable::STANDARD, Policy::Optimal);
}

#[test]
fn the_published_one_deck_figure_is_the_exact_rtp() {
    let f = Analysis::new(Decks::ONE, &Paytable::STANDARD).policy(Policy::Optimal);
    assert_eq!(f.ev, Exact::new(-523, 16575));
    assert_eq!(reddog::odds::decimal(&f.rtp, 6), "0.968446");
}
