//! The rules digest: one hash of everything that decides a round's payout at a table — deck
//! count, paytable, bet limits, currency and its minor-unit exponent (`docs/FAIRNESS.md` 4.6,
//! `docs/design/evidence-contract.md` §3):
//!
//! ```text
//! field(x) = u32be(len(x)) ‖ x
//! rules_digest = SHA-256( field("reddog/rules/v1") ‖ field(u8(decks))
//!                       ‖ field(u32be(odds spread 1) ‖ … ‖ u32be(odds spread 11) ‖ u32be(odds three of a kind))
//!                       ‖ field(u64be(min_bet) ‖ u64be(max_bet))
//!                       ‖ field(currency code, ASCII) ‖ field(u8(exponent))
//!                       [‖ field(u8(1))]                        only at a sandbox table )
//! ```
//!
//! A sandbox table's digest has the last field, a fair table's does not, so a fair table's
//! digest is unchanged since version 1 and no sandbox table shares a digest with a fair one
//! (a sandbox round never passes for a fair one by its rules, and `--certified-rules` never
//! certifies a sandbox table).
//!
//! The engine binds it into the commitment token at `CommitSeed` with the rules it hashes
//! (the round is dealt under them on any replica), shows it with the commitment, hashes it
//! into `t_0` and states it (with the limits and currency it is computed from) in the reveal.
//!
//! Pure: no I/O, no transport.

use std::fmt;

use sha2::{Digest, Sha256};

use crate::game::{BetLimits, Decks, Paytable, Spread, Table};

/// Domain label of the rules digest.
pub const RULES_LABEL: &[u8] = b"reddog/rules/v1";

/// A table's rules digest (32 bytes).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RulesDigest(pub [u8; 32]);

/// What a rules digest is computed from.
#[derive(Clone, Copy, Debug)]
pub struct TableRules<'a> {
    pub decks: Decks,
    pub paytable: &'a Paytable,
    /// The table's own limits (not a player's narrower ones).
    pub limits: BetLimits,
    /// ISO 4217 alphabetic code, e.g. `EUR`.
    pub currency: &'a str,
    /// Decimals of the currency's minor unit (0 … 4).
    pub exponent: u8,
    /// A sandbox table (its rounds' cards may be requested): the digest says so.
    pub sandbox: bool,
}

impl<'a> TableRules<'a> {
    /// A table's rules with its currency — the one way the engine, the audit tools and
    /// certification compute a table's digest.
    pub fn of(table: &'a Table, currency: &'a str, exponent: u8, sandbox: bool) -> TableRules<'a> {
        TableRules {
            decks: table.decks(),
            paytable: table.paytable(),
            limits: table.limits(),
            currency,
            exponent,
            sandbox,
        }
    }

    /// The exact bytes SHA-256 is taken of.
    pub fn preimage(&self) -> Vec<u8> {
        let mut odds = Vec::with_capacity(48);
        for s in Spread::all() {
            odds.extend_from_slice(&self.paytable.spread_odds(s).to_be_bytes());
        }
        odds.extend_from_slice(&self.paytable.three_of_a_kind_odds().to_be_bytes());
        let mut limits = [0u8; 16];
        limits[..8].copy_from_slice(&self.limits.min().0.to_be_bytes());
        limits[8..].copy_from_slice(&self.limits.max().0.to_be_bytes());
        let mut out = Vec::with_capacity(120);
        let sandbox: &[u8] = if self.sandbox { &[1] } else { &[] };
        let parts =
            [RULES_LABEL, &[self.decks.get()][..], &odds, &limits, self.currency.as_bytes(), &[self.exponent][..]];
        for part in parts.into_iter().chain((!sandbox.is_empty()).then_some(sandbox)) {
            // Every part is at most 48 bytes, or a 3-byte currency code.
            out.extend_from_slice(&u32::try_from(part.len()).unwrap_or(u32::MAX).to_be_bytes());
            out.extend_from_slice(part);
        }
        out
    }

    /// The digest.
    pub fn digest(&self) -> RulesDigest {
        RulesDigest(Sha256::digest(self.preimage()).into())
    }
}

