//! Cards, ranks, suits and the shoe they are dealt from.
//!
//! Encoding used everywhere (game, fairness spec, token, API): a card's *code* is
//! `(rank - 2) * 4 + suit`, with suits ordered clubs 0, diamonds 1, hearts 2, spades 3, so
//! codes run 0 (2♣) to 51 (A♠). A fresh, unshuffled shoe of `d` decks holds at position `p`
//! the card with code `p % 52`. A card's text form is its rank character (`23456789TJQKA`)
//! followed by its suit character (`cdhs`), e.g. `Ah`, `Tc`.

use std::fmt;

/// Cards in one standard deck.
pub const DECK_SIZE: usize = 52;
/// Largest shoe a table may use, in decks.
pub const MAX_DECKS: u8 = 8;

/// A card rank, 2..=14 (Jack 11, Queen 12, King 13, Ace 14). The Ace is high only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rank(u8);

impl Rank {
    pub const TWO: Rank = Rank(2);
    pub const JACK: Rank = Rank(11);
    pub const QUEEN: Rank = Rank(12);
    pub const KING: Rank = Rank(13);
    pub const ACE: Rank = Rank(14);

    /// The rank with this value, if it is in 2..=14.
    pub const fn new(value: u8) -> Option<Rank> {
        if value >= 2 && value <= 14 { Some(Rank(value)) } else { None }
    }

    /// The rank's value, 2..=14.
    pub const fn value(self) -> u8 {
        self.0
    }

    /// All thirteen ranks, low to high.
    pub fn all() -> impl Iterator<Item = Rank> {
        (2..=14).map(Rank)
    }

    /// The rank's one-character text form (`T` for ten).
    pub const fn symbol(self) -> char {
        b"23456789TJQKA"[(self.0 - 2) as usize] as char
    }
}

/// A card suit. Suits never affect the outcome of a round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Suit {
    Clubs = 0,
    Diamonds = 1,
    Hearts = 2,
    Spades = 3,
}

impl Suit {
    const ALL: [Suit; 4] = [Suit::Clubs, Suit::Diamonds, Suit::Hearts, Suit::Spades];

    /// The suit's one-character text form (`c`, `d`, `h`, `s`).
    pub const fn symbol(self) -> char {
        match self {
            Suit::Clubs => 'c',
            Suit::Diamonds => 'd',
            Suit::Hearts => 'h',
            Suit::Spades => 's',
        }
    }
}

/// One playing card. Its code (0..52) is the encoding of the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Card(u8);

impl Card {
    /// The card with this code, if the code is below 52.
    pub const fn from_code(code: u8) -> Option<Card> {
        if (code as usize) < DECK_SIZE { Some(Card(code)) } else { None }
    }

    /// The card of this rank and suit.
    pub const fn new(rank: Rank, suit: Suit) -> Card {
        Card((rank.0 - 2) * 4 + suit as u8)
    }

    /// The card's code, 0..52.
    pub const fn code(self) -> u8 {
        self.0
    }

    pub const fn rank(self) -> Rank {
        Rank(self.0 / 4 + 2)
    }

    pub const fn suit(self) -> Suit {
        Suit::ALL[(self.0 % 4) as usize]
    }

    /// The card's text form, e.g. `Ah` (the same as `Display`, without formatting machinery).
    pub const fn text(self) -> &'static str {
        CARD_TEXT[self.0 as usize]
    }
}

/// Text form of each card code, in code order.
const CARD_TEXT: [&str; DECK_SIZE] = [
    "2c", "2d", "2h", "2s", "3c", "3d", "3h", "3s", "4c", "4d", "4h", "4s", "5c", "5d", "5h", "5s", "6c", "6d", "6h",
    "6s", "7c", "7d", "7h", "7s", "8c", "8d", "8h", "8s", "9c", "9d", "9h", "9s", "Tc", "Td", "Th", "Ts", "Jc", "Jd",
    "Jh", "Js", "Qc", "Qd", "Qh", "Qs", "Kc", "Kd", "Kh", "Ks", "Ac", "Ad", "Ah", "As",
];

