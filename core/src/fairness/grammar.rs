//! The strict reveal grammar (`docs/FAIRNESS.md` §4, `docs/design/round-integrity.md` §3),
//! one for both versions: a reveal that breaks it is *malformed*, whatever its content.
//!
//! - The text is one JSON object; no key appears twice at any depth (serde_json's maps keep
//!   the last of two equal keys silently, so the text is read into a tree of its own that
//!   refuses them); no key is missing or unknown.
//! - Integers are digits only: no sign, fraction or exponent (JSON already forbids leading
//!   zeros), within 0 … 2⁶⁴−1 and the field's range.
//! - Cards are canonical text `[23456789TJQKA][cdhs]`, exactly 2 when the first two are
//!   consecutive, exactly 3 otherwise.
//! - Version 1 (no `format` key): `algorithm`, `server_seed`, `commitment` (64 hex, either
//!   case), `client_seed` (any string), `nonce`, `decks` (1 … 8), `cards`, optional `round_id`
//!   (1–128 bytes, no control characters).
//! - Version 2 (`"format":"reddog-reveal-v2"`): the fourteen keys of the format, each as the
//!   design record states (hex lower-case; `table_id` 1–64 bytes of `[A-Za-z0-9._-]`;
//!   `client_seed` 1–1024 bytes; `paytable` exactly `{"spread":[11],"three_of_a_kind":n}`
//!   with odds 1 … 10000; `decisions` non-empty calls of `{"seat","action"}` in ascending seat
//!   order, a seat at most once in the round, none unless the hand is non-consecutive;
//!   `seats` 1–7 objects exactly `{"bet","raised","stake","returned"}`).
//! - Version 3 (`"format":"reddog-reveal-v3"`): version 2's keys and three more: `limits`
//!   exactly `{"min_bet","max_bet"}` with 1 ≤ min_bet ≤ max_bet ≤ `MAX_BET`; `currency`
//!   exactly `{"code","exponent"}`, the code three ASCII capital letters, the exponent 0 … 4;
//!   `rules_digest` 64 lower-case hex.
//!
//! Errors are [`FairnessError::InvalidArgument`] naming the JSON path at fault.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

use super::FairnessError;
use super::reveal::{
    AnyReveal, REVEAL_V2, REVEAL_V3, RevealCurrency, RevealDecision, RevealLimits, RevealSeat, RevealV1, RevealV2,
};
use super::shuffle::ALGORITHM;
use crate::game::paytable::MAX_ODDS;
use crate::game::table::MAX_BET;
use crate::game::{Card, HandClass, MAX_DECKS, MAX_SEATS, Paytable};

use crate::ids::{
    IdError, MAX_MINOR_UNIT_EXPONENT as MAX_CURRENCY_EXPONENT, check_client_seed, check_currency_code, check_round_id,
    check_table_id,
};
pub use crate::ids::{MAX_CLIENT_SEED_BYTES, MAX_ROUND_ID_BYTES, MAX_TABLE_ID_BYTES};

