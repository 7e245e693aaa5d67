//! Sandbox tables: a requested deal for every hand class, played through the real service and
//! revealed as a sandbox round (which the verifiers refuse as a fair round); a requested deal
//! refused at a fair table, and a sandbox table refused at start-up without `--allow-sandbox`.

use std::time::Duration;

use reddog::service::Tables;
use reddog::service::proto;
use reddog::service::{Application, KeyRingSource, Settings};
use tonic::Code;
use tonic_types::StatusExt;

use crate::common::{TestClient, TestServer, req, ring_a};

const TABLES: &str = r#"{"tables":{
    "default":{"decks":1,"currency":"EUR","minor_unit_exponent":2},
    "lab":{"decks":1,"currency":"EUR","minor_unit_exponent":2,"sandbox":true}}}"#;

async fn server() -> TestServer {
    let mut s = Settings::local(KeyRingSource::json(&ring_a()));
    s.tables = Some(Tables::from_json(TABLES).unwrap());
    s.allow_sandbox = true;
    TestServer::spawn(s).await
}

/// The rank character of rank value 2..=14.
fn rank(v: u8) -> char {
    b"23456789TJQKA"[usize::from(v - 2)] as char
}

/// Requested deals, one per hand class: spreads 1-11 with a winning third card, a
/// consecutive hand, a pair without a match and three of a kind.
fn deals() -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for spread in 1..=11u8 {
        let (low, high) = (2u8, 2 + spread + 1);
        out.push((
            format!("spread {spread}"),
            vec![format!("{}c", rank(low)), format!("{}d", rank(high)), format!("{}h", rank(low + 1))],
        ));
    }
    out.push(("consecutive".into(), vec!["9d".into(), "Ts".into()]));
    out.push(("pair".into(), vec!["7h".into(), "7d".into(), "Kc".into()]));
    out.push(("three of a kind".into(), vec!["7h".into(), "7d".into(), "7s".into()]));
    out
}

async fn start(
    c: &mut TestClient,
    table: &str,
    round_id: &str,
    cards: &[String],
) -> Result<proto::StartRoundResponse, tonic::Status> {
    let commit = c.commit_seed(req::commit_seed().round(round_id).nonce(1).table(table)).await?;
    assert_eq!(commit.sandbox, table == "lab");
    let start = req::start_round(commit.commitment_token).round(round_id).nonce(1).client_seed("lab seed");
    c.start_round(start.bets(&[1000]).limits(500, 30_000).sandbox_cards(cards)).await
}

