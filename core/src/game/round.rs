//! A round at a table of 1 to 7 seats sharing one deal, and its settlement.
//!
//! All cards a round needs are taken from the [`CardSource`] when the round starts, so the
//! deal is fixed before anyone chooses anything: two cards face up and, unless the hand is
//! consecutive, the third card face down. The third card of a non-consecutive hand is shown
//! only once every seat has decided (or the round is closed); [`AwaitingDecisions`] has no
//! accessor for it.

use super::card::{Card, CardSource};
use super::error::GameError;
use super::hand::{HandClass, Spread, strictly_between};
use super::money::Money;
use super::paytable::Paytable;
use super::table::{MAX_BET, MAX_SEATS, Table};

/// A seat's choice on a non-consecutive hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Add a second wager equal to the original bet.
    Raise,
    Stand,
}

/// One seat's wager and, on a non-consecutive hand, its decision so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seat {
    pub bet: Money,
    /// `None` until the seat decides; always `None` on a pair or consecutive hand.
    pub decision: Option<Decision>,
}

impl Seat {
    /// The seat's stake so far: the bet, or twice the bet once it raised. Bets never exceed
    /// [`MAX_BET`], so this fits; the arithmetic is checked all the same.
    pub fn stake(&self) -> Result<Money, GameError> {
        match self.decision {
            Some(Decision::Raise) => self.bet.checked_mul(2).ok_or_else(|| GameError::overflow("a raised stake")),
            _ => Ok(self.bet),
        }
    }
}

/// A non-consecutive hand whose seats are still deciding.
///
/// Invariant: at least one seat has not decided; the hidden third card is never exposed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AwaitingDecisions {
    cards: [Card; 2],
    spread: Spread,
    hidden_third: Card,
    seats: Vec<Seat>,
}

/// A round whose cards are all face up: it can be settled.
///
/// Invariant: `third` is `Some` exactly when the hand is not consecutive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Complete {
    cards: [Card; 2],
    class: HandClass,
    third: Option<Card>,
    seats: Vec<Seat>,
}

/// A round in one of its two phases.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Round {
    AwaitingDecisions(AwaitingDecisions),
    Complete(Complete),
}

/// The cards face up on the table: the two first cards, and the third once it is turned
/// (at once after a pair; after a non-consecutive hand only when every seat has decided).
///
/// Built only by [`Round::shown`], from what the round shows: it cannot hold the face-down
/// card of a round whose seats are deciding, so whatever is built from it — a signed step
/// receipt, an answer — cannot name that card (docs/FAIRNESS.md, "What each party may know,
/// and when"). Its fields are private and it has no other constructor:
///
/// ```compile_fail,E0451
/// use reddog_core::game::{Card, round::ShownCards};
/// let c = Card::from_code(0).unwrap();
/// let _ = ShownCards { first: [c, c], third: Some(c) }; // private fields: does not compile
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShownCards {
    first: [Card; 2],
    third: Option<Card>,
}

impl ShownCards {
    /// The cards in the order dealt: two, or three once the third is face up.
    pub fn cards(&self) -> impl Iterator<Item = Card> + '_ {
        self.first.iter().copied().chain(self.third)
    }

    /// How many cards are face up (2 or 3).
    pub fn len(&self) -> usize {
        2 + usize::from(self.third.is_some())
    }

    /// Never: at least two cards are always face up.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// How a seat's round ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    Win,
    Lose,
    Push,
}

/// The rule that produced an outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// A pair and a third card of the same rank: wins at the three-of-a-kind odds.
    ThreeOfAKind,
    /// A pair and a third card of another rank: push.
    PairNoMatch,
    /// Consecutive ranks: push, no third card.
    Consecutive,
    /// The third card's rank lies strictly between: wins at the spread's odds.
    ThirdCardBetween,
    /// The third card's rank equals one of the first two: the stake is lost.
    ThirdCardMatches,
    /// The third card's rank lies outside the first two: the stake is lost.
    ThirdCardOutside,
}