/// A JSON value as the grammar sees it: integers are `u64` only, objects keep their keys in
/// order and never hold one twice.
#[derive(Clone, Debug, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Int(u64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Int(_) => "an integer",
            Json::Str(_) => "a string",
            Json::Arr(_) => "an array",
            Json::Obj(_) => "an object",
        }
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Int(v))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Json, E> {
        Err(E::custom("a negative number (integers are digits only)"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Json, E> {
        Err(E::custom("a number that is not an integer in 0..=18446744073709551615 (digits only)"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(JsonSeed)? {
            out.push(v);
        }
        Ok(Json::Arr(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut out: Vec<(String, Json)> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.iter().any(|(k, _)| *k == key) {
                return Err(de::Error::custom(format!("the key {key:?} appears twice")));
            }
            let value = map.next_value_seed(JsonSeed)?;
            out.push((key, value));
        }
        Ok(Json::Obj(out))
    }
}

struct JsonSeed;

impl<'de> de::DeserializeSeed<'de> for JsonSeed {
    type Value = Json;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

fn bad(path: impl Into<String>, reason: impl Into<String>) -> FairnessError {
    FairnessError::malformed(path, reason)
}

/// An object's fields, taken one by one; whatever is left over is an unknown key.
struct Fields<'a> {
    path: String,
    fields: Vec<(&'a str, &'a Json)>,
}

impl<'a> Fields<'a> {
    fn of(path: &str, v: &'a Json) -> Result<Fields<'a>, FairnessError> {
        match v {
            Json::Obj(fields) => {
                Ok(Fields { path: path.to_string(), fields: fields.iter().map(|(k, v)| (k.as_str(), v)).collect() })
            }
            other => Err(bad(path_or_root(path), format!("must be an object, not {}", other.kind()))),
        }
    }

    fn at(&self, key: &str) -> String {
        if self.path.is_empty() { key.to_string() } else { format!("{}.{key}", self.path) }
    }

    fn take_opt(&mut self, key: &str) -> Option<&'a Json> {
        let i = self.fields.iter().position(|(k, _)| *k == key)?;
        Some(self.fields.remove(i).1)
    }

    fn take(&mut self, key: &str) -> Result<(&'a Json, String), FairnessError> {
        let path = self.at(key);
        self.take_opt(key).map(|v| (v, path.clone())).ok_or_else(|| bad(path, "missing"))
    }

    fn finish(self) -> Result<(), FairnessError> {
        match self.fields.first() {
            Some((k, _)) => Err(bad(self.at(k), "unknown key")),
            None => Ok(()),
        }
    }

    fn string(&mut self, key: &str) -> Result<(&'a str, String), FairnessError> {
        let (v, path) = self.take(key)?;
        match v {
            Json::Str(s) => Ok((s, path)),
            other => Err(bad(path, format!("must be a string, not {}", other.kind()))),
        }
    }

    fn int(&mut self, key: &str, min: u64, max: u64) -> Result<u64, FairnessError> {
        let (v, path) = self.take(key)?;
        int(v, &path, min, max)
    }

    fn boolean(&mut self, key: &str) -> Result<bool, FairnessError> {
        let (v, path) = self.take(key)?;
        match v {
            Json::Bool(b) => Ok(*b),
            other => Err(bad(path, format!("must be true or false, not {}", other.kind()))),
        }
    }

    fn array(&mut self, key: &str) -> Result<(&'a [Json], String), FairnessError> {
        let (v, path) = self.take(key)?;
        match v {
            Json::Arr(a) => Ok((a, path)),
            other => Err(bad(path, format!("must be an array, not {}", other.kind()))),
        }
    }
}

fn path_or_root(path: &str) -> String {
    if path.is_empty() { "reveal".to_string() } else { path.to_string() }
}

fn int(v: &Json, path: &str, min: u64, max: u64) -> Result<u64, FairnessError> {
    match v {
        Json::Int(n) if (min..=max).contains(n) => Ok(*n),
        Json::Int(n) => Err(bad(path, format!("{n} is outside {min}..={max}"))),
        other => Err(bad(path, format!("must be an integer, not {}", other.kind()))),
    }
}

fn hex64(s: &str, path: &str, lower_only: bool) -> Result<String, FairnessError> {
    let ok = s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b) || (!lower_only && (b'A'..=b'F').contains(&b)));
    if ok {
        Ok(s.to_string())
    } else if lower_only {
        Err(bad(path, "must be 64 lower-case hexadecimal characters"))
    } else {
        Err(bad(path, "must be 64 hexadecimal characters"))
    }
}

fn round_id(s: &str, path: &str) -> Result<String, FairnessError> {
    match check_round_id(s) {
        Ok(()) => Ok(s.to_string()),
        Err(IdError::ControlCharacter) => Err(bad(path, "must not contain control characters")),
        Err(_) => Err(bad(path, format!("must be 1 to {MAX_ROUND_ID_BYTES} bytes"))),
    }
}

fn cards(list: &[Json], path: &str) -> Result<(Vec<String>, HandClass), FairnessError> {
    let mut parsed = Vec::with_capacity(list.len());
    for (i, c) in list.iter().enumerate() {
        let card = match c {
            Json::Str(s) => Card::from_text(s),
            _ => None,
        };
        parsed.push(
            card.ok_or_else(|| bad(format!("{path}[{i}]"), "must be a card in canonical text like \"Ah\" or \"Tc\""))?,
        );
    }
    let consecutive = |a: Card, b: Card| HandClass::of(a, b) == HandClass::Consecutive;
    match parsed[..] {
        [a, b] if consecutive(a, b) => {}
        [a, b, _] if !consecutive(a, b) => {}
        [a, b] => return Err(bad(path, format!("{a} {b} is not consecutive: exactly 3 cards are dealt"))),
        [a, b, _] => return Err(bad(path, format!("{a} {b} is consecutive: exactly 2 cards are dealt"))),
        _ => return Err(bad(path, "a round deals 2 or 3 cards")),
    }
    Ok((parsed.iter().map(|c| c.text().to_string()).collect(), HandClass::of(parsed[0], parsed[1])))
}

/// The `format` of a sandbox round's reveal (a version-2 reveal under another name): its
/// cards were requested at a sandbox table, not dealt from the committed seed, so no
/// verifier accepts it as a fair round.
pub const SANDBOX_REVEAL_FORMAT: &str = "reddog-sandbox-reveal-v1";

/// Parses a reveal of either version by the strict grammar. A sandbox reveal
/// ([`SANDBOX_REVEAL_FORMAT`]) is refused with a message saying so.
pub fn parse(text: &str) -> Result<AnyReveal, FairnessError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let tree = de::DeserializeSeed::deserialize(JsonSeed, &mut de)
        .and_then(|t| de.end().map(|()| t))
        .map_err(|e| bad("reveal", format!("not valid JSON by the reveal grammar: {e}")))?;
    let mut f = Fields::of("", &tree)?;
    match f.take_opt("format") {
        None => parse_v1(f).map(AnyReveal::V1),
        Some(Json::Str(s)) if s == REVEAL_V2 => parse_v2(f, false).map(AnyReveal::V2),
        Some(Json::Str(s)) if s == REVEAL_V3 => parse_v2(f, true).map(AnyReveal::V2),
        Some(Json::Str(s)) if s == SANDBOX_REVEAL_FORMAT => Err(bad(
            "format",
            format!(
                "{SANDBOX_REVEAL_FORMAT}: a sandbox round, dealt at a test table from requested cards, not from the \
                 committed seed; it never verifies as a fair round"
            ),
        )),
        Some(_) => Err(bad(
            "format",
            format!("unknown reveal format (this verifier reads {REVEAL_V3}, {REVEAL_V2} and version 1)"),
        )),
    }
}

fn algorithm(f: &mut Fields<'_>) -> Result<String, FairnessError> {
    let (a, path) = f.string("algorithm")?;
    if a != ALGORITHM {
        return Err(bad(path, format!("unknown algorithm {a:?} (this verifier implements {ALGORITHM})")));
    }
    Ok(a.to_string())
}

fn parse_v1(mut f: Fields<'_>) -> Result<RevealV1, FairnessError> {
    let algorithm = algorithm(&mut f)?;
    let (s, p) = f.string("server_seed")?;
    let server_seed = hex64(s, &p, false)?;
    let (s, p) = f.string("commitment")?;
    let commitment = hex64(s, &p, false)?;
    let client_seed = f.string("client_seed")?.0.to_string();
    let nonce = f.int("nonce", 0, u64::MAX)?;
    let decks = f.int("decks", 1, u64::from(MAX_DECKS))? as u8;
    let (list, p) = f.array("cards")?;
    let (cards, _) = cards(list, &p)?;
    let round_id = match f.take_opt("round_id") {
        None => None,
        Some(Json::Str(s)) => Some(round_id(s, "round_id")?),
        Some(other) => return Err(bad("round_id", format!("must be a string, not {}", other.kind()))),
    };
    f.finish()?;
    Ok(RevealV1 { algorithm, server_seed, commitment, client_seed, nonce, decks, cards, round_id })
}

/// Version 3's `limits`, `currency` and `rules_digest`.
fn parse_v3_rules(f: &mut Fields<'_>) -> Result<(RevealLimits, RevealCurrency, String), FairnessError> {
    let limits = {
        let (v, p) = f.take("limits")?;
        let mut lf = Fields::of(&p, v)?;
        let min_bet = lf.int("min_bet", 1, MAX_BET)?;
        let max_bet = lf.int("max_bet", min_bet, MAX_BET)?;
        lf.finish()?;
        RevealLimits { min_bet, max_bet }
    };
    let currency = {
        let (v, p) = f.take("currency")?;
        let mut cf = Fields::of(&p, v)?;
        let (code, cp) = cf.string("code")?;
        if check_currency_code(code).is_err() {
            return Err(bad(cp, "must be an ISO 4217 alphabetic code: three capital letters A-Z"));
        }
        let exponent = cf.int("exponent", 0, u64::from(MAX_CURRENCY_EXPONENT))? as u8;
        cf.finish()?;
        RevealCurrency { code: code.to_string(), exponent }
    };
    let (d, p) = f.string("rules_digest")?;
    let digest = hex64(d, &p, true)?;
    Ok((limits, currency, digest))
}

fn parse_v2(mut f: Fields<'_>, v3: bool) -> Result<RevealV2, FairnessError> {
    let algorithm = algorithm(&mut f)?;
    let (s, p) = f.string("server_seed")?;
    let server_seed = hex64(s, &p, true)?;
    let (s, p) = f.string("commitment")?;
    let commitment = hex64(s, &p, true)?;
    let (t, p) = f.string("table_id")?;
    if check_table_id(t).is_err() {
        return Err(bad(p, format!("must be 1 to {MAX_TABLE_ID_BYTES} characters of [A-Za-z0-9._-]")));
    }
    let table_id = t.to_string();
    let (r, p) = f.string("round_id")?;
    let round_id = round_id(r, &p)?;
    let (c, p) = f.string("client_seed")?;
    if check_client_seed(c).is_err() {
        return Err(bad(p, format!("must be 1 to {MAX_CLIENT_SEED_BYTES} bytes of UTF-8")));
    }
    let client_seed = c.to_string();
    let nonce = f.int("nonce", 0, u64::MAX)?;
    let decks = f.int("decks", 1, u64::from(MAX_DECKS))? as u8;
    let (list, p) = f.array("cards")?;
    let (cards, class) = cards(list, &p)?;
    let non_consecutive = matches!(class, HandClass::NonConsecutive(_));
    let paytable = {
        let (v, p) = f.take("paytable")?;
        let mut pf = Fields::of(&p, v)?;
        let (spread, sp) = pf.array("spread")?;
        if spread.len() != 11 {
            return Err(bad(sp, "must list exactly 11 odds (spreads 1 to 11)"));
        }
        let mut odds = [0u32; 11];
        for (i, o) in spread.iter().enumerate() {
            odds[i] = int(o, &format!("{sp}[{i}]"), 1, u64::from(MAX_ODDS))? as u32;
        }
        let three = pf.int("three_of_a_kind", 1, u64::from(MAX_ODDS))? as u32;
        pf.finish()?;
        Paytable::new(odds, three).map_err(|e| bad(p, e.to_string()))?
    };
    let (limits, currency, rules_digest) = if v3 {
        let (l, c, d) = parse_v3_rules(&mut f)?;
        (Some(l), Some(c), Some(d))
    } else {
        (None, None, None)
    };
    let (seat_list, seats_path) = f.array("seats")?;
    if seat_list.is_empty() || seat_list.len() > MAX_SEATS {
        return Err(bad(seats_path, format!("must list 1 to {MAX_SEATS} seats")));
    }
    let (calls, dp) = f.array("decisions")?;
    if !calls.is_empty() && !non_consecutive {
        return Err(bad(dp, "must be empty: only a non-consecutive hand has decisions"));
    }
    let mut decided = [false; MAX_SEATS];
    let mut decisions = Vec::with_capacity(calls.len());
    for (k, call) in calls.iter().enumerate() {
        let cp = format!("{dp}[{k}]");
        let Json::Arr(list) = call else {
            return Err(bad(cp, format!("must be an array of decisions, not {}", call.kind())));
        };
        if list.is_empty() {
            return Err(bad(cp, "a Decide call decides at least one seat"));
        }
        let mut step = Vec::with_capacity(list.len());
        for (j, d) in list.iter().enumerate() {
            let ep = format!("{cp}[{j}]");
            let mut df = Fields::of(&ep, d)?;
            let seat = df.int("seat", 0, seat_list.len() as u64 - 1)? as usize;
            let (action, ap) = df.string("action")?;
            if action != "raise" && action != "stand" {
                return Err(bad(ap, "must be \"raise\" or \"stand\""));
            }
            df.finish()?;
            if decided[seat] {
                return Err(bad(ep, format!("seat {seat} decides more than once in the round")));
            }
            if step.last().is_some_and(|prev: &RevealDecision| prev.seat >= seat) {
                return Err(bad(ep, "decisions of one call are in ascending seat order"));
            }
            decided[seat] = true;
            step.push(RevealDecision { seat, action: action.to_string() });
        }
        decisions.push(step);
    }
    let mut seats = Vec::with_capacity(seat_list.len());
    for (i, s) in seat_list.iter().enumerate() {
        let mut sf = Fields::of(&format!("{seats_path}[{i}]"), s)?;
        let bet = sf.int("bet", 0, u64::MAX)?;
        let raised = sf.boolean("raised")?;
        let stake = sf.int("stake", 0, u64::MAX)?;
        let returned = sf.int("returned", 0, u64::MAX)?;
        sf.finish()?;
        seats.push(RevealSeat { bet, raised, stake, returned });
    }
    let (t, p) = f.string("transcript")?;
    let transcript = hex64(t, &p, true)?;
    f.finish()?;
    Ok(RevealV2 {
        format: if v3 { REVEAL_V3 } else { REVEAL_V2 }.to_string(),
        algorithm,
        server_seed,
        commitment,
        table_id,
        round_id,
        client_seed,
        nonce,
        decks,
        cards,
        paytable,
        limits,
        currency,
        rules_digest,
        decisions,
        seats,
        transcript,
    })
}

/// The player's record of a round, to compare a reveal with (`reddog verify --expect-…`,
/// `--expect FILE`; `docs/FAIRNESS.md` 4.5): what the player was shown before the round and
/// during it. A reveal that verifies but differs from these proves nothing about the round
/// the player played.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expectations {
    pub commitment: Option<String>,
    pub client_seed: Option<String>,
    pub nonce: Option<u64>,
    pub round_id: Option<String>,
    pub table_id: Option<String>,
    pub decks: Option<u8>,
    /// The last transcript hash the player was shown (64 hex, either case).
    pub transcript: Option<String>,
    /// The rules digest shown with the commitment (64 hex, either case).
    pub rules_digest: Option<String>,
    /// Each seat's bet, seat 0 first.
    pub bets: Option<Vec<u64>>,
    /// Each seat's amount credited, seat 0 first.
    pub returned: Option<Vec<u64>>,
    /// Each Decide call's decisions, in order.
    pub decisions: Option<Vec<Vec<RevealDecision>>>,
}

/// One integer in the text form of `--expect-…` options: `0` or `[1-9][0-9]*` (ASCII digits,
/// no sign, no leading zero), within `min..=max`.
pub fn text_int(text: &str, field: &str, min: u64, max: u64) -> Result<u64, FairnessError> {
    let canonical =
        !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) && (text == "0" || !text.starts_with('0'));
    if !canonical {
        return Err(bad(field, format!("{text:?} is not a decimal integer without sign or leading zero")));
    }
    let n: u64 = text.parse().map_err(|_| bad(field, format!("{text} is outside {min}..={max}")))?;
    if !(min..=max).contains(&n) {
        return Err(bad(field, format!("{n} is outside {min}..={max}")));
    }
    Ok(n)
}

