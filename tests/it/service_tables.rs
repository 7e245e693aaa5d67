//! Named tables and currencies: one server, several tables; the table is chosen at
//! CommitSeed, bound into the commitment, and every answer names its currency.

use std::time::Duration;

use reddog::service::Tables;
use reddog::service::proto::{self, Limits};
use tonic::Code;

use crate::common::{TestServer, req, ring_a};

const TWO_TABLES: &str = r#"{"tables":{
    "default":{"decks":1,"min_bet":500,"max_bet":30000,"currency":"EUR","minor_unit_exponent":2},
    "jpy-high":{"decks":6,"min_bet":1000,"max_bet":1000000,"currency":"JPY","minor_unit_exponent":0}}}"#;

fn jpy() -> Option<proto::Currency> {
    Some(proto::Currency { code: "JPY".into(), minor_unit_exponent: Some(0) })
}

async fn server(config: &str) -> TestServer {
    TestServer::start_tables(&ring_a(), Duration::from_secs(600), Tables::from_json(config).unwrap()).await
}

#[tokio::test]
async fn list_tables_and_get_rules_per_table_name_limits_and_currency() {
    let srv = server(TWO_TABLES).await;
    let mut c = srv.client().await;
    let list = c.list_tables().await.unwrap();
    assert_eq!(list.default_table_id, "default");
    let ids: Vec<&str> = list.tables.iter().map(|t| t.table_id.as_str()).collect();
    assert_eq!(ids, ["default", "jpy-high"]);
    let eur = c.get_rules(req::get_rules()).await.unwrap();
    assert_eq!(eur.table_id, "default");
    assert_eq!(eur.currency, Some(proto::Currency { code: "EUR".into(), minor_unit_exponent: Some(2) }));
    let yen = c.get_rules(req::get_rules().table("jpy-high")).await.unwrap();
    assert_eq!((yen.decks, yen.currency.clone()), (6, jpy()));
    assert_eq!(yen.table_limits, Some(Limits { min_bet: 1000, max_bet: 1_000_000 }));
    assert_eq!(list.tables[1], yen, "ListTables carries exactly GetRules' answer");
    // Six decks have other exact odds than one.
    assert_ne!(yen.rtp_exact, eur.rtp_exact);
    let missing = c.get_rules(req::get_rules().table("usd")).await.unwrap_err();
    assert_eq!(missing.code(), Code::NotFound);
    assert!(missing.message().starts_with("table_id"), "{}", missing.message());
    srv.stop().await;
}

#[tokio::test]
async fn a_round_at_a_named_table_is_bound_to_it_and_in_its_currency() {
    let srv = server(TWO_TABLES).await;
    let mut c = srv.client().await;
    let commit = c.commit_seed(req::commit_seed().round("yen-1").nonce(9).table("jpy-high")).await.unwrap();
    assert_eq!((commit.table_id.as_str(), commit.decks, commit.currency.clone()), ("jpy-high", 6, jpy()));
    let start = |table_id: &str| {
        req::start_round(commit.commitment_token.clone())
            .client_seed("yen player")
            .nonce(9)
            .round("yen-1")
            // 50 000 yen: above the default table's 30 000 maximum, inside this table's limits.
            .bets(&[50_000, 1_000])
            .limits(1_000, 100_000)
            .table(table_id)
    };
    // The commitment is bound to its table: another table is refused, naming table_id.
    let other = c.start_round(start("default")).await.unwrap_err();
    assert_eq!(other.code(), Code::FailedPrecondition);
    assert!(other.message().starts_with("table_id"), "{}", other.message());
    let started = c.start_round(start("")).await.unwrap();
    assert_eq!((started.table_id.as_str(), started.currency.clone()), ("jpy-high", jpy()));
    let round = started.round.clone().unwrap();
    assert_eq!(round.seats[0].bet, 50_000);
    let mut token = started.round_token;
    if round.awaiting_decisions {
        let decided = c.decide(req::decide(token).raise(0).stand(1)).await.unwrap();
        assert_eq!(
            (decided.table_id.as_str(), decided.currency.clone(), decided.raised_amount),
            ("jpy-high", jpy(), 50_000)
        );
        token = decided.round_token;
    }
    let settled = c.settle(req::settle(token)).await.unwrap();
    assert_eq!((settled.table_id.as_str(), settled.currency), ("jpy-high", jpy()));
    let reveal = settled.reveal.unwrap();
    assert_eq!((reveal.table_id.as_str(), reveal.decks), ("jpy-high", 6));
    assert!(settled.reveal_json.contains(r#""table_id":"jpy-high""#));
    srv.stop().await;
}

#[tokio::test]
async fn without_a_default_table_every_request_names_its_table() {
    let srv = server(r#"{"tables":{"eur":{"currency":"EUR","minor_unit_exponent":2},"usd":{"decks":2,"currency":"USD","minor_unit_exponent":2}}}"#).await;
    let mut c = srv.client().await;
    let list = c.list_tables().await.unwrap();
    assert_eq!(list.default_table_id, "");
    let refused = c.commit_seed(req::commit_seed().round("r")).await.unwrap_err();
    assert_eq!(refused.code(), Code::NotFound);
    let usd = c.commit_seed(req::commit_seed().round("r").table("usd")).await.unwrap();
    assert_eq!((usd.decks, usd.currency.unwrap().code.as_str()), (2, "USD"));
    srv.stop().await;
}
