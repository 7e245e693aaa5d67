//! Certification as a change approval (`reddog certify --against PREVIOUS`): what the tables
//! being certified change against the certified rules in force, table by table — every
//! paytable entry, the limits, decks, currency, the sandbox and promotion flags, and the exact
//! RTP before and after.
//!
//! A change that alters a paytable entry, lowers a table's RTP or flips its sandbox or
//! promotion flag needs an approver's note (`--approve "..."`): without one `certify` prints
//! the change and exits non-zero before running any check, and writes nothing. The note and
//! the change are recorded in the new `certified-rules.json` and in the report.

use crate::odds::{Exact, decimal};
use crate::service::rules::certified::{Against, CertifiedRules, CertifiedTable, Change, FieldChange, TableChange};
use crate::service::rules::tables::Tables;

/// The change from `previous` (the file at `path`, whose bytes have SHA-256 `file_sha256`)
/// to `tables`, with the approver's note if any.
pub fn diff(
    previous: &CertifiedRules,
    path: &str,
    file_sha256: &str,
    tables: &Tables,
    approval: Option<String>,
) -> Change {
    let mut out = Vec::new();
    let mut needs = Vec::new();
    for t in tables.iter() {
        let after = CertifiedTable::of(t, tables.is_promotion(&t.id));
        // A file may list several entries for one table (old and new rules during a change):
        // the one with the same digest if there is one, else the last listed.
        let listed: Vec<&CertifiedTable> = previous.tables.iter().filter(|c| c.table_id == t.id).collect();
        let before = listed.iter().find(|c| c.rules_digest == after.rules_digest).or(listed.last()).copied();
        let Some(before) = before else {
            out.push(TableChange {
                table_id: t.id.clone(),
                status: "added".into(),
                rules_digest_before: None,
                rules_digest_after: Some(after.rules_digest.clone()),
                fields: Vec::new(),
                rtp_before: None,
                rtp_after: Some(rtp_text(&after)),
            });
            continue;
        };
        let fields = fields(before, &after);
        let status =
            if before.rules_digest == after.rules_digest && fields.is_empty() { "unchanged" } else { "changed" };
        let lower = rtp(&after) < rtp(before);
        let entries: Vec<&str> =
            fields.iter().filter(|f| f.field.starts_with("paytable.")).map(|f| f.field.as_str()).collect();
        if !entries.is_empty() {
            needs.push(format!("table {}: paytable entry changed: {}", t.id, entries.join(", ")));
        }
        if lower {
            needs.push(format!("table {}: RTP lowered from {} to {}", t.id, rtp_text(before), rtp_text(&after)));
        }
        for flag in ["sandbox", "promotion"] {
            if fields.iter().any(|f| f.field == flag) {
                needs.push(format!("table {}: {flag} flag changed", t.id));
            }
        }
        out.push(TableChange {
            table_id: t.id.clone(),
            status: status.into(),
            rules_digest_before: Some(before.rules_digest.clone()),
            rules_digest_after: Some(after.rules_digest.clone()),
            fields,
            rtp_before: Some(rtp_text(before)),
            rtp_after: Some(rtp_text(&after)),
        });
    }
    let mut seen = std::collections::BTreeSet::new();
    for c in previous.tables.iter().filter(|c| tables.get(&c.table_id).is_err()) {
        if !seen.insert(c.table_id.as_str()) {
            continue;
        }
        out.push(TableChange {
            table_id: c.table_id.clone(),
            status: "removed".into(),
            rules_digest_before: Some(c.rules_digest.clone()),
            rules_digest_after: None,
            fields: Vec::new(),
            rtp_before: Some(rtp_text(c)),
            rtp_after: None,
        });
    }
    Change {
        against: Against {
            file: path.to_string(),
            file_sha256: file_sha256.to_string(),
            binary_sha256: previous.binary_sha256.clone(),
            binary_version: previous.binary_version.clone(),
            certified_at: previous.certified_at.clone(),
        },
        tables: out,
        needs_approval: needs,
        approval,
    }
}

/// The exact RTP of a checked entry (`CertifiedRules::from_json` checked it parses and is the
/// rules' RTP; a malformed one counts as 0, so a change is never taken for a raise).
fn rtp(c: &CertifiedTable) -> Exact {
    c.rtp_exact
        .split_once('/')
        .and_then(|(n, d)| Some(Exact::new(n.parse().ok()?, d.parse().ok()?)))
        .unwrap_or_else(|| Exact::from(0))
}

