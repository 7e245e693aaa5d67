//! Errors a new operator sees at start-up, as the real binary prints them: each must say what
//! is wrong and where (issue 11).

use std::process::{Command, Stdio};

fn reddog(args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reddog"));
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
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

const FREE: [&str; 4] = ["--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"];

fn serve_with(extra: &[&str], env: &[(&str, &str)]) -> String {
    let mut args = vec!["serve"];
    args.extend(FREE);
    args.extend(extra);
    let (ok, text) = reddog(&args, env);
    assert!(!ok, "the server must refuse to start: {text}");
    text
}

#[test]
fn a_table_with_min_bet_above_max_bet_says_so_and_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("high-limits.json");
    std::fs::write(&path, r#"{"min_bet":50000,"max_bet":100}"#).unwrap();
    let text = serve_with(&["--table-config", path.to_str().unwrap()], &[]);
    assert!(text.contains("high-limits.json"), "{text}");
    assert!(
        text.contains("max_bet 100 is less than min_bet 50000"),
        "{text}"
    );
}

#[test]
fn a_table_with_zero_decks_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zero-decks.json");
    std::fs::write(&path, r#"{"decks":0}"#).unwrap();
    let text = serve_with(&["--table-config", path.to_str().unwrap()], &[]);
    assert!(
        text.contains("zero-decks.json") && text.contains("decks"),
        "{text}"
    );
}

#[test]
fn a_key_ring_in_the_environment_and_a_key_ring_file_name_both_sources() {
    let text = serve_with(
        &["--key-ring-file", "/nonexistent/ring.json"],
        &[("REDDOG_KEY_RING", "{}")],
    );
    assert!(
        text.contains("REDDOG_KEY_RING") && text.contains("--key-ring-file"),
        "{text}"
    );
}

#[test]
fn a_listen_address_without_a_port_says_what_form_is_wanted() {
    let (ok, text) = reddog(&["serve", "--listen", "localhost"], &[]);
    assert!(!ok);
    assert!(text.contains("HOST:PORT"), "{text}");
}

#[test]
fn a_host_name_listen_address_is_accepted() {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_reddog"))
        .args([
            "serve",
            "--listen",
            "localhost:0",
            "--metrics-listen",
            "localhost:0",
        ])
        .env_remove("REDDOG_KEY_RING")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let first = std::io::BufReader::new(stdout)
        .lines()
        .next()
        .map(Result::unwrap)
        .unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    assert!(first.starts_with("listening on 127.0.0.1:"), "{first}");
}

#[test]
fn raise_at_least_twelve_is_refused_instead_of_meaning_never() {
    let (ok, text) = reddog(
        &[
            "simulate",
            "--policy",
            "raise-at-least:12",
            "--rounds",
            "10",
        ],
        &[],
    );
    assert!(!ok);
    assert!(
        text.contains("would never raise") && text.contains("never"),
        "{text}"
    );
}
