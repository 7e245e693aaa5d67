//! `reddog verify`, `reddog commit` and `reddog rng-dump`: the provably fair deal from the
//! command line (`docs/FAIRNESS.md`).
//!
//! - `verify` checks a settled round's reveal (JSON, from a file or stdin) by the strict
//!   grammar, re-derives its cards, recomputes every seat's money and the transcript
//!   (versions 2 and 3; a version-1 reveal has cards only), compares it with what the player
//!   was shown (`--expect-…`), prints the verdict and exits 0 (verified), 1 (not verified)
//!   or 2 (malformed or unreadable); with `--public-key` and `--signature` it also checks the
//!   engine's signed receipt over the reveal's exact bytes;
//! - `commit` prints a fresh server seed and its commitment — for manual experiments only:
//!   it prints the secret seed;
//! - `rng-dump` writes the raw generator stream of a deal to stdout, for dieharder.

use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use reddog::fairness::receipt;
use reddog::fairness::{
    ALGORITHM, AnyReveal, DealInputs, DealStream, Expectations, FairShoe, KeyTrust, RevealV1, ServerSeed,
    SignedEvidence, Verification, parse_trusted_keys, text_amounts, text_decisions, text_int,
};
use reddog::game::{Card, Decks, HandClass, MAX_DECKS};
use zeroize::Zeroize;

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The reveal as JSON; `-` or nothing reads stdin.
    pub file: Option<PathBuf>,
    /// The commitment the player was shown before the round (64 hex).
    #[arg(long, value_name = "HEX")]
    pub expect_commitment: Option<String>,
    /// The player's client seed.
    #[arg(long, value_name = "TEXT")]
    pub expect_client_seed: Option<String>,
    /// The nonce the player was shown: decimal digits, no sign, no leading zero.
    #[arg(long, value_name = "N")]
    pub expect_nonce: Option<String>,
    /// The round id the player was shown.
    #[arg(long, value_name = "ID")]
    pub expect_round_id: Option<String>,
    /// The table id the player was shown.
    #[arg(long, value_name = "ID")]
    pub expect_table_id: Option<String>,
    /// The deck count the player was shown: decimal digits, no sign, no leading zero.
    #[arg(long, value_name = "N")]
    pub expect_decks: Option<String>,
    /// The last transcript hash the player was shown (64 hex): a reveal with another
    /// transcript is not the round the player played.
    #[arg(long, value_name = "HEX")]
    pub expect_transcript: Option<String>,
    /// The rules digest shown with the commitment (64 hex).
    #[arg(long, value_name = "HEX")]
    pub expect_rules_digest: Option<String>,
    /// Each seat's bet, seat 0 first, separated by commas: `500,1000`.
    #[arg(long, value_name = "N,N,...")]
    pub expect_bets: Option<String>,
    /// Each seat's amount credited, seat 0 first, separated by commas: `0,2000`.
    #[arg(long, value_name = "N,N,...")]
    pub expect_returned: Option<String>,
    /// Each Decide call's decisions as SEAT:ACTION (raise or stand) separated by commas, the
    /// calls separated by semicolons: `0:raise,1:stand;2:stand` (empty: no Decide call).
    #[arg(long, value_name = "SEAT:ACTION,...;...")]
    pub expect_decisions: Option<String>,
    /// The player's record as a JSON object with any of the keys commitment, client_seed,
    /// nonce, round_id, table_id, decks, transcript, rules_digest (strings and integers),
    /// bets, returned (arrays of integers) and decisions (as in a reveal); flags given as well
    /// must agree with it.
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
    /// The engine's public signing key (64 hex, from GetRules `signing_keys` or `reddog
    /// keygen --public`); checks `--signature` and every `--receipt` (FAIRNESS.md 4.7). Not
    /// verified unless it is among `--trusted-keys` (or `--allow-untrusted`).
    #[arg(long, value_name = "HEX")]
    pub public_key: Option<String>,
    /// Settle's `signature` (128 hex) over the reveal, checked with `--public-key`: a reveal
    /// changed in any byte fails it. The file must hold the exact `reveal_json` bytes (one
    /// trailing line feed is ignored).
    #[arg(long, value_name = "HEX", requires = "public_key")]
    pub signature: Option<String>,
    /// Settle's `signing_key_id`: the key id inside the signed message (else the id a signed
    /// `--receipt` or the `--trusted-keys` entry names).
    #[arg(long, value_name = "ID", requires = "public_key")]
    pub key_id: Option<String>,
    /// A receipt the player kept (`receipt_json` of CommitSeed, StartRound or Decide),
    /// checked with `--public-key`; the reveal must descend from every one given. Repeatable.
    #[arg(long, value_name = "FILE", requires = "public_key")]
    pub receipt: Vec<PathBuf>,
    /// The signing keys you trust, got outside the platform (e.g. a certification report):
    /// a JSON array of `{key_id, algorithm, public_key_hex}` (or `{"signing_keys": [...]}`,
    /// as GetRules lists them). A `--public-key` not among them is not verified.
    #[arg(long, value_name = "FILE", requires = "public_key")]
    pub trusted_keys: Option<PathBuf>,
    /// Accept a `--public-key` that is not among `--trusted-keys` (or without them): the
    /// signatures then prove only that the key the platform named signed.
    #[arg(long, requires = "public_key")]
    pub allow_untrusted: bool,
}

