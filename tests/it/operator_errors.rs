//! Errors a new operator sees at start-up, as the real binary prints them: each must say what
//! is wrong and where.

use std::ffi::OsStr;
use std::process::{Command, Stdio};

use crate::common::{Log, ServerProcess};

fn reddog(args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let mut cmd = Command::new(crate::common::reddog_binary());
    cmd.args(args)
        .env_remove("REDDOG_KEY_RING")
        .env_remove("REDDOG_KEY_RING_FILE")
        .env_remove("REDDOG_TABLE_CONFIG")
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run reddog");
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

fn serve_with(extra: &[&str], env: &[(&str, &str)]) -> String {
    let (status, text) = ServerProcess::builder().args(extra).envs(env).refused();
    assert!(!status.success(), "the server must refuse to start: {text}");
    text
}

/// The line of docs/OPERATIONS.md's start-up errors that starts with `start`: the binary
/// must print it as written.
fn documented(start: &str) -> String {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/OPERATIONS.md")).unwrap();
    doc.lines().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("OPERATIONS.md shows no {start:?}")).to_owned()
}

#[test]
fn a_table_with_min_bet_above_max_bet_says_so_and_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("high-limits.json");
    std::fs::write(&path, r#"{"min_bet":50000,"max_bet":100}"#).unwrap();
    let text = serve_with(&["--table-config", path.to_str().unwrap()], &[]);
    assert!(text.contains("high-limits.json"), "{text}");
    assert!(text.contains("max_bet 100 is less than min_bet 50000"), "{text}");
    let shown = documented("Error: --table-config: high-limits.json:");
    assert!(text.contains(&shown.replace("high-limits.json", path.to_str().unwrap())), "{text}\n{shown}");
}

#[test]
fn a_table_with_zero_decks_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zero-decks.json");
    std::fs::write(&path, r#"{"decks":0}"#).unwrap();
    let text = serve_with(&["--table-config", path.to_str().unwrap()], &[]);
    assert!(text.contains("zero-decks.json") && text.contains("decks"), "{text}");
    let shown = documented("Error: --table-config: zero-decks.json:");
    assert!(text.contains(&shown.replace("zero-decks.json", path.to_str().unwrap())), "{text}\n{shown}");
}

#[test]
fn a_key_ring_in_the_environment_and_a_key_ring_file_name_both_sources() {
    let text = serve_with(&["--key-ring-file", "/nonexistent/ring.json"], &[("REDDOG_KEY_RING", "{}")]);
    assert!(text.contains("REDDOG_KEY_RING") && text.contains("--key-ring-file"), "{text}");
}

#[test]
fn a_listen_address_without_a_port_says_what_form_is_wanted() {
    let (ok, text) = reddog(&["serve", "--listen", "localhost"], &[]);
    assert!(!ok);
    assert!(text.contains("HOST:PORT"), "{text}");
}

#[test]
fn a_host_name_listen_address_is_accepted() {
    let server = ServerProcess::builder().listen("localhost:0").spawn();
    assert_eq!(server.addr.ip(), std::net::Ipv4Addr::LOCALHOST, "{}", server.addr);
}

#[test]
fn raise_at_least_twelve_is_refused_instead_of_meaning_never() {
    let (ok, text) = reddog(&["simulate", "--policy", "raise-at-least:12", "--rounds", "10"], &[]);
    assert!(!ok);
    assert!(text.contains("would never raise") && text.contains("never"), "{text}");
}

/// The key ring file `text`, written with `mode`, in a fresh directory.
fn ring_file(text: &str, mode: u32) -> (tempfile::TempDir, String) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key-ring.json");
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    let path = path.to_str().unwrap().to_string();
    (dir, path)
}

fn refused_ring(text: &str) -> String {
    let (_dir, path) = ring_file(text, 0o600);
    serve_with(&["--key-ring-file", &path], &[])
}

const KEY_1: &str = "1111111111111111111111111111111111111111111111111111111111111111";

