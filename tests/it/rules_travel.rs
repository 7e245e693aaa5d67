//! Rules travel with the round (issue 31): two replicas on one key ring, the table configured
//! differently on each (`max_bet` and one paytable entry), every call of every round on a
//! random replica. No round is refused; each reveal states the rules digest its CommitSeed
//! showed, and every seat is paid by the paytable of the replica that made the commitment.
//! Only a digest the operator withdrew (`withdrawn_rules`) is refused, with `RULES_CHANGED`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use reddog::fairness::{AnyReveal, parse_reveal};
use reddog::service::proto::{self, Outcome, Rule};
use tonic::Code;

use crate::common::*;

/// Replica `a`: the standard paytable, bets up to 300.00.
const TABLE_A: &str = r#"{"decks":1,"min_bet":500,"max_bet":30000,"currency":"EUR","minor_unit_exponent":2,
  "paytable":{"spread":[5,4,2,1,1,1,1,1,1,1,1],"three_of_a_kind":11}}"#;
/// Replica `b`: the same table with spread 4 paying 2:1 and bets up to 200.00.
const TABLE_B: &str = r#"{"decks":1,"min_bet":500,"max_bet":20000,"currency":"EUR","minor_unit_exponent":2,
  "paytable":{"spread":[5,4,2,2,1,1,1,1,1,1,1],"three_of_a_kind":11}}"#;

/// A small deterministic generator for the platform's choices.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// A replica serving `table` (a table configuration file in `dir`), its audit trail in
/// `dir/<name>.jsonl`.
struct Replica {
    process: ServerProcess,
    client: TestClient,
    rules: proto::GetRulesResponse,
    trail: PathBuf,
}

async fn replica(dir: &Path, name: &str, table: &str, extra: &[&str]) -> Replica {
    let config = dir.join(format!("{name}-tables.json"));
    std::fs::write(&config, table).unwrap();
    let trail = dir.join(format!("{name}.jsonl"));
    let process = ServerProcess::builder()
        .args(&["--table-config", config.to_str().unwrap()])
        .args(extra)
        .env("REDDOG_KEY_RING", &ring_a())
        .env("REDDOG_AUDIT_LOG", trail.to_str().unwrap())
        .spawn();
    let mut client = connect(process.addr).await;
    let rules = client.get_rules(req::get_rules()).await.unwrap();
    Replica { process, client, rules, trail }
}

/// The odds a seat's outcome pays under `rules`' paytable.
fn odds_under(rules: &proto::GetRulesResponse, rule: Rule, spread: u32) -> u32 {
    match rule {
        Rule::ThreeOfAKind => rules.three_of_a_kind_odds,
        Rule::ThirdCardBetween => rules.spread_odds.iter().find(|s| s.spread == spread).unwrap().odds,
        _ => 0,
    }
}

/// What the run saw.
#[derive(Default)]
struct Seen {
    rounds: u64,
    /// Rounds whose StartRound went to the other replica than their CommitSeed.
    started_elsewhere: u64,
    /// Seats with a bet above replica b's `max_bet`, dealt by b on a's commitment.
    over_b_limit_on_b: u64,
    /// Seats won at an entry where the two paytables differ, settled by the replica that did
    /// not make the commitment.
    paid_by_committer_elsewhere: u64,
    /// Per rules digest: (staked, returned) as the Settle answers said.
    per_digest: BTreeMap<String, (u64, u64)>,
}