/// The `--receipt` files, each parsed as a receipt (of CommitSeed or of a step).
pub(crate) fn read_step_receipts(paths: &[PathBuf]) -> anyhow::Result<Vec<StepFile>> {
    paths
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            let r = receipt::PlayerReceipt::parse(&text)
                .map_err(|e| anyhow::anyhow!("--receipt {}: {e}", path.display()))?;
            Ok((path.clone(), r))
        })
        .collect()
}

/// A `--receipt` file: its path and the receipt (of CommitSeed or of a step).
pub(crate) type StepFile = (PathBuf, receipt::PlayerReceipt);

/// Each receipt checked against the reveal: its name, whether the key signed it and whether
/// it holds (the reveal descends from it, it names no card before it was shown, it is not of
/// a sandbox round); `chain`: the reveal's recomputed transcripts.
pub(crate) fn check_steps(
    public_key: &[u8; 32],
    steps: &[StepFile],
    reveal: &AnyReveal,
    chain: &[reddog::fairness::Transcript],
) -> Vec<(String, bool, bool)> {
    steps
        .iter()
        .map(|(path, r)| match reveal {
            AnyReveal::V1(_) => (format!("receipt of {}", path.display()), false, false),
            AnyReveal::V2(v) => {
                let c = r.check(public_key, v, chain);
                (format!("{} of {}", c.name, path.display()), c.signed, c.ok())
            }
        })
        .collect()
}

/// `--public-key`, `--signature` (hex digits of either case, 64 and 128 of them), the
/// `--receipt` files and the trusted keys, or none.
fn receipt_args(args: &VerifyArgs) -> anyhow::Result<Option<SignedEvidence>> {
    let Some(key) = &args.public_key else { return Ok(None) };
    let mut public_key = [0u8; 32];
    hex::decode_to_slice(key, &mut public_key)
        .map_err(|_| anyhow::anyhow!("--public-key: an Ed25519 public key is 64 hexadecimal digits"))?;
    let settle_signature = match &args.signature {
        None => None,
        Some(sig) => {
            let mut bytes = [0u8; 64];
            hex::decode_to_slice(sig, &mut bytes)
                .map_err(|_| anyhow::anyhow!("--signature: an Ed25519 signature is 128 hexadecimal digits"))?;
            Some(bytes)
        }
    };
    let receipts = read_step_receipts(&args.receipt)?
        .into_iter()
        .map(|(path, r)| (path.display().to_string(), r))
        .collect::<Vec<_>>();
    let trusted = match &args.trusted_keys {
        None => None,
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            Some(parse_trusted_keys(&text).map_err(|e| anyhow::anyhow!("--trusted-keys {}: {e}", path.display()))?)
        }
    };
    if settle_signature.is_none() && receipts.is_empty() {
        bail!("--public-key: give --signature or --receipt to check with it");
    }
    Ok(Some(SignedEvidence {
        public_key,
        key_id: args.key_id.clone(),
        settle_signature,
        receipts,
        trusted,
        allow_untrusted: args.allow_untrusted,
    }))
}