impl Rule {
    /// A short stable name, e.g. `three_of_a_kind`.
    pub const fn name(self) -> &'static str {
        match self {
            Rule::ThreeOfAKind => "three_of_a_kind",
            Rule::PairNoMatch => "pair_no_match",
            Rule::Consecutive => "consecutive",
            Rule::ThirdCardBetween => "third_card_between",
            Rule::ThirdCardMatches => "third_card_matches",
            Rule::ThirdCardOutside => "third_card_outside",
        }
    }
}

impl Outcome {
    pub const fn name(self) -> &'static str {
        match self {
            Outcome::Win => "win",
            Outcome::Lose => "lose",
            Outcome::Push => "push",
        }
    }
}

/// One seat's result.
///
/// Invariants: `stake` is `bet`, or `2 * bet` when raised; `returned` is
/// `stake * (odds + 1)` on a win, `stake` on a push, and 0 on a loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeatSettlement {
    pub seat: usize,
    pub bet: Money,
    pub raised: bool,
    /// The seat never decided on a non-consecutive hand and was settled as a stand.
    pub stood_by_default: bool,
    pub stake: Money,
    pub outcome: Outcome,
    pub rule: Rule,
    /// The "X to 1" odds paid, 0 unless the outcome is a win.
    pub odds: u32,
    /// What goes back to the player: stake plus winnings, the stake, or 0.
    pub returned: Money,
}

/// The result of a whole round.
///
/// Invariant: `total_staked` and `total_returned` are the exact sums of the seats' `stake`
/// and `returned` (computed with checked arithmetic when the round is settled).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settlement {
    pub cards: [Card; 2],
    pub class: HandClass,
    pub third: Option<Card>,
    pub seats: Vec<SeatSettlement>,
    /// Sum of every seat's stake.
    pub total_staked: Money,
    /// Sum of every seat's `returned`: what goes back to the players.
    pub total_returned: Money,
}

/// The checked sum of some amounts.
fn checked_sum(amounts: impl IntoIterator<Item = Money>, what: &'static str) -> Result<Money, GameError> {
    amounts.into_iter().try_fold(Money::ZERO, |sum, m| sum.checked_add(m).ok_or_else(|| GameError::overflow(what)))
}

/// Which phase a [`RoundSnapshot`] is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    AwaitingDecisions,
    Complete,
}

/// Everything a round is, as plain data, for carrying it between calls (the service seals it
/// into a token). [`Round::restore`] checks it is consistent before using it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoundSnapshot {
    pub phase: Phase,
    pub cards: [Card; 2],
    /// The third card, face down while awaiting decisions.
    pub third: Option<Card>,
    pub seats: Vec<Seat>,
}

impl Round {
    /// Deals a round for one seat per entry of `bets`, drawing from `source` every card the
    /// round needs. Each bet must lie within the table's limits; 1 to 7 seats.
    pub fn start(table: &Table, bets: &[Money], source: &mut impl CardSource) -> Result<Round, GameError> {
        if bets.is_empty() || bets.len() > MAX_SEATS {
            return Err(GameError::SeatCount { seats: bets.len() });
        }
        let limits = table.limits();
        if let Some(seat) = bets.iter().position(|&bet| !limits.contains(bet)) {
            return Err(GameError::BetOutsideLimits { seat, bet: bets[seat], limits });
        }
        let seats: Vec<Seat> = bets.iter().map(|&bet| Seat { bet, decision: None }).collect();
        let cards = [source.draw(), source.draw()];
        Ok(match HandClass::of(cards[0], cards[1]) {
            HandClass::Consecutive => {
                Round::Complete(Complete { cards, class: HandClass::Consecutive, third: None, seats })
            }
            HandClass::Pair => {
                Round::Complete(Complete { cards, class: HandClass::Pair, third: Some(source.draw()), seats })
            }
            HandClass::NonConsecutive(spread) => {
                Round::AwaitingDecisions(AwaitingDecisions { cards, spread, hidden_third: source.draw(), seats })
            }
        })
    }