/// Plays `rounds` rounds, each call on a random replica, and checks each one.
async fn play(replicas: &mut [Replica], rounds: u64, rng: &mut Rng, seen: &mut Seen) {
    for _ in 0..rounds {
        let n = seen.rounds;
        seen.rounds += 1;
        let round_id = format!("travel-{n}");
        let pick = |rng: &mut Rng| rng.below(2) as usize;
        let c = pick(rng);
        let committed = replicas[c].client.commit_seed(req::commit_seed().round(&round_id).nonce(n)).await.unwrap();
        assert_eq!(committed.rules_digest, replicas[c].rules.rules_digest);
        let max = replicas[c].rules.table_limits.as_ref().unwrap().max_bet;
        let bets: Vec<u64> = (0..1 + rng.below(3)).map(|_| 500 + rng.below(max - 500 + 1)).collect();
        let s = pick(rng);
        let start = req::start_round(committed.commitment_token.clone())
            .round(&round_id)
            .nonce(n)
            .client_seed(format!("seed {n}"))
            .bets(&bets)
            .limits(500, 30_000);
        let started = replicas[s].client.start_round(start).await.unwrap_or_else(|e| panic!("{round_id}: {e:?}"));
        if s != c {
            seen.started_elsewhere += 1;
            if s == 1 {
                let b_max = replicas[1].rules.table_limits.as_ref().unwrap().max_bet;
                seen.over_b_limit_on_b += bets.iter().filter(|&&b| b > b_max).count() as u64;
            }
        }
        let view = started.round.unwrap();
        let mut token = started.round_token;
        if view.awaiting_decisions {
            let mut decide = req::decide(token).round(&round_id);
            for seat in 0..bets.len() as u32 {
                decide = if view.spread >= 7 || rng.below(3) == 0 { decide.raise(seat) } else { decide.stand(seat) };
            }
            let d = pick(rng);
            token = replicas[d].client.decide(decide).await.unwrap_or_else(|e| panic!("{round_id}: {e:?}")).round_token;
        }
        let t = pick(rng);
        let settled = replicas[t].client.settle(req::settle(token).round(&round_id)).await.unwrap();
        let Ok(AnyReveal::V2(reveal)) = parse_reveal(&settled.reveal_json) else {
            panic!("{round_id}: not a v2 reveal")
        };
        assert_eq!(reveal.rules_digest.as_deref(), Some(committed.rules_digest.as_str()), "{round_id}");
        assert_eq!(settled.reveal.as_ref().unwrap().rules_digest, committed.rules_digest, "{round_id}");
        let verdict = AnyReveal::V2(reveal).verify().expect("well-formed reveal");
        assert!(verdict.ok(), "{round_id}: {verdict:?}");
        // Every seat is paid by the committing replica's paytable.
        let (committer, other) = (&replicas[c].rules, &replicas[1 - c].rules);
        let spread = settled.round.as_ref().unwrap().spread;
        for r in &settled.results {
            let rule = Rule::try_from(r.rule).unwrap();
            let want_odds = odds_under(committer, rule, spread);
            let want = match Outcome::try_from(r.outcome).unwrap() {
                Outcome::Win => {
                    assert_eq!(r.odds, want_odds, "{round_id}: odds of the committing replica");
                    if t != c && want_odds != odds_under(other, rule, spread) {
                        seen.paid_by_committer_elsewhere += 1;
                    }
                    r.stake * (u64::from(want_odds) + 1)
                }
                Outcome::Push => r.stake,
                Outcome::Lose => 0,
                Outcome::Unspecified => panic!("{round_id}: outcome unspecified"),
            };
            assert_eq!(r.returned, want, "{round_id}: returned");
        }
        let row = seen.per_digest.entry(committed.rules_digest.clone()).or_default();
        row.0 += settled.total_staked;
        row.1 += settled.total_returned;
    }
}

async fn two_replicas(dir: &Path) -> Vec<Replica> {
    let a = replica(dir, "a", TABLE_A, &[]).await;
    let b = replica(dir, "b", TABLE_B, &[]).await;
    assert_ne!(a.rules.rules_digest, b.rules.rules_digest);
    vec![a, b]
}

#[tokio::test]
async fn two_differently_configured_replicas_refuse_no_round_and_pay_by_the_committing_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut replicas = two_replicas(dir.path()).await;
    let (mut rng, mut seen) = (Rng(0x5eed_cafe), Seen::default());
    play(&mut replicas, 200, &mut rng, &mut seen).await;
    // The deals are random: play on (bounded) until a seat was paid across replicas at the
    // entry where the paytables differ.
    while seen.paid_by_committer_elsewhere == 0 && seen.rounds < 1_000 {
        play(&mut replicas, 20, &mut rng, &mut seen).await;
    }
    assert!(seen.started_elsewhere > 0 && seen.over_b_limit_on_b > 0, "cross-replica rounds");
    assert!(seen.paid_by_committer_elsewhere > 0, "a win at the differing entry, settled by the other replica");
    assert_eq!(seen.per_digest.len(), 2);
    let trails: Vec<PathBuf> = replicas.iter().map(|r| r.trail.clone()).collect();
    for r in replicas {
        r.process.terminate().await;
    }

    // `reddog report --json` over both trails, no --tables: one row set per digest, whose
    // staked and returned are the Settle answers' sums.
    let (code, out, err) = report(&["--json"], &trails);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let mut per_digest: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for row in v["rows"].as_array().unwrap() {
        let e = per_digest.entry(row["rules_digest"].as_str().unwrap().to_string()).or_default();
        e.0 += row["staked"].as_u64().unwrap();
        e.1 += row["returned"].as_u64().unwrap();
    }
    assert_eq!(per_digest, seen.per_digest, "{out}");
    // --tables is a cross-check: replica a's configuration disagrees with b's rounds.
    let a_config = dir.path().join("a-tables.json");
    let (code, _, err) = report(&["--json", "--tables", a_config.to_str().unwrap()], &trails);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is not the configured table's"), "{err}");
    assert!(seen.per_digest.keys().all(|d| err.contains(d.as_str())), "both digests named: {err}");
}

