//! The round transcript: a SHA-256 chain over a round's steps (`docs/design/round-integrity.md`
//! §4, `docs/FAIRNESS.md`). `t_0` binds everything the round was started with (commitment,
//! table, round id, nonce, decks, client seed, paytable, bets); each `Decide` call extends the
//! chain with its decisions in ascending seat order:
//!
//! ```text
//! field(x) = u32be(len(x)) ‖ x
//! t_0 = SHA-256( field("reddog/transcript/v1/start") ‖ field(commitment: 32 raw bytes)
//!              ‖ field(table_id) ‖ field(round_id) ‖ field(u64be(nonce)) ‖ field(u8(decks))
//!              ‖ field(client_seed) ‖ field(u32be(odds spread 1..11) ‖ u32be(odds three of a kind))
//!              ‖ field(u64be(bet seat 0) ‖ … ‖ u64be(bet seat n−1)) )
//! t_k = SHA-256( field("reddog/transcript/v1/decide") ‖ field(t_{k−1}: 32 raw bytes)
//!              ‖ field(u8(seat) ‖ u8(action) ‖ …) )      raise = 1, stand = 2
//! ```
//! A round dealt under a rules digest ([`super::rules`]; every round of this engine version)
//! has `t_0` version 2: the label `"reddog/transcript/v2/start"` and, after the bets, one more
//! field, `field(rules_digest: 32 raw bytes)`. The `Decide` steps are the same in both.
//!
//! Two rounds (or two forks of one round) with any difference in those inputs or decisions
//! have different transcripts, so a fork cannot hide in a reveal or in the audit log.
//!
//! Pure: no I/O, no transport.

use std::fmt;

use sha2::{Digest, Sha256};

use super::rules::RulesDigest;
use crate::game::{Decision, Decks, Money, Paytable, Spread};

/// Domain label of `t_0` version 1 (a round without a rules digest).
pub const START_LABEL: &[u8] = b"reddog/transcript/v1/start";
/// Domain label of `t_0` version 2 (a round with a rules digest).
pub const START_LABEL_V2: &[u8] = b"reddog/transcript/v2/start";
/// Domain label of each `Decide` step.
pub const DECIDE_LABEL: &[u8] = b"reddog/transcript/v1/decide";

/// A transcript hash `t_k`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Transcript(pub [u8; 32]);

impl Transcript {
    /// 64 lower-case hex characters.
    pub fn to_hex(self) -> String {
        super::seed::hex32(&self.0)
    }

    /// `t_k` from `t_{k-1}` (`self`) and the k-th Decide's decisions. The decisions are
    /// hashed in ascending seat order whatever order they are given in.
    pub fn decide(self, decisions: &[(usize, Decision)]) -> Transcript {
        // The service passes decisions already in seat order: hashed as they are, without
        // a copy. A stable sort of sorted input changes nothing, so both paths hash the same.
        if !decisions.is_sorted_by_key(|&(seat, _)| seat) {
            let mut sorted = decisions.to_vec();
            sorted.sort_by_key(|&(seat, _)| seat);
            return self.decide(&sorted);
        }
        let mut h = Sha256::new();
        field(&mut h, DECIDE_LABEL);
        field(&mut h, &self.0);
        // field(u8(seat) ‖ u8(action) ‖ …), streamed into the hash.
        h.update(len32_of(decisions.len().saturating_mul(2)).to_be_bytes());
        for &(seat, d) in decisions {
            // Seats are < MAX_SEATS (7): the cast never truncates for a genuine round.
            h.update([u8::try_from(seat).unwrap_or(u8::MAX), action_byte(d)]);
        }
        Transcript(h.finalize().into())
    }
}

impl fmt::Debug for Transcript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Transcript({})", self.to_hex())
    }
}

impl fmt::Display for Transcript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        super::seed::fmt_hex32(&self.0, f)
    }
}

/// The byte of an action in the transcript: raise = 1, stand = 2.
pub const fn action_byte(d: Decision) -> u8 {
    match d {
        Decision::Raise => 1,
        Decision::Stand => 2,
    }
}

/// Everything `t_0` binds.
#[derive(Clone, Copy, Debug)]
pub struct StartInputs<'a> {
    /// SHA-256 of the server seed (raw bytes).
    pub commitment: &'a [u8; 32],
    pub table_id: &'a str,
    pub round_id: &'a str,
    pub nonce: u64,
    pub decks: Decks,
    pub client_seed: &'a [u8],
    pub paytable: &'a Paytable,
    /// The original bets, seat 0 first.
    pub bets: &'a [Money],
    /// The table's rules digest: `Some` gives `t_0` version 2, `None` version 1 (a round
    /// sealed before rounds carried their table's rules).
    pub rules_digest: Option<&'a RulesDigest>,
}

