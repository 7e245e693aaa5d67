//! HTTP/2 floods against a running `reddog serve`, written as raw frames (an attacker does
//! not respect limits a client library would), with the server's memory and health sampled
//! throughout. Loopback only: every run is bounded in frames and time and stops by itself.
//!
//! ```text
//! cargo run --release -p reddog-tools --bin flood -- --target 127.0.0.1:50051 --pid PID headers --streams 50000
//! cargo run --release -p reddog-tools --bin flood -- --target ... --pid PID bodies --conns 40 --streams 100
//! cargo run --release -p reddog-tools --bin flood -- --target ... --pid PID priority --frames 100000
//! cargo run --release -p reddog-tools --bin flood -- --target ... --pid PID idle --conns 2000 --hold-secs 10
//! ```
//!
//! - `headers`: one connection opens `--streams` CommitSeed streams, HEADERS only (no body,
//!   no END_STREAM), as fast as it can write;
//! - `bodies`: `--conns` connections × `--streams` streams, each sending a gRPC message header
//!   announcing 65,531 bytes and then all but 1 byte of it (a 64 KiB body that stalls);
//! - `priority`: one connection sends `--frames` PRIORITY frames, each stream depending on
//!   itself (a stream error the server answers with RST_STREAM);
//! - `idle`: `--conns` TCP connections that never send the HTTP/2 preface;
//! - `watch`: no flood, only the sampling (to watch another tool's load, such as h2load);
//! - `load`: what `h2load -c CONNS -m STREAMS` does on CommitSeed — every connection keeps
//!   its streams busy, a new call as soon as one ends, for `--secs` — but reading each
//!   call's gRPC status (h2load sees only HTTP status, 200 for a refusal too), so it can say
//!   how fast the calls *served* were (`load_ok_p99_ms`) and how the others ended. Like
//!   h2load, a connection keeps at most the server's SETTINGS_MAX_CONCURRENT_STREAMS calls
//!   open (`--streams` is the wish, the server's setting the cap), so each call is timed from
//!   when it goes on the wire, not while it queues in the client. A connection the server
//!   closes gracefully (GOAWAY) is replaced at once, as a gRPC channel does; the calls it
//!   did not take are counted apart (`load_going_away`), as are the replacements.
//!
//! With `--source-ip` the tool's own connections (the flood's `load` connections and the
//! health and call probes) leave from that address (127.0.0.2, ... on loopback: another peer
//! to the server). With `--pid` it samples the server's VmRSS every 50 ms (and reads VmHWM) and its CPU time;
//! with `--health` it asks grpc.health.v1.Health/Check every `--health-every-ms` (250) during
//! the flood over a connection opened before it, and once over a new connection at the end.
//! With `--call-every-ms` it also times a CommitSeed call that often over a connection opened
//! before the flood (an RedDog client in use), and with `--fresh-every-ms` one over a new
//! connection each time (a client arriving during the flood). It prints one summary line
//! `flood: key=value ...` and exits non-zero if `--max-rss-mib` is exceeded, a health check
//! failed, or (with `--max-ok-call-ms`) a CommitSeed over the open connection was answered OK
//! after more than that or failed otherwise than RESOURCE_EXHAUSTED.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use reddog::service::proto::CommitSeedRequest;
use reddog::service::proto::red_dog_client::RedDogClient;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Mutex;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

#[derive(Parser, Debug)]
struct Args {
    /// The server's gRPC address (loopback).
    #[arg(long)]
    target: SocketAddr,
    /// The server's process id, to sample its memory and CPU.
    #[arg(long)]
    pid: Option<u32>,
    /// Check health during the flood.
    #[arg(long)]
    health: bool,
    /// Interval between those health checks, in milliseconds (the connection is idle between).
    #[arg(long, default_value_t = 250)]
    health_every_ms: u64,
    /// Time a CommitSeed this often during the flood, over a connection opened before it.
    #[arg(long)]
    call_every_ms: Option<u64>,
    /// Fail if one of those calls was answered OK after more than this many milliseconds.
    #[arg(long)]
    max_ok_call_ms: Option<u64>,
    /// Time a CommitSeed over a new connection this often during the flood (not a failure
    /// when refused: a connection past the cap is closed).
    #[arg(long)]
    fresh_every_ms: Option<u64>,
    /// Fail if the server's peak RSS during the flood exceeds this many MiB.
    #[arg(long)]
    max_rss_mib: Option<f64>,
    /// After the flood, keep sampling this long (memory kept? connections closed?).
    #[arg(long, default_value_t = 2.0)]
    settle_secs: f64,
    /// Upper bound on the whole flood.
    #[arg(long, default_value_t = 60.0)]
    max_secs: f64,
    /// The source address of the probes' connections (health, --call-every-ms,
    /// --fresh-every-ms); by default the system's choice.
    #[arg(long)]
    probe_source_ip: Option<std::net::IpAddr>,
    /// The source address of the `load` flood's connections.
    #[arg(long)]
    source_ip: Option<std::net::IpAddr>,
    /// With --fresh-every-ms: fail unless at least this share (0..1) of the fresh clients'
    /// calls was answered OK.
    #[arg(long)]
    min_fresh_ok: Option<f64>,
    /// With `load`: fail if the p99 of the calls answered OK exceeds this many milliseconds.
    #[arg(long)]
    max_ok_p99_ms: Option<f64>,
    /// After the flood (and --settle-secs), wait up to this many seconds for the server's
    /// RSS to come back within 20 % of what it was before the flood (`rss_returned_secs`),
    /// failing if it does not.
    #[arg(long)]
    rss_returns_within_secs: Option<f64>,
    /// With --rss-returns-within-secs: report a miss (`rss_returned_secs=never`) without
    /// failing — for a bound that is measured but not met yet.
    #[arg(long)]
    rss_return_open_bound: bool,
    #[command(subcommand)]
    flood: Flood,
}

