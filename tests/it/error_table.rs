//! docs/INTEGRATION.md's error table cannot drift from the code: every `ErrorInfo.reason`,
//! `PreconditionFailure` violation type and `ErrorInfo` metadata key the service can answer
//! with (collected from the sources of `src/service/`) is named in the doc's "Errors" section,
//! and every reason the doc's table lists is one the code answers with; the proto's header
//! comment names every reason a request can meet.

use std::collections::BTreeSet;

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// The code without comments and without its `#[cfg(test)]` module.
fn code(path: &str) -> String {
    let text = read(path);
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// Every string literal of upper-case letters and underscores in `text` (`"ROUND_STATE"`).
fn upper_literals(text: &str) -> BTreeSet<String> {
    text.split('"')
        .skip(1)
        .step_by(2)
        .filter(|s| s.len() > 2 && s.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        .map(str::to_owned)
        .collect()
}

/// The first string literal after each occurrence of `call` (`set_error_info(`).
fn first_literal_after(text: &str, call: &str) -> BTreeSet<String> {
    text.match_indices(call).filter_map(|(i, _)| text[i + call.len()..].split('"').nth(1).map(str::to_owned)).collect()
}

/// Metadata keys: `("key".to_string(), …)` pairs.
fn metadata_keys(text: &str) -> BTreeSet<String> {
    text.match_indices(".to_string(), ")
        .filter_map(|(i, _)| {
            let before = &text[..i];
            let key = before.strip_suffix('"')?;
            let start = key.rfind('"')?;
            key[..start].ends_with('(').then(|| key[start + 1..].to_owned())
        })
        .collect()
}

/// Words in backticks in `text`.
fn backticked(text: &str) -> BTreeSet<String> {
    text.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

const STATUS_CODES: [&str; 6] =
    ["INVALID_ARGUMENT", "OUT_OF_RANGE", "NOT_FOUND", "FAILED_PRECONDITION", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED"];

#[test]
fn the_error_table_names_every_reason_violation_type_and_metadata_key_of_the_code() {
    let doc = read("docs/INTEGRATION.md");
    let section = doc.split("## Errors: what the platform does").nth(1).expect("the Errors section");
    let section = section.split("\n## ").next().unwrap();
    let named = backticked(section);
    // The table's first column: the reasons it documents.
    let table: BTreeSet<String> = section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .flat_map(|l| backticked(l.split('|').nth(1).unwrap()))
        .collect();
    assert!(table.len() > 20, "the table: {table:?}");

    let error_rs = code("src/service/error.rs");
    // Reasons and violation types of the one mapping; INTERNAL is answered without details.
    let mut from_code: BTreeSet<String> = upper_literals(&error_rs);
    from_code.remove("INTERNAL");
    let mut keys = metadata_keys(&error_rs);
    let mut reasons_elsewhere = BTreeSet::new();
    for entry in std::fs::read_dir(format!("{}/src/service", env!("CARGO_MANIFEST_DIR"))).unwrap() {
        let path = entry.unwrap().path();
        let rel = format!("src/service/{}", path.file_name().unwrap().to_string_lossy());
        if path.extension().is_some_and(|e| e == "rs") && rel != "src/service/error.rs" {
            let text = code(&rel);
            for call in ["set_error_info(", "with_error_info("] {
                reasons_elsewhere.extend(first_literal_after(&text, call));
            }
            if text.contains("error_info(") {
                keys.extend(metadata_keys(&text));
            }
        }
    }
    assert!(reasons_elsewhere.contains("OVERLOADED"), "{reasons_elsewhere:?}");
    from_code.extend(reasons_elsewhere.iter().cloned());
    for must in ["RULES_CHANGED", "AUDIT_UNAVAILABLE", "INVALID_TOKEN", "ROUND_STATE", "COMMITMENT_BINDING"] {
        assert!(from_code.contains(must), "{must} not collected from the code: {from_code:?}");
    }
    let missing: Vec<&String> = from_code.iter().filter(|r| !named.contains(*r)).collect();
    assert!(missing.is_empty(), "answered by the code, not in INTEGRATION.md's error section: {missing:?}");
    let stale: Vec<&String> =
        table.iter().filter(|r| !from_code.contains(*r) && !STATUS_CODES.contains(&r.as_str())).collect();
    assert!(stale.is_empty(), "in INTEGRATION.md's error table, answered by no code: {stale:?}");

    // The proto's header comment lists the reasons a request can meet (not the four that only
    // a bad configuration reaches).
    let proto = read("proto/reddog/v1/reddog.proto");
    let header = proto.split("syntax = ").next().unwrap();
    let config_only = ["INVALID_VALUE", "VALUE_OUT_OF_RANGE", "TABLE_TOO_LARGE", "ROUND_NOT_COMPLETE"];
    let missing: Vec<&String> =
        from_code.iter().filter(|r| !config_only.contains(&r.as_str()) && !header.contains(r.as_str())).collect();
    assert!(missing.is_empty(), "answered by the code, not in the proto's header comment: {missing:?}");

    assert!(
        ["field", "min", "max", "limit_bytes", "timeout_ms", "cause"].iter().all(|k| keys.contains(*k)),
        "{keys:?}"
    );
    let metadata_line = section.lines().find(|l| l.contains("metadata")).expect("a line on ErrorInfo metadata");
    let doc_keys = backticked(section);
    let missing: Vec<&String> = keys.iter().filter(|k| !doc_keys.contains(*k)).collect();
    assert!(missing.is_empty(), "metadata keys not in INTEGRATION.md ({metadata_line}): {missing:?}");
}