#[test]
fn a_key_ring_without_primary_names_the_primary_field() {
    let text = refused_ring(&format!(r#"{{"keys":{{"k1":"{KEY_1}"}}}}"#));
    assert!(text.contains("key_ring.primary: missing"), "{text}");
}

#[test]
fn a_key_given_as_a_number_names_its_key_id() {
    let text = refused_ring(r#"{"primary":"k1","keys":{"k1":1234}}"#);
    assert!(text.contains("key_ring.keys.k1: a key is a string of 64 hexadecimal characters"), "{text}");
    assert!(!text.contains("1234"), "the key's value is not echoed: {text}");
}

#[test]
fn an_unknown_key_ring_field_is_named() {
    let text = refused_ring(&format!(r#"{{"primary":"k1","keys":{{"k1":"{KEY_1}"}},"rotate":true}}"#));
    assert!(text.contains("key_ring.rotate: unknown field"), "{text}");
}

#[test]
fn an_all_0xff_key_is_refused_like_an_all_zero_key() {
    let ones = "ff".repeat(32);
    let text = refused_ring(&format!(r#"{{"primary":"k1","keys":{{"k1":"{ones}"}}}}"#));
    assert!(text.contains("key_ring.keys.k1: the key is all 0xff bytes"), "{text}");
    assert!(!text.contains(&ones), "the key is not echoed: {text}");
}

/// Starts the engine with the key ring file `path`, reads its log until the `listening on`
/// line, stops it, and returns the log.
fn start_up_log(path: &str) -> String {
    let server =
        ServerProcess::builder().args(&["--key-ring-file", path]).env("RUST_LOG", "info").log(Log::Keep).spawn();
    server.wait_for_log("listening on", std::time::Duration::from_secs(30));
    server.log_lines().join("\n")
}

/// A key ring file others may read or write is refused, naming the file and its mode; the
/// override starts anyway with an ERROR line; the shipped Deployment's mode (0440, group
/// from `fsGroup`) and 0600 start without a word about it.
#[test]
fn a_key_ring_file_readable_by_others_is_refused_unless_allowed_and_0440_is_accepted() {
    let ring = format!(r#"{{"primary":"k1","keys":{{"k1":"{KEY_1}"}}}}"#);
    for mode in [0o644, 0o602] {
        let (_dir, open) = ring_file(&ring, mode);
        let text = serve_with(&["--key-ring-file", &open], &[]);
        assert!(text.contains("refusing to start") && text.contains(&open), "{text}");
        assert!(text.contains(&format!("mode {mode:04o}")), "the mode is named: {text}");
        let allowed =
            ServerProcess::builder().args(&["--key-ring-file", &open]).env("REDDOG_ALLOW_INSECURE_KEY_FILES", "1");
        let server = allowed.env("RUST_LOG", "info").log(Log::Keep).spawn();
        server.wait_for_log("listening on", std::time::Duration::from_secs(30));
        let log = server.log_lines().join("\n");
        assert!(log.contains("ERROR") && log.contains("INSECURE") && log.contains(&open), "{log}");
    }
    for mode in [0o440, 0o600] {
        let (_dir, private) = ring_file(&ring, mode);
        let log = start_up_log(&private);
        assert!(!log.contains("INSECURE") && !log.contains("readable"), "{log}");
    }
}

/// A TLS private key others may read is refused the same way.
#[test]
fn a_tls_private_key_readable_by_others_is_refused() {
    let (_dir, key) = ring_file("not read: refused before", 0o644);
    let (_cert_dir, cert) = ring_file("not read either", 0o644);
    let text = serve_with(&["--tls-cert", &cert, "--tls-key", &key], &[("REDDOG_KEY_RING", "{}")]);
    assert!(text.contains("TLS private key") && text.contains(&key) && text.contains("mode 0644"), "{text}");
}

/// `reddog keygen --out` creates the ring 0600 whatever the umask, and the engine starts on it.
#[test]
fn keygen_out_writes_a_private_ring_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ring.json");
    let status = std::process::Command::new("sh")
        .args(["-c", "umask 000; exec \"$0\" keygen --id k1 --out \"$1\""])
        .arg(crate::common::reddog_binary())
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success());
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o600, "{mode:04o}");
    start_up_log(path.to_str().unwrap());
}

#[test]
fn a_negative_deck_count_names_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tables.json");
    std::fs::write(&path, r#"{"tables":{"vip":{"decks":-1}}}"#).unwrap();
    let text = serve_with(&["--table-config", path.to_str().unwrap()], &[]);
    assert!(text.contains("tables.vip.decks: invalid value: integer `-1`, expected u32"), "{text}");
}

#[test]
fn a_paytable_paying_more_than_the_stakes_is_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let generous = r#""paytable":{"spread":[20,20,20,20,20,20,20,20,20,20,20],"three_of_a_kind":20}"#;
    let path = dir.path().join("generous.json");
    std::fs::write(&path, format!("{{{generous}}}")).unwrap();
    let text = serve_with(&["--table-config", path.to_str().unwrap()], &[]);
    assert!(text.contains("tables.default.paytable: the best play returns"), "{text}");
    assert!(text.contains("allow_rtp_over_1"), "says how to allow it: {text}");

    let allowed = dir.path().join("allowed.json");
    std::fs::write(&allowed, format!(r#"{{{generous},"allow_rtp_over_1":true}}"#)).unwrap();
    // With allow_rtp_over_1 the table is served (the process prints its listen lines).
    ServerProcess::builder().args(&[OsStr::new("--table-config"), allowed.as_os_str()]).spawn();
}
