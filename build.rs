//! Generates the gRPC code for `proto/reddog/v1/*.proto` with `tonic-prost-build`, parsing the
//! protos with `protox` so no `protoc` has to be installed. The encoded descriptor set is
//! written to `OUT_DIR/reddog_descriptor.bin` for server reflection.
//!
//! Also stamps the build: `REDDOG_GIT_COMMIT` (the environment variable of that name if set —
//! the Dockerfile passes its `REVISION` — else `git rev-parse HEAD` when git and a repository
//! are there, else `unknown`) and `REDDOG_BUILD_DATE` (RFC 3339 UTC, from
//! `SOURCE_DATE_EPOCH` when set, for reproducible builds, else the time of the build). Both
//! are compiled in: the binary never runs git. For `reddog certify`'s identity section it also
//! records `REDDOG_RUSTC` (`rustc -V` of the compiler cargo uses), `REDDOG_TARGET` (the
//! target triple) and `REDDOG_PROFILE` (`debug` or `release`), and writes the binary's real
//! dependency graph to `OUT_DIR/dependencies.txt` (see [`dependency_graph`]).

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

/// Days since 1970-01-01 to a civil (year, month, day), proleptic Gregorian (H. Hinnant).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn rfc3339(unix: i64) -> String {
    let (y, m, d) = civil(unix.div_euclid(86_400));
    let s = unix.rem_euclid(86_400);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", s / 3600, s / 60 % 60, s % 60)
}

fn stamp() {
    println!("cargo:rerun-if-env-changed=REDDOG_GIT_COMMIT");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    let commit = std::env::var("REDDOG_GIT_COMMIT")
        .ok()
        .filter(|c| !c.is_empty() && c != "unknown")
        .or_else(|| git(&["rev-parse", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_string());
    // Re-stamp when HEAD moves: HEAD itself, the branch it points at, packed refs — each only
    // if it exists: Cargo takes a missing file as always changed, which rebuilt the crate on
    // every cargo command (e.g. a worktree whose repository has no packed-refs).
    let watch = |path: String| {
        if std::path::Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    };
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        watch(format!("{dir}/HEAD"));
        if let (Some(common), Some(branch)) =
            (git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]), git(&["symbolic-ref", "-q", "HEAD"]))
        {
            watch(format!("{common}/{branch}"));
            watch(format!("{common}/packed-refs"));
        }
    }
    let unix =
        std::env::var("SOURCE_DATE_EPOCH").ok().and_then(|s| s.trim().parse::<i64>().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
        });
    println!("cargo:rustc-env=REDDOG_GIT_COMMIT={commit}");
    // The version string (`--version`, GetRules, `reddog_build_info`): `REDDOG_VERSION` when
    // set (the image's VERSION build argument), else the crate's version.
    println!("cargo:rerun-if-env-changed=REDDOG_VERSION");
    let version = std::env::var("REDDOG_VERSION")
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| std::env::var("CARGO_PKG_VERSION").unwrap_or_default());
    assert!(
        version.len() <= 128 && version.bytes().all(|b| b.is_ascii_alphanumeric() || b"._+-~".contains(&b)),
        "REDDOG_VERSION {version:?}: at most 128 of A-Z a-z 0-9 . _ + - ~"
    );
    println!("cargo:rustc-env=REDDOG_VERSION={version}");
    println!("cargo:rustc-env=REDDOG_BUILD_DATE={}", rfc3339(unix));
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let version = Command::new(rustc)
        .arg("-V")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=REDDOG_RUSTC={version}");
    for (var, name) in [("TARGET", "REDDOG_TARGET"), ("PROFILE", "REDDOG_PROFILE")] {
        let value = std::env::var(var).unwrap_or_else(|_| "unknown".to_string());
        println!("cargo:rustc-env={name}={value}");
    }
}

/// The packages compiled into the `reddog` binary for this target, from `cargo tree` (its
/// feature-aware resolution for this package alone): one line `KIND|NAME|VERSION|SOURCE|LICENCE`
/// per package, the root included; KIND `normal` (code in the binary) or `build` (used only to
/// build it: build scripts and their dependencies), SOURCE `registry` or `path` (no local path
/// is recorded: the binary stays the same wherever it is built). Dev-dependencies and other platforms' crates are not
/// there. Offline: without the package sources at hand, the file says `unavailable: WHY` and
/// `reddog certify` fails its dependency check.
fn dependency_graph(out: &std::path::Path) {
    for f in ["Cargo.toml", "Cargo.lock", "core/Cargo.toml"] {
        println!("cargo:rerun-if-changed={f}");
    }
    let tree = |edges: &str| -> Result<Vec<String>, String> {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
        let manifest = format!("{}/Cargo.toml", std::env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?);
        let target = std::env::var("TARGET").map_err(|e| e.to_string())?;
        let out = Command::new(cargo)
            .args(["tree", "--manifest-path", &manifest, "-p", "reddog", "-e", edges, "--target", &target])
            .args(["--prefix", "none", "--locked", "--offline", "--format", "{p}|{l}"])
            .output()
            .map_err(|e| format!("cargo tree: {e}"))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(format!("cargo tree: {}", err.lines().last().unwrap_or("failed")));
        }
        let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim_end_matches(" (*)").to_string())
            .filter(|l| !l.is_empty())
            .collect();
        lines.sort();
        lines.dedup();
        Ok(lines)
    };
    let text = match (tree("normal"), tree("normal,build")) {
        (Ok(normal), Ok(all)) => all
            .iter()
            .map(|l| {
                // `name vVERSION[ (/local/path)][ (proc-macro)]|licence`
                let (package, licence) = l.split_once('|').unwrap_or((l, ""));
                let mut words = package.split(' ');
                let (name, version) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
                let source = if package.contains(" (/") { "path" } else { "registry" };
                let kind = if normal.contains(l) { "normal" } else { "build" };
                format!("{kind}|{name}|{}|{source}|{licence}\n", version.trim_start_matches('v'))
            })
            .collect::<String>(),
        (Err(e), _) | (_, Err(e)) => format!("unavailable: {e}\n"),
    };
    let _ = std::fs::write(out.join("dependencies.txt"), text);
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    stamp();
    dependency_graph(&PathBuf::from(std::env::var("OUT_DIR")?));
    let fds = protox::compile(["reddog/v1/reddog.proto"], ["proto"])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("reddog_descriptor.bin"), prost::Message::encode_to_vec(&fds))?;
    // The codec answers a request prost cannot decode as the caller's mistake (see
    // `src/service/edge/codec.rs`).
    tonic_prost_build::configure().codec_path("crate::service::edge::codec::ApiCodec").compile_fds(fds)?;
    Ok(())
}