    /// What the table shows: the two first cards and the third once it is face up — never
    /// the face-down card of a round awaiting decisions.
    pub fn shown(&self) -> ShownCards {
        ShownCards { first: self.cards(), third: self.third() }
    }

    /// The two cards dealt face up.
    pub fn cards(&self) -> [Card; 2] {
        match self {
            Round::AwaitingDecisions(r) => r.cards,
            Round::Complete(r) => r.cards,
        }
    }

    pub fn class(&self) -> HandClass {
        match self {
            Round::AwaitingDecisions(r) => HandClass::NonConsecutive(r.spread),
            Round::Complete(r) => r.class,
        }
    }

    /// The third card once it is face up; `None` while seats are deciding or on a
    /// consecutive hand.
    pub fn third(&self) -> Option<Card> {
        match self {
            Round::AwaitingDecisions(_) => None,
            Round::Complete(r) => r.third,
        }
    }

    pub fn seats(&self) -> &[Seat] {
        match self {
            Round::AwaitingDecisions(r) => &r.seats,
            Round::Complete(r) => &r.seats,
        }
    }

    /// The decisions a seat may still take: raise or stand while it has not decided on a
    /// non-consecutive hand, nothing otherwise.
    pub fn allowed(&self, seat: usize) -> &'static [Decision] {
        match self {
            Round::AwaitingDecisions(r) if r.seats.get(seat).is_some_and(|s| s.decision.is_none()) => {
                &[Decision::Raise, Decision::Stand]
            }
            _ => &[],
        }
    }

    /// Records a seat's decision. Once every seat has decided the third card turns face up
    /// and the round is complete. On error the round is unchanged.
    pub fn decide(&mut self, seat: usize, decision: Decision) -> Result<(), GameError> {
        // One seat is already in seat order: no copy to sort (the simulator calls this once
        // per seat and round).
        self.apply_sorted(&[(seat, decision)]).map(|_| ())
    }

    /// Records the decisions of one or more seats, all or nothing: on any error (an unknown
    /// seat, a seat twice, a seat that already decided, a hand without decisions) the round
    /// is unchanged. Returns the decisions in ascending seat order and the sum of the raises
    /// they add (what the platform debits now).
    pub fn decide_all(
        &mut self,
        decisions: &[(usize, Decision)],
    ) -> Result<(Vec<(usize, Decision)>, Money), GameError> {
        if let Round::Complete(c) = self {
            // Named by the first decision as given, before sorting.
            return Err(c.closed(decisions.first().map_or(0, |d| d.0)));
        }
        let mut sorted = decisions.to_vec();
        sorted.sort_by_key(|&(seat, _)| seat);
        let raised = self.apply_sorted(&sorted)?;
        Ok((sorted, raised))
    }

    /// [`Round::decide_all`] for decisions already in ascending seat order: checks them all,
    /// then records them; returns the sum of the raises.
    fn apply_sorted(&mut self, sorted: &[(usize, Decision)]) -> Result<Money, GameError> {
        let pending = match self {
            Round::AwaitingDecisions(p) => p,
            Round::Complete(c) => return Err(c.closed(sorted.first().map_or(0, |d| d.0))),
        };
        let seats = pending.seats.len();
        let mut raised = Money::ZERO;
        for (i, &(seat, decision)) in sorted.iter().enumerate() {
            let slot = pending.seats.get(seat).ok_or(GameError::UnknownSeat { seat, seats })?;
            if i > 0 && sorted[i - 1].0 == seat {
                return Err(GameError::SeatTwice { seat });
            }
            if slot.decision.is_some() {
                return Err(GameError::SeatAlreadyDecided { seat });
            }
            if decision == Decision::Raise {
                raised = raised.checked_add(slot.bet).ok_or_else(|| GameError::overflow("the raises of one call"))?;
            }
        }
        for &(seat, decision) in sorted {
            pending.seats[seat].decision = Some(decision);
        }
        if pending.seats.iter().all(|s| s.decision.is_some()) {
            self.close();
        }
        Ok(raised)
    }

    /// Ends the deciding: seats that have not decided stand, and the third card turns face
    /// up. A complete round is left as it is.
    pub fn close(&mut self) {
        if let Round::AwaitingDecisions(p) = self {
            *self = Round::Complete(Complete {
                cards: p.cards,
                class: HandClass::NonConsecutive(p.spread),
                third: Some(p.hidden_third),
                seats: std::mem::take(&mut p.seats),
            });
        }
    }

    /// Settles a complete round by `paytable` (the one the round was dealt under). A round
    /// still awaiting decisions is an error: call [`Round::close`] first to settle the
    /// undecided seats as stands.
    pub fn settle(&self, paytable: &Paytable) -> Result<Settlement, GameError> {
        match self {
            Round::Complete(c) => c.settle(paytable),
            Round::AwaitingDecisions(p) => {
                Err(GameError::RoundNotComplete { undecided: p.seats.iter().filter(|s| s.decision.is_none()).count() })
            }
        }
    }

    /// The third card if one is dealt, face down or not (as [`Round::snapshot`] has it): for
    /// sealing and revealing, never for showing while seats decide.
    pub fn dealt_third(&self) -> Option<Card> {
        match self {
            Round::AwaitingDecisions(p) => Some(p.hidden_third),
            Round::Complete(c) => c.third,
        }
    }

    /// The round as plain data, hidden card included: for sealing, never for showing.
    pub fn snapshot(&self) -> RoundSnapshot {
        match self {
            Round::AwaitingDecisions(p) => RoundSnapshot {
                phase: Phase::AwaitingDecisions,
                cards: p.cards,
                third: Some(p.hidden_third),
                seats: p.seats.clone(),
            },
            Round::Complete(c) => {
                RoundSnapshot { phase: Phase::Complete, cards: c.cards, third: c.third, seats: c.seats.clone() }
            }
        }
    }

    /// Rebuilds a round from a snapshot, refusing any snapshot no sequence of legal steps
    /// could have produced. Bets are checked against [`super::table::MAX_BET`], not today's
    /// limits, so a round in flight survives a change of table limits.
    pub fn restore(snapshot: RoundSnapshot) -> Result<Round, GameError> {
        let RoundSnapshot { phase, cards, third, seats } = snapshot;
        let bad = |reason: &'static str| GameError::InconsistentSnapshot { reason };
        if seats.is_empty() || seats.len() > MAX_SEATS {
            return Err(bad("seat count out of range"));
        }
        if seats.iter().any(|s| s.bet.0 == 0 || s.bet.0 > MAX_BET) {
            return Err(bad("bet out of range"));
        }
        let class = HandClass::of(cards[0], cards[1]);
        let any_decision = seats.iter().any(|s| s.decision.is_some());
        match (class, phase, third) {
            (HandClass::NonConsecutive(spread), Phase::AwaitingDecisions, Some(hidden_third))
                if seats.iter().any(|s| s.decision.is_none()) =>
            {
                Ok(Round::AwaitingDecisions(AwaitingDecisions { cards, spread, hidden_third, seats }))
            }
            (HandClass::NonConsecutive(_), Phase::Complete, Some(_)) => {
                Ok(Round::Complete(Complete { cards, class, third, seats }))
            }
            (HandClass::Pair, Phase::Complete, Some(_)) | (HandClass::Consecutive, Phase::Complete, None)
                if !any_decision =>
            {
                Ok(Round::Complete(Complete { cards, class, third, seats }))
            }
            _ => Err(bad("inconsistent phase, cards and decisions")),
        }
    }
}

