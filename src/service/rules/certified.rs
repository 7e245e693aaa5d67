//! Certified rules: `reddog certify --out DIR` writes `DIR/certified-rules.json` only when
//! every check passed; `reddog serve --certified-rules FILE` (`REDDOG_CERTIFIED_RULES`)
//! refuses to start unless
//!
//! - the file is well formed: every digest 64 lower-case hex, each table's `rules_digest` the
//!   digest of the `rules` beside it, `rtp_exact` and `rtp_decimal` that table's exact RTP,
//!   `verdict` `pass`, `certified_at` an RFC 3339 time (an error names the field:
//!   `tables[0].rules_digest`);
//! - it names this binary: `binary_sha256` is the SHA-256 of the running executable
//!   ([`own_binary_sha256`]); otherwise the error names both digests. With
//!   `--allow-uncertified-binary` the engine starts anyway, logs a warning and publishes
//!   `reddog_binary_certified 0` and `reddog_rules_certified 0` for every table;
//! - every configured table's rules digest is certified for its id, with the same sandbox
//!   flag (a sandbox table is certified as one, never as a fair table), naming the table and
//!   both digests otherwise.
//!
//! The check gates start-up only: it withdraws nothing (rounds committed elsewhere still deal
//! under the rules they carry; `withdrawn_rules` withdraws).
//!
//! ```json
//! {"format": "reddog-certified-rules-v2", "verdict": "pass",
//!  "binary_sha256": "<64 hex>", "binary_version": "0.1.0", "binary_git_commit": "<40 hex>",
//!  "certified_at": "2026-12-02T10:00:00Z", "plan": "quick",
//!  "tables": [{"table_id": "default", "rules_digest": "<64 hex>", "sandbox": false,
//!              "promotion": false,
//!              "rules": {"decks": 1, "paytable": {…}, "min_bet": 500, "max_bet": 30000,
//!                        "currency": "XXX", "minor_unit_exponent": 2},
//!              "rtp_exact": "…/…", "rtp_decimal": "0.9684…"}],
//!  "change": {…}}
//! ```
//! `change` (present when certified with `--against PREVIOUS`) records what changed against
//! the previous file, table by table, and the approver's note (docs/CERTIFICATION.md).
//! A file may list several entries for one table id (old and new rules during a change).

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::game::Paytable;
use crate::service::rules::tables::{NamedTable, Tables};

/// The `format` of the file.
pub(crate) const FORMAT: &str = "reddog-certified-rules-v2";
/// The format `reddog certify` wrote before the file carried a verdict and the rules.
pub(crate) const FORMAT_V1: &str = "reddog-certified-rules-v1";
/// The only verdict a file is ever written with.
pub(crate) const PASS: &str = "pass";

/// The file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CertifiedRules {
    pub format: String,
    /// Always [`PASS`]: `certify` writes the file only when every check passed.
    pub verdict: String,
    /// SHA-256 of the `reddog` binary that certified the rules: the one binary that may serve
    /// them.
    pub binary_sha256: String,
    /// That binary's version and git commit (as `reddog --version` and `GetRules` state them).
    pub binary_version: String,
    pub binary_git_commit: String,
    /// When the certification ran, RFC 3339 UTC.
    pub certified_at: String,
    /// The plan it ran (`quick`, `full`).
    pub plan: String,
    pub tables: Vec<CertifiedTable>,
    /// What changed against the previous certification (`certify --against`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<Change>,
}

/// One certified table's rules.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CertifiedTable {
    pub table_id: String,
    pub rules_digest: String,
    /// A sandbox table (requested deals, never fair rounds): certified as such.
    pub sandbox: bool,
    /// Declared a promotion (`allow_rtp_over_1`): its best play may return more than the stake.
    pub promotion: bool,
    pub rules: RulesSpec,
    /// Optimal-strategy RTP, a reduced fraction (as `GetRules.rtp_exact`).
    pub rtp_exact: String,
    pub rtp_decimal: String,
}

