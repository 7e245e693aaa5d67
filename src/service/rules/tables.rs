//! Named tables: one process serves several, each with its deck count, paytable, limits and
//! currency. Configuration (`reddog serve --table-config FILE`), either form:
//!
//! - one table, as before (`{"decks":1,"min_bet":500,"max_bet":30000,"paytable":{…}}`, every
//!   field optional, plus optional `currency` and `minor_unit_exponent`): the table `default`;
//! - several: `{"tables": {"<id>": {<one table as above>}, …}}`. Ids are 1–64 bytes of
//!   `[A-Za-z0-9._-]`. The table `default`, when present, is the one an empty `table_id`
//!   selects; without it a request must name its table.
//!
//! A key given twice anywhere (a table id, a field of a table) is refused, naming it. Every
//! table is checked on its own (largest round fits in `u64` minor units: [`Table::new`]),
//! and an error names the table. Amounts at a table are in its currency's minor units:
//! `currency` is an ISO 4217 alphabetic code (three capital letters) and
//! `minor_unit_exponent` the number of decimals of its minor unit (EUR 2, JPY 0, BHD 3).
//! Without a currency a table is `XXX` (ISO 4217's "no currency") with exponent 2, the
//! engine's historical assumption of cents.
//!
//! A paytable whose best play returns more than the players stake (optimal-strategy RTP
//! above 1: the house loses money in the long run) is refused unless the table says
//! `"allow_rtp_over_1": true` (promotions, test tables). Every error names the field:
//! `tables.<id>.<field>`.
//! `"withdrawn_rules": ["<64 hex>", …]` lists rules digests of this table that the operator
//! has withdrawn: a commitment made under one of them is refused at StartRound
//! (`RULES_CHANGED`); every other commitment deals under the rules it carries, whatever this
//! table's configuration says now (docs/OPERATIONS.md, "Withdrawing rules"). The table's own
//! current digest may not be listed.
//! `"sandbox": true` marks a test table (requested deals, never fair rounds; see
//! [`crate::service::round::sandbox`]): served only by an engine started with `--allow-sandbox`.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::error::EngineError;
use crate::fairness::{RulesDigest, TableRules};
use crate::game::{Table, TableSpec};
use crate::ids::MAX_TABLE_ID_BYTES;

/// The id of the default table: the one an empty `table_id` selects.
pub const DEFAULT_TABLE_ID: &str = "default";

pub(crate) use crate::ids::MAX_MINOR_UNIT_EXPONENT;

/// A table's currency.
///
/// Invariant: `code` is three ASCII capital letters; `minor_unit_exponent <= 4`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Currency {
    code: String,
    minor_unit_exponent: u8,
}

impl Currency {
    /// ISO 4217 `XXX` ("no currency"), exponent 2: a table configured without a currency.
    pub fn unspecified() -> Currency {
        Currency { code: "XXX".to_string(), minor_unit_exponent: 2 }
    }

    /// A currency from its ISO 4217 alphabetic code and minor-unit exponent; `field` names the
    /// configuration entry in errors.
    pub fn new(code: &str, minor_unit_exponent: u8, field: &str) -> Result<Currency, EngineError> {
        if crate::ids::check_currency_code(code).is_err() {
            return Err(EngineError::invalid(
                format!("{field}.currency"),
                format!("{code:?} is not an ISO 4217 alphabetic code (three capital letters, e.g. EUR, USD, JPY)"),
            ));
        }
        if minor_unit_exponent > MAX_MINOR_UNIT_EXPONENT {
            return Err(EngineError::out_of_range(
                format!("{field}.minor_unit_exponent"),
                minor_unit_exponent,
                0,
                u64::from(MAX_MINOR_UNIT_EXPONENT),
            ));
        }
        Ok(Currency { code: code.to_string(), minor_unit_exponent })
    }

    /// The ISO 4217 alphabetic code, e.g. `EUR`.
    pub fn code(&self) -> &str {
        &self.code
    }

    /// Decimals of the minor unit: 2 for EUR (cents), 0 for JPY.
    pub fn minor_unit_exponent(&self) -> u8 {
        self.minor_unit_exponent
    }
}