impl StartInputs<'_> {
    /// The bytes of [`StartInputs::preimage`], piece by piece, through `put`.
    fn write_preimage(&self, mut put: impl FnMut(&[u8])) {
        let mut odds = [0u8; 48];
        for (chunk, s) in odds.chunks_exact_mut(4).zip(Spread::all()) {
            chunk.copy_from_slice(&self.paytable.spread_odds(s).to_be_bytes());
        }
        odds[44..].copy_from_slice(&self.paytable.three_of_a_kind_odds().to_be_bytes());
        let label = if self.rules_digest.is_some() { START_LABEL_V2 } else { START_LABEL };
        for part in [
            label,
            &self.commitment[..],
            self.table_id.as_bytes(),
            self.round_id.as_bytes(),
            &self.nonce.to_be_bytes(),
            &[self.decks.get()],
            self.client_seed,
            &odds,
        ] {
            put(&len32(part).to_be_bytes());
            put(part);
        }
        // field(u64be(bet seat 0) ‖ …), written bet by bet.
        put(&len32_of(self.bets.len().saturating_mul(8)).to_be_bytes());
        for b in self.bets {
            put(&b.0.to_be_bytes());
        }
        if let Some(d) = self.rules_digest {
            put(&len32(&d.0).to_be_bytes());
            put(&d.0);
        }
    }

    /// The exact bytes SHA-256 is taken of for `t_0` (published in the test vectors).
    pub fn preimage(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(200 + self.client_seed.len() + self.round_id.len());
        self.write_preimage(|b| out.extend_from_slice(b));
        out
    }

    /// `t_0`: SHA-256 of the preimage, streamed into the hash without building it.
    pub fn transcript(&self) -> Transcript {
        let mut h = Sha256::new();
        self.write_preimage(|b| h.update(b));
        Transcript(h.finalize().into())
    }
}

/// The length of a field as `u32`. Every field is bounded far below 4 GiB by the API (the
/// longest is a 1024-byte client seed); a longer one would be a bug, and is hashed with a
/// saturated length rather than a wrapped one, which still differs from every genuine input.
fn len32(bytes: &[u8]) -> u32 {
    len32_of(bytes.len())
}