impl fmt::Display for Card {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl Card {
    /// The card whose canonical text is exactly `text` (`[23456789TJQKA][cdhs]`), if any.
    pub fn from_text(text: &str) -> Option<Card> {
        CARD_TEXT.iter().position(|&t| t == text).and_then(|i| Card::from_code(i as u8))
    }
}

impl std::str::FromStr for Card {
    type Err = CardError;

    /// Parses the canonical text form only: a rank `2`-`9`, `T`, `J`, `Q`, `K`, `A` then a
    /// suit `c`, `d`, `h`, `s` (e.g. `Ah`, `Tc`). `10h`, `ah` or ` Ah` are refused: one card
    /// has one text, so reveals and verifiers cannot disagree about it.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Card::from_text(s).ok_or_else(|| CardError::NotACard { text: s.to_string() })
    }
}

/// A card's text or a shoe's size the rules refuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CardError {
    /// Text that is not a card's canonical text.
    #[error("{text:?} is not a card like \"Ah\" or \"Tc\"")]
    NotACard { text: String },
    /// A shoe of no decks or of more than [`MAX_DECKS`].
    #[error("decks: {decks} is outside 1..={MAX_DECKS}")]
    DecksOutOfRange { decks: u32 },
}

/// The number of standard decks in a shoe, 1..=8.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Decks(u8);

impl Decks {
    /// One deck, the rule sheets' game.
    pub const ONE: Decks = Decks(1);

    /// `Ok` for 1..=8 decks.
    pub fn new(count: u32) -> Result<Decks, CardError> {
        if (1..=u32::from(MAX_DECKS)).contains(&count) {
            Ok(Decks(count as u8))
        } else {
            Err(CardError::DecksOutOfRange { decks: count })
        }
    }

    pub const fn get(self) -> u8 {
        self.0
    }

    /// Cards in the shoe, `52 * decks`.
    pub const fn cards(self) -> usize {
        self.0 as usize * DECK_SIZE
    }
}

impl Default for Decks {
    fn default() -> Self {
        Decks::ONE
    }
}

/// Where a round's cards come from: the seam between the rules and the randomness.
///
/// A round draws at most three cards, all at its start, from a freshly shuffled shoe; a
/// source need not hold more than that. The provably fair shoe
/// ([`crate::fairness`]), the simulator's fast shoe and the tests' stacked decks plug in here.
pub trait CardSource {
    /// The next card of the shoe, from the top.
    fn draw(&mut self) -> Card;
}

impl<S: CardSource + ?Sized> CardSource for &mut S {
    fn draw(&mut self) -> Card {
        (**self).draw()
    }
}

/// A shoe shuffled lazily by a *forward* Fisher–Yates: drawing the card at position `i`
/// swaps position `i` with a uniformly chosen position in `i..len`, so the first `k` draws
/// are exactly the first `k` cards of a full Fisher–Yates shuffle and cost `k` steps.
///
/// The choice of position is the caller's `pick(bound)`, which must return a uniform value
/// in `0..bound`; the provably fair module defines it byte-exactly, the simulator uses a
/// fast generator.
#[derive(Clone)]
pub struct Shoe {
    cards: [u8; MAX_DECKS as usize * DECK_SIZE],
    len: u16,
    next: u16,
}

impl Shoe {
    /// An unshuffled shoe: position `p` holds code `p % 52`.
    pub fn new(decks: Decks) -> Shoe {
        let mut cards = [0u8; MAX_DECKS as usize * DECK_SIZE];
        for (p, c) in cards.iter_mut().enumerate().take(decks.cards()) {
            *c = (p % DECK_SIZE) as u8;
        }
        Shoe { cards, len: decks.cards() as u16, next: 0 }
    }

    /// Cards not yet drawn.
    pub fn remaining(&self) -> usize {
        usize::from(self.len - self.next)
    }

