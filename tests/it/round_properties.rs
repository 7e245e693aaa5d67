//! Property tests over random deals, seat counts, paytables and decision sequences: the
//! round never panics, refuses illegal steps without changing, pays only what the paytable
//! allows for the hand, and a push returns exactly the stake.

use proptest::prelude::*;
use reddog::game::{
    Card, Decision, Decks, HandClass, Money, Outcome, Paytable, Phase, Round, Rule, StackedDeck, Table,
};
use reddog::odds::{Analysis, Exact, Policy, RaiseSet};
use reddog::sim::{FastShoe, chunk_rng, play_round};

fn card() -> impl Strategy<Value = Card> {
    (0u8..52).prop_map(|c| Card::from_code(c).unwrap())
}

fn paytable() -> impl Strategy<Value = Paytable> {
    prop_oneof![
        Just(Paytable::STANDARD),
        (proptest::array::uniform11(1u32..=10_000), 1u32..=10_000).prop_map(|(s, t)| Paytable::new(s, t).unwrap()),
    ]
}

/// A step a caller might try: decide for a seat (possibly one that does not exist), or
/// close the round early.
#[derive(Clone, Debug)]
enum Step {
    Decide(usize, Decision),
    Close,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (0usize..9, prop_oneof![Just(Decision::Raise), Just(Decision::Stand)]).prop_map(|(s, d)| Step::Decide(s, d)),
        1 => Just(Step::Close),
    ]
}