#[derive(Subcommand, Debug)]
enum Flood {
    Headers {
        #[arg(long, default_value_t = 50_000)]
        streams: u32,
    },
    Bodies {
        #[arg(long, default_value_t = 40)]
        conns: u32,
        #[arg(long, default_value_t = 100)]
        streams: u32,
        /// Seconds to hold the stalled bodies open.
        #[arg(long, default_value_t = 5.0)]
        hold_secs: f64,
    },
    Priority {
        #[arg(long, default_value_t = 100_000)]
        frames: u32,
    },
    /// No flood: only sample memory and health (to watch another tool's load, e.g. h2load).
    Watch {
        #[arg(long, default_value_t = 10.0)]
        secs: f64,
        /// Stop earlier, as soon as this process (the load tool) has exited.
        #[arg(long)]
        while_pid: Option<u32>,
    },
    /// `h2load -c CONNS -m STREAMS` on CommitSeed, reading each call's gRPC status.
    Load {
        #[arg(long, default_value_t = 500)]
        conns: u32,
        #[arg(long, default_value_t = 100)]
        streams: u32,
        #[arg(long, default_value_t = 10.0)]
        secs: f64,
    },
    Idle {
        #[arg(long, default_value_t = 1000)]
        conns: u32,
        /// Seconds to wait for the server to close them.
        #[arg(long, default_value_t = 10.0)]
        hold_secs: f64,
    },
}

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const PRIORITY: u8 = 2;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const PING: u8 = 6;
const GOAWAY: u8 = 7;
const WINDOW_UPDATE: u8 = 8;

fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let len = payload.len() as u32;
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    out.extend_from_slice(payload);
}

/// An HPACK header block of literal fields without indexing (no Huffman, no table).
fn header_block(path: &str) -> Vec<u8> {
    let mut b = Vec::new();
    for (name, value) in [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", path),
        (":authority", "localhost"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ] {
        b.push(0);
        b.push(name.len() as u8);
        b.extend_from_slice(name.as_bytes());
        b.push(value.len() as u8);
        b.extend_from_slice(value.as_bytes());
    }
    b
}

/// What the server sent back on one connection.
#[derive(Default)]
struct Seen {
    frames: AtomicU64,
    headers: AtomicU64,
    data: AtomicU64,
    rst: Mutex<BTreeMap<u32, u64>>,
    goaway: Mutex<Option<(u32, u32)>>,
    closed: AtomicBool,
    conn_window: AtomicI64,
    stream_window: AtomicI64,
    /// The task reading the connection (it holds the writer too, to answer PING and SETTINGS).
    reader: std::sync::Mutex<Option<tokio::task::AbortHandle>>,
}

impl Seen {
    /// Ends the connection from our side: stops its reader, so the socket closes once the
    /// flood's own writer is dropped too. A flood that hangs up has ended; what the server
    /// still holds afterwards is what it keeps of closed connections.
    fn hang_up(&self) {
        if let Some(reader) = self.reader.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
            reader.abort();
        }
    }
}

fn rst_name(code: u32) -> String {
    match code {
        0 => "NO_ERROR".into(),
        1 => "PROTOCOL_ERROR".into(),
        2 => "INTERNAL_ERROR".into(),
        3 => "FLOW_CONTROL_ERROR".into(),
        7 => "REFUSED_STREAM".into(),
        8 => "CANCEL".into(),
        11 => "ENHANCE_YOUR_CALM".into(),
        c => format!("code_{c}"),
    }
}

type Writer = Arc<Mutex<tokio::net::tcp::OwnedWriteHalf>>;