/// `--expect-bets` / `--expect-returned`: one integer per seat, seat 0 first, separated by
/// commas (`500,1000`).
pub fn text_amounts(text: &str, field: &str) -> Result<Vec<u64>, FairnessError> {
    let parts: Vec<&str> = text.split(',').collect();
    if parts.len() > MAX_SEATS {
        return Err(bad(field, format!("must list 1 to {MAX_SEATS} integers separated by commas")));
    }
    parts.iter().map(|p| text_int(p, field, 0, u64::MAX)).collect()
}

/// `--expect-decisions`: each Decide call's decisions as `SEAT:ACTION` separated by commas,
/// the calls separated by semicolons (`0:raise,1:stand;2:stand`); the empty text is no Decide.
pub fn text_decisions(text: &str, field: &str) -> Result<Vec<Vec<RevealDecision>>, FairnessError> {
    if text.is_empty() {
        return Ok(vec![]);
    }
    text.split(';')
        .map(|call| {
            call.split(',')
                .map(|part| {
                    let (seat, action) = part
                        .split_once(':')
                        .filter(|(_, a)| matches!(*a, "raise" | "stand"))
                        .ok_or_else(|| bad(field, format!("{part:?} is not SEAT:raise or SEAT:stand")))?;
                    let seat = text_int(seat, field, 0, MAX_SEATS as u64 - 1)? as usize;
                    Ok(RevealDecision { seat, action: action.to_string() })
                })
                .collect()
        })
        .collect()
}