/// One configured table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedTable {
    pub id: String,
    pub table: Table,
    pub currency: Currency,
    /// A sandbox table: `StartRound` accepts `sandbox_cards`, every round is a sandbox round
    /// ([`crate::service::round::sandbox`]).
    pub sandbox: bool,
}

impl NamedTable {
    /// The table's rules, as its rules digest takes them.
    pub fn rules(&self) -> TableRules<'_> {
        TableRules {
            decks: self.table.decks(),
            paytable: self.table.paytable(),
            limits: self.table.limits(),
            currency: self.currency.code(),
            exponent: self.currency.minor_unit_exponent(),
            sandbox: self.sandbox,
        }
    }

    /// The table's rules digest.
    pub fn digest(&self) -> RulesDigest {
        self.rules().digest()
    }
}

/// The tables one process serves.
///
/// Invariant: at least one table; ids are unique and valid table ids; no table's own digest
/// is among its withdrawn ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tables {
    tables: BTreeMap<String, NamedTable>,
    /// Per table id, the rules digests the operator withdrew (`withdrawn_rules`).
    withdrawn: BTreeMap<String, Vec<RulesDigest>>,
    /// The ids of tables declared promotions (`"allow_rtp_over_1": true`).
    promotions: std::collections::BTreeSet<String>,
}

/// One table in a configuration file: [`TableSpec`]'s fields plus the currency.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableEntry {
    decks: Option<u32>,
    paytable: Option<crate::game::Paytable>,
    min_bet: Option<u64>,
    max_bet: Option<u64>,
    currency: Option<String>,
    minor_unit_exponent: Option<u8>,
    allow_rtp_over_1: Option<bool>,
    sandbox: Option<bool>,
    withdrawn_rules: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MultiFile {
    tables: BTreeMap<String, serde_json::Value>,
}

/// A parsed table: the table, its withdrawn digests, whether it is declared a promotion.
type Entry = (NamedTable, Vec<RulesDigest>, bool);

fn entry(id: &str, value: serde_json::Value) -> Result<Entry, EngineError> {
    let field = format!("tables.{id}");
    let e = parse_entry(value, &field)?;
    let table =
        Table::try_from(TableSpec { decks: e.decks, paytable: e.paytable, min_bet: e.min_bet, max_bet: e.max_bet })
            .map_err(|err| EngineError::invalid(field.clone(), err.to_string()))?;
    let best = crate::odds::Analysis::new(table.decks(), table.paytable()).policy(crate::odds::Policy::Optimal).rtp;
    if best > crate::odds::Exact::from(1) && e.allow_rtp_over_1 != Some(true) {
        return Err(EngineError::invalid(
            format!("{field}.paytable"),
            format!(
                "the best play returns {} per unit bet, more than the stake: the house loses in the long run; \
                 check the paytable against `reddog odds`, or set \"allow_rtp_over_1\": true if that is intended",
                crate::odds::decimal(&best, 6)
            ),
        ));
    }
    let currency = match (&e.currency, e.minor_unit_exponent) {
        (None, None) => Currency::unspecified(),
        (Some(code), Some(exp)) => Currency::new(code, exp, &field)?,
        (Some(code), None) => {
            return Err(EngineError::invalid(
                format!("{field}.minor_unit_exponent"),
                format!("required with currency {code:?}: the decimals of its minor unit (EUR 2, JPY 0)"),
            ));
        }
        (None, Some(_)) => {
            return Err(EngineError::invalid(
                format!("{field}.currency"),
                "required with minor_unit_exponent: the ISO 4217 code",
            ));
        }
    };
    let named = NamedTable { id: id.to_string(), table, currency, sandbox: e.sandbox.unwrap_or(false) };
    let withdrawn = withdrawn_digests(e.withdrawn_rules.as_deref().unwrap_or_default(), &named, &field)?;
    Ok((named, withdrawn, e.allow_rtp_over_1 == Some(true)))
}

