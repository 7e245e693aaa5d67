//! The rules of Red Dog (`docs/RULES.md`), pure: no I/O, no transport, no randomness of its own.
//!
//! - [`card`]: cards, the shoe, and the [`CardSource`] seam the randomness plugs into;
//! - [`hand`]: pair / consecutive / non-consecutive and the spread;
//! - [`paytable`] and [`table`]: what a table pays and allows;
//! - [`round`]: a multi-seat round, its phases and its settlement;
//! - [`money`]: integer minor units;
//! - [`error`]: what can go wrong, in the game's terms.

pub mod card;
pub mod error;
pub mod hand;
pub mod money;
pub mod paytable;
pub mod round;
pub mod table;

pub use card::{Card, CardError, CardSource, DECK_SIZE, Decks, MAX_DECKS, Rank, Shoe, StackedDeck, Suit};
pub use error::GameError;
pub use hand::{HandClass, Spread};
pub use money::Money;
pub use paytable::{Paytable, PaytableEntry, PaytableError};
pub use round::{Decision, Outcome, Phase, Round, RoundSnapshot, Rule, Seat, SeatSettlement, Settlement, ShownCards};
pub use table::{BetLimits, LimitsError, MAX_SEATS, Table, TableError, TableSpec, largest_max_bet};