/// Connects, exchanges SETTINGS, and starts a reader that counts frames, ACKs SETTINGS and
/// PINGs, and tracks flow-control windows.
async fn h2_connect(target: SocketAddr) -> std::io::Result<(Writer, Arc<Seen>)> {
    let tcp = TcpStream::connect(target).await?;
    tcp.set_nodelay(true)?;
    let (mut r, mut w) = tcp.into_split();
    let mut hello = PREFACE.to_vec();
    // Our SETTINGS: a large window so the server's responses never block on us.
    let mut settings = Vec::new();
    settings.extend_from_slice(&4u16.to_be_bytes());
    settings.extend_from_slice(&(1u32 << 30).to_be_bytes());
    frame(&mut hello, SETTINGS, 0, 0, &settings);
    frame(&mut hello, WINDOW_UPDATE, 0, 0, &(1u32 << 30).to_be_bytes());
    w.write_all(&hello).await?;
    let seen = Arc::new(Seen::default());
    seen.conn_window.store(65_535, Ordering::Relaxed);
    seen.stream_window.store(65_535, Ordering::Relaxed);
    let w = Arc::new(Mutex::new(w));
    let (seen2, w2) = (seen.clone(), w.clone());
    let (got_settings_tx, got_settings_rx) = tokio::sync::oneshot::channel();
    let reader = tokio::spawn(async move {
        let mut got_settings = Some(got_settings_tx);
        let mut head = [0u8; 9];
        let mut payload = Vec::new();
        loop {
            if r.read_exact(&mut head).await.is_err() {
                break;
            }
            let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
            let (kind, flags) = (head[3], head[4]);
            let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
            payload.resize(len, 0);
            if r.read_exact(&mut payload).await.is_err() {
                break;
            }
            seen2.frames.fetch_add(1, Ordering::Relaxed);
            match kind {
                HEADERS => {
                    seen2.headers.fetch_add(1, Ordering::Relaxed);
                }
                DATA => {
                    seen2.data.fetch_add(1, Ordering::Relaxed);
                }
                RST_STREAM if len >= 4 => {
                    let code = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]);
                    *seen2.rst.lock().await.entry(code).or_default() += 1;
                }
                GOAWAY if len >= 8 => {
                    let last = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) & 0x7fff_ffff;
                    let code = u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]);
                    *seen2.goaway.lock().await = Some((last, code));
                }
                SETTINGS if flags & 1 == 0 => {
                    for s in payload.chunks_exact(6) {
                        if u16::from_be_bytes([s[0], s[1]]) == 4 {
                            let v = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
                            seen2.stream_window.store(i64::from(v), Ordering::Relaxed);
                        }
                    }
                    let mut ack = Vec::new();
                    frame(&mut ack, SETTINGS, 1, 0, &[]);
                    let _ = w2.lock().await.write_all(&ack).await;
                    if let Some(tx) = got_settings.take() {
                        let _ = tx.send(());
                    }
                }
                PING if flags & 1 == 0 => {
                    let mut pong = Vec::new();
                    frame(&mut pong, PING, 1, 0, &payload);
                    let _ = w2.lock().await.write_all(&pong).await;
                }
                WINDOW_UPDATE if stream == 0 && len >= 4 => {
                    let inc = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) & 0x7fff_ffff;
                    seen2.conn_window.fetch_add(i64::from(inc), Ordering::Relaxed);
                }
                _ => {}
            }
        }
        seen2.closed.store(true, Ordering::Relaxed);
    });
    *seen.reader.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(reader.abort_handle());
    tokio::time::timeout(Duration::from_secs(5), got_settings_rx)
        .await
        .map_err(|_| std::io::Error::other("no SETTINGS from the server within 5 s"))?
        .map_err(|_| std::io::Error::other("connection closed before SETTINGS"))?;
    Ok((w, seen))
}

async fn summary(seen: &[Arc<Seen>]) -> String {
    let (mut frames, mut headers, mut data, mut closed) = (0, 0, 0, 0);
    let mut rst: BTreeMap<u32, u64> = BTreeMap::new();
    let mut goaways: BTreeMap<u32, u64> = BTreeMap::new();
    for s in seen {
        frames += s.frames.load(Ordering::Relaxed);
        headers += s.headers.load(Ordering::Relaxed);
        data += s.data.load(Ordering::Relaxed);
        closed += u64::from(s.closed.load(Ordering::Relaxed));
        for (k, v) in s.rst.lock().await.iter() {
            *rst.entry(*k).or_default() += v;
        }
        if let Some((_, code)) = *s.goaway.lock().await {
            *goaways.entry(code).or_default() += 1;
        }
    }
    let rst: Vec<String> = rst.iter().map(|(k, v)| format!("{}:{v}", rst_name(*k))).collect();
    let goaway: Vec<String> = goaways.iter().map(|(k, v)| format!("{}:{v}", rst_name(*k))).collect();
    format!(
        "frames_in={frames} headers_in={headers} data_in={data} rst_stream=[{}] goaway=[{}] conns_closed_by_server={closed}/{}",
        rst.join(","),
        goaway.join(","),
        seen.len()
    )
}

/// VmRSS and VmHWM in KiB, and utime+stime in clock ticks.
fn proc_sample(pid: u32) -> Option<(u64, u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
    };
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    let cpu = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some((field("VmRSS:")?, field("VmHWM:")?, cpu))
}

#[derive(Default)]
struct Health {
    ok: AtomicU64,
    failed: AtomicU64,
    max_ms: AtomicU64,
}

/// CommitSeed calls timed during the flood: answered OK, RESOURCE_EXHAUSTED (shed), or
/// otherwise (failed: a transport error, a connection closed at the cap, ...).
#[derive(Default)]
struct Calls {
    ok: AtomicU64,
    shed: AtomicU64,
    failed: AtomicU64,
    ok_max_ms: AtomicU64,
    shed_max_ms: AtomicU64,
    failed_max_ms: AtomicU64,
    first_failure: std::sync::Mutex<Option<String>>,
}

impl Calls {
    fn record(&self, took: Duration, result: Result<(), tonic::Status>) {
        let ms = took.as_millis() as u64;
        let (count, max) = match &result {
            Ok(()) => (&self.ok, &self.ok_max_ms),
            Err(s) if s.code() == tonic::Code::ResourceExhausted => (&self.shed, &self.shed_max_ms),
            Err(s) => {
                let mut first = self.first_failure.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                first.get_or_insert_with(|| format!("{:?}: {}", s.code(), s.message()));
                (&self.failed, &self.failed_max_ms)
            }
        };
        count.fetch_add(1, Ordering::Relaxed);
        max.fetch_max(ms, Ordering::Relaxed);
    }