/// Exit status of `reddog verify`: the reveal verified.
const VERIFIED: u8 = 0;
/// Exit status: well-formed, but a check failed.
const NOT_VERIFIED: u8 = 1;
/// Exit status: malformed reveal or expectations, or unreadable input.
const MALFORMED: u8 = 2;

#[derive(Debug, clap::Args)]
pub struct CommitArgs {
    /// Use this server seed (64 hex digits) instead of a fresh one from the OS.
    #[arg(long, value_name = "HEX")]
    pub server_seed: Option<String>,
    /// Also deal a round and print its reveal as JSON, ready for `reddog verify`.
    #[arg(long)]
    pub reveal: bool,
    /// With `--reveal`: the client seed.
    #[arg(long, default_value = "")]
    pub client_seed: String,
    /// With `--reveal`: the nonce.
    #[arg(long, default_value_t = 0)]
    pub nonce: u64,
    /// With `--reveal`: decks in the shoe, 1..=8.
    #[arg(long, default_value_t = 1)]
    pub decks: u32,
    /// With `--reveal`: how many cards the round dealt. A round deals 2 cards on a
    /// consecutive hand and 3 otherwise; that is the default, and any other count is refused
    /// (a reveal with another count is malformed).
    #[arg(long)]
    pub cards: Option<usize>,
}

/// Which stream `rng-dump` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StreamKind {
    /// The ChaCha20 keystream of one deal (the inputs below), from its first byte on: every
    /// word the deal's rejection sampler reads comes from here, in this order.
    Keystream,
    /// For nonce = --nonce, --nonce + 1, …: the first 64 bytes (one ChaCha20 block, 16 words)
    /// of each round's keystream, concatenated. Tests the key derivation across rounds.
    Rounds,
}

#[derive(Debug, clap::Args)]
pub struct RngDumpArgs {
    /// Stop after this many bytes; without it, write until stdout is closed.
    #[arg(long)]
    pub bytes: Option<u64>,
    /// The stream to write.
    #[arg(long, value_enum, default_value_t = StreamKind::Keystream)]
    pub stream: StreamKind,
    /// Server seed (64 hex digits). Without it a fresh one is drawn and printed to stderr so
    /// the run can be repeated.
    #[arg(long, value_name = "HEX")]
    pub server_seed: Option<String>,
    /// Client seed (UTF-8).
    #[arg(long, default_value = "")]
    pub client_seed: String,
    /// Nonce (the first nonce for `--stream rounds`).
    #[arg(long, default_value_t = 0)]
    pub nonce: u64,
    /// Decks, 1..=8.
    #[arg(long, default_value_t = 1)]
    pub decks: u32,
}

fn read_input(file: Option<&std::path::Path>) -> anyhow::Result<String> {
    match file {
        None => read_stdin(),
        Some(p) if p.as_os_str() == "-" => read_stdin(),
        Some(p) => std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display())),
    }
}

