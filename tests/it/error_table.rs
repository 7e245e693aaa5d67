//! The error contract cannot drift. The proto's `enum ErrorReason` — read from the descriptor
//! set build.rs compiles, not from source text — holds every reason the engine sends: each
//! value is produced by an engine error (or its comment says it is reserved), and every reason
//! an answer carries is a value of it (the mapping returns the generated enum, so nothing else
//! can be sent). docs/INTEGRATION.md's error table lists exactly the enum's values, and the
//! `PreconditionFailure` types and `ErrorInfo` metadata keys those answers carry are documented.

use std::collections::BTreeSet;
use std::time::Duration;

use prost::Message;
use prost_types::FileDescriptorSet;
use reddog::EngineError;
use reddog::fairness::{BindingError, BoundField};
use reddog::game::{BetLimits, GameError, HandClass, LimitsError, Money, TableError};
use reddog::proto::ErrorReason;
use reddog::testing::{AuditRefused, AuditSinkCause, overloaded, queued_too_long, timed_out, too_large};
use tonic::Status;
use tonic_types::StatusExt;

/// One value of `ErrorReason` as the descriptor states it.
struct Value {
    name: String,
    number: i32,
    comment: String,
}

/// The values of `reddog.v1.ErrorReason`, with their leading comments (buf's ignore
/// directives left out).
fn enum_values() -> Vec<Value> {
    let set = FileDescriptorSet::decode(reddog::proto::FILE_DESCRIPTOR_SET).unwrap();
    let file = set.file.iter().find(|f| f.name() == "reddog/v1/reddog.proto").expect("reddog.proto");
    let (index, reasons) =
        file.enum_type.iter().enumerate().find(|(_, e)| e.name() == "ErrorReason").expect("enum ErrorReason");
    let info = file.source_code_info.as_ref().expect("the descriptor set keeps the comments");
    let comment = |value: usize| {
        // FileDescriptorProto.enum_type = 5, EnumDescriptorProto.value = 2.
        let path = [5, index as i32, 2, value as i32];
        let text = info.location.iter().find(|l| l.path == path).map(|l| l.leading_comments()).unwrap_or_default();
        text.lines().map(str::trim).filter(|l| !l.starts_with("buf:lint:")).collect::<Vec<_>>().join(" ")
    };
    reasons
        .value
        .iter()
        .enumerate()
        .map(|(j, v)| Value { name: v.name().to_string(), number: v.number(), comment: comment(j) })
        .collect()
}