/// The `withdrawn_rules` of a table: 64 lower-case hex characters each, never the table's
/// own current digest (that would refuse every round it commits).
fn withdrawn_digests(list: &[String], named: &NamedTable, field: &str) -> Result<Vec<RulesDigest>, EngineError> {
    let own = named.digest();
    list.iter()
        .enumerate()
        .map(|(i, text)| {
            let at = format!("{field}.withdrawn_rules[{i}]");
            let mut bytes = [0u8; 32];
            if text.len() != 64
                || text.bytes().any(|b| b.is_ascii_uppercase())
                || hex::decode_to_slice(text, &mut bytes).is_err()
            {
                return Err(EngineError::invalid(at, "a rules digest is 64 lower-case hex characters"));
            }
            let digest = RulesDigest(bytes);
            if digest == own {
                return Err(EngineError::invalid(
                    at,
                    format!("{text} is this table's own rules digest: withdraw only earlier rules"),
                ));
            }
            Ok(digest)
        })
        .collect()
}

/// The settings a table entry may hold.
const KNOWN: [&str; 9] = [
    "decks",
    "paytable",
    "min_bet",
    "max_bet",
    "currency",
    "minor_unit_exponent",
    "allow_rtp_over_1",
    "sandbox",
    "withdrawn_rules",
];

/// The setting `key` of the table entry `obj` at `field`, if given; an error names
/// `field.key`.
fn setting<T: serde::de::DeserializeOwned>(
    obj: &serde_json::Map<String, serde_json::Value>,
    field: &str,
    key: &str,
) -> Result<Option<T>, EngineError> {
    obj.get(key)
        .map(|v| T::deserialize(v).map_err(|e| EngineError::invalid(format!("{field}.{key}"), e.to_string())))
        .transpose()
}

fn parse_entry(value: serde_json::Value, field: &str) -> Result<TableEntry, EngineError> {
    // Field by field, so that an error names the field (`tables.vip.decks: invalid value:
    // integer `-1`, expected u32`), and unknown keys first, named as fields.
    let Some(obj) = value.as_object() else {
        return Err(EngineError::invalid(field.to_string(), "a table is a JSON object of its settings"));
    };
    if let Some(unknown) = obj.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(EngineError::invalid(
            format!("{field}.{unknown}"),
            format!("unknown field; a table has {}", KNOWN.join(", ")),
        ));
    }
    Ok(TableEntry {
        decks: setting(obj, field, "decks")?,
        paytable: setting(obj, field, "paytable")?,
        min_bet: setting(obj, field, "min_bet")?,
        max_bet: setting(obj, field, "max_bet")?,
        currency: setting(obj, field, "currency")?,
        minor_unit_exponent: setting(obj, field, "minor_unit_exponent")?,
        allow_rtp_over_1: setting(obj, field, "allow_rtp_over_1")?,
        sandbox: setting(obj, field, "sandbox")?,
        withdrawn_rules: setting(obj, field, "withdrawn_rules")?,
    })
}

/// Reads any JSON value at `path`, recording the path of the first repeated key in `found`
/// (for [`no_repeated_keys`]).
struct Walk<'a> {
    path: String,
    found: &'a std::cell::RefCell<Option<String>>,
}
impl<'de> serde::de::DeserializeSeed<'de> for Walk<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}
impl<'de> serde::de::Visitor<'de> for Walk<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.path.is_empty() { key.clone() } else { format!("{}.{key}", self.path) };
            if !seen.insert(key) {
                *self.found.borrow_mut() = Some(path);
                return Err(serde::de::Error::custom("repeated key"));
            }
            map.next_value_seed(Walk { path, found: self.found })?;
        }
        Ok(())
    }
}

/// Refuses a JSON text in which an object repeats a key, naming its path (`tables.vip`,
/// `tables.vip.max_bet`): serde_json's maps keep the last of two equal keys silently, so a
/// table pasted twice, or a `max_bet` given twice, would otherwise be dropped without a word.
/// A text that is not JSON passes: the parse that follows reports it.
fn no_repeated_keys(text: &str) -> Result<(), EngineError> {
    use serde::de::DeserializeSeed;
    let found = std::cell::RefCell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let _ = Walk { path: String::new(), found: &found }.deserialize(&mut de);
    match found.into_inner() {
        Some(path) => Err(EngineError::invalid(
            path,
            "given twice (a JSON object must not repeat a key: the last would silently win)",
        )),
        None => Ok(()),
    }
}