/// Checks one settled seat against the rules; returns an error message on a violation.
fn check_seat(
    class: HandClass,
    cards: [Card; 2],
    third: Option<Card>,
    paytable: &Paytable,
    seat: &reddog::game::SeatSettlement,
    expected_raise: bool,
) -> Result<(), TestCaseError> {
    let bet = seat.bet.minor();
    prop_assert_eq!(seat.raised, expected_raise);
    let stake = if seat.raised { 2 * bet } else { bet };
    prop_assert_eq!(seat.stake.minor(), stake);
    if seat.outcome == Outcome::Push {
        prop_assert_eq!(seat.returned, seat.stake, "a push returns exactly the stake");
    }
    match class {
        HandClass::Consecutive => {
            prop_assert!(!seat.raised);
            prop_assert_eq!(third, None);
            prop_assert_eq!((seat.outcome, seat.rule), (Outcome::Push, Rule::Consecutive));
        }
        HandClass::Pair => {
            prop_assert!(!seat.raised);
            let trips = third.map(|c| c.rank()) == Some(cards[0].rank());
            let allowed = if trips { bet * (u64::from(paytable.three_of_a_kind_odds()) + 1) } else { bet };
            prop_assert_eq!(seat.returned.minor(), allowed);
            prop_assert_eq!(seat.outcome, if trips { Outcome::Win } else { Outcome::Push });
        }
        HandClass::NonConsecutive(spread) => {
            let t = third.expect("a non-consecutive hand shows its third card").rank();
            let (lo, hi) = (cards[0].rank().min(cards[1].rank()), cards[0].rank().max(cards[1].rank()));
            let win = lo < t && t < hi;
            let allowed = if win { stake * (u64::from(paytable.spread_odds(spread)) + 1) } else { 0 };
            prop_assert_eq!(seat.returned.minor(), allowed);
            prop_assert_ne!(seat.outcome, Outcome::Push, "a non-consecutive hand never pushes");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn any_deal_and_decision_sequence_settles_by_the_paytable(
        cards in proptest::array::uniform3(card()),
        bets in proptest::collection::vec(500u64..=30_000, 1..=7),
        steps in proptest::collection::vec(step(), 0..16),
        paytable in paytable(),
    ) {
        let table = Table::default().with_paytable(paytable.clone()).unwrap();
        let stakes: Vec<Money> = bets.iter().copied().map(Money).collect();
        let mut round = Round::start(&table, &stakes, &mut StackedDeck::new(cards)).unwrap();
        prop_assert_eq!(round.cards(), [cards[0], cards[1]]);
        // What each seat should end up with: its first accepted decision.
        let mut model: Vec<Option<Decision>> = vec![None; bets.len()];
        let mut closed = false;
        for step in &steps {
            match *step {
                Step::Decide(seat, decision) => {
                    let before = round.clone();
                    let legal = matches!(round.class(), HandClass::NonConsecutive(_))
                        && !closed
                        && seat < bets.len()
                        && model[seat].is_none();
                    prop_assert_eq!(round.allowed(seat).contains(&decision), legal);
                    let result = round.decide(seat, decision);
                    prop_assert_eq!(result.is_ok(), legal, "decide({}, {:?})", seat, decision);
                    if legal {
                        model[seat] = Some(decision);
                        if model.iter().all(Option::is_some) {
                            closed = true;
                        }
                    } else {
                        prop_assert_eq!(&round, &before, "a refused step leaves the round unchanged");
                    }
                    // The hidden card is never shown while a seat is still deciding.
                    if !closed && matches!(round.class(), HandClass::NonConsecutive(_)) {
                        prop_assert_eq!(round.third(), None);
                        prop_assert!(round.settle(table.paytable()).is_err());
                    }
                }
                Step::Close => {
                    round.close();
                    closed = true;
                }
            }
        }
        round.close();
        prop_assert_eq!(round.snapshot().phase, Phase::Complete);
        let s = round.settle(table.paytable()).unwrap();
        prop_assert_eq!(s.seats.len(), bets.len());
        for (i, seat) in s.seats.iter().enumerate() {
            prop_assert_eq!(seat.seat, i);
            prop_assert_eq!(seat.bet.minor(), bets[i]);
            let undecided = matches!(s.class, HandClass::NonConsecutive(_)) && model[i].is_none();
            prop_assert_eq!(seat.stood_by_default, undecided);
            check_seat(s.class, s.cards, s.third, &paytable, seat, model[i] == Some(Decision::Raise))?;
        }
    }

    #[test]
    fn shuffled_shoes_and_policies_only_pay_what_the_paytable_allows(
        seed in any::<u64>(),
        decks in 1u32..=8,
        seats in 1usize..=7,
        mask in 0u16..(1 << 11),
        paytable in paytable(),
    ) {
        let decks = Decks::new(decks).unwrap();
        let table = Table::default().with_decks(decks).with_paytable(paytable.clone()).unwrap();
        let raise = RaiseSet::from_spreads(reddog::game::Spread::all().filter(|s| mask & (1 << (s.get() - 1)) != 0));
        let mut shoe = FastShoe::new(decks, chunk_rng(seed, 0));
        for _ in 0..20 {
            shoe.reshuffle();
            let s = play_round(&table, &vec![Money(500); seats], raise, &mut shoe).unwrap();
            for seat in &s.seats {
                let expected_raise = s.class.spread().is_some_and(|sp| raise.raises(sp));
                check_seat(s.class, s.cards, s.third, &paytable, seat, expected_raise)?;
            }
            // One deal for the whole table: every seat gets the same outcome.
            prop_assert!(s.seats.iter().all(|x| x.outcome == s.seats[0].outcome));
        }
    }

    #[test]
    fn any_shoe_composition_gives_a_distribution_and_an_optimal_policy(
        counts in proptest::array::uniform13(0u32..=32),
        paytable in paytable(),
    ) {
        prop_assume!(counts.iter().sum::<u32>() >= 3);
        let a = Analysis::from_counts(counts, &paytable).unwrap();
        let total = a.p_pair() + a.p_consecutive()
            + reddog::game::Spread::all().map(|s| a.p_spread(s)).sum::<Exact>();
        prop_assert_eq!(total, Exact::from(1));
        let best = a.policy(Policy::Optimal);
        for p in [Policy::Never, Policy::Always, Policy::RaiseAtLeast(7)] {
            prop_assert!(a.policy(p).ev <= best.ev);
        }
        prop_assert!(best.variance >= Exact::from(0));
        // Optimal spread by spread: raising on one more spread, or on one fewer, never gains.
        for s in reddog::game::Spread::all() {
            let toggled = RaiseSet::from_spreads(reddog::game::Spread::all().filter(|&x| best.raise.raises(x) != (x == s)));
            prop_assert!(a.figures(toggled).ev <= best.ev, "toggling spread {} gains", s.get());
        }
    }
}