/// An answer the engine gives with `reason`, made by the code that gives it; `None` only for
/// the zero value. Exhaustive: a value added to the proto does not compile here until it has
/// its producer (or is reserved: then `None` and a comment starting "Reserved").
fn produced(reason: ErrorReason) -> Option<Status> {
    use ErrorReason as R;
    let status = |e: EngineError| Some(Status::from(e));
    let binding = |b: BindingError| status(EngineError::Binding(b));
    let digests = || ("ab".repeat(32), "cd".repeat(32));
    match reason {
        R::Unspecified => None,
        R::MissingField => status(EngineError::Missing { field: "round_id", what: "required" }),
        R::InvalidRoundId => {
            status(EngineError::InvalidRoundId { field: "round_id", reason: "at most 128 bytes".into() })
        }
        R::InvalidTableId => status(EngineError::InvalidTableId { reason: "at most 64 bytes".into() }),
        R::InvalidClientSeed => status(EngineError::InvalidClientSeed { reason: "at most 1024 bytes".into() }),
        R::InvalidAction => status(EngineError::InvalidAction { index: 0 }),
        R::DuplicateSeat => status(EngineError::DuplicateSeat { index: 1 }),
        R::InvalidSandboxCards => {
            status(EngineError::InvalidSandboxCards { field: "sandbox_cards".into(), reason: "1 card".into() })
        }
        R::InvalidToken => status(EngineError::InvalidToken),
        R::MalformedRequest => {
            status(EngineError::MalformedRequest { field: "request".into(), reason: "no request message".into() })
        }
        R::InvalidValue => status(EngineError::invalid("tables.default.currency", "not ISO 4217")),
        R::SeatCount => status(EngineError::Game(GameError::SeatCount { seats: 8 })),
        R::BetOutsideLimits => status(EngineError::Game(GameError::BetOutsideLimits {
            seat: 0,
            bet: Money(1),
            limits: BetLimits::STANDARD,
        })),
        R::InvalidPlayerLimits => status(EngineError::PlayerLimits(LimitsError::MinBetOutOfRange { min_bet: 0 })),
        R::UnknownSeat => status(EngineError::UnknownSeat { index: 0, seat: 3, seats: 2 }),
        R::ValueOutOfRange => status(EngineError::out_of_range("tables.default.decks", 9u64, 1, 8)),
        R::UnknownTable => status(EngineError::UnknownTable { table_id: "vip".into() }),
        R::CommitmentMismatch => {
            binding(BindingError::Mismatch { field: BoundField::Nonce, committed: "1".into(), requested: "2".into() })
        }
        R::TableChanged => status(EngineError::SandboxChanged { committed_sandbox: false, table_id: "lab".into() }),
        R::RulesChanged => {
            let (committed, table) = digests();
            binding(BindingError::RulesWithdrawn { committed, table })
        }
        // Reserved: a commitment carries its currency since tokens carry their table's rules.
        R::CurrencyChanged => None,
        R::LimitsDoNotOverlap => status(EngineError::Game(GameError::Table(TableError::LimitsDoNotOverlap {
            player: BetLimits::new(Money(40_000), Money(50_000)).unwrap(),
            table: BetLimits::STANDARD,
        }))),
        R::NoDecisionOnThisHand => {
            status(EngineError::Game(GameError::NoDecisionOnThisHand { seat: 0, class: HandClass::Pair }))
        }
        R::DecisionsClosed => status(EngineError::Game(GameError::DecisionsClosed { seat: 0 })),
        R::SeatAlreadyDecided => status(EngineError::Game(GameError::SeatAlreadyDecided { seat: 0 })),
        R::RoundNotComplete => status(EngineError::Game(GameError::RoundNotComplete { undecided: 1 })),
        R::NotASandboxTable => status(EngineError::NotASandboxTable { table_id: "default".into() }),
        R::TableTooLarge => status(EngineError::Game(GameError::Table(TableError::TooLarge {
            max_bet: Money(u64::MAX),
            largest: Money(1),
            max_odds: 11,
        }))),
        R::RequestTooLarge => Some(too_large(65_536)),
        R::Overloaded => Some(overloaded()),
        R::RequestTimeout => Some(timed_out(Duration::from_secs(30))),
        R::AuditUnavailable => Some(Status::from(AuditRefused::Backlog)),
        R::TokenTooOld => {
            status(EngineError::TokenTooOld { field: "round_token", age: "sealed in format version 1".into() })
        }
    }
}

/// Every answer with details the engine gives in the producers above, plus the other shapes of
/// the same reasons (a queued call's OVERLOADED, each audit refusal).
fn every_answer() -> Vec<Status> {
    let values = enum_values();
    let mut answers: Vec<Status> =
        values.iter().filter_map(|v| produced(ErrorReason::from_str_name(&v.name).unwrap())).collect();
    answers.push(queued_too_long(Duration::from_millis(250)));
    answers.extend(
        [
            AuditRefused::Backlog,
            AuditRefused::OutputFailed(AuditSinkCause::NoSpace),
            AuditRefused::Stalled,
            AuditRefused::Stopped,
            AuditRefused::NotStarted,
        ]
        .map(Status::from),
    );
    answers
}