/// The expectations from the flags and the `--expect` file; a flag and the file must agree.
fn expectations(args: &VerifyArgs) -> anyhow::Result<Expectations> {
    let mut e = match &args.expect {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            Expectations::parse(&text).with_context(|| format!("{} is not an expectations file", path.display()))?
        }
        None => Expectations::default(),
    };
    fn merge<T: PartialEq + std::fmt::Debug + Clone>(
        slot: &mut Option<T>,
        flag: &Option<T>,
        name: &str,
    ) -> anyhow::Result<()> {
        if let Some(v) = flag {
            if slot.as_ref().is_some_and(|old| old != v) {
                bail!("--expect-{name} disagrees with the --expect file");
            }
            *slot = Some(v.clone());
        }
        Ok(())
    }
    // Hex compares without regard to case, in the file as in the options.
    let lower = |v: &Option<String>| v.as_ref().map(|t| t.to_ascii_lowercase());
    for slot in [&mut e.commitment, &mut e.transcript, &mut e.rules_digest] {
        *slot = lower(slot);
    }
    merge(&mut e.commitment, &lower(&args.expect_commitment), "commitment")?;
    merge(&mut e.client_seed, &args.expect_client_seed, "client-seed")?;
    let parsed =
        |v: &Option<String>, name: &str, parse: &dyn Fn(&str, &str) -> Result<_, reddog::fairness::FairnessError>| {
            v.as_deref().map(|t| parse(t, &format!("--expect-{name}"))).transpose()
        };
    let nonce = parsed(&args.expect_nonce, "nonce", &|t, f| text_int(t, f, 0, u64::MAX))?;
    let decks = parsed(&args.expect_decks, "decks", &|t, f| text_int(t, f, 1, u64::from(MAX_DECKS)))?.map(|d| d as u8);
    let bets = args.expect_bets.as_deref().map(|t| text_amounts(t, "--expect-bets")).transpose()?;
    let returned = args.expect_returned.as_deref().map(|t| text_amounts(t, "--expect-returned")).transpose()?;
    let decisions = args.expect_decisions.as_deref().map(|t| text_decisions(t, "--expect-decisions")).transpose()?;
    // Seats within a call in any order, in the file as in the option.
    let by_seat = |d: Option<Vec<Vec<reddog::fairness::RevealDecision>>>| {
        d.map(|mut calls| {
            calls.iter_mut().for_each(|c| c.sort_by_key(|x| x.seat));
            calls
        })
    };
    let decisions = by_seat(decisions);
    e.decisions = by_seat(e.decisions.take());
    merge(&mut e.nonce, &nonce, "nonce")?;
    merge(&mut e.round_id, &args.expect_round_id, "round-id")?;
    merge(&mut e.table_id, &args.expect_table_id, "table-id")?;
    merge(&mut e.decks, &decks, "decks")?;
    merge(&mut e.transcript, &lower(&args.expect_transcript), "transcript")?;
    merge(&mut e.rules_digest, &lower(&args.expect_rules_digest), "rules-digest")?;
    merge(&mut e.bets, &bets, "bets")?;
    merge(&mut e.returned, &returned, "returned")?;
    merge(&mut e.decisions, &decisions, "decisions")?;
    e.validate().context("an expectation that could never match")?;
    Ok(e)
}

pub fn verify(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let prepared =
        read_input(args.file.as_deref()).and_then(|text| Ok((text, expectations(&args)?, receipt_args(&args)?)));
    let (text, expect, signed) = match prepared {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e:#}");
            return Ok(ExitCode::from(MALFORMED));
        }
    };
    let v = match Verification::check(&text, &expect, signed.as_ref()) {
        Ok(v) => v,
        Err(e) => {
            println!("verdict     MALFORMED");
            eprintln!("error: the reveal is malformed: {e}");
            return Ok(ExitCode::from(MALFORMED));
        }
    };
    render(&v)?;
    let failures = v.failures();
    let mut out = io::stdout().lock();
    for note in v.notes() {
        writeln!(out, "note        {note}")?;
    }
    if failures.is_empty() {
        writeln!(out, "verdict     VERIFIED")?;
        return Ok(ExitCode::from(VERIFIED));
    }
    writeln!(out, "verdict     NOT VERIFIED")?;
    out.flush()?;
    eprintln!("not verified: {}", failures.join("; "));
    Ok(ExitCode::from(NOT_VERIFIED))
}

