//! The identity section: which bytes are under test (the binary's SHA-256, read from
//! `/proc/self/exe`), how they were built (version, git commit, rustc, target, profile — all
//! compiled in by `build.rs`), from which dependencies (`Cargo.lock`, embedded at build time
//! with `include_str!`: no cargo and no network at run time), for which tables (the table
//! configuration's digest and each table's rules digest), when and by which command.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::game::Table;
use crate::service::build_info;

/// `Cargo.lock` as it was when the binary was built.
pub const CARGO_LOCK: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock"));
/// `rustc -V` of the compiler that built the binary.
pub const RUSTC: &str = env!("REDDOG_RUSTC");
/// The target triple.
pub const TARGET: &str = env!("REDDOG_TARGET");
/// Cargo's profile kind: `debug` or `release`.
pub const PROFILE: &str = env!("REDDOG_PROFILE");

/// Lower-case hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The SHA-256 of the running executable: `/proc/self/exe` (Linux), else the path
/// `std::env::current_exe` names.
pub fn binary_sha256() -> Result<(String, String), std::io::Error> {
    let path = std::path::PathBuf::from("/proc/self/exe");
    let (path, bytes) = match std::fs::read(&path) {
        Ok(b) => (path, b),
        Err(_) => {
            let p = std::env::current_exe()?;
            let b = std::fs::read(&p)?;
            (p, b)
        }
    };
    let shown = std::fs::read_link(&path).unwrap_or(path);
    Ok((sha256_hex(&bytes), shown.display().to_string()))
}

/// The rules digest of a table (docs/design/evidence-contract.md §3): lower-case hex SHA-256
/// of `field("reddog/rules/v1") ‖ field(u8 decks) ‖ field(12 × u32be: spreads 1–11 then
/// three of a kind) ‖ field(u64be min_bet ‖ u64be max_bet) ‖ field(currency code) ‖
/// field(u8 exponent)`, each `field` a u32 big-endian byte count then the bytes (FAIRNESS.md
/// §3.4).
pub fn rules_digest(table: &Table, currency: &str, exponent: u8) -> String {
    crate::fairness::TableRules {
        decks: table.decks(),
        paytable: table.paytable(),
        limits: table.limits(),
        currency,
        exponent,
    }
    .digest()
    .to_hex()
}

/// One package of `Cargo.lock`.
#[derive(Clone, Debug, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct Package {
    pub name: String,
    pub version: String,
    /// `registry`, `git` or `path` (the workspace's own crates).
    pub source: String,
    /// The registry checksum (SHA-256 of the `.crate` file), when there is one.
    pub checksum: Option<String>,
}

/// The packages of `lock` reachable from `root` through its dependency lists (normal, build
/// and dev dependencies alike: `Cargo.lock` does not tell them apart), `root` excluded.
pub fn dependencies(lock: &str, root: &str) -> Result<Vec<Package>, String> {
    let doc: toml_edit::DocumentMut = lock.parse().map_err(|e| format!("Cargo.lock: {e}"))?;
    let packages =
        doc.get("package").and_then(|p| p.as_array_of_tables()).ok_or("Cargo.lock has no [[package]] entries")?;
    let mut all: BTreeMap<(String, String), (Package, Vec<String>)> = BTreeMap::new();
    let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in packages.iter() {
        let s = |k: &str| p.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let (Some(name), Some(version)) = (s("name"), s("version")) else { continue };
        let source = match s("source") {
            None => "path".to_string(),
            Some(src) if src.starts_with("registry+") => "registry".to_string(),
            Some(src) if src.starts_with("git+") => "git".to_string(),
            Some(_) => "other".to_string(),
        };
        let deps = p
            .get("dependencies")
            .and_then(|d| d.as_array())
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        by_name.entry(name.clone()).or_default().push(version.clone());
        let pkg = Package { name: name.clone(), version: version.clone(), source, checksum: s("checksum") };
        all.insert((name, version), (pkg, deps));
    }
    // A dependency entry is "name" (one version in the lock) or "name version [(source)]".
    let resolve = |entry: &str| -> Option<(String, String)> {
        let mut parts = entry.split_whitespace();
        let name = parts.next()?.to_string();
        let version = match parts.next() {
            Some(v) => v.to_string(),
            None => by_name.get(&name)?.first()?.clone(),
        };
        Some((name, version))
    };
    let root_key =
        all.keys().find(|(n, _)| n == root).cloned().ok_or_else(|| format!("{root} is not in Cargo.lock"))?;
    let mut seen = BTreeSet::new();
    let mut stack = vec![root_key.clone()];
    while let Some(key) = stack.pop() {
        if !seen.insert(key.clone()) {
            continue;
        }
        if let Some((_, deps)) = all.get(&key) {
            stack.extend(deps.iter().filter_map(|d| resolve(d)));
        }
    }
    seen.remove(&root_key);
    Ok(seen.iter().filter_map(|k| all.get(k).map(|(p, _)| p.clone())).collect())
}