    fn summary(&self, name: &str) -> String {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        format!(
            " {name}_ok={} {name}_ok_max_ms={} {name}_shed={} {name}_shed_max_ms={} {name}_failed={} {name}_failed_max_ms={}",
            l(&self.ok),
            l(&self.ok_max_ms),
            l(&self.shed),
            l(&self.shed_max_ms),
            l(&self.failed),
            l(&self.failed_max_ms)
        )
    }
}

/// One CommitSeed over `ch` (10 s deadline), timed, recorded in `calls`.
async fn timed_commit(ch: tonic::transport::Channel, n: u64, calls: &Calls) {
    let started = Instant::now();
    let mut req = tonic::Request::new(CommitSeedRequest {
        round_id: format!("flood-probe-{n}"),
        nonce: n,
        table_id: String::new(),
    });
    req.set_timeout(Duration::from_secs(10));
    let result = match tokio::time::timeout(Duration::from_secs(11), RedDogClient::new(ch).commit_seed(req)).await {
        Ok(r) => r.map(|_| ()),
        Err(_) => Err(tonic::Status::deadline_exceeded("no answer within 11 s")),
    };
    calls.record(started.elapsed(), result);
}

async fn check_health(ch: tonic::transport::Channel) -> Result<Duration, String> {
    let started = Instant::now();
    let mut client = HealthClient::new(ch);
    let mut req = tonic::Request::new(HealthCheckRequest { service: String::new() });
    req.set_timeout(Duration::from_secs(2));
    match tokio::time::timeout(Duration::from_secs(3), client.check(req)).await {
        Ok(Ok(r)) if r.get_ref().status == 1 => Ok(started.elapsed()),
        Ok(Ok(r)) => Err(format!("status {}", r.get_ref().status)),
        Ok(Err(s)) => Err(format!("{:?}: {}", s.code(), s.message())),
        Err(_) => Err("no answer within 3 s".into()),
    }
}

async fn fresh_channel(
    target: SocketAddr,
    source: Option<std::net::IpAddr>,
) -> Result<tonic::transport::Channel, String> {
    let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{target}"))
        .map_err(|e| e.to_string())?
        .local_address(source)
        .connect_timeout(Duration::from_secs(2));
    tokio::time::timeout(Duration::from_secs(3), endpoint.connect())
        .await
        .map_err(|_| "connect: no answer within 3 s".to_string())?
        .map_err(|e| format!("connect: {e}"))
}

async fn flood_headers(target: SocketAddr, streams: u32) -> std::io::Result<Vec<Arc<Seen>>> {
    let (w, seen) = h2_connect(target).await?;
    let block = header_block("/reddog.v1.RedDog/CommitSeed");
    let mut buf = Vec::with_capacity(1 << 16);
    let mut sent = 0u64;
    for i in 0..streams {
        frame(&mut buf, HEADERS, 0x4, 2 * i + 1, &block); // END_HEADERS, no END_STREAM
        if buf.len() >= 60_000 || i + 1 == streams {
            sent += buf.len() as u64;
            if w.lock().await.write_all(&buf).await.is_err() {
                break; // the server closed the connection
            }
            buf.clear();
        }
    }
    eprintln!("headers: {streams} streams, {sent} bytes written");
    Ok(vec![seen])
}