/// A table's rules in the table configuration's own terms.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RulesSpec {
    pub decks: u8,
    pub paytable: Paytable,
    pub min_bet: u64,
    pub max_bet: u64,
    pub currency: String,
    pub minor_unit_exponent: u8,
}

/// What a certification changed against the previous one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Change {
    /// The previous file.
    pub against: Against,
    /// Every table of either file, by id.
    pub tables: Vec<TableChange>,
    /// Why the change needs an approver's note (a paytable entry altered, an RTP lowered, a
    /// sandbox or promotion flag changed); empty when it needs none.
    pub needs_approval: Vec<String>,
    /// The approver's note (`--approve "..."`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
}

/// The previous certification a change is measured against.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Against {
    pub file: String,
    pub file_sha256: String,
    pub binary_sha256: String,
    pub binary_version: String,
    pub certified_at: String,
}

/// One table's change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableChange {
    pub table_id: String,
    /// `unchanged`, `changed`, `added` or `removed`.
    pub status: String,
    pub rules_digest_before: Option<String>,
    pub rules_digest_after: Option<String>,
    /// Each changed field (`paytable.spread[3]`, `paytable.three_of_a_kind`, `min_bet`,
    /// `max_bet`, `decks`, `currency`, `minor_unit_exponent`, `sandbox`, `promotion`).
    pub fields: Vec<FieldChange>,
    pub rtp_before: Option<String>,
    pub rtp_after: Option<String>,
}

/// One changed field, before and after, as text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldChange {
    pub field: String,
    pub before: String,
    pub after: String,
}

/// A malformed or mismatched file: the field and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct CertifiedError {
    pub field: String,
    pub reason: String,
}

fn bad(field: impl Into<String>, reason: impl Into<String>) -> CertifiedError {
    CertifiedError { field: field.into(), reason: reason.into() }
}