/// A CycloneDX 1.5 JSON SBOM of the binary: the application (with the binary's SHA-256) and
/// every package of [`dependencies`], with its purl and registry checksum.
pub fn cyclonedx(binary_sha256: &str, timestamp: &str, packages: &[Package]) -> serde_json::Value {
    let components: Vec<serde_json::Value> = packages
        .iter()
        .map(|p| {
            let mut c = serde_json::json!({
                "type": "library",
                "bom-ref": format!("pkg:cargo/{}@{}", p.name, p.version),
                "name": p.name,
                "version": p.version,
                "purl": format!("pkg:cargo/{}@{}", p.name, p.version),
            });
            if let Some(sum) = &p.checksum {
                c["hashes"] = serde_json::json!([{"alg": "SHA-256", "content": sum}]);
            }
            c
        })
        .collect();
    serde_json::json!({
        "bomFormat": "CycloneDX",
        "specVersion": "1.5",
        "version": 1,
        "metadata": {
            "timestamp": timestamp,
            "tools": {"components": [{"type": "application", "name": "reddog certify", "version": build_info::VERSION}]},
            "component": {
                "type": "application",
                "bom-ref": format!("pkg:cargo/reddog@{}", build_info::VERSION),
                "name": "reddog",
                "version": build_info::VERSION,
                "purl": format!("pkg:cargo/reddog@{}", build_info::VERSION),
                "hashes": [{"alg": "SHA-256", "content": binary_sha256}],
                "properties": [
                    {"name": "reddog:git_commit", "value": build_info::GIT_COMMIT},
                    {"name": "reddog:rustc", "value": RUSTC},
                    {"name": "reddog:target", "value": TARGET},
                    {"name": "reddog:profile", "value": PROFILE},
                    {"name": "reddog:cargo_lock_sha256", "value": sha256_hex(CARGO_LOCK.as_bytes())},
                ],
            },
        },
        "components": components,
    })
}

/// The identity section of the report.
#[derive(Clone, Debug, Serialize)]
pub struct Identity {
    pub binary_sha256: String,
    pub binary_path: String,
    pub version: String,
    pub git_commit: String,
    pub build_date: String,
    pub rustc: String,
    pub target: String,
    pub profile: String,
    pub cargo_lock_sha256: String,
    /// Packages reachable from `reddog` in the embedded `Cargo.lock`.
    pub dependencies: Vec<Package>,
    /// Licences are not recorded in `Cargo.lock`; where they are checked.
    pub licences: String,
    /// SHA-256 of the table configuration file's bytes; `None` for the built-in table.
    pub table_config_sha256: Option<String>,
    pub table_config: String,
    /// Each table's rules digest, by table id.
    pub rules_digests: BTreeMap<String, String>,
    /// How the rules digest was computed (which implementation).
    pub rules_digest_method: String,
    pub date: String,
    pub command_line: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::{BetLimits, Decks, Money, Paytable};

    #[test]
    fn the_rules_digest_covers_every_rule_and_the_currency() {
        let t = Table::default();
        let d = rules_digest(&t, "EUR", 2);
        assert_eq!(d.len(), 64);
        assert_eq!(d, rules_digest(&t, "EUR", 2));
        assert_ne!(d, rules_digest(&t, "USD", 2));
        assert_ne!(d, rules_digest(&t, "EUR", 0));
        assert_ne!(d, rules_digest(&t.with_decks(Decks::new(2).unwrap()), "EUR", 2));
        let limits = BetLimits::new(Money(500), Money(30_001)).unwrap();
        assert_ne!(d, rules_digest(&t.with_limits(limits).unwrap(), "EUR", 2));
        let pays = Paytable::new([5, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1], 12).unwrap();
        assert_ne!(d, rules_digest(&t.with_paytable(pays).unwrap(), "EUR", 2));
    }

    #[test]
    fn the_embedded_lock_lists_the_engines_dependencies_with_checksums() {
        let deps = dependencies(CARGO_LOCK, "reddog").unwrap();
        let names: BTreeSet<&str> = deps.iter().map(|p| p.name.as_str()).collect();
        for needed in ["tonic", "sha2", "rand_chacha", "serde_json"] {
            assert!(names.contains(needed), "{needed}");
        }
        // The demo's own dependency is not the engine's.
        assert!(!names.contains("reddog-demo"));
        assert!(deps.iter().filter(|p| p.source == "registry").all(|p| p.checksum.is_some()));
        let bom = cyclonedx("ab", "2026-01-01T00:00:00Z", &deps);
        assert_eq!(bom["components"].as_array().unwrap().len(), deps.len());
    }
}