impl RulesDigest {
    /// 64 lower-case hex characters.
    pub fn to_hex(self) -> String {
        super::seed::hex32(&self.0)
    }

    /// From a sealed token's bytes: exactly 32, else `None`.
    pub fn from_slice(bytes: &[u8]) -> Option<RulesDigest> {
        bytes.try_into().ok().map(RulesDigest)
    }
}

impl fmt::Debug for RulesDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RulesDigest({})", self.to_hex())
    }
}

impl fmt::Display for RulesDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        super::seed::fmt_hex32(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::Money;

    fn standard() -> TableRules<'static> {
        TableRules {
            decks: Decks::ONE,
            paytable: &Paytable::STANDARD,
            limits: BetLimits::STANDARD,
            currency: "XXX",
            exponent: 2,
            sandbox: false,
        }
    }

    #[test]
    fn the_preimage_is_the_specified_byte_layout() {
        let mut want = Vec::new();
        for part in [
            &b"reddog/rules/v1"[..],
            &[1],
            &[5u32, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1, 11].iter().flat_map(|o| o.to_be_bytes()).collect::<Vec<_>>(),
            &[500u64.to_be_bytes(), 30_000u64.to_be_bytes()].concat(),
            b"XXX",
            &[2],
        ] {
            want.extend_from_slice(&(part.len() as u32).to_be_bytes());
            want.extend_from_slice(part);
        }
        assert_eq!(standard().preimage(), want);
        assert_eq!(standard().digest().0, <[u8; 32]>::from(Sha256::digest(&want)));
    }

    /// The digest of the default table (1 deck, standard paytable, 500 … 30000, XXX with
    /// exponent 2), pinned: computed independently with
    /// `python3 -c 'import hashlib,struct; f=lambda b: struct.pack(">I",len(b))+b; print(hashlib.sha256(f(b"reddog/rules/v1")+f(bytes([1]))+f(b"".join(struct.pack(">I",o) for o in [5,4,2,1,1,1,1,1,1,1,1,11]))+f(struct.pack(">QQ",500,30000))+f(b"XXX")+f(bytes([2]))).hexdigest())'`.
    #[test]
    fn the_default_tables_digest_is_pinned() {
        assert_eq!(standard().digest().to_hex(), "ba6aea6bf53856b62d2cdacdc49e46ae65b537c2f21a31d8a5207706a8eba781");
    }

    /// A sandbox table appends `field(u8(1))`: pinned with the command above plus
    /// `+f(bytes([1]))`.
    #[test]
    fn a_sandbox_tables_digest_appends_the_flag() {
        let sandbox = TableRules { sandbox: true, ..standard() };
        let mut want = standard().preimage();
        want.extend_from_slice(&[0, 0, 0, 1, 1]);
        assert_eq!(sandbox.preimage(), want);
        assert_eq!(sandbox.digest().to_hex(), SANDBOX_DEFAULT_DIGEST);
    }

    const SANDBOX_DEFAULT_DIGEST: &str = "4917fc15c9298d73b0e135862b41ed5254e9d5d4fcd06ecd5504efb05762c278";

    #[test]
    fn every_input_changes_the_digest() {
        let base = standard().digest();
        let p = Paytable::new([5, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1], 12).unwrap();
        let variants = [
            TableRules { decks: Decks::new(2).unwrap(), ..standard() },
            TableRules { paytable: &p, ..standard() },
            TableRules { limits: BetLimits::new(Money(501), Money(30_000)).unwrap(), ..standard() },
            TableRules { limits: BetLimits::new(Money(500), Money(30_001)).unwrap(), ..standard() },
            TableRules { currency: "EUR", ..standard() },
            TableRules { exponent: 3, ..standard() },
            TableRules { sandbox: true, ..standard() },
        ];
        for v in variants {
            assert_ne!(v.digest(), base, "{v:?}");
        }
    }
}