/// `true` for 64 lower-case hexadecimal characters.
pub(crate) fn is_digest(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl RulesSpec {
    /// The rules of a configured table.
    pub fn of(t: &NamedTable) -> RulesSpec {
        RulesSpec {
            decks: t.table.decks().get(),
            paytable: t.table.paytable().clone(),
            min_bet: t.table.limits().min().minor(),
            max_bet: t.table.limits().max().minor(),
            currency: t.currency.code().to_string(),
            minor_unit_exponent: t.currency.minor_unit_exponent(),
        }
    }

    /// The table these rules configure (the table configuration's parser, so every check of
    /// a configured table applies), with the flags given.
    pub fn table(&self, sandbox: bool, promotion: bool) -> Result<NamedTable, String> {
        let mut value = serde_json::to_value(self).map_err(|e| e.to_string())?;
        if let Some(obj) = value.as_object_mut() {
            obj.insert("sandbox".into(), sandbox.into());
            obj.insert("allow_rtp_over_1".into(), promotion.into());
        }
        let tables = Tables::from_json(&value.to_string()).map_err(|e| e.to_string())?;
        tables.iter().next().cloned().ok_or_else(|| "no table".to_string())
    }
}

impl CertifiedTable {
    /// A configured table's entry.
    pub fn of(t: &NamedTable, promotion: bool) -> CertifiedTable {
        let (rtp_exact, rtp_decimal, _) = crate::service::rules::get_rules::rtp(&t.table);
        CertifiedTable {
            table_id: t.id.clone(),
            rules_digest: t.digest().to_hex(),
            sandbox: t.sandbox,
            promotion,
            rules: RulesSpec::of(t),
            rtp_exact,
            rtp_decimal,
        }
    }
}

impl CertifiedTable {
    /// Checks entry `i` of the file's tables: its id, and that its digest and RTP figures are
    /// those of its rules.
    fn validate(&self, i: usize) -> Result<(), CertifiedError> {
        let at = |f: &str| format!("tables[{i}].{f}");
        if crate::ids::check_table_id(&self.table_id).is_err() {
            return Err(bad(at("table_id"), format!("{:?} is not a table id", self.table_id)));
        }
        if !is_digest(&self.rules_digest) {
            return Err(bad(
                at("rules_digest"),
                format!("{:?} is not a rules digest (64 lower-case hex characters)", self.rules_digest),
            ));
        }
        let table = self.rules.table(self.sandbox, self.promotion).map_err(|e| bad(at("rules"), e))?;
        let digest = table.digest().to_hex();
        if digest != self.rules_digest {
            return Err(bad(
                at("rules_digest"),
                format!("{} is not the digest of these rules ({digest})", self.rules_digest),
            ));
        }
        let (exact, decimal, _) = crate::service::rules::get_rules::rtp(&table.table);
        if self.rtp_exact != exact {
            return Err(bad(at("rtp_exact"), format!("{:?}: these rules' exact RTP is {exact}", self.rtp_exact)));
        }
        if self.rtp_decimal != decimal {
            return Err(bad(at("rtp_decimal"), format!("{:?}: these rules' RTP is {decimal}", self.rtp_decimal)));
        }
        Ok(())
    }
}

impl CertifiedRules {
    /// The rules of `tables`, certified now by this build, whose executable has SHA-256
    /// `binary_sha256`, with `plan`.
    pub fn of(tables: &Tables, binary_sha256: &str, plan: &str) -> CertifiedRules {
        let now = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second()).unwrap_or_default();
        CertifiedRules {
            format: FORMAT.to_string(),
            verdict: PASS.to_string(),
            binary_sha256: binary_sha256.to_string(),
            binary_version: crate::service::build_info::VERSION.to_string(),
            binary_git_commit: crate::service::build_info::GIT_COMMIT.to_string(),
            certified_at: now.to_string(),
            plan: plan.to_string(),
            tables: tables.iter().map(|t| CertifiedTable::of(t, tables.is_promotion(&t.id))).collect(),
            change: None,
        }
    }

    /// Parses and checks a file's text: the format, the verdict, every digest's form, each
    /// table's digest and RTP against its rules. Errors name the field.
    pub fn from_json(text: &str) -> Result<CertifiedRules, CertifiedError> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| bad("certified rules", e.to_string()))?;
        match value.get("format").and_then(|f| f.as_str()) {
            Some(FORMAT) => {}
            Some(FORMAT_V1) => {
                return Err(bad(
                    "format",
                    format!(
                        "{FORMAT_V1} was written by an older `reddog certify`, whatever its verdict, and names no \
                         rules; certify again with this binary (docs/CERTIFICATION.md)"
                    ),
                ));
            }
            other => return Err(bad("format", format!("{other:?}: expected {FORMAT:?}"))),
        }
        let file: CertifiedRules = serde_json::from_value(value).map_err(|e| bad("certified rules", e.to_string()))?;
        file.validate()?;
        Ok(file)
    }

    fn validate(&self) -> Result<(), CertifiedError> {
        if self.verdict != PASS {
            return Err(bad("verdict", format!("{:?}: only a passed certification certifies", self.verdict)));
        }
        if !is_digest(&self.binary_sha256) {
            return Err(bad(
                "binary_sha256",
                format!("{:?} is not a SHA-256 (64 lower-case hex characters)", self.binary_sha256),
            ));
        }
        if self.certified_at.parse::<jiff::Timestamp>().is_err() {
            return Err(bad("certified_at", format!("{:?} is not an RFC 3339 time", self.certified_at)));
        }
        if self.tables.is_empty() {
            return Err(bad("tables", "no table is certified"));
        }
        for (i, c) in self.tables.iter().enumerate() {
            c.validate(i)?;
        }
        Ok(())
    }

    /// Refuses a file certified by another binary, naming both digests.
    pub fn check_binary(&self, own_sha256: &str) -> Result<(), String> {
        if self.binary_sha256 == own_sha256 {
            Ok(())
        } else {
            Err(format!(
                "binary_sha256: these rules were certified for the binary {} (reddog {}, {}), but this binary is {}: \
                 certify the tables with this binary (`reddog certify`), or start with --allow-uncertified-binary \
                 (the pod then reports itself uncertified)",
                self.binary_sha256, self.binary_version, self.certified_at, own_sha256
            ))
        }
    }

    /// Refuses the first configured table whose digest is not certified for its id with its
    /// sandbox flag, naming the table, its digest and the digests certified for it.
    pub fn check(&self, tables: &Tables) -> Result<(), String> {
        for t in tables.iter() {
            let digest = t.digest().to_hex();
            let certified: Vec<&CertifiedTable> = self.tables.iter().filter(|c| c.table_id == t.id).collect();
            let found = certified.iter().find(|c| c.rules_digest == digest);
            match found {
                Some(c) if c.sandbox == t.sandbox => {}
                Some(c) => {
                    return Err(format!(
                        "table {:?}: rules digest {digest} is certified as a {} table, but is configured as a {} \
                         table",
                        t.id,
                        if c.sandbox { "sandbox" } else { "fair" },
                        if t.sandbox { "sandbox" } else { "fair" }
                    ));
                }
                None => {
                    let what = if certified.is_empty() {
                        "no rules are certified for it".to_string()
                    } else {
                        let list: Vec<&str> = certified.iter().map(|c| c.rules_digest.as_str()).collect();
                        format!("certified: {}", list.join(", "))
                    };
                    return Err(format!("table {:?}: rules digest {digest} is not certified ({what})", t.id));
                }
            }
        }
        Ok(())
    }
}