fn report(args: &[&str], files: &[PathBuf]) -> (Option<i32>, String, String) {
    let out = std::process::Command::new(crate::common::reddog_binary())
        .arg("report")
        .args(args)
        .args(files)
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// The operator withdraws replica b's rules on replica a (`withdrawn_rules`): a's StartRound
/// refuses b's commitments with `RULES_CHANGED`, naming both digests; b's own still deal.
#[tokio::test]
async fn only_withdrawn_rules_are_refused() {
    use tonic_types::StatusExt;
    let dir = tempfile::tempdir().unwrap();
    let mut b = replica(dir.path(), "b", TABLE_B, &[]).await;
    let withdrawn = TABLE_A.replacen('{', &format!(r#"{{"withdrawn_rules":["{}"],"#, b.rules.rules_digest), 1);
    let mut a = replica(dir.path(), "a", &withdrawn, &[]).await;
    let committed = b.client.commit_seed(req::commit_seed().round("w").nonce(1)).await.unwrap();
    let start = req::start_round(committed.commitment_token).round("w").nonce(1).limits(500, 30_000);
    let err = a.client.start_round(start.clone()).await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
    assert_eq!(err.get_error_details().error_info().unwrap().reason, "RULES_CHANGED");
    assert!(err.message().contains(&b.rules.rules_digest) && err.message().contains(&a.rules.rules_digest), "{err:?}");
    b.client.start_round(start).await.expect("b has not withdrawn its own rules");
    // a's own rounds deal on b.
    let own = a.client.commit_seed(req::commit_seed().round("o").nonce(2)).await.unwrap();
    b.client.start_round(req::start_round(own.commitment_token).round("o").nonce(2)).await.unwrap();
    // The table's own digest may not be withdrawn.
    let own_digest = TABLE_A.replacen('{', &format!(r#"{{"withdrawn_rules":["{}"],"#, a.rules.rules_digest), 1);
    let err = reddog::service::Tables::from_json(&own_digest).unwrap_err();
    assert_eq!(err.field().map(|f| f.to_string()).as_deref(), Some("tables.default.withdrawn_rules[0]"), "{err}");
    a.process.terminate().await;
    b.process.terminate().await;
}

/// The `/metrics` page of `p`.
async fn metrics_page(p: &ServerProcess) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut conn = tokio::net::TcpStream::connect(p.metrics).await.unwrap();
    conn.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n").await.unwrap();
    let mut body = String::new();
    conn.read_to_string(&mut body).await.unwrap();
    body
}

/// `serve --certified-rules FILE` starts when every table's digest is certified for it (and
/// says so in `reddog_rules_certified` and its start-up log, with each table's digest and
/// exact RTP), and refuses to start when one paytable entry differs, naming the table and
/// both digests. (`scripts/ci.d/55-certify.sh` runs the same with the file `reddog certify
/// --quick --out` writes.)
#[tokio::test]
async fn certified_rules_pin_the_served_tables() {
    use reddog::service::CertifiedRules;
    use reddog::service::Tables;
    let dir = tempfile::tempdir().unwrap();
    let (config, certified) = (dir.path().join("tables.json"), dir.path().join("certified-rules.json"));
    let tables = Tables::from_json(TABLE_A).unwrap();
    std::fs::write(&config, TABLE_A).unwrap();
    let binary = crate::certify::binary_sha256();
    std::fs::write(&certified, serde_json::to_string(&CertifiedRules::of(&tables, &binary, "test")).unwrap()).unwrap();
    let args = ["--table-config", config.to_str().unwrap(), "--certified-rules", certified.to_str().unwrap()];
    let served = ServerProcess::builder().args(&args).env("REDDOG_KEY_RING", &ring_a()).log(Log::Keep).spawn();
    let digest = tables.get("default").unwrap().digest().to_hex();
    let (rtp_exact, _, _) = reddog::service::rtp(&tables.get("default").unwrap().table);
    served.wait_for_log("table rules", std::time::Duration::from_secs(10));
    let line = served.log_lines().into_iter().find(|l| l.contains("table rules")).unwrap();
    assert!(line.contains(&digest) && line.contains(&rtp_exact), "{line}");
    // The service (and its table metrics) is up once it answers.
    connect(served.addr).await.get_rules(req::get_rules()).await.unwrap();
    let page = metrics_page(&served).await;
    let certified_line = page.lines().find(|l| l.starts_with("reddog_rules_certified{")).unwrap_or_default();
    assert!(certified_line.contains(&digest) && certified_line.ends_with(" 1"), "{page}");
    assert!(page.lines().any(|l| l.starts_with("reddog_table_info{") && l.contains(&digest)), "{page}");
    served.terminate().await;

    let changed = TABLE_A.replace("[5,4,2,1,", "[5,4,1,1,");
    std::fs::write(&config, &changed).unwrap();
    let new_digest = Tables::from_json(&changed).unwrap().get("default").unwrap().digest().to_hex();
    let (status, out) = ServerProcess::builder().args(&args).env("REDDOG_KEY_RING", &ring_a()).refused();
    assert!(!status.success(), "{out}");
    assert!(out.contains("table \"default\"") && out.contains(&digest) && out.contains(&new_digest), "{out}");
}