fn rtp_text(c: &CertifiedTable) -> String {
    format!("{} ({})", c.rtp_exact, decimal(&rtp(c), 10))
}

fn fields(before: &CertifiedTable, after: &CertifiedTable) -> Vec<FieldChange> {
    let mut out = Vec::new();
    let mut push = |field: String, b: String, a: String| {
        if b != a {
            out.push(FieldChange { field, before: b, after: a });
        }
    };
    let (b, a) = (&before.rules, &after.rules);
    push("decks".into(), b.decks.to_string(), a.decks.to_string());
    for s in crate::game::Spread::all() {
        push(
            format!("paytable.spread[{}]", s.get()),
            b.paytable.spread_odds(s).to_string(),
            a.paytable.spread_odds(s).to_string(),
        );
    }
    push(
        "paytable.three_of_a_kind".into(),
        b.paytable.three_of_a_kind_odds().to_string(),
        a.paytable.three_of_a_kind_odds().to_string(),
    );
    push("min_bet".into(), b.min_bet.to_string(), a.min_bet.to_string());
    push("max_bet".into(), b.max_bet.to_string(), a.max_bet.to_string());
    push("currency".into(), b.currency.clone(), a.currency.clone());
    push("minor_unit_exponent".into(), b.minor_unit_exponent.to_string(), a.minor_unit_exponent.to_string());
    push("sandbox".into(), before.sandbox.to_string(), after.sandbox.to_string());
    push("promotion".into(), before.promotion.to_string(), after.promotion.to_string());
    out
}