/// What the start-up check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Certified {
    /// No `--certified-rules`.
    NotChecked,
    /// Every table's rules are certified, for this binary.
    Yes,
    /// Every table's rules are certified, but for another binary (`--allow-uncertified-binary`).
    OtherBinary,
}

/// Reads `path`, checks it ([`CertifiedRules::from_json`]), the tables against it and its
/// binary digest against this executable's. A file of another binary is refused, naming both
/// digests, unless `allow_other_binary`: then it is logged as a warning and the answer is
/// [`Certified::OtherBinary`].
pub(crate) fn load(path: &std::path::Path, tables: &Tables, allow_other_binary: bool) -> Result<Certified, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let file = CertifiedRules::from_json(&text).map_err(|e| format!("{shown}: {e}"))?;
    file.check(tables).map_err(|e| format!("{shown}: {e}"))?;
    let (own, exe) = own_binary_sha256().map_err(|e| format!("cannot read the running binary to hash it: {e}"))?;
    match file.check_binary(&own) {
        Ok(()) => {
            tracing::info!(binary_sha256 = %own, certified_at = %file.certified_at, "certified rules: this binary");
            Ok(Certified::Yes)
        }
        Err(e) if allow_other_binary => {
            tracing::warn!(
                binary_sha256 = %own,
                certified_binary_sha256 = %file.binary_sha256,
                path = %exe,
                "UNCERTIFIED: {shown}: {e}; serving anyway (--allow-uncertified-binary): reddog_binary_certified 0"
            );
            Ok(Certified::OtherBinary)
        }
        Err(e) => Err(format!("{shown}: {e}")),
    }
}