/// Every check of a [`Verification`], one line each (the verdict is the caller's).
fn render(v: &Verification) -> anyhow::Result<()> {
    let (verdict, reveal) = (&v.verdict, &v.reveal);
    let mark = |ok: bool| if ok { "OK" } else { "MISMATCH" };
    let list = |cards: &[Card]| cards.iter().map(Card::to_string).collect::<Vec<_>>().join(" ");
    let mut out = io::stdout().lock();
    let (algorithm, client_seed, nonce, decks, commitment, cards) = match reveal {
        AnyReveal::V1(r) => (&r.algorithm, &r.client_seed, r.nonce, r.decks, &r.commitment, &r.cards),
        AnyReveal::V2(r) => (&r.algorithm, &r.client_seed, r.nonce, r.decks, &r.commitment, &r.cards),
    };
    match reveal {
        AnyReveal::V1(r) => {
            writeln!(out, "format      reddog-reveal-v1 (cards only: no money, no transcript)")?;
            if let Some(id) = &r.round_id {
                writeln!(out, "round_id    {id}")?;
            }
        }
        AnyReveal::V2(r) => {
            writeln!(out, "format      {}", r.format)?;
            writeln!(out, "table_id    {}", r.table_id)?;
            writeln!(out, "round_id    {}", r.round_id)?;
        }
    }
    writeln!(out, "algorithm   {algorithm}")?;
    writeln!(out, "client_seed {client_seed:?}")?;
    writeln!(out, "nonce       {nonce}")?;
    writeln!(out, "decks       {decks}")?;
    writeln!(out, "commitment  {commitment}  {}", mark(verdict.commitment_ok))?;
    writeln!(out, "cards       {}", list(&verdict.recomputed))?;
    writeln!(out, "revealed    {}  {}", cards.join(" "), mark(verdict.cards_ok))?;
    if let [a, b, ..] = verdict.recomputed[..] {
        let hand = match HandClass::of(a, b) {
            HandClass::NonConsecutive(spread) => format!("non_consecutive, spread {spread}"),
            class => class.name().to_string(),
        };
        writeln!(out, "hand        {hand}")?;
    }
    if let AnyReveal::V2(r) = reveal {
        for (k, step) in r.decisions.iter().enumerate() {
            let s: Vec<String> = step.iter().map(|d| format!("seat {} {}", d.seat, d.action)).collect();
            writeln!(out, "decide {:<4} {}", k + 1, s.join(", "))?;
        }
        for (i, seat) in r.seats.iter().enumerate() {
            let ok = verdict.expected_seats.get(i) == Some(seat);
            writeln!(
                out,
                "seat {i}      bet {} raised {} stake {} returned {}  {}",
                seat.bet,
                seat.raised,
                seat.stake,
                seat.returned,
                mark(ok)
            )?;
            if let (false, Some(e)) = (ok, verdict.expected_seats.get(i)) {
                writeln!(
                    out,
                    "            the rules give: raised {} stake {} returned {}",
                    e.raised, e.stake, e.returned
                )?;
            }
        }
        if let (Some(l), Some(c), Some(d)) = (&r.limits, &r.currency, &r.rules_digest) {
            writeln!(out, "limits      {} to {} {} (exponent {})", l.min_bet, l.max_bet, c.code, c.exponent)?;
            writeln!(out, "rules       {d}  {}", mark(verdict.rules_ok == Some(true)))?;
        }
        writeln!(out, "transcript  {}  {}", r.transcript, mark(verdict.transcript_ok == Some(true)))?;
    }
    if let Some(s) = &v.signed {
        if let Some(settle) = s.settle {
            let version = settle.map_or(String::new(), |n| format!(" (settle receipt v{n})"));
            writeln!(out, "signature   ed25519 by {}{version}  {}", hex::encode(s.public_key), mark(settle.is_some()))?;
        }
        let whose = match (&s.trust, s.allow_untrusted) {
            (KeyTrust::Trusted { key_id }, _) => format!("a trusted key ({key_id:?} in --trusted-keys)"),
            (KeyTrust::Untrusted { listed: true }, false) => "a key NOT among your --trusted-keys".to_string(),
            (KeyTrust::Untrusted { listed: false }, false) => {
                "a key the platform named (no --trusted-keys)".to_string()
            }
            (KeyTrust::Untrusted { .. }, true) => "a key the platform named (untrusted, --allow-untrusted)".to_string(),
        };
        let id = s.key_id.as_deref().map_or(String::new(), |id| format!(", key id {id:?}"));
        writeln!(out, "key         {whose}{id}, fingerprint SHA-256 {}", hex::encode(s.fingerprint))?;
        for (name, r) in &s.receipts {
            let why = if !r.signed {
                "MISMATCH (not signed by this key)".to_string()
            } else if let Some(card) = r.hidden_card {
                format!("MISMATCH (names {card} before the table showed it: a leak)")
            } else if r.sandbox {
                "MISMATCH (a sandbox round)".to_string()
            } else if !r.descends {
                "MISMATCH (the reveal does not descend from this receipt)".to_string()
            } else {
                "OK".to_string()
            };
            writeln!(out, "receipt     {name} (v{})  {why}", r.version)?;
        }
    }
    for m in &v.mismatches {
        let revealed = m.revealed.as_deref().unwrap_or("(not in the reveal)");
        writeln!(out, "expected    {} {:?}, the reveal has {:?}  MISMATCH", m.field, m.expected, revealed)?;
    }
    Ok(())
}

