//! Certified rules: `reddog certify --out DIR` writes `DIR/certified-rules.json`, the rules a
//! test lab certified; `reddog serve --certified-rules FILE` (`REDDOG_CERTIFIED_RULES`) refuses
//! to start when a configured table's rules digest is not certified for that table, naming the
//! table and both digests. The check gates start-up only: it withdraws nothing (rounds
//! committed elsewhere still deal under the rules they carry; `withdrawn_rules` withdraws).
//!
//! ```json
//! {"format": "reddog-certified-rules-v1", "binary_sha256": "<64 hex>",
//!  "tables": [{"table_id": "default", "rules_digest": "<64 hex>",
//!              "rtp_exact": "…/…", "rtp_decimal": "0.9684…"}]}
//! ```
//! A file may list several digests for one table (old and new rules during a change).

use serde::{Deserialize, Serialize};

use super::tables::Tables;

/// The `format` of the file.
pub(crate) const FORMAT: &str = "reddog-certified-rules-v1";

/// The file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CertifiedRules {
    pub format: String,
    /// SHA-256 of the `reddog` binary that certified them.
    pub binary_sha256: String,
    pub tables: Vec<CertifiedTable>,
}

/// One certified table's rules.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CertifiedTable {
    pub table_id: String,
    pub rules_digest: String,
    /// Optimal-strategy RTP, a reduced fraction (as `GetRules.rtp_exact`).
    pub rtp_exact: String,
    pub rtp_decimal: String,
}

impl CertifiedRules {
    /// The rules of `tables`, certified by the binary with SHA-256 `binary_sha256`.
    pub fn of(tables: &Tables, binary_sha256: &str) -> CertifiedRules {
        let tables = tables
            .iter()
            .map(|t| {
                let (rtp_exact, rtp_decimal, _) = super::rules::rtp(&t.table);
                CertifiedTable { table_id: t.id.clone(), rules_digest: t.digest().to_hex(), rtp_exact, rtp_decimal }
            })
            .collect();
        CertifiedRules { format: FORMAT.to_string(), binary_sha256: binary_sha256.to_string(), tables }
    }

    /// Parses a file's text.
    pub fn from_json(text: &str) -> Result<CertifiedRules, String> {
        let file: CertifiedRules = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if file.format != FORMAT {
            return Err(format!("format {:?}: expected {FORMAT:?}", file.format));
        }
        Ok(file)
    }

    /// Refuses the first configured table whose digest is not certified for its id, naming
    /// the table, its digest and the digests certified for it.
    pub fn check(&self, tables: &Tables) -> Result<(), String> {
        for t in tables.iter() {
            let digest = t.digest().to_hex();
            let certified: Vec<&str> =
                self.tables.iter().filter(|c| c.table_id == t.id).map(|c| c.rules_digest.as_str()).collect();
            if !certified.contains(&digest.as_str()) {
                let what = if certified.is_empty() {
                    "no rules are certified for it".to_string()
                } else {
                    format!("certified: {}", certified.join(", "))
                };
                return Err(format!("table {:?}: rules digest {digest} is not certified ({what})", t.id));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_paytable_entry_is_refused_naming_the_table_and_both_digests() {
        let tables = Tables::from_json(r#"{"tables":{"a":{},"b":{"decks":6}}}"#).unwrap();
        let file = CertifiedRules::of(&tables, &"0".repeat(64));
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
        assert!(CertifiedRules::from_json(&text.replace(FORMAT, "other")).is_err());
    }
}