/// The change as text, one line per table and one per changed field, then what needs
/// approval (and the note, when given).
pub fn render(change: &Change) -> String {
    let a = &change.against;
    let mut s = format!(
        "changes against {} (certified {} by reddog {}, binary {}):\n",
        a.file, a.certified_at, a.binary_version, a.binary_sha256
    );
    for t in &change.tables {
        let digests = match (&t.rules_digest_before, &t.rules_digest_after) {
            (Some(b), Some(a)) if b == a => format!("rules digest {a}"),
            (Some(b), Some(a)) => format!("rules digest {b} -> {a}"),
            (None, Some(a)) => format!("rules digest {a}"),
            (Some(b), None) => format!("rules digest {b}"),
            (None, None) => String::new(),
        };
        s.push_str(&format!("  table {}: {} ({digests})\n", t.table_id, t.status));
        for f in &t.fields {
            s.push_str(&format!("    {}: {} -> {}\n", f.field, f.before, f.after));
        }
        match (&t.rtp_before, &t.rtp_after) {
            (Some(b), Some(a)) => s.push_str(&format!("    rtp: {b} -> {a}\n")),
            (None, Some(a)) => s.push_str(&format!("    rtp: {a}\n")),
            (Some(b), None) => s.push_str(&format!("    rtp was: {b}\n")),
            (None, None) => {}
        }
    }
    if change.needs_approval.is_empty() {
        s.push_str("needs no approval: no paytable entry altered, no RTP lowered, no flag changed\n");
    } else {
        for n in &change.needs_approval {
            s.push_str(&format!("needs approval: {n}\n"));
        }
        match &change.approval {
            Some(note) => s.push_str(&format!("approved: {note}\n")),
            None => {
                s.push_str("NOT APPROVED: re-run with --approve \"who approved it, and why\" to certify this change\n")
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"{"tables":{"default":{"decks":1,"min_bet":500,"max_bet":30000},"jpy":{"decks":6,
        "currency":"JPY","minor_unit_exponent":0,"min_bet":1000,"max_bet":1000000}}}"#;

    fn previous() -> CertifiedRules {
        CertifiedRules::of(&Tables::from_json(BASE).unwrap(), &"0".repeat(64), "quick")
    }

    fn change(config: &str, note: Option<&str>) -> Change {
        diff(&previous(), "prev.json", &"1".repeat(64), &Tables::from_json(config).unwrap(), note.map(String::from))
    }

    #[test]
    fn the_same_tables_change_nothing_and_need_no_approval() {
        let c = change(BASE, None);
        assert!(c.tables.iter().all(|t| t.status == "unchanged" && t.fields.is_empty()), "{c:?}");
        assert!(c.needs_approval.is_empty());
    }

    #[test]
    fn three_of_a_kind_paying_1_is_named_with_both_rtps_and_needs_approval() {
        let typo = BASE.replace(
            r#""max_bet":30000}"#,
            r#""max_bet":30000,"paytable":{"spread":[5,4,2,1,1,1,1,1,1,1,1],"three_of_a_kind":1}}"#,
        );
        let c = change(&typo, None);
        let t = &c.tables.iter().find(|t| t.table_id == "default").unwrap();
        assert_eq!(t.status, "changed");
        assert_eq!(
            t.fields,
            [FieldChange { field: "paytable.three_of_a_kind".into(), before: "11".into(), after: "1".into() }]
        );
        assert!(t.rtp_before.as_deref().unwrap().starts_with("16052/16575 (0.9684464555)"), "{t:?}");
        assert_ne!(t.rtp_before, t.rtp_after);
        assert_eq!(c.needs_approval.len(), 2, "{:?}", c.needs_approval);
        let text = render(&c);
        assert!(text.contains("paytable.three_of_a_kind: 11 -> 1") && text.contains("NOT APPROVED"), "{text}");
    }

    /// Every field of a table, changed one at a time: each is named, and only a paytable
    /// entry, a lower RTP or a flag needs approval.
    #[test]
    fn every_field_is_compared_and_only_entries_lower_rtp_and_flags_need_approval() {
        let one = |entry: &str| format!(r#"{{"tables":{{"default":{{{entry}}}}}}}"#);
        let cases = [
            (one(r#""decks":2,"min_bet":500,"max_bet":30000"#), "decks", lower_with_2_decks()),
            (one(r#""decks":1,"min_bet":100,"max_bet":30000"#), "min_bet", false),
            (one(r#""decks":1,"min_bet":500,"max_bet":20000"#), "max_bet", false),
            (
                one(r#""decks":1,"min_bet":500,"max_bet":30000,"currency":"EUR","minor_unit_exponent":2"#),
                "currency",
                false,
            ),
            (
                one(r#""decks":1,"min_bet":500,"max_bet":30000,"currency":"XXX","minor_unit_exponent":3"#),
                "minor_unit_exponent",
                false,
            ),
            (one(r#""decks":1,"min_bet":500,"max_bet":30000,"sandbox":true"#), "sandbox", true),
            (one(r#""decks":1,"min_bet":500,"max_bet":30000,"allow_rtp_over_1":true"#), "promotion", true),
        ];
        let mut n = 0;
        for (config, field, approval) in &cases {
            let c = change(config, None);
            let t = c.tables.iter().find(|t| t.table_id == "default").unwrap();
            assert!(t.fields.iter().any(|f| f.field == *field), "{field}: {t:?}");
            assert_eq!(!c.needs_approval.is_empty(), *approval, "{field}: {:?}", c.needs_approval);
            assert!(c.tables.iter().any(|t| t.table_id == "jpy" && t.status == "removed"), "{c:?}");
            n += 1;
        }
        for s in 1..=11u32 {
            let mut spread = [5, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1];
            spread[s as usize - 1] += 1;
            let mut config = one(&format!(
                r#""decks":1,"min_bet":500,"max_bet":30000,"paytable":{{"spread":{spread:?},"three_of_a_kind":11}}"#
            ));
            // Some raised entries make the best play return more than the stake: a promotion.
            if Tables::from_json(&config).is_err() {
                config = config.replace(r#""decks":1"#, r#""decks":1,"allow_rtp_over_1":true"#);
            }
            let c = change(&config, Some("raise"));
            let t = c.tables.iter().find(|t| t.table_id == "default").unwrap();
            let named: Vec<&str> = t.fields.iter().map(|f| f.field.as_str()).filter(|f| *f != "promotion").collect();
            assert_eq!(named, [format!("paytable.spread[{s}]")], "{t:?}");
            assert!(c.needs_approval.iter().any(|r| r.contains("paytable entry")), "{c:?}");
            assert!(render(&c).contains("approved: raise"));
            n += 1;
        }
        println!("{n} single-field changes compared");
    }

    /// Whether two decks return less than one under the standard paytable (exact).
    fn lower_with_2_decks() -> bool {
        use crate::game::{Decks, Paytable};
        use crate::odds::{Analysis, Policy};
        let best = |d| Analysis::new(Decks::new(d).unwrap(), &Paytable::STANDARD).policy(Policy::Optimal).rtp;
        best(2) < best(1)
    }

    #[test]
    fn an_added_table_is_listed_with_its_rtp() {
        let c = change(&BASE.replace(r#""jpy":{"#, r#""new":{"decks":8},"jpy":{"#), None);
        let t = c.tables.iter().find(|t| t.table_id == "new").unwrap();
        assert_eq!((t.status.as_str(), t.rtp_before.is_none(), t.rtp_after.is_some()), ("added", true, true));
        assert!(c.needs_approval.is_empty());
    }
}