pub fn commit(args: CommitArgs) -> anyhow::Result<()> {
    let seed = seed_arg(args.server_seed.as_deref())?;
    let mut out = io::stdout().lock();
    if args.reveal {
        let decks = Decks::new(args.decks)?;
        let inputs =
            DealInputs { server_seed: &seed, client_seed: args.client_seed.as_bytes(), nonce: args.nonce, decks };
        let mut cards = FairShoe::deal(&inputs, 3);
        if HandClass::of(cards[0], cards[1]) == HandClass::Consecutive {
            cards.truncate(2);
        }
        if let Some(n) = args.cards.filter(|&n| n != cards.len()) {
            bail!("--cards: this deal's hand deals {} cards, not {n}", cards.len());
        }
        let reveal = RevealV1::new(&inputs, &args.client_seed, &cards, None);
        writeln!(out, "{}", serde_json::to_string_pretty(&reveal)?)?;
    } else {
        eprintln!("for manual experiments only: the server seed is a secret until its round is settled");
        writeln!(out, "server_seed {}", seed.reveal_hex())?;
        writeln!(out, "commitment  {}", seed.commitment())?;
        writeln!(out, "algorithm   {ALGORITHM}")?;
    }
    Ok(())
}

pub fn rng_dump(args: RngDumpArgs) -> anyhow::Result<()> {
    let seed = match args.server_seed.as_deref() {
        Some(hex) => seed_arg(Some(hex))?,
        None => {
            let seed = ServerSeed::generate()?;
            eprintln!("rng-dump: fresh server seed {} (experiment only)", seed.reveal_hex());
            seed
        }
    };
    let decks = Decks::new(args.decks)?;
    let client_seed = args.client_seed.as_bytes();
    let mut nonce = args.nonce;
    let mut stream = DealStream::new(&DealInputs { server_seed: &seed, client_seed, nonce, decks });
    let mut remaining = args.bytes.unwrap_or(u64::MAX);
    let mut buf = vec![0u8; 1 << 16];
    let mut out = io::stdout().lock();
    while remaining > 0 {
        match args.stream {
            StreamKind::Keystream => stream.fill_bytes(&mut buf),
            StreamKind::Rounds => {
                for block in buf.chunks_mut(64) {
                    DealStream::new(&DealInputs { server_seed: &seed, client_seed, nonce, decks }).fill_bytes(block);
                    nonce = nonce.wrapping_add(1);
                }
            }
        }
        let n = usize::try_from(remaining.min(buf.len() as u64)).unwrap_or(buf.len());
        match out.write_all(&buf[..n]) {
            Ok(()) => remaining -= n as u64,
            // dieharder closes the pipe when it has read enough: that is the normal end.
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(e).context("writing to stdout"),
        }
    }
    match out.flush() {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(e).context("writing to stdout"),
        _ => Ok(()),
    }
}

fn read_stdin() -> anyhow::Result<String> {
    let mut text = String::new();
    io::stdin().read_to_string(&mut text).context("reading the reveal from stdin")?;
    Ok(text)
}

/// The seed given as hex, or a fresh one.
fn seed_arg(hex_seed: Option<&str>) -> anyhow::Result<ServerSeed> {
    match hex_seed {
        None => Ok(ServerSeed::generate()?),
        Some(text) => {
            let mut bytes = [0u8; 32];
            hex::decode_to_slice(text.trim(), &mut bytes)
                .map_err(|_| anyhow::anyhow!("--server-seed: must be 64 hexadecimal characters"))?;
            let seed = ServerSeed::from_bytes(bytes);
            bytes.zeroize();
            Ok(seed)
        }
    }
}
