//! `reddog verify`, `reddog commit` and `reddog rng-dump`: the provably fair deal from the
//! command line (`docs/FAIRNESS.md`).
//!
//! - `verify` checks a settled round's reveal (JSON, from a file or stdin), prints the cards
//!   and the verdict, and fails (exit status 1) when the reveal does not verify;
//! - `commit` prints a fresh server seed and its commitment — for manual experiments only:
//!   it prints the secret seed;
//! - `rng-dump` writes the raw generator stream of a deal to stdout, for dieharder.

use std::io::{self, Read, Write};
use std::path::PathBuf;

use anyhow::{Context, bail};
use reddog::fairness::{self, ALGORITHM, DealInputs, DealStream, FairShoe, Reveal, ServerSeed};
use reddog::game::{Card, Decks, HandClass};
use zeroize::Zeroize;

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The reveal as JSON; `-` or nothing reads stdin.
    pub file: Option<PathBuf>,
}

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
    /// With `--reveal`: how many cards the round dealt.
    #[arg(long, default_value_t = 3)]
    pub cards: usize,
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

pub fn verify(args: VerifyArgs) -> anyhow::Result<()> {
    let text = match args.file.as_deref() {
        None => read_stdin()?,
        Some(p) if p.as_os_str() == "-" => read_stdin()?,
        Some(p) => std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?,
    };
    let reveal: Reveal = serde_json::from_str(&text).context("the reveal is not valid JSON of the expected shape")?;
    let verdict = fairness::verify(&reveal).context("the reveal is malformed")?;

    let mark = |ok: bool| if ok { "OK" } else { "MISMATCH" };
    let list = |cards: &[Card]| cards.iter().map(Card::to_string).collect::<Vec<_>>().join(" ");
    let mut out = io::stdout().lock();
    writeln!(out, "algorithm   {}", reveal.algorithm)?;
    if let Some(id) = &reveal.round_id {
        writeln!(out, "round_id    {id}")?;
    }
    writeln!(out, "client_seed {:?}", reveal.client_seed)?;
    writeln!(out, "nonce       {}", reveal.nonce)?;
    writeln!(out, "decks       {}", reveal.decks)?;
    writeln!(out, "commitment  {}  {}", reveal.commitment.trim(), mark(verdict.commitment_ok))?;
    writeln!(out, "cards       {}", list(&verdict.recomputed))?;
    writeln!(out, "revealed    {}  {}", reveal.cards.join(" "), mark(verdict.cards_ok))?;
    if let [a, b, ..] = verdict.recomputed[..] {
        let hand = match HandClass::of(a, b) {
            HandClass::NonConsecutive(spread) => format!("non_consecutive, spread {spread}"),
            class => class.name().to_string(),
        };
        writeln!(out, "hand        {hand}")?;
    }
    if verdict.ok() {
        writeln!(out, "verdict     VERIFIED")?;
        Ok(())
    } else {
        writeln!(out, "verdict     NOT VERIFIED")?;
        out.flush()?;
        match (verdict.commitment_ok, verdict.cards_ok) {
            (false, false) => bail!("the commitment is not SHA-256 of the server seed, and the cards differ"),
            (false, true) => bail!("the commitment is not SHA-256 of the server seed"),
            _ => bail!("the revealed cards differ from the cards the inputs deal"),
        }
    }
}

pub fn commit(args: CommitArgs) -> anyhow::Result<()> {
    let seed = seed_arg(args.server_seed.as_deref())?;
    let mut out = io::stdout().lock();
    if args.reveal {
        let decks = Decks::new(args.decks)?;
        if !(1..=decks.cards()).contains(&args.cards) {
            bail!("--cards: {} is outside 1..={}", args.cards, decks.cards());
        }
        let inputs =
            DealInputs { server_seed: &seed, client_seed: args.client_seed.as_bytes(), nonce: args.nonce, decks };
        let cards = FairShoe::deal(&inputs, args.cards);
        let reveal = Reveal::new(&inputs, &args.client_seed, &cards, None);
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
