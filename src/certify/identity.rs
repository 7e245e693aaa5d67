//! The identity section: which bytes are under test (the binary's SHA-256, read from
//! `/proc/self/exe`), how they were built (version, git commit, rustc, target, profile — all
//! compiled in by `build.rs`), from which dependencies (the binary's dependency graph for its
//! target, recorded by `build.rs` with `cargo tree`, and `Cargo.lock`'s checksums, both
//! embedded at build time: no cargo and no network at run time), for which tables (the table
//! configuration's digest and each table's rules digest), when and by which command.

use std::collections::BTreeMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::service::build_info;

/// `Cargo.lock` as it was when the binary was built.
pub const CARGO_LOCK: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock"));
/// The binary's dependency graph for its target, written by `build.rs`: one line
/// `KIND|NAME|VERSION|SOURCE|LICENCE` per package, or `unavailable: WHY`.
pub const DEPENDENCY_GRAPH: &str = include_str!(concat!(env!("OUT_DIR"), "/dependencies.txt"));
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
/// `std::env::current_exe` names — the digest `reddog serve --certified-rules` compares.
pub fn binary_sha256() -> Result<(String, String), std::io::Error> {
    crate::service::rules::certified::own_binary_sha256()
}

/// One package the binary is built from.
#[derive(Clone, Debug, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct Package {
    pub name: String,
    pub version: String,
    /// `registry` or `path` (the workspace's own crates).
    pub source: String,
    /// `normal`: its code is in the binary; `build`: it only builds the binary (build scripts
    /// and what they use).
    pub kind: String,
    /// The licence its manifest declares (an SPDX expression), empty when it declares none.
    pub licence: String,
    /// The registry checksum (SHA-256 of the `.crate` file) from `Cargo.lock`, when there is one.
    pub checksum: Option<String>,
}

/// The packages of `graph` (the format of [`DEPENDENCY_GRAPH`]) other than `root`, with
/// their checksums from `lock`.
pub fn dependencies(graph: &str, lock: &str, root: &str) -> Result<Vec<Package>, String> {
    if let Some(why) = graph.trim().strip_prefix("unavailable: ") {
        return Err(format!("the build recorded no dependency graph ({why})"));
    }
    let doc: toml_edit::DocumentMut = lock.parse().map_err(|e| format!("Cargo.lock: {e}"))?;
    let packages =
        doc.get("package").and_then(|p| p.as_array_of_tables()).ok_or("Cargo.lock has no [[package]] entries")?;
    let checksums: BTreeMap<(&str, &str), &str> = packages
        .iter()
        .filter_map(|p| {
            let s = |k: &str| p.get(k).and_then(|v| v.as_str());
            Some(((s("name")?, s("version")?), s("checksum")?))
        })
        .collect();
    let mut out = Vec::new();
    for line in graph.lines().filter(|l| !l.is_empty()) {
        let [kind, name, version, source, licence] = line.splitn(5, '|').collect::<Vec<_>>()[..] else {
            return Err(format!("dependency graph: malformed line {line:?}"));
        };
        if name != root {
            out.push(Package {
                name: name.to_string(),
                version: version.to_string(),
                source: source.to_string(),
                kind: kind.to_string(),
                licence: licence.to_string(),
                checksum: checksums.get(&(name, version)).map(|c| c.to_string()),
            });
        }
    }
    if out.len() + 1 != graph.lines().filter(|l| !l.is_empty()).count() {
        return Err(format!("dependency graph: {root} is not in it"));
    }
    out.sort();
    Ok(out)
}

/// A CycloneDX 1.5 JSON SBOM of the binary: the application (with the binary's SHA-256) and
/// every package of [`dependencies`], with its purl, licence and registry checksum; packages
/// that only build the binary have the scope `excluded` (not in the binary).
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
            if !p.licence.is_empty() {
                c["licenses"] = serde_json::json!([{"expression": p.licence}]);
            }
            c["scope"] = serde_json::json!(if p.kind == "normal" { "required" } else { "excluded" });
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
    /// The binary's dependency graph for its target (normal and build dependencies).
    pub dependencies: Vec<Package>,
    /// Where the licences come from and where they are checked.
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
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn the_embedded_graph_lists_the_binarys_dependencies_with_licences_and_checksums() {
        let deps = dependencies(DEPENDENCY_GRAPH, CARGO_LOCK, "reddog").unwrap();
        let names: BTreeSet<&str> = deps.iter().map(|p| p.name.as_str()).collect();
        for needed in ["tonic", "sha2", "rand_chacha", "serde_json", "reddog-core"] {
            assert!(names.contains(needed), "{needed}");
        }
        // Not the binary's: the demo, dev-dependencies, the developer tools, the root itself.
        for absent in ["reddog", "reddog-demo", "reddog-tools", "proptest", "criterion", "rcgen"] {
            assert!(!names.contains(absent), "{absent}");
        }
        if TARGET.contains("linux") {
            assert!(!names.contains("windows-sys"), "another platform's crate");
        }
        let kind = |p: &str| deps.iter().find(|d| d.name == p).map(|d| d.kind.as_str());
        assert_eq!(kind("tonic"), Some("normal"));
        assert_eq!(kind("protox"), Some("build"));
        assert!(deps.iter().filter(|p| p.source == "registry").all(|p| p.checksum.is_some() && !p.licence.is_empty()));
        let bom = cyclonedx("ab", "2026-01-01T00:00:00Z", &deps);
        let components = bom["components"].as_array().unwrap();
        assert_eq!(components.len(), deps.len());
        let excluded = components.iter().filter(|c| c["scope"] == "excluded").count();
        assert_eq!(excluded, deps.iter().filter(|p| p.kind == "build").count());
        assert!(dependencies("unavailable: offline", CARGO_LOCK, "reddog").unwrap_err().contains("offline"));
    }
}