#[tokio::test]
async fn a_sandbox_round_of_every_hand_class_plays_pays_and_reveals_as_sandbox() {
    let srv = server().await;
    let mut c = srv.client().await;
    let rules = c.get_rules(req::get_rules().table("lab")).await.unwrap();
    assert!(rules.sandbox);
    let fair = c.get_rules(req::get_rules().table("default")).await.unwrap();
    assert!(!fair.sandbox);
    for (i, (name, cards)) in deals().into_iter().enumerate() {
        let started = start(&mut c, "lab", &format!("lab-{i}"), &cards).await.unwrap();
        let view = started.round.unwrap();
        assert!(view.sandbox, "{name}");
        assert_eq!(view.first_card.unwrap().code, cards[0], "{name}");
        assert_eq!(view.second_card.unwrap().code, cards[1], "{name}");
        let mut token = started.round_token;
        let mut raised = false;
        if view.awaiting_decisions {
            let decided = c.decide(req::decide(token).raise(0)).await.unwrap();
            assert!(decided.round.unwrap().sandbox, "{name}");
            token = decided.round_token;
            raised = true;
        }
        let settled = c.settle(req::settle(token)).await.unwrap();
        assert!(settled.round.as_ref().unwrap().sandbox, "{name}");
        let stake = if raised { 2000 } else { 1000 };
        // What the paytable pays for this deal, from GetRules' odds.
        let returned = match name.as_str() {
            "consecutive" | "pair" => stake,
            "three of a kind" => stake * (u64::from(rules.three_of_a_kind_odds) + 1),
            _ => {
                let spread = name.trim_start_matches("spread ").parse::<usize>().unwrap();
                stake * (u64::from(rules.spread_odds[spread - 1].odds) + 1)
            }
        };
        assert_eq!((settled.total_staked, settled.total_returned), (stake, returned), "{name}");
        let reveal = settled.reveal.unwrap();
        assert_eq!(reveal.format, "reddog-sandbox-reveal-v1", "{name}");
        assert_eq!(reveal.cards, cards, "{name}");
        assert!(settled.reveal_json.starts_with(r#"{"format":"reddog-sandbox-reveal-v1""#), "{name}");
        let refused = reddog::fairness::parse_reveal(&settled.reveal_json).unwrap_err();
        assert_eq!(refused.path(), Some("format"), "{name}");
        assert!(refused.to_string().contains("never verifies as a fair round"), "{name}: {refused}");
    }
    // A round at the sandbox table without a requested deal is dealt from the seed, and is
    // still a sandbox round.
    let fair_deal = start(&mut c, "lab", "lab-fair-deal", &[]).await.unwrap();
    assert!(fair_deal.round.unwrap().sandbox);
    srv.stop().await;
}

#[tokio::test]
async fn a_requested_deal_at_a_fair_table_is_refused_naming_sandbox_cards() {
    let srv = server().await;
    let mut c = srv.client().await;
    let cards = vec!["7h".to_string(), "7d".into(), "7s".into()];
    let status = start(&mut c, "default", "fair-1", &cards).await.unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert!(status.message().starts_with("sandbox_cards: table \"default\" is not a sandbox table"), "{status:?}");
    let details = status.get_error_details();
    assert_eq!(details.error_info().unwrap().reason, "NOT_A_SANDBOX_TABLE");
    assert_eq!(details.precondition_failure().unwrap().violations[0].subject, "sandbox_cards");
    // The fair table still deals fair rounds, unmarked.
    let fair = start(&mut c, "default", "fair-2", &[]).await.unwrap();
    assert!(!fair.round.unwrap().sandbox);
    // A malformed deal at the sandbox table names the card.
    let bad = vec!["7h".to_string(), "7h".into(), "7s".into()];
    let status = start(&mut c, "lab", "lab-bad", &bad).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert_eq!(status.get_error_details().error_info().unwrap().metadata["field"], "sandbox_cards[1]");
    assert_eq!(status.get_error_details().error_info().unwrap().reason, "INVALID_SANDBOX_CARDS");
    srv.stop().await;
}

#[tokio::test]
async fn a_sandbox_table_without_allow_sandbox_stops_the_start_up_naming_it() {
    let mut s = Settings::local(KeyRingSource::json(&ring_a()));
    s.tables = Some(Tables::from_json(TABLES).unwrap());
    s.commitment_ttl = Duration::from_secs(60);
    let err = Application::build(s).await.expect_err("a sandbox table without --allow-sandbox is refused").to_string();
    assert!(err.contains("table \"lab\" is marked \"sandbox\": true"), "{err}");
    assert!(err.contains("--allow-sandbox"), "{err}");
}

#[test]
fn the_binary_refuses_a_sandbox_table_without_the_flag_and_a_sandbox_reveal_in_verify() {
    let dir = std::env::temp_dir().join(format!("reddog-sandbox-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("tables.json");
    std::fs::write(&config, TABLES).unwrap();
    let out = std::process::Command::new(crate::common::reddog_binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--table-config"])
        .arg(&config)
        .env_remove("REDDOG_KEY_RING_FILE")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("\"lab\"") && stderr.contains("--allow-sandbox"), "{stderr}");
    // `reddog verify` refuses a sandbox reveal as malformed (exit 2), saying why.
    let reveal = dir.join("reveal.json");
    let sample = r#"{"format":"reddog-sandbox-reveal-v1","algorithm":"reddog-deal-v1"}"#;
    std::fs::write(&reveal, sample).unwrap();
    let out = std::process::Command::new(crate::common::reddog_binary()).arg("verify").arg(&reveal).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("sandbox round"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