fn json_amounts(f: &mut Fields<'_>, key: &str) -> Result<Option<Vec<u64>>, FairnessError> {
    if !f.fields.iter().any(|(k, _)| *k == key) {
        return Ok(None);
    }
    let (list, p) = f.array(key)?;
    if list.is_empty() || list.len() > MAX_SEATS {
        return Err(bad(p, format!("must list 1 to {MAX_SEATS} integers (one per seat)")));
    }
    list.iter().enumerate().map(|(i, v)| int(v, &format!("{p}[{i}]"), 0, u64::MAX)).collect::<Result<_, _>>().map(Some)
}

fn json_decisions(f: &mut Fields<'_>) -> Result<Option<Vec<Vec<RevealDecision>>>, FairnessError> {
    if !f.fields.iter().any(|(k, _)| *k == "decisions") {
        return Ok(None);
    }
    let (calls, dp) = f.array("decisions")?;
    let mut out = Vec::with_capacity(calls.len());
    for (k, call) in calls.iter().enumerate() {
        let cp = format!("{dp}[{k}]");
        let list = match call {
            Json::Arr(list) if !list.is_empty() => list,
            _ => return Err(bad(cp, "must be a non-empty array of decisions")),
        };
        let mut step = Vec::with_capacity(list.len());
        for (j, d) in list.iter().enumerate() {
            let mut df = Fields::of(&format!("{cp}[{j}]"), d)?;
            let seat = df.int("seat", 0, MAX_SEATS as u64 - 1)? as usize;
            let (action, ap) = df.string("action")?;
            if action != "raise" && action != "stand" {
                return Err(bad(ap, "must be \"raise\" or \"stand\""));
            }
            df.finish()?;
            step.push(RevealDecision { seat, action: action.to_string() });
        }
        out.push(step);
    }
    Ok(Some(out))
}