impl Complete {
    /// The error for a decision (by `seat`) on this complete round.
    fn closed(&self, seat: usize) -> GameError {
        match self.class {
            HandClass::NonConsecutive(_) => GameError::DecisionsClosed { seat },
            class => GameError::NoDecisionOnThisHand { seat, class },
        }
    }

    /// Pays every seat by the rules and `paytable`, and totals the round (checked sums).
    pub fn settle(&self, paytable: &Paytable) -> Result<Settlement, GameError> {
        // A plain loop rather than `collect::<Result<Vec<_>, _>>()`: the simulator settles
        // millions of rounds, and the loop moves each seat's result once.
        let mut seats = Vec::with_capacity(self.seats.len());
        for (i, seat) in self.seats.iter().enumerate() {
            seats.push(settle_seat(i, seat, self.cards, self.class, self.third, paytable)?);
        }
        let total_staked = checked_sum(seats.iter().map(|s| s.stake), "the round's total stake")?;
        let total_returned = checked_sum(seats.iter().map(|s| s.returned), "the round's total return")?;
        Ok(Settlement { cards: self.cards, class: self.class, third: self.third, seats, total_staked, total_returned })
    }
}

fn settle_seat(
    index: usize,
    seat: &Seat,
    cards: [Card; 2],
    class: HandClass,
    third: Option<Card>,
    paytable: &Paytable,
) -> Result<SeatSettlement, GameError> {
    let overflow = || GameError::overflow(format!("seat {index}: the amount returned"));
    let missing = || GameError::ThirdCardMissing { seat: index };
    let raised = seat.decision == Some(Decision::Raise);
    let stood_by_default = matches!(class, HandClass::NonConsecutive(_)) && seat.decision.is_none();
    let stake = seat.stake()?;
    let (outcome, rule, odds) = match class {
        HandClass::Consecutive => (Outcome::Push, Rule::Consecutive, 0),
        HandClass::Pair => {
            if third.ok_or_else(missing)?.rank() == cards[0].rank() {
                (Outcome::Win, Rule::ThreeOfAKind, paytable.three_of_a_kind_odds())
            } else {
                (Outcome::Push, Rule::PairNoMatch, 0)
            }
        }
        HandClass::NonConsecutive(spread) => {
            let t = third.ok_or_else(missing)?.rank();
            let (a, b) = (cards[0].rank(), cards[1].rank());
            if strictly_between(a, b, t) {
                (Outcome::Win, Rule::ThirdCardBetween, paytable.spread_odds(spread))
            } else if t == a || t == b {
                (Outcome::Lose, Rule::ThirdCardMatches, 0)
            } else {
                (Outcome::Lose, Rule::ThirdCardOutside, 0)
            }
        }
    };
    let returned = match outcome {
        Outcome::Win => stake.checked_mul(u64::from(odds) + 1).ok_or_else(overflow)?,
        Outcome::Push => stake,
        Outcome::Lose => Money::ZERO,
    };
    Ok(SeatSettlement { seat: index, bet: seat.bet, raised, stood_by_default, stake, outcome, rule, odds, returned })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::card::StackedDeck;
    use crate::game::paytable::Paytable;

    fn deck(cards: &str) -> StackedDeck {
        StackedDeck::new(cards.split_whitespace().map(|c| c.parse::<Card>().unwrap()))
    }

    fn play(cards: &str, bets: &[u64], decisions: &[(usize, Decision)]) -> Settlement {
        let table = Table::default();
        let bets: Vec<Money> = bets.iter().map(|&b| Money(b)).collect();
        let mut round = Round::start(&table, &bets, &mut deck(cards)).unwrap();
        for &(seat, d) in decisions {
            round.decide(seat, d).unwrap();
        }
        round.close();
        round.settle(table.paytable()).unwrap()
    }

    #[test]
    fn king_king_king_pays_eleven_to_one() {
        let s = play("Kc Kd Kh", &[1000], &[]);
        assert_eq!(s.class, HandClass::Pair);
        assert_eq!(s.seats[0].rule, Rule::ThreeOfAKind);
        assert_eq!(s.seats[0].returned, Money(12_000));
    }

    #[test]
    fn king_king_seven_pushes() {
        let s = play("Kc Kd 7h", &[1000], &[]);
        assert_eq!((s.seats[0].outcome, s.seats[0].rule), (Outcome::Push, Rule::PairNoMatch));
        assert_eq!(s.seats[0].returned, Money(1000));
    }

    #[test]
    fn five_six_pushes_without_a_third_card() {
        let s = play("5c 6h 9d", &[700], &[]);
        assert_eq!(s.class, HandClass::Consecutive);
        assert_eq!(s.third, None);
        assert_eq!((s.seats[0].outcome, s.seats[0].returned), (Outcome::Push, Money(700)));
    }

    #[test]
    fn queen_king_pushes() {
        let s = play("Qs Kd 2d", &[700], &[]);
        assert_eq!((s.seats[0].rule, s.seats[0].returned), (Rule::Consecutive, Money(700)));
    }

    #[test]
    fn a_card_between_five_and_seven_pays_five_to_one() {
        let s = play("5c 7d 6h", &[1000], &[(0, Decision::Stand)]);
        assert_eq!(s.seats[0].odds, 5);
        assert_eq!(s.seats[0].returned, Money(6000));
    }

    #[test]
    fn the_raise_is_paid_at_the_spreads_odds_too() {
        // 4–Q is spread 7, even money: a raised 10.00 bet stakes 20.00 and returns 40.00.
        let s = play("4c Qd 9h", &[1000], &[(0, Decision::Raise)]);
        assert!(s.seats[0].raised);
        assert_eq!(s.seats[0].stake, Money(2000));
        assert_eq!(s.seats[0].returned, Money(4000));
        // 5–7 raised: 20.00 at 5:1 returns 120.00.
        let s = play("5c 7d 6h", &[1000], &[(0, Decision::Raise)]);
        assert_eq!(s.seats[0].returned, Money(12_000));
    }

    #[test]
    fn a_third_card_equal_to_either_first_card_loses() {
        for third in ["2h", "Jh"] {
            let s = play(&format!("2c Jd {third}"), &[1000], &[(0, Decision::Raise)]);
            assert_eq!((s.seats[0].outcome, s.seats[0].rule), (Outcome::Lose, Rule::ThirdCardMatches));
            assert_eq!(s.seats[0].returned, Money::ZERO);
        }
    }

    #[test]
    fn a_third_card_outside_loses_the_whole_stake() {
        let s = play("2c Jd Kh", &[1000], &[(0, Decision::Stand)]);
        assert_eq!((s.seats[0].rule, s.seats[0].returned), (Rule::ThirdCardOutside, Money::ZERO));
    }

    #[test]
    fn ace_two_hand_wins_on_any_card_from_three_to_king() {
        let s = play("As 2d Kh", &[1000], &[(0, Decision::Stand)]);
        assert_eq!(s.class, HandClass::NonConsecutive(Spread::new(11).unwrap()));
        assert_eq!(s.seats[0].returned, Money(2000));
    }

    #[test]
    fn on_three_of_a_kind_all_players_win() {
        let s = play("7c 7d 7h", &[500, 1000, 30_000], &[]);
        let returned: Vec<Money> = s.seats.iter().map(|x| x.returned).collect();
        assert_eq!(returned, vec![Money(6000), Money(12_000), Money(360_000)]);
    }

    #[test]
    fn seats_decide_independently_on_one_deal() {
        let s = play("3c 9d 5h", &[1000, 1000, 1000], &[(0, Decision::Raise), (1, Decision::Stand)]);
        // spread 5 pays 1:1
        assert_eq!(s.seats[0].returned, Money(4000));
        assert_eq!(s.seats[1].returned, Money(2000));
        assert!(s.seats[2].stood_by_default);
        assert_eq!(s.seats[2].returned, Money(2000));
    }

    #[test]
    fn the_third_card_stays_face_down_until_every_seat_decided() {
        let table = Table::default();
        let mut round = Round::start(&table, &[Money(500), Money(500)], &mut deck("3c 9d 5h")).unwrap();
        assert_eq!(round.third(), None);
        round.decide(1, Decision::Raise).unwrap();
        assert_eq!(round.third(), None);
        assert!(round.settle(table.paytable()).is_err());
        round.decide(0, Decision::Stand).unwrap();
        assert_eq!(round.third().map(|c| c.to_string()), Some("5h".to_string()));
    }

    #[test]
    fn the_shown_cards_never_hold_the_face_down_card() {
        let table = Table::default();
        let shown = |r: &Round| r.shown().cards().map(|c| c.to_string()).collect::<Vec<_>>().join(" ");
        let mut round = Round::start(&table, &[Money(500), Money(500)], &mut deck("3c 9d 5h")).unwrap();
        assert_eq!((shown(&round), round.shown().len()), ("3c 9d".to_string(), 2));
        round.decide(1, Decision::Raise).unwrap();
        assert_eq!(shown(&round), "3c 9d", "one seat still deciding");
        round.decide(0, Decision::Stand).unwrap();
        assert_eq!((shown(&round), round.shown().len()), ("3c 9d 5h".to_string(), 3));
        let pair = Round::start(&table, &[Money(500)], &mut deck("Kc Kd 7h")).unwrap();
        assert_eq!(shown(&pair), "Kc Kd 7h", "a pair's third card is dealt face up at once");
        let consecutive = Round::start(&table, &[Money(500)], &mut deck("9c Td 7h")).unwrap();
        assert_eq!(shown(&consecutive), "9c Td");
        let mut closed = Round::start(&table, &[Money(500)], &mut deck("3c 9d 5h")).unwrap();
        closed.close();
        assert_eq!(shown(&closed), "3c 9d 5h", "turned up at settlement");
    }

    #[test]
    fn raising_on_a_pair_is_refused() {
        let table = Table::default();
        let mut round = Round::start(&table, &[Money(500)], &mut deck("Kc Kd 7h")).unwrap();
        let before = round.clone();
        let err = round.decide(0, Decision::Raise).unwrap_err();
        assert_eq!(err, GameError::NoDecisionOnThisHand { seat: 0, class: HandClass::Pair });
        assert_eq!(round, before);
    }

    #[test]
    fn deciding_twice_is_refused() {
        let table = Table::default();
        let mut round = Round::start(&table, &[Money(500), Money(500)], &mut deck("3c 9d 5h")).unwrap();
        round.decide(0, Decision::Raise).unwrap();
        let err = round.decide(0, Decision::Stand).unwrap_err();
        assert_eq!(err, GameError::SeatAlreadyDecided { seat: 0 });
    }

    #[test]
    fn deciding_for_an_unknown_seat_is_refused() {
        let table = Table::default();
        let mut round = Round::start(&table, &[Money(500)], &mut deck("3c 9d 5h")).unwrap();
        let err = round.decide(3, Decision::Raise).unwrap_err();
        assert_eq!(err, GameError::UnknownSeat { seat: 3, seats: 1 });
    }

    #[test]
    fn settling_before_the_cards_are_complete_is_refused() {
        let table = Table::default();
        let round = Round::start(&table, &[Money(500)], &mut deck("3c 9d 5h")).unwrap();
        assert_eq!(round.settle(table.paytable()), Err(GameError::RoundNotComplete { undecided: 1 }));
    }

    #[test]
    fn bets_outside_the_limits_and_bad_seat_counts_are_refused() {
        let table = Table::default();
        let err = Round::start(&table, &[Money(500), Money(499)], &mut deck("3c 9d 5h")).unwrap_err();
        assert_eq!(err, GameError::BetOutsideLimits { seat: 1, bet: Money(499), limits: table.limits() });
        assert!(Round::start(&table, &[Money(30_001)], &mut deck("3c 9d 5h")).is_err());
        assert!(Round::start(&table, &[], &mut deck("3c 9d 5h")).is_err());
        assert_eq!(
            Round::start(&table, &[Money(500); 8], &mut deck("3c 9d 5h")),
            Err(GameError::SeatCount { seats: 8 })
        );
    }

    #[test]
    fn a_consecutive_round_draws_only_two_cards() {
        struct Counting(u32);
        impl CardSource for Counting {
            fn draw(&mut self) -> Card {
                self.0 += 1;
                Card::from_code(if self.0 == 1 { 12 } else { 16 }).unwrap() // 5c then 6c
            }
        }
        let mut src = Counting(0);
        let round = Round::start(&Table::default(), &[Money(500)], &mut src).unwrap();
        assert_eq!(round.class(), HandClass::Consecutive);
        assert_eq!(src.0, 2);
    }

    #[test]
    fn a_custom_paytable_is_used() {
        let table = Table::default().with_paytable(Paytable::new([10; 11], 50).unwrap()).unwrap();
        let mut round = Round::start(&table, &[Money(500)], &mut deck("2c Ad 9h")).unwrap();
        round.decide(0, Decision::Stand).unwrap();
        assert_eq!(round.settle(table.paytable()).unwrap().seats[0].returned, Money(5500));
    }

    #[test]
    fn decisions_of_one_call_apply_all_or_nothing_sorted_by_seat() {
        let table = Table::default();
        let mut round = Round::start(&table, &[Money(500), Money(600), Money(700)], &mut deck("3c 9d 5h")).unwrap();
        let before = round.clone();
        assert_eq!(
            round.decide_all(&[(2, Decision::Raise), (2, Decision::Stand)]),
            Err(GameError::SeatTwice { seat: 2 })
        );
        assert_eq!(
            round.decide_all(&[(1, Decision::Raise), (5, Decision::Stand)]).unwrap_err(),
            GameError::UnknownSeat { seat: 5, seats: 3 }
        );
        assert_eq!(round, before);
        let (sorted, raised) = round.decide_all(&[(2, Decision::Raise), (0, Decision::Raise)]).unwrap();
        assert_eq!(sorted, vec![(0, Decision::Raise), (2, Decision::Raise)]);
        assert_eq!(raised, Money(1200));
        let again = round.clone();
        assert_eq!(
            round.decide_all(&[(1, Decision::Stand), (0, Decision::Stand)]).unwrap_err(),
            GameError::SeatAlreadyDecided { seat: 0 }
        );
        assert_eq!(round, again);
        let (_, raised) = round.decide_all(&[(1, Decision::Stand)]).unwrap();
        assert_eq!(raised, Money::ZERO);
        assert!(matches!(round, Round::Complete(_)));
    }

    #[test]
    fn settlement_totals_are_the_exact_sums() {
        let s = play("3c 9d 5h", &[1000, 2000, 30_000], &[(0, Decision::Raise), (1, Decision::Stand)]);
        assert_eq!(s.total_staked, Money(2000 + 2000 + 30_000));
        assert_eq!(s.total_returned, Money(4000 + 4000 + 60_000));
    }

    #[test]
    fn snapshots_restore_to_the_same_round() {
        let table = Table::default();
        let mut round = Round::start(&table, &[Money(500), Money(600)], &mut deck("3c 9d 5h")).unwrap();
        assert_eq!(Round::restore(round.snapshot()).unwrap(), round);
        round.decide(0, Decision::Raise).unwrap();
        assert_eq!(Round::restore(round.snapshot()).unwrap(), round);
        round.close();
        assert_eq!(Round::restore(round.snapshot()).unwrap(), round);
    }

    #[test]
    fn inconsistent_snapshots_are_refused() {
        let table = Table::default();
        let round = Round::start(&table, &[Money(500)], &mut deck("5c 6d 5h")).unwrap();
        let mut snap = round.snapshot();
        snap.third = Some("5h".parse().unwrap());
        assert!(Round::restore(snap).is_err());
        let mut snap = round.snapshot();
        snap.seats[0].decision = Some(Decision::Raise);
        assert!(Round::restore(snap).is_err());
    }
}