/// The SHA-256 (lower-case hex) of the running executable, `/proc/self/exe` (Linux; else the
/// path `std::env::current_exe` names), and the path it was read from. Read in 64 KiB
/// pieces: the whole binary never sits in memory.
pub fn own_binary_sha256() -> std::io::Result<(String, String)> {
    use std::io::Read as _;
    let proc = std::path::PathBuf::from("/proc/self/exe");
    let (path, mut file) = match std::fs::File::open(&proc) {
        Ok(f) => (proc, f),
        Err(_) => {
            let p = std::env::current_exe()?;
            let f = std::fs::File::open(&p)?;
            (p, f)
        }
    };
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let shown = std::fs::read_link(&path).unwrap_or(path);
    Ok((hex::encode(hasher.finalize()), shown.display().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables() -> Tables {
        Tables::from_json(r#"{"tables":{"a":{},"b":{"decks":6}}}"#).unwrap()
    }

    #[test]
    fn a_changed_paytable_entry_is_refused_naming_the_table_and_both_digests() {
        let tables = tables();
        let file = CertifiedRules::of(&tables, &"0".repeat(64), "quick");
        let text = serde_json::to_string(&file).unwrap();
        assert_eq!(CertifiedRules::from_json(&text).unwrap(), file);
        assert_eq!(file.check(&tables), Ok(()));
        let changed = Tables::from_json(
            r#"{"tables":{"a":{},"b":{"decks":6,"paytable":{"spread":[5,4,1,1,1,1,1,1,1,1,1],"three_of_a_kind":11}}}}"#,
        )
        .unwrap();
        let err = file.check(&changed).unwrap_err();
        let (old, new) = (&file.tables[1].rules_digest, changed.get("b").unwrap().digest().to_hex());
        assert!(err.starts_with("table \"b\"") && err.contains(old.as_str()) && err.contains(&new), "{err}");
    }

    #[test]
    fn another_binarys_file_is_refused_naming_both_digests() {
        let file = CertifiedRules::of(&tables(), &"ab".repeat(32), "quick");
        assert_eq!(file.check_binary(&"ab".repeat(32)), Ok(()));
        let err = file.check_binary(&"cd".repeat(32)).unwrap_err();
        assert!(err.contains(&"ab".repeat(32)) && err.contains(&"cd".repeat(32)), "{err}");
    }

    /// Every malformed field is refused, each naming its field: one case per field the
    /// parser checks.
    #[test]
    fn every_malformed_field_is_refused_naming_it() {
        let file = CertifiedRules::of(&tables(), &"0".repeat(64), "quick");
        let good = serde_json::to_value(&file).unwrap();
        use serde_json::json;
        // (field named, JSON pointer, value put there)
        let cases = [
            ("format", "/format", json!("other")),
            ("format", "/format", json!(FORMAT_V1)),
            ("verdict", "/verdict", json!("fail")),
            ("binary_sha256", "/binary_sha256", json!("AB".repeat(32))),
            ("binary_sha256", "/binary_sha256", json!("ab")),
            ("certified_at", "/certified_at", json!("yesterday")),
            ("tables", "/tables", json!([])),
            ("tables[0].table_id", "/tables/0/table_id", json!("bad id")),
            ("tables[1].rules_digest", "/tables/1/rules_digest", json!("xyz")),
            ("tables[1].rules_digest", "/tables/1/rules_digest", json!("1".repeat(64))),
            ("tables[0].rules", "/tables/0/rules/decks", json!(0)),
            ("tables[0].rules_digest", "/tables/0/rules/max_bet", json!(20000)),
            ("tables[0].rtp_exact", "/tables/0/rtp_exact", json!("1/2")),
            ("tables[0].rtp_decimal", "/tables/0/rtp_decimal", json!("0.5")),
            ("certified rules", "/binary_version", json!(7)),
        ];
        for (field, pointer, value) in &cases {
            let mut v = good.clone();
            *v.pointer_mut(pointer).unwrap() = value.clone();
            let err = CertifiedRules::from_json(&v.to_string()).unwrap_err();
            assert_eq!(err.field, *field, "{err}");
        }
        let mut v = good.clone();
        v["extra"] = json!(1);
        assert_eq!(CertifiedRules::from_json(&v.to_string()).unwrap_err().field, "certified rules");
        println!("{} malformed files refused, each naming its field", cases.len());
    }

    #[test]
    fn a_sandbox_table_is_certified_as_sandbox_and_never_passes_as_fair() {
        let sandbox = Tables::from_json(r#"{"tables":{"lab":{"sandbox":true}}}"#).unwrap();
        let fair = Tables::from_json(r#"{"tables":{"lab":{}}}"#).unwrap();
        let file = CertifiedRules::of(&sandbox, &"0".repeat(64), "quick");
        assert!(file.tables[0].sandbox);
        assert_eq!(file.check(&sandbox), Ok(()));
        assert!(file.check(&fair).is_err());
        let fair_file = CertifiedRules::of(&fair, &"0".repeat(64), "quick");
        assert!(fair_file.check(&sandbox).is_err());
    }

    #[test]
    fn the_own_binary_digest_is_the_sha256_of_the_executable() {
        let (digest, path) = own_binary_sha256().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(digest, hex::encode(Sha256::digest(&bytes)));
    }
}