fn valid_id(id: &str) -> Result<(), EngineError> {
    if crate::ids::check_table_id(id).is_ok() {
        Ok(())
    } else {
        Err(EngineError::invalid(
            format!("tables.{id}"),
            format!("a table id is 1 to {MAX_TABLE_ID_BYTES} bytes of A-Z a-z 0-9 . _ -"),
        ))
    }
}

impl Tables {
    /// One table, `default`, without a currency (today's flags and files).
    pub fn single(table: Table) -> Tables {
        Tables::single_with(table, Currency::unspecified())
    }

    /// One table, `default`, with a currency.
    pub fn single_with(table: Table, currency: Currency) -> Tables {
        let id = DEFAULT_TABLE_ID.to_string();
        Tables {
            tables: BTreeMap::from([(id.clone(), NamedTable { id, table, currency, sandbox: false })]),
            withdrawn: BTreeMap::new(),
            promotions: Default::default(),
        }
    }

    /// Several tables; refuses an empty list, a repeated or invalid id.
    pub fn new(list: Vec<NamedTable>) -> Result<Tables, EngineError> {
        if list.is_empty() {
            return Err(EngineError::invalid("tables", "at least one table"));
        }
        let mut tables = BTreeMap::new();
        for t in list {
            valid_id(&t.id)?;
            if tables.contains_key(&t.id) {
                return Err(EngineError::invalid(format!("tables.{}", t.id), "the same id twice"));
            }
            tables.insert(t.id.clone(), t);
        }
        Ok(Tables { tables, withdrawn: BTreeMap::new(), promotions: Default::default() })
    }

    /// [`Tables::new`] with each table's withdrawn digests and promotion flag.
    fn with_withdrawn(list: Vec<Entry>) -> Result<Tables, EngineError> {
        let withdrawn =
            list.iter().filter(|(_, w, _)| !w.is_empty()).map(|(t, w, _)| (t.id.clone(), w.clone())).collect();
        let promotions = list.iter().filter(|(_, _, p)| *p).map(|(t, _, _)| t.id.clone()).collect();
        let mut tables = Tables::new(list.into_iter().map(|(t, _, _)| t).collect())?;
        tables.withdrawn = withdrawn;
        tables.promotions = promotions;
        Ok(tables)
    }

    /// `true` when table `table_id` is declared a promotion (`"allow_rtp_over_1": true`): its
    /// best play may return more than the stake.
    pub fn is_promotion(&self, table_id: &str) -> bool {
        self.promotions.contains(table_id)
    }

    /// `true` when the operator withdrew `digest` at table `table_id`.
    pub fn is_withdrawn(&self, table_id: &str, digest: &RulesDigest) -> bool {
        self.withdrawn.get(table_id).is_some_and(|w| w.contains(digest))
    }

    /// The digests withdrawn at `table_id`.
    pub fn withdrawn(&self, table_id: &str) -> &[RulesDigest] {
        self.withdrawn.get(table_id).map_or(&[], Vec::as_slice)
    }

