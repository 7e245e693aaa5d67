//! Worked examples of RULES.md not already covered beside the code: each spread's odds
//! through a real round, suits never mattering, and a raise at the table maximum.

use reddog::game::{Card, Decision, HandClass, Money, Outcome, Round, Settlement, Spread, StackedDeck, Table};

fn play(cards: &str, bet: u64, decision: Option<Decision>) -> Settlement {
    let table = Table::default();
    let deck = StackedDeck::new(cards.split_whitespace().map(|c| c.parse::<Card>().unwrap()));
    let mut round = Round::start(&table, &[Money(bet)], &mut { deck }).unwrap();
    if let Some(d) = decision {
        round.decide(0, d).unwrap();
    }
    round.close();
    round.settle(table.paytable()).unwrap()
}

#[test]
fn each_spread_pays_its_standard_odds_on_a_win() {
    // (hand and a winning third card, spread, odds)
    let cases = [
        ("5c 7d 6h", 1, 5),
        ("5c 8d 6h", 2, 4),
        ("5c 9d 7h", 3, 2),
        ("5c Td 7h", 4, 1),
        ("4c Qd 9h", 7, 1),
        ("2c Ad Kh", 11, 1),
    ];
    for (cards, spread, odds) in cases {
        let s = play(cards, 1000, Some(Decision::Stand));
        assert_eq!(s.class, HandClass::NonConsecutive(Spread::new(spread).unwrap()), "{cards}");
        assert_eq!(s.seats[0].odds, odds, "{cards}");
        assert_eq!(s.seats[0].returned, Money(1000 * (u64::from(odds) + 1)), "{cards}");
    }
}

#[test]
fn suits_never_change_the_outcome() {
    for suits in ["cdh", "sss", "hcd", "ddd"] {
        let mut it = suits.chars();
        let cards: Vec<String> = ["5", "9", "7"].iter().map(|r| format!("{r}{}", it.next().unwrap())).collect();
        // 5–9 is spread 3 (2 to 1): a raised 10.00 stakes 20.00 and returns 60.00.
        let s = play(&cards.join(" "), 1000, Some(Decision::Raise));
        assert_eq!((s.seats[0].outcome, s.seats[0].returned), (Outcome::Win, Money(6000)), "{cards:?}");
    }
}

#[test]
fn a_raise_at_the_table_maximum_is_allowed_and_equals_the_bet() {
    let s = play("3c Qd 8h", 30_000, Some(Decision::Raise));
    assert_eq!(s.seats[0].stake, Money(60_000));
    assert_eq!(s.seats[0].returned, Money(120_000));
}

#[test]
fn a_loss_after_a_raise_loses_both_wagers() {
    let s = play("3c Qd Ah", 1000, Some(Decision::Raise));
    assert_eq!((s.seats[0].outcome, s.seats[0].stake, s.seats[0].returned), (Outcome::Lose, Money(2000), Money(0)));
}