#[test]
fn every_error_reason_is_produced_by_the_engine_or_reserved() {
    let values = enum_values();
    assert_eq!(values[0].number, 0, "the zero value comes first");
    assert_eq!(values[0].name, "ERROR_REASON_UNSPECIFIED");
    let mut produced_count = 0;
    for v in &values[1..] {
        let reason = ErrorReason::from_str_name(&v.name).expect("the generated enum has every value");
        assert_eq!(reason as i32, v.number, "{}", v.name);
        assert!(!v.comment.is_empty(), "{} has no comment in the proto", v.name);
        match produced(reason) {
            Some(status) => {
                let info = status.get_error_details().error_info().cloned().expect("ErrorInfo");
                assert_eq!((info.reason.as_str(), info.domain.as_str()), (v.name.as_str(), "reddog.v1"), "{status:?}");
                assert!(!v.comment.starts_with("Reserved"), "{} is sent, not reserved", v.name);
                produced_count += 1;
            }
            None => assert!(v.comment.starts_with("Reserved"), "{} is produced by nothing", v.name),
        }
    }
    println!("ErrorReason: {} values, {produced_count} produced by the engine", values.len() - 1);
}

#[test]
fn integrations_error_table_lists_exactly_the_enums_reasons() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/INTEGRATION.md")).unwrap();
    let section = doc.split("## Errors: what the platform does").nth(1).expect("the Errors section");
    let section = section.split("\n## ").next().unwrap();
    let backticked =
        |text: &str| -> BTreeSet<String> { text.split('`').skip(1).step_by(2).map(str::to_owned).collect() };
    // The table's first column: the reasons it documents (a row may name several).
    let table: BTreeSet<String> = section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .flat_map(|l| backticked(l.split('|').nth(1).unwrap()))
        .collect();
    let reasons: BTreeSet<String> = enum_values().into_iter().skip(1).map(|v| v.name).collect();
    let undocumented: Vec<_> = reasons.difference(&table).collect();
    assert!(undocumented.is_empty(), "in ErrorReason, not in INTEGRATION.md's error table: {undocumented:?}");
    let stale: Vec<_> = table.difference(&reasons).collect();
    assert!(stale.is_empty(), "in INTEGRATION.md's error table, not in ErrorReason: {stale:?}");

    // What the answers carry besides the reason is documented in the section too.
    let named = backticked(section);
    let mut kinds = BTreeSet::new();
    let mut keys = BTreeSet::new();
    for status in every_answer() {
        let details = status.get_error_details();
        keys.extend(details.error_info().unwrap().metadata.keys().cloned());
        if let Some(p) = details.precondition_failure() {
            kinds.extend(p.violations.iter().map(|v| v.r#type.clone()));
        }
    }
    assert!(["ROUND_STATE", "LIMITS", "COMMITMENT_BINDING", "SANDBOX"].iter().all(|k| kinds.contains(*k)), "{kinds:?}");
    let missing: Vec<_> = kinds.iter().chain(&keys).filter(|k| !named.contains(*k)).collect();
    assert!(missing.is_empty(), "sent, not in INTEGRATION.md's Errors section: {missing:?}");
    println!("INTEGRATION.md: {} reasons, {} violation types, {} metadata keys", table.len(), kinds.len(), keys.len());
}

#[test]
fn the_definite_refusals_are_the_four_codes_integration_names() {
    // INTEGRATION.md's rule: these codes with the engine's ErrorInfo are definite refusals;
    // a reason the engine sends with another code is an unknown outcome (retry, or sweep).
    let definite =
        [tonic::Code::InvalidArgument, tonic::Code::OutOfRange, tonic::Code::NotFound, tonic::Code::FailedPrecondition];
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/INTEGRATION.md")).unwrap();
    let start = doc.find("**Definite refusals**").expect("the rule's paragraph");
    let rule = doc[start..].split("\n\n").next().unwrap();
    for code in ["INVALID_ARGUMENT", "OUT_OF_RANGE", "NOT_FOUND", "FAILED_PRECONDITION"] {
        assert!(rule.contains(&format!("`{code}`")), "{rule}");
    }
    let mut not_definite = BTreeSet::new();
    for status in every_answer() {
        let reason = status.get_error_details().error_info().unwrap().reason.clone();
        if !definite.contains(&status.code()) {
            not_definite.insert(reason);
        }
    }
    assert_eq!(
        not_definite,
        ["AUDIT_UNAVAILABLE", "OVERLOADED", "REQUEST_TIMEOUT", "REQUEST_TOO_LARGE"].map(String::from).into(),
        "the reasons sent with a code that is not a definite refusal"
    );
}