async fn flood_bodies(target: SocketAddr, conns: u32, streams: u32, hold: Duration) -> std::io::Result<Vec<Arc<Seen>>> {
    let mut tasks = Vec::new();
    for _ in 0..conns {
        tasks.push(tokio::spawn(async move {
            let (w, seen) = h2_connect(target).await?;
            let block = header_block("/reddog.v1.RedDog/StartRound");
            const ANNOUNCED: usize = 65_531;
            let body_len = ANNOUNCED + 5 - 1; // 5-byte gRPC prefix + all but the last byte
            let chunk = vec![b'x'; 16_384];
            for i in 0..streams {
                let id = 2 * i + 1;
                let mut buf = Vec::new();
                frame(&mut buf, HEADERS, 0x4, id, &block);
                let mut prefix = vec![0u8];
                prefix.extend_from_slice(&(ANNOUNCED as u32).to_be_bytes());
                let stream_window = seen.stream_window.load(Ordering::Relaxed).max(0) as usize;
                let mut left = body_len.min(stream_window);
                let mut first = true;
                while left > 0 {
                    let n = left.min(16_384);
                    // Respect the connection window (the server raises it as it reads).
                    let deadline = Instant::now() + Duration::from_secs(10);
                    while seen.conn_window.load(Ordering::Relaxed) < n as i64 {
                        if seen.closed.load(Ordering::Relaxed) || Instant::now() > deadline {
                            seen.hang_up();
                            return Ok::<_, std::io::Error>(seen);
                        }
                        if !buf.is_empty() {
                            w.lock().await.write_all(&buf).await?;
                            buf.clear();
                        }
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                    seen.conn_window.fetch_sub(n as i64, Ordering::Relaxed);
                    let mut payload = Vec::with_capacity(n);
                    if first {
                        payload.extend_from_slice(&prefix);
                        payload.extend_from_slice(&chunk[..n - 5]);
                        first = false;
                    } else {
                        payload.extend_from_slice(&chunk[..n]);
                    }
                    frame(&mut buf, DATA, 0, id, &payload);
                    left -= n;
                }
                if w.lock().await.write_all(&buf).await.is_err() {
                    break;
                }
            }
            tokio::time::sleep(hold).await;
            // The flood ends: its connections close (left open, they would stay, idle, until
            // the server's idle timeout).
            seen.hang_up();
            Ok(seen)
        }));
    }
    let mut seen = Vec::new();
    for t in tasks {
        match t.await {
            Ok(Ok(s)) => seen.push(s),
            Ok(Err(e)) => eprintln!("bodies: a connection failed: {e}"),
            Err(e) => eprintln!("bodies: task: {e}"),
        }
    }
    eprintln!("bodies: {conns} connections x {streams} stalled 64 KiB bodies, held {hold:?}");
    Ok(seen)
}

async fn flood_priority(target: SocketAddr, frames: u32) -> std::io::Result<Vec<Arc<Seen>>> {
    let (w, seen) = h2_connect(target).await?;
    let mut buf = Vec::with_capacity(1 << 16);
    let mut written = 0u32;
    for i in 0..frames {
        let id = 2 * i + 1;
        // Exclusive flag clear, dependency = the stream itself, weight 16.
        let mut p = id.to_be_bytes().to_vec();
        p.push(15);
        frame(&mut buf, PRIORITY, 0, id, &p);
        if buf.len() >= 60_000 || i + 1 == frames {
            if w.lock().await.write_all(&buf).await.is_err() {
                break;
            }
            written = i + 1;
            buf.clear();
        }
    }
    eprintln!("priority: {written} of {frames} self-dependent PRIORITY frames written");
    Ok(vec![seen])
}

/// What the `load` flood's calls got.
#[derive(Default)]
struct LoadResults {
    /// Latency in µs of the calls answered OK, and of those answered RESOURCE_EXHAUSTED.
    ok_us: Vec<u32>,
    shed_us: Vec<u32>,
    /// Other gRPC statuses and stream or connection errors, by name.
    other: BTreeMap<String, u64>,
    /// Connections that failed to open, or that the server closed before answering a call
    /// (at the connection cap): their calls are not counted.
    conns_failed: u64,
    /// Calls not taken because the server was closing their connection gracefully (GOAWAY):
    /// sent again on a new connection.
    going_away: u64,
    /// New connections opened after the server closed one gracefully.
    reconnects: u64,
}

impl LoadResults {
    fn merge(&mut self, o: LoadResults) {
        self.ok_us.extend(o.ok_us);
        self.shed_us.extend(o.shed_us);
        for (k, v) in o.other {
            *self.other.entry(k).or_default() += v;
        }
        self.conns_failed += o.conns_failed;
        self.going_away += o.going_away;
        self.reconnects += o.reconnects;
    }
}

fn percentile_ms(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    f64::from(sorted[i]) / 1000.0
}

/// Why a load call got no gRPC status.
enum CallError {
    /// The server is closing the connection gracefully (GOAWAY without an error): the call was
    /// not taken, and a client opens a new connection for its next one.
    GoingAway,
    /// A stream or connection error, by name.
    Other(String),
}

impl CallError {
    fn of(step: &str, e: &h2::Error) -> CallError {
        if e.is_go_away() && e.reason() == Some(h2::Reason::NO_ERROR) {
            CallError::GoingAway
        } else {
            CallError::Other(format!("{step}: {e}"))
        }
    }
}

/// One CommitSeed over `send`: its gRPC status.
async fn load_call(
    send: &h2::client::SendRequest<bytes::Bytes>,
    target: SocketAddr,
    body: &bytes::Bytes,
) -> Result<String, CallError> {
    let mut send = send.clone().ready().await.map_err(|e| CallError::of("ready", &e))?;
    let request = http::Request::builder()
        .method("POST")
        .uri(format!("http://{target}/reddog.v1.RedDog/CommitSeed"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .map_err(|e| CallError::Other(e.to_string()))?;
    let (response, mut stream) = send.send_request(request, false).map_err(|e| CallError::of("send", &e))?;
    stream.send_data(body.clone(), true).map_err(|e| CallError::of("send", &e))?;
    let response = response.await.map_err(|e| CallError::of("response", &e))?;
    let status = |h: &http::HeaderMap| h.get("grpc-status").and_then(|v| v.to_str().ok()).map(str::to_string);
    if let Some(code) = status(response.headers()) {
        return Ok(code);
    }
    let mut body = response.into_body();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(|e| CallError::of("body", &e))?;
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    let trailers = body.trailers().await.map_err(|e| CallError::of("trailers", &e))?;
    trailers.as_ref().and_then(status).ok_or_else(|| CallError::Other("no grpc-status".into()))
}

/// An HTTP/2 connection to `target` (from `source`), within 5 s.
async fn load_connect(
    target: SocketAddr,
    source: Option<std::net::IpAddr>,
) -> Option<(h2::client::SendRequest<bytes::Bytes>, tokio::task::JoinHandle<Result<(), h2::Error>>)> {
    let connected = async {
        let socket = if target.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
        if let Some(ip) = source {
            socket.bind(SocketAddr::new(ip, 0))?;
        }
        let tcp = socket.connect(target).await?;
        tcp.set_nodelay(true)?;
        h2::client::Builder::new()
            .initial_window_size(1 << 20)
            .initial_connection_window_size(1 << 24)
            .handshake::<_, bytes::Bytes>(tcp)
            .await
            .map_err(std::io::Error::other)
    };
    match tokio::time::timeout(Duration::from_secs(5), connected).await {
        Ok(Ok((send, connection))) => Some((send, tokio::spawn(connection))),
        _ => None,
    }
}

/// How one connection of the load ended.
enum Ended {
    /// The server closed it gracefully (GOAWAY): the client opens a new one.
    WentAway,
    /// The run is over, or the connection failed.
    Done,
}

/// One connection of the load: `streams` callers until `until` or until it goes away.
async fn load_connection(
    target: SocketAddr,
    source: Option<std::net::IpAddr>,
    streams: u32,
    until: Instant,
    body: bytes::Bytes,
    results: &mut LoadResults,
) -> Ended {
    let Some((send, driver)) = load_connect(target, source).await else {
        results.conns_failed += 1;
        return Ended::Done;
    };
    // The first call, alone, lets the server's SETTINGS arrive; then at most its
    // SETTINGS_MAX_CONCURRENT_STREAMS callers (h2load does the same with -m). An error before
    // any answer means the connection was refused (closed at the connection cap), not that
    // calls failed: its calls are not counted.
    match load_call(&send, target, &body).await {
        Ok(_) => {}
        Err(CallError::GoingAway) => {
            results.going_away += 1;
            driver.abort();
            return Ended::WentAway;
        }
        Err(CallError::Other(_)) => {
            results.conns_failed += 1;
            driver.abort();
            return Ended::Done;
        }
    }
    let went_away = Arc::new(AtomicBool::new(false));
    let callers_n = streams.min(u32::try_from(send.current_max_send_streams()).unwrap_or(u32::MAX)).max(1);
    let mut callers = tokio::task::JoinSet::new();
    for _ in 0..callers_n {
        let (send, body, went_away) = (send.clone(), body.clone(), went_away.clone());
        callers.spawn(async move {
            let mut r = LoadResults::default();
            while Instant::now() < until {
                let started = Instant::now();
                let outcome = load_call(&send, target, &body).await;
                let us = u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX);
                match outcome {
                    Ok(code) if code == "0" => r.ok_us.push(us),
                    Ok(code) if code == "8" => r.shed_us.push(us),
                    Ok(code) => *r.other.entry(format!("grpc-status {code}")).or_default() += 1,
                    Err(CallError::GoingAway) => {
                        r.going_away += 1;
                        went_away.store(true, Ordering::Relaxed);
                        break;
                    }
                    Err(CallError::Other(e)) => {
                        *r.other.entry(e.split(':').next().unwrap_or(&e).to_string()).or_default() += 1;
                        if send.clone().ready().await.is_err() {
                            break; // the connection is gone
                        }
                    }
                }
            }
            r
        });
    }
    while let Some(r) = callers.join_next().await {
        if let Ok(r) = r {
            results.merge(r);
        }
    }
    driver.abort();
    if went_away.load(Ordering::Relaxed) { Ended::WentAway } else { Ended::Done }
}

/// `conns` connections × `streams` streams of CommitSeed until `until`, each stream calling
/// again as soon as its call ends (a closed loop, as h2load's). A connection the server closes
/// gracefully (GOAWAY) is replaced by a new one at once, as a gRPC client's channel does; one
/// refused at connect is not (as h2load's).
async fn flood_load(
    target: SocketAddr,
    source: Option<std::net::IpAddr>,
    conns: u32,
    streams: u32,
    secs: f64,
) -> LoadResults {
    let until = Instant::now() + Duration::from_secs_f64(secs);
    // CommitSeedRequest { round_id: "load" }, with the 5-byte gRPC prefix.
    let body = bytes::Bytes::from_static(b"\x00\x00\x00\x00\x06\x0a\x04load");
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..conns {
        let body = body.clone();
        tasks.spawn(async move {
            let mut results = LoadResults::default();
            let mut first = true;
            while first || Instant::now() < until {
                if !first {
                    results.reconnects += 1;
                }
                first = false;
                match load_connection(target, source, streams, until, body.clone(), &mut results).await {
                    Ended::WentAway => {}
                    Ended::Done => break,
                }
            }
            results
        });
    }
    let mut all = LoadResults::default();
    while let Some(r) = tasks.join_next().await {
        if let Ok(r) = r {
            all.merge(r);
        }
    }
    all
}

fn load_summary(r: &mut LoadResults, secs: f64) -> String {
    r.ok_us.sort_unstable();
    r.shed_us.sort_unstable();
    let other: Vec<String> = r.other.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    format!(
        " load_calls_per_sec={:.0} load_ok={} load_ok_p50_ms={:.1} load_ok_p99_ms={:.1} load_ok_max_ms={:.1} load_resource_exhausted={} load_resource_exhausted_p99_ms={:.1} load_other=[{}] load_conns_failed={} load_going_away={} load_reconnects={}",
        (r.ok_us.len() + r.shed_us.len()) as f64 / secs,
        r.ok_us.len(),
        percentile_ms(&r.ok_us, 0.50),
        percentile_ms(&r.ok_us, 0.99),
        percentile_ms(&r.ok_us, 1.0),
        r.shed_us.len(),
        percentile_ms(&r.shed_us, 0.99),
        other.join(","),
        r.conns_failed,
        r.going_away,
        r.reconnects
    )
}

async fn flood_idle(target: SocketAddr, conns: u32, hold: Duration) -> std::io::Result<Vec<Arc<Seen>>> {
    let mut seen = Vec::new();
    let mut refused = 0;
    for _ in 0..conns {
        match TcpStream::connect(target).await {
            Ok(mut tcp) => {
                let s = Arc::new(Seen::default());
                seen.push(s.clone());
                tokio::spawn(async move {
                    let mut b = [0u8; 64];
                    let _ = tokio::time::timeout(hold, async {
                        loop {
                            match tcp.read(&mut b).await {
                                Ok(0) | Err(_) => break,
                                Ok(_) => {
                                    s.frames.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                        }
                        s.closed.store(true, Ordering::Relaxed);
                    })
                    .await;
                    drop(tcp);
                });
            }
            Err(_) => refused += 1,
        }
    }
    eprintln!("idle: {} connections opened ({refused} failed to connect), none sends a byte", conns - refused);
    let deadline = Instant::now() + hold;
    while Instant::now() < deadline && !seen.iter().all(|s| s.closed.load(Ordering::Relaxed)) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(seen)
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    assert!(args.target.ip().is_loopback(), "floods go to loopback addresses only");
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));

    // Memory and CPU sampler.
    let peak_rss = Arc::new(AtomicU64::new(0));
    let before = args.pid.and_then(proc_sample);
    if let Some(pid) = args.pid {
        let (stop, peak) = (stop.clone(), peak_rss.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                if let Some((rss, _, _)) = proc_sample(pid) {
                    peak.fetch_max(rss, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
    }
    // Health over a connection opened before the flood.
    let health = Arc::new(Health::default());
    let mut health_task = None;
    let health_every = args.health_every_ms;
    if args.health {
        match fresh_channel(args.target, args.probe_source_ip).await {
            Ok(ch) => {
                let (stop, h) = (stop.clone(), health.clone());
                health_task = Some(tokio::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        match check_health(ch.clone()).await {
                            Ok(d) => {
                                h.ok.fetch_add(1, Ordering::Relaxed);
                                h.max_ms.fetch_max(d.as_millis() as u64, Ordering::Relaxed);
                            }
                            Err(e) => {
                                eprintln!("health during the flood: {e}");
                                h.failed.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        tokio::time::sleep(Duration::from_millis(health_every)).await;
                    }
                }));
            }
            Err(e) => {
                eprintln!("health before the flood: {e}");
                health.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    // CommitSeed over a connection opened before the flood, and over fresh ones.
    let calls = Arc::new(Calls::default());
    let fresh_calls = Arc::new(Calls::default());
    let mut call_tasks = Vec::new();
    if let Some(every) = args.call_every_ms {
        match fresh_channel(args.target, args.probe_source_ip).await {
            Ok(ch) => {
                let (stop, calls) = (stop.clone(), calls.clone());
                call_tasks.push(tokio::spawn(async move {
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        timed_commit(ch.clone(), n, &calls).await;
                        n += 1;
                        tokio::time::sleep(Duration::from_millis(every)).await;
                    }
                }));
            }
            Err(e) => calls.record(Duration::ZERO, Err(tonic::Status::unavailable(e))),
        }
    }
    if let Some(every) = args.fresh_every_ms {
        let (stop, calls, target, source) = (stop.clone(), fresh_calls.clone(), args.target, args.probe_source_ip);
        call_tasks.push(tokio::spawn(async move {
            let mut n = 1 << 32;
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                match fresh_channel(target, source).await {
                    Ok(ch) => timed_commit(ch, n, &calls).await,
                    Err(e) => calls.record(started.elapsed(), Err(tonic::Status::unavailable(e))),
                }
                n += 1;
                tokio::time::sleep(Duration::from_millis(every)).await;
            }
        }));
    }

    let bound = Duration::from_secs_f64(args.max_secs);
    let mut load: Option<(LoadResults, f64)> = None;
    let run = async {
        match args.flood {
            Flood::Headers { streams } => flood_headers(args.target, streams).await,
            Flood::Bodies { conns, streams, hold_secs } => {
                flood_bodies(args.target, conns, streams, Duration::from_secs_f64(hold_secs)).await
            }
            Flood::Priority { frames } => flood_priority(args.target, frames).await,
            Flood::Watch { secs, while_pid } => {
                let until = Instant::now() + Duration::from_secs_f64(secs);
                while Instant::now() < until
                    && while_pid.is_none_or(|p| std::path::Path::new(&format!("/proc/{p}")).exists())
                {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Ok(Vec::new())
            }
            Flood::Idle { conns, hold_secs } => {
                flood_idle(args.target, conns, Duration::from_secs_f64(hold_secs)).await
            }
            Flood::Load { conns, streams, secs } => {
                let results = flood_load(args.target, args.source_ip, conns, streams, secs).await;
                load = Some((results, secs));
                Ok(Vec::new())
            }
        }
    };
    let seen = match tokio::time::timeout(bound, run).await {
        Ok(Ok(seen)) => seen,
        Ok(Err(e)) => {
            eprintln!("flood: {e}");
            Vec::new()
        }
        Err(_) => {
            eprintln!("flood: stopped at the {bound:?} bound");
            Vec::new()
        }
    };
    let flood_secs = started.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs_f64(args.settle_secs)).await;
    // Memory given back: RSS within 20 % of its level before the flood.
    let mut returned = None;
    if let (Some(pid), Some((rss0, _, _)), Some(within)) = (args.pid, before, args.rss_returns_within_secs) {
        let ended = Instant::now();
        let target = rss0 as f64 * 1.2;
        while ended.elapsed().as_secs_f64() <= within {
            if proc_sample(pid).is_some_and(|(rss, _, _)| rss as f64 <= target) {
                returned = Some(ended.elapsed().as_secs_f64());
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    // One more health check over a new connection, after the flood.
    let mut fresh = String::from("-");
    if args.health {
        fresh = match fresh_channel(args.target, args.probe_source_ip).await {
            Ok(ch) => match check_health(ch).await {
                Ok(d) => format!("SERVING({} ms)", d.as_millis()),
                Err(e) => {
                    health.failed.fetch_add(1, Ordering::Relaxed);
                    e
                }
            },
            Err(e) => {
                health.failed.fetch_add(1, Ordering::Relaxed);
                e
            }
        };
    }
    stop.store(true, Ordering::Relaxed);
    if let Some(t) = health_task {
        let _ = t.await;
    }
    for t in call_tasks {
        let _ = t.await;
    }
    let answers = summary(&seen).await;
    let mut line = format!("flood: secs={flood_secs:.1} {answers}");
    let mut failed = false;
    if let (Some(pid), Some((_, _, cpu0))) = (args.pid, before) {
        if let Some((rss, hwm, cpu1)) = proc_sample(pid) {
            let peak = peak_rss.load(Ordering::Relaxed).max(rss) as f64 / 1024.0;
            let ticks = 100.0; // USER_HZ on Linux
            line += &format!(
                " rss_before_mib={:.1} rss_peak_mib={peak:.1} rss_after_mib={:.1} vmhwm_mib={:.1} server_cpu_secs={:.2}",
                before.map_or(0.0, |b| b.0 as f64 / 1024.0),
                rss as f64 / 1024.0,
                hwm as f64 / 1024.0,
                (cpu1 - cpu0) as f64 / ticks
            );
            if let Some(max) = args.max_rss_mib
                && peak > max
            {
                eprintln!("FAIL: peak RSS {peak:.1} MiB > {max} MiB");
                failed = true;
            }
            if let Some(within) = args.rss_returns_within_secs {
                match returned {
                    Some(secs) => line += &format!(" rss_returned_secs={secs:.1}"),
                    None => {
                        line += " rss_returned_secs=never";
                        if args.rss_return_open_bound {
                            eprintln!(
                                "NOT MET (open bound): RSS did not come back within 20 % of its level before the flood in {within} s"
                            );
                        } else {
                            eprintln!(
                                "FAIL: RSS did not come back within 20 % of its level before the flood in {within} s"
                            );
                            failed = true;
                        }
                    }
                }
            }
        } else {
            line += " server=gone";
            failed = true;
        }
    }
    if args.health {
        let (ok, bad) = (health.ok.load(Ordering::Relaxed), health.failed.load(Ordering::Relaxed));
        line += &format!(
            " health_ok={ok} health_failed={bad} health_max_ms={} health_after_new_conn={fresh}",
            health.max_ms.load(Ordering::Relaxed)
        );
        failed |= bad > 0;
    }
    if args.call_every_ms.is_some() {
        line += &calls.summary("call");
        if args.max_ok_call_ms.is_some() && calls.failed.load(Ordering::Relaxed) > 0 {
            let first = calls.first_failure.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
            eprintln!("FAIL: a CommitSeed over the open connection failed: {}", first.unwrap_or_default());
            failed = true;
        }
        if let Some(max) = args.max_ok_call_ms
            && calls.ok_max_ms.load(Ordering::Relaxed) > max
        {
            eprintln!(
                "FAIL: a CommitSeed was answered OK after {} ms > {max} ms",
                calls.ok_max_ms.load(Ordering::Relaxed)
            );
            failed = true;
        }
    }
    if let Some((mut results, secs)) = load {
        line += &load_summary(&mut results, secs);
        if let Some(max) = args.max_ok_p99_ms {
            let p99 = percentile_ms(&results.ok_us, 0.99);
            if p99 > max {
                eprintln!("FAIL: the p99 of the calls served was {p99:.1} ms > {max} ms");
                failed = true;
            }
        }
    }
    if args.fresh_every_ms.is_some() {
        line += &fresh_calls.summary("fresh");
        if let Some(min) = args.min_fresh_ok {
            let (ok, shed, bad) = (
                fresh_calls.ok.load(Ordering::Relaxed),
                fresh_calls.shed.load(Ordering::Relaxed),
                fresh_calls.failed.load(Ordering::Relaxed),
            );
            let total = ok + shed + bad;
            if total == 0 || (ok as f64) < min * total as f64 {
                eprintln!("FAIL: fresh clients got {ok} of {total} calls answered OK, under {min}");
                failed = true;
            }
        }
        if let Some(first) =
            fresh_calls.first_failure.lock().unwrap_or_else(std::sync::PoisonError::into_inner).as_ref()
        {
            line += &format!(" fresh_first_failure={first:?}");
        }
    }
    println!("{line}");
    if failed { std::process::ExitCode::FAILURE } else { std::process::ExitCode::SUCCESS }
}