    /// Parses a table configuration file's text, either form (module docs). A repeated key
    /// anywhere (a table id, or a field of a table) is refused, naming it.
    pub fn from_json(text: &str) -> Result<Tables, EngineError> {
        no_repeated_keys(text)?;
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| EngineError::invalid("table config", e.to_string()))?;
        if value.get("tables").is_some() {
            let file: MultiFile =
                serde_json::from_value(value).map_err(|e| EngineError::invalid("table config", e.to_string()))?;
            if file.tables.is_empty() {
                return Err(EngineError::invalid("tables", "at least one table"));
            }
            let mut list = Vec::with_capacity(file.tables.len());
            for (id, v) in file.tables {
                valid_id(&id)?;
                list.push(entry(&id, v)?);
            }
            Tables::with_withdrawn(list)
        } else {
            Tables::with_withdrawn(vec![entry(DEFAULT_TABLE_ID, value)?])
        }
    }

    /// The table `id` selects: empty means [`DEFAULT_TABLE_ID`]. `UnknownTable` (NOT_FOUND
    /// naming `table_id`) otherwise.
    pub fn get(&self, id: &str) -> Result<&NamedTable, EngineError> {
        let key = if id.is_empty() { DEFAULT_TABLE_ID } else { id };
        self.tables.get(key).ok_or_else(|| EngineError::UnknownTable { table_id: key.to_string() })
    }

    /// Every table, by id.
    pub fn iter(&self) -> impl Iterator<Item = &NamedTable> {
        self.tables.values()
    }

    /// The table an empty `table_id` selects, if configured.
    pub fn default_table(&self) -> Option<&NamedTable> {
        self.tables.get(DEFAULT_TABLE_ID)
    }

    pub fn len(&self) -> usize {
        self.tables.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_single_table_file_is_the_default_table() {
        let t = Tables::from_json(r#"{"decks":2,"min_bet":100,"max_bet":5000}"#).unwrap();
        assert_eq!(t.len(), 1);
        let d = t.get("").unwrap();
        assert_eq!(d.id, "default");
        assert_eq!(d.table.decks().get(), 2);
        assert_eq!(d.currency, Currency::unspecified());
        let eur = Tables::from_json(r#"{"currency":"EUR","minor_unit_exponent":2}"#).unwrap();
        assert_eq!(eur.get("default").unwrap().currency.code(), "EUR");
    }

    #[test]
    fn several_tables_with_currencies() {
        let t = Tables::from_json(
            r#"{"tables":{
                "default":{"decks":1,"currency":"EUR","minor_unit_exponent":2},
                "jpy-high":{"decks":6,"min_bet":1000,"max_bet":1000000,"currency":"JPY","minor_unit_exponent":0}}}"#,
        )
        .unwrap();
        assert_eq!(t.len(), 2);
        let jpy = t.get("jpy-high").unwrap();
        assert_eq!((jpy.currency.code(), jpy.currency.minor_unit_exponent()), ("JPY", 0));
        assert_eq!(jpy.table.limits().max().0, 1_000_000);
        assert_eq!(t.get("").unwrap().id, "default");
        assert!(matches!(t.get("nope"), Err(EngineError::UnknownTable { .. })));
    }

    #[test]
    fn without_a_default_table_an_empty_id_is_refused() {
        let t = Tables::from_json(r#"{"tables":{"a":{},"b":{"decks":8}}}"#).unwrap();
        assert!(t.default_table().is_none());
        assert!(matches!(t.get(""), Err(EngineError::UnknownTable { ref table_id }) if table_id == "default"));
    }

    #[test]
    fn errors_name_the_table_and_the_field() {
        let cases = [
            (r#"{"tables":{}}"#, "tables"),
            (r#"{"tables":{"bad id":{}}}"#, "tables.bad id"),
            (r#"{"tables":{"x":{"decks":0}}}"#, "tables.x"),
            (r#"{"tables":{"x":{"currency":"eur","minor_unit_exponent":2}}}"#, "tables.x.currency"),
            (r#"{"tables":{"x":{"currency":"EUR"}}}"#, "tables.x.minor_unit_exponent"),
            (r#"{"tables":{"x":{"currency":"BHD","minor_unit_exponent":9}}}"#, "tables.x.minor_unit_exponent"),
            (r#"{"tables":{"x":{"limit":5}}}"#, "tables.x.limit"),
            (r#"{"tables":{"x":{"min_bet":50000,"max_bet":100}}}"#, "tables.x"),
            (r#"{"decks":1,"extra":true}"#, "tables.default.extra"),
        ];
        for (json, field) in cases {
            let err = Tables::from_json(json).unwrap_err();
            assert_eq!(err.field().map(|f| f.to_string()).as_deref(), Some(field), "{json}: {err}");
        }
    }

    #[test]
    fn each_table_is_checked_for_rounds_that_fit_in_u64() {
        // max_bet far above what 7 raised seats at 11:1 can total within u64.
        let json = format!(r#"{{"tables":{{"ok":{{}},"huge":{{"max_bet":{}}}}}}}"#, u64::MAX / 20);
        let err = Tables::from_json(&json).unwrap_err();
        assert_eq!(err.field().map(|f| f.to_string()).as_deref(), Some("tables.huge"), "{err}");
    }
}