    /// The next card, or `None` when the shoe is exhausted. `pick(bound)` must return a
    /// value below `bound`; a larger one is reduced modulo `bound` rather than trusted.
    pub fn draw_with(&mut self, pick: impl FnOnce(u32) -> u32) -> Option<Card> {
        let i = usize::from(self.next);
        let n = usize::from(self.len);
        if i >= n {
            return None;
        }
        let bound = (n - i) as u32;
        let j = i + (pick(bound) % bound) as usize;
        self.cards.swap(i, j);
        self.next += 1;
        Card::from_code(self.cards[i])
    }
}

/// A stacked deck for tests and worked examples: yields its cards in order, then repeats.
#[derive(Clone, Debug)]
pub struct StackedDeck {
    cards: Vec<Card>,
    next: usize,
}

impl StackedDeck {
    /// A deck that deals `cards` in order. An empty list deals the two of clubs forever.
    pub fn new(cards: impl IntoIterator<Item = Card>) -> StackedDeck {
        StackedDeck { cards: cards.into_iter().collect(), next: 0 }
    }
}

impl CardSource for StackedDeck {
    fn draw(&mut self) -> Card {
        let card = self.cards.get(self.next % self.cards.len().max(1)).copied();
        self.next += 1;
        card.unwrap_or(Card(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_through_rank_and_suit() {
        for code in 0..52u8 {
            let card = Card::from_code(code).unwrap();
            assert_eq!(Card::new(card.rank(), card.suit()), card);
        }
        assert_eq!(Card::from_code(52), None);
    }

    #[test]
    fn text_table_matches_rank_and_suit_symbols() {
        for code in 0..52u8 {
            let card = Card::from_code(code).unwrap();
            assert_eq!(card.text(), format!("{}{}", card.rank().symbol(), card.suit().symbol()));
        }
    }

    #[test]
    fn text_form_matches_the_encoding() {
        assert_eq!(Card::from_code(0).unwrap().to_string(), "2c");
        assert_eq!(Card::from_code(51).unwrap().to_string(), "As");
        assert_eq!("Th".parse::<Card>().unwrap(), Card::new(Rank::new(10).unwrap(), Suit::Hearts));
        for not_canonical in ["10h", "th", "TH", "ah", " Ah", "Ah ", "A h"] {
            assert!(not_canonical.parse::<Card>().is_err(), "{not_canonical:?}");
        }
        for code in 0..52 {
            let c = Card::from_code(code).unwrap();
            assert_eq!(Card::from_text(c.text()), Some(c));
        }
        assert!("1h".parse::<Card>().is_err());
        assert!("Ax".parse::<Card>().is_err());
        assert!("".parse::<Card>().is_err());
    }

    #[test]
    fn jack_is_eleven_and_ace_is_fourteen() {
        assert_eq!("Js".parse::<Card>().unwrap().rank().value(), 11);
        assert_eq!("Ad".parse::<Card>().unwrap().rank().value(), 14);
    }

    #[test]
    fn deck_count_is_one_to_eight() {
        assert!(Decks::new(0).is_err());
        assert!(Decks::new(9).is_err());
        assert_eq!(Decks::new(8).unwrap().cards(), 416);
    }

    #[test]
    fn a_shoe_drawn_to_the_end_is_a_permutation_of_its_decks() {
        let decks = Decks::new(2).unwrap();
        let mut shoe = Shoe::new(decks);
        let mut counts = [0u32; 52];
        let mut state = 12345u32;
        while let Some(card) = shoe.draw_with(|bound| {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
            state % bound
        }) {
            counts[card.code() as usize] += 1;
        }
        assert!(counts.iter().all(|&c| c == 2));
        assert_eq!(shoe.remaining(), 0);
    }

    #[test]
    fn picking_zero_every_time_deals_the_unshuffled_order() {
        let mut shoe = Shoe::new(Decks::ONE);
        let first: Vec<u8> = (0..5).map(|_| shoe.draw_with(|_| 0).unwrap().code()).collect();
        assert_eq!(first, vec![0, 1, 2, 3, 4]);
    }
}