/// One expectation the reveal does not meet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub field: &'static str,
    pub expected: String,
    /// What the reveal says (`None`: the reveal does not carry the field).
    pub revealed: Option<String>,
}

impl Expectations {
    /// Parses an expectations file: a JSON object with any of the keys `commitment`,
    /// `client_seed`, `nonce`, `round_id`, `table_id`, `decks`, `transcript`, `rules_digest`
    /// (strings and integers), `bets`, `returned` (arrays of integers) and `decisions` (as in a
    /// reveal) and no others (duplicate keys refused, as in reveals).
    pub fn parse(text: &str) -> Result<Expectations, FairnessError> {
        let mut de = serde_json::Deserializer::from_str(text);
        let tree = de::DeserializeSeed::deserialize(JsonSeed, &mut de)
            .and_then(|t| de.end().map(|()| t))
            .map_err(|e| bad("expect", format!("not valid JSON: {e}")))?;
        let mut f = Fields::of("", &tree)?;
        let string = |f: &mut Fields<'_>, key: &str| -> Result<Option<String>, FairnessError> {
            if f.fields.iter().any(|(k, _)| *k == key) { Ok(Some(f.string(key)?.0.to_string())) } else { Ok(None) }
        };
        let commitment = string(&mut f, "commitment")?;
        let transcript = string(&mut f, "transcript")?;
        let rules_digest = string(&mut f, "rules_digest")?;
        let bets = json_amounts(&mut f, "bets")?;
        let returned = json_amounts(&mut f, "returned")?;
        let decisions = json_decisions(&mut f)?;
        let client_seed = string(&mut f, "client_seed")?;
        let round_id = string(&mut f, "round_id")?;
        let table_id = string(&mut f, "table_id")?;
        let nonce = if f.fields.iter().any(|(k, _)| *k == "nonce") { Some(f.int("nonce", 0, u64::MAX)?) } else { None };
        let decks = if f.fields.iter().any(|(k, _)| *k == "decks") {
            Some(f.int("decks", 1, u64::from(MAX_DECKS))? as u8)
        } else {
            None
        };
        f.finish()?;
        let e = Expectations {
            commitment,
            client_seed,
            nonce,
            round_id,
            table_id,
            decks,
            transcript,
            rules_digest,
            bets,
            returned,
            decisions,
        };
        e.validate()?;
        Ok(e)
    }

    /// Refuses expectations that could never match a reveal: a commitment that is not 64 hex
    /// digits (either case), a deck count outside 1 … 8 (docs/FAIRNESS.md §4.5: malformed input).
    pub fn validate(&self) -> Result<(), FairnessError> {
        for (key, value) in [
            ("expect.commitment", &self.commitment),
            ("expect.transcript", &self.transcript),
            ("expect.rules_digest", &self.rules_digest),
        ] {
            if let Some(h) = value {
                hex64(h, key, false)?;
            }
        }
        if let Some(d) = self.decks.filter(|d| !(1..=MAX_DECKS).contains(d)) {
            return Err(bad("expect.decks", format!("{d} is outside 1..={MAX_DECKS}")));
        }
        Ok(())
    }

    /// Every expectation the reveal does not meet (empty: all met). Hex compares without
    /// regard to case.
    pub fn check(&self, reveal: &AnyReveal) -> Vec<Mismatch> {
        let (commitment, client_seed, nonce, round_id, table_id, decks) = match reveal {
            AnyReveal::V1(r) => (&r.commitment, &r.client_seed, r.nonce, r.round_id.clone(), None, r.decks),
            AnyReveal::V2(r) => {
                (&r.commitment, &r.client_seed, r.nonce, Some(r.round_id.clone()), Some(r.table_id.clone()), r.decks)
            }
        };
        let v2 = match reveal {
            AnyReveal::V1(_) => None,
            AnyReveal::V2(r) => Some(r),
        };
        let amounts = |pick: fn(&RevealSeat) -> u64| v2.map(|r| r.seats.iter().map(pick).collect::<Vec<u64>>());
        let (bets, returned) = (amounts(|s| s.bet), amounts(|s| s.returned));
        let list = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
        let calls = |d: &[Vec<RevealDecision>]| {
            d.iter()
                .map(|c| c.iter().map(|x| format!("{}:{}", x.seat, x.action)).collect::<Vec<_>>().join(","))
                .collect::<Vec<_>>()
                .join(";")
        };
        let mut out = Vec::new();
        let mut cmp = |field: &'static str, expected: Option<String>, revealed: Option<String>, same: bool| {
            if let Some(expected) = expected
                && !same
            {
                out.push(Mismatch { field, expected, revealed });
            }
        };
        cmp(
            "commitment",
            self.commitment.clone(),
            Some(commitment.clone()),
            self.commitment.as_ref().is_some_and(|c| c.eq_ignore_ascii_case(commitment)),
        );
        cmp(
            "client_seed",
            self.client_seed.clone(),
            Some(client_seed.clone()),
            self.client_seed.as_ref() == Some(client_seed),
        );
        cmp("nonce", self.nonce.map(|n| n.to_string()), Some(nonce.to_string()), self.nonce == Some(nonce));
        cmp("round_id", self.round_id.clone(), round_id.clone(), self.round_id.is_some() && self.round_id == round_id);
        cmp("table_id", self.table_id.clone(), table_id.clone(), self.table_id.is_some() && self.table_id == table_id);
        cmp("decks", self.decks.map(|d| d.to_string()), Some(decks.to_string()), self.decks == Some(decks));
        let transcript = v2.map(|r| r.transcript.clone());
        cmp(
            "transcript",
            self.transcript.clone(),
            transcript.clone(),
            matches!((&self.transcript, &transcript), (Some(a), Some(b)) if a.eq_ignore_ascii_case(b)),
        );
        let digest = v2.and_then(|r| r.rules_digest.clone());
        cmp(
            "rules_digest",
            self.rules_digest.clone(),
            digest.clone(),
            matches!((&self.rules_digest, &digest), (Some(a), Some(b)) if a.eq_ignore_ascii_case(b)),
        );
        cmp(
            "bets",
            self.bets.as_deref().map(list),
            bets.as_deref().map(list),
            self.bets.is_some() && self.bets == bets,
        );
        cmp(
            "returned",
            self.returned.as_deref().map(list),
            returned.as_deref().map(list),
            self.returned.is_some() && self.returned == returned,
        );
        // Calls in order; within a call, the seats in any order (a player writes them in the
        // order decided, the reveal in ascending seat order).
        let by_seat = |d: &[Vec<RevealDecision>]| {
            d.iter()
                .map(|c| {
                    let mut c = c.clone();
                    c.sort_by_key(|x| x.seat);
                    c
                })
                .collect::<Vec<_>>()
        };
        let decided = v2.map(|r| &r.decisions);
        cmp(
            "decisions",
            self.decisions.as_deref().map(calls),
            decided.map(|d| calls(d)),
            matches!((self.decisions.as_deref(), decided), (Some(a), Some(b)) if by_seat(a) == by_seat(b)),
        );
        out
    }
}