/// [`len32`] of a length.
fn len32_of(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

fn field(h: &mut Sha256, bytes: &[u8]) {
    h.update(len32(bytes).to_be_bytes());
    h.update(bytes);
}

/// The whole chain `t_0, t_1, …, t_K` of a round started with `start` whose Decide calls
/// had `steps` as decisions.
pub fn chain(start: &StartInputs<'_>, steps: &[Vec<(usize, Decision)>]) -> Vec<Transcript> {
    let mut out = Vec::with_capacity(steps.len() + 1);
    let mut t = start.transcript();
    out.push(t);
    for step in steps {
        t = t.decide(step);
        out.push(t);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start<'a>(commitment: &'a [u8; 32], bets: &'a [Money], paytable: &'a Paytable) -> StartInputs<'a> {
        StartInputs {
            commitment,
            table_id: "default",
            round_id: "r-1",
            nonce: 7,
            decks: Decks::ONE,
            client_seed: b"lucky",
            paytable,
            bets,
            rules_digest: None,
        }
    }

    #[test]
    fn the_v2_preimage_has_its_own_label_and_the_rules_digest_last() {
        let c = [0xab; 32];
        let bets = [Money(500)];
        let p = Paytable::STANDARD;
        let digest = RulesDigest([0x5c; 32]);
        let v1 = start(&c, &bets, &p);
        let v2 = StartInputs { rules_digest: Some(&digest), ..v1 };
        let mut expect = v1.preimage();
        let label_field = [&26u32.to_be_bytes()[..], b"reddog/transcript/v1/start"].concat();
        assert!(expect.starts_with(&label_field));
        expect.splice(..label_field.len(), [&26u32.to_be_bytes()[..], b"reddog/transcript/v2/start"].concat());
        expect.extend_from_slice(&32u32.to_be_bytes());
        expect.extend_from_slice(&[0x5c; 32]);
        assert_eq!(v2.preimage(), expect);
        assert_eq!(v2.transcript().0, <[u8; 32]>::from(Sha256::digest(&expect)));
        let other = RulesDigest([0x5d; 32]);
        assert_ne!(StartInputs { rules_digest: Some(&other), ..v1 }.transcript(), v2.transcript());
        assert_ne!(v1.transcript(), v2.transcript());
    }

    #[test]
    fn the_preimage_is_the_specified_byte_layout() {
        let c = [0xab; 32];
        let bets = [Money(500), Money(1000)];
        let p = Paytable::STANDARD;
        let pre = start(&c, &bets, &p).preimage();
        let mut expect = Vec::new();
        let mut put = |b: &[u8]| {
            expect.extend_from_slice(&(b.len() as u32).to_be_bytes());
            expect.extend_from_slice(b);
        };
        put(b"reddog/transcript/v1/start");
        put(&[0xab; 32]);
        put(b"default");
        put(b"r-1");
        put(&7u64.to_be_bytes());
        put(&[1]);
        put(b"lucky");
        let odds: Vec<u8> = [5u32, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1, 11].iter().flat_map(|o| o.to_be_bytes()).collect();
        assert_eq!(odds.len(), 48);
        put(&odds);
        put(&[500u64.to_be_bytes(), 1000u64.to_be_bytes()].concat());
        assert_eq!(pre, expect);
        assert_eq!(start(&c, &bets, &p).transcript().0, <[u8; 32]>::from(Sha256::digest(&expect)));
    }

    #[test]
    fn the_streamed_hashes_are_sha256_of_the_specified_bytes() {
        let c = [0x5a; 32];
        let p = Paytable::new([9, 8, 7, 6, 5, 4, 3, 2, 1, 1, 1], 300).unwrap();
        let seed = vec![b'x'; 1024];
        for bets in [&[][..], &[Money(1)][..], &[Money(u64::MAX); 7][..]] {
            let s = StartInputs { client_seed: &seed, round_id: "", table_id: "t.1", ..start(&c, bets, &p) };
            assert_eq!(s.transcript().0, <[u8; 32]>::from(Sha256::digest(s.preimage())));
        }
        // t_k over u32be(len) ‖ (u8(seat) ‖ u8(action))… in seat order, whatever the given order.
        let t = Transcript([3; 32]);
        let decisions = [(4, Decision::Stand), (0, Decision::Raise), (6, Decision::Raise), (2, Decision::Stand)];
        let mut expect = Vec::new();
        for part in [DECIDE_LABEL, &t.0[..], &[0, 1, 2, 2, 4, 2, 6, 1][..]] {
            expect.extend_from_slice(&(part.len() as u32).to_be_bytes());
            expect.extend_from_slice(part);
        }
        let want = <[u8; 32]>::from(Sha256::digest(&expect));
        let mut sorted = decisions;
        sorted.sort_by_key(|&(seat, _)| seat);
        assert_eq!(t.decide(&decisions).0, want);
        assert_eq!(t.decide(&sorted).0, want);
    }

    #[test]
    fn every_input_and_every_decision_changes_the_transcript() {
        let c = [1; 32];
        let bets = [Money(500)];
        let p = Paytable::STANDARD;
        let base = start(&c, &bets, &p);
        let t0 = base.transcript();
        let other_c = [2; 32];
        let other_bets = [Money(501)];
        let other_p = Paytable::new([5, 4, 2, 1, 1, 1, 1, 1, 1, 1, 2], 11).unwrap();
        let variants = [
            StartInputs { commitment: &other_c, ..base },
            StartInputs { table_id: "vip", ..base },
            StartInputs { round_id: "r-2", ..base },
            StartInputs { nonce: 8, ..base },
            StartInputs { decks: Decks::new(2).unwrap(), ..base },
            StartInputs { client_seed: b"lucky!", ..base },
            StartInputs { paytable: &other_p, ..base },
            StartInputs { bets: &other_bets, ..base },
        ];
        for v in variants {
            assert_ne!(v.transcript(), t0, "{v:?}");
        }
        let raise = t0.decide(&[(0, Decision::Raise)]);
        let stand = t0.decide(&[(0, Decision::Stand)]);
        assert_ne!(raise, stand);
        assert_ne!(raise, t0);
        // One call with two seats differs from two calls with one seat each.
        let together = t0.decide(&[(0, Decision::Raise), (1, Decision::Stand)]);
        let apart = t0.decide(&[(0, Decision::Raise)]).decide(&[(1, Decision::Stand)]);
        assert_ne!(together, apart);
        // The order inside one call does not matter.
        assert_eq!(together, t0.decide(&[(1, Decision::Stand), (0, Decision::Raise)]));
        let chain = chain(&base, &[vec![(0, Decision::Raise)], vec![(1, Decision::Stand)]]);
        assert_eq!(chain, vec![t0, t0.decide(&[(0, Decision::Raise)]), apart]);
    }
}
