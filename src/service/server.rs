//! The gRPC server: the RedDog service, standard health and server reflection, transport
//! limits, and graceful shutdown. Built and started through [`super::Application`].
//!
//! Health names: `""` (overall) and `reddog.v1.RedDog` are SERVING while the server accepts
//! calls, and NOT_SERVING while the audit trail's output fails or stalls (calls are refused
//! then; SERVING again when it recovers) and once draining starts; `liveness` stays SERVING
//! until the process exits, so a failing disk takes the pod out of the Service without
//! restarting it. Point a Kubernetes readiness probe at `""` and its liveness probe at
//! `liveness`. `reddog_serving` shows what readiness answers (1 SERVING, 0 NOT_SERVING).
//! Health `Watch` streams end (UNAVAILABLE) when the drain starts, after the NOT_SERVING update.
//!
//! With a health listener ([`super::Settings::health_listen`]) the health service is also
//! served alone on its own port, with its own small connection table: the probes reach it
//! whatever RedDog clients do to the main port. It answers until the drain has ended.
//!
//! Limits (see [`crate::service::edge::limits::TransportLimits`]): HTTP/2 max concurrent streams per
//! connection and h2's local-reset guard; the handshake and idle deadlines, connection cap and
//! accept back-off of [`crate::service::edge::transport`]; the global and per-connection slots, load
//! shedding and per-call timeout of [`crate::service::edge::guard`]; requests and responses of at most
//! [`MAX_REQUEST_BYTES`].
//!
//! Drain: health turns NOT_SERVING, the listener closes, connections get GOAWAY; once no
//! RedDog call is in progress (each has answered), answers still being written get
//! [`DRAIN_WRITE_GRACE`], then every connection left is closed — a peer that never reads
//! does not hold the shutdown. All of it within the drain timeout.

use std::future::Future;
use std::time::Duration;

use tokio::net::TcpListener;
use tonic::service::Routes;
use tonic_health::ServingStatus;
use tracing::{info, warn};

use crate::proto::{self, red_dog_server::RedDog, red_dog_server::RedDogServer};
use crate::service::edge::guard::{Activity, CallLimits, CallsInProgress, DrainStreams, Guarded};
use crate::service::edge::http2;
use crate::service::edge::limits::TransportLimits;
use crate::service::edge::tls::TlsReloader;
use crate::service::edge::transport::{self, Connections};
use crate::service::edge::worker_wait::WorkerWait;
use crate::service::evidence::audit_writer::Health;
use crate::service::ops::metrics::MetricsRegistry;
use crate::service::round::api::{EngineConfig, RedDogService};

/// Health service name the liveness probe asks; SERVING until the process exits.
pub const LIVENESS: &str = "liveness";
/// Health service name of the RedDog service.
pub const SERVICE_NAME: &str = "reddog.v1.RedDog";
/// Largest request accepted (bytes); a request is at most a token and a client seed.
pub const MAX_REQUEST_BYTES: usize = 64 * 1024;
/// HTTP/2 flow-control windows: how much request data one stream, and one connection, may
/// send before the server has read it. A stream's window holds one largest request (64 KiB
/// and the 5-byte gRPC prefix); the connection's bounds what a connection can make the server
/// buffer (hyper's default is 1 MiB each).
pub(crate) const STREAM_WINDOW: u32 = 80 * 1024;
/// See [`STREAM_WINDOW`].
pub(crate) const CONNECTION_WINDOW: u32 = 128 * 1024;
/// How long the server waits for a PING answer before it drops the connection.
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);
/// In a drain, how long answers already produced may take to be written once no call is in
/// progress, before the remaining connections are closed.
pub(crate) const DRAIN_WRITE_GRACE: Duration = Duration::from_millis(500);

/// The health-only listener's limits: a few probes and operators' checks, never RedDog load.
fn health_limits(main: &TransportLimits) -> TransportLimits {
    TransportLimits {
        max_concurrent_streams_per_connection: 16,
        max_pending_handshakes: 64,
        max_connections: 64,
        idle_timeout: Duration::from_secs(60),
        ..main.clone()
    }
}

/// Why the server could not serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("reflection service: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
}

/// The tokio runtime `reddog serve` runs on (the benchmark's no-op baseline uses the same),
/// with [`worker_threads`]`(requested)` threads serving calls.
///
/// With one thread it is tokio's current-thread scheduler, with more the multi-threaded one.
/// On one core the current-thread scheduler costs a call far less. Traced with `strace -e
/// writev` (docs/BENCHMARKS.md, "One core, one thread"): there every answer leaves in one
/// `writev(2)` (HEADERS, DATA and trailers together), while under the multi-threaded
/// scheduler the trailers often leave in a `writev` of their own — 1.67 `writev` a call
/// instead of 1.03, each one a trip through the loopback TCP stack.
pub fn runtime(requested: usize) -> std::io::Result<tokio::runtime::Runtime> {
    match worker_threads(requested) {
        1 => tokio::runtime::Builder::new_current_thread().enable_all().build(),
        n => tokio::runtime::Builder::new_multi_thread().worker_threads(n).enable_all().build(),
    }
}

/// The threads that serve calls: `requested`, or with 0 one per CPU the process may use
/// (`std::thread::available_parallelism`, which counts the CPU affinity mask and the
/// cgroup's CPU quota: a pod limited to `cpu: "1"` gets one thread). Never 0.
pub fn worker_threads(requested: usize) -> usize {
    match requested {
        0 => std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
        n => n,
    }
}

/// What [`serve`] needs besides the listener.
pub(crate) struct ServerParts {
    pub health_listener: Option<TcpListener>,
    pub engine: EngineConfig,
    pub drain_timeout: Duration,
    pub limits: TransportLimits,
    pub tls: Option<TlsReloader>,
    pub reload_on_sighup: bool,
    /// The audit trail's output health: readiness follows it.
    pub audit_health: Option<tokio::sync::watch::Receiver<Health>>,
}

/// Serves on `listener` until `shutdown` resolves, then flips health to NOT_SERVING, ends
/// health streams, stops accepting, closes connections still in their handshake, lets
/// in-flight calls finish and returns — after at most `drain_timeout`.
pub(crate) async fn serve(
    listener: TcpListener,
    parts: ServerParts,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let ServerParts { health_listener, engine, drain_timeout, limits, tls, reload_on_sighup, audit_health } = parts;
    let listeners = Listeners { main: listener, health: health_listener, audit_health };
    let metrics = engine.metrics.clone();
    let service = RedDogService::new(engine);
    serve_with(listeners, service, Served { drain_timeout, limits, tls, reload_on_sighup, metrics }, shutdown).await
}

/// Serves any implementation of `reddog.v1.RedDog` over plaintext with `limits`: the same
/// transport, limits, health, reflection and shutdown as `reddog serve`, its transport
/// metrics recorded in a registry of its own (served nowhere). The gRPC benchmark
/// (`examples/grpc_ratio.rs`) serves its no-op baseline through this, so the two share every
/// transport setting.
pub async fn serve_service<S: RedDog>(
    listener: TcpListener,
    service: S,
    limits: TransportLimits,
    drain_timeout: Duration,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let metrics = MetricsRegistry::new();
    let upkeep = metrics.spawn_upkeep();
    let served = Served { drain_timeout, limits, tls: None, reload_on_sighup: false, metrics };
    let listeners = Listeners { main: listener, health: None, audit_health: None };
    let result = serve_with(listeners, service, served, shutdown).await;
    upkeep.abort();
    result
}

struct Listeners {
    main: TcpListener,
    health: Option<TcpListener>,
    audit_health: Option<tokio::sync::watch::Receiver<Health>>,
}

/// Sets readiness (`""` and [`SERVICE_NAME`]) and `reddog_serving`: SERVING while the audit
/// output is healthy and no drain has begun; returns once the drain has begun, after setting
/// NOT_SERVING (the one task that sets readiness, so a late audit recovery cannot undo the
/// drain's NOT_SERVING).
async fn readiness(
    health: tonic_health::server::HealthReporter,
    mut audit: Option<tokio::sync::watch::Receiver<Health>>,
    mut draining: tokio::sync::watch::Receiver<bool>,
    gauge: metrics::Gauge,
) {
    let mut serving = true;
    gauge.set(1.0);
    loop {
        let drain = *draining.borrow_and_update();
        let audit_ok = audit.as_mut().is_none_or(|a| a.borrow_and_update().is_none());
        let want = audit_ok && !drain;
        if want != serving {
            serving = want;
            let status = if want { ServingStatus::Serving } else { ServingStatus::NotServing };
            health.set_service_status("", status).await;
            health.set_service_status(SERVICE_NAME, status).await;
            gauge.set(if want { 1.0 } else { 0.0 });
        }
        if drain {
            return;
        }
        let audit_changed = async {
            match &mut audit {
                Some(a) => a.changed().await.is_ok(),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = draining.changed() => {}
            still = audit_changed => if !still { audit = None },
        }
    }
}

/// How [`serve_with`] serves.
struct Served {
    drain_timeout: Duration,
    limits: TransportLimits,
    tls: Option<TlsReloader>,
    reload_on_sighup: bool,
    /// Where the transport and the guard count.
    metrics: MetricsRegistry,
}

async fn serve_with<S: RedDog>(
    listeners: Listeners,
    service: S,
    served: Served,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let Served { drain_timeout, limits, tls, reload_on_sighup, metrics } = served;
    let (health, health_service) = tonic_health::server::health_reporter();
    for name in ["", SERVICE_NAME, LIVENESS] {
        health.set_service_status(name, ServingStatus::Serving).await;
    }
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let calls = CallsInProgress::new(&metrics);
    let wait = WorkerWait::spawn(&metrics);
    let service =
        Guarded::new(reddog_server(service), call_limits(&limits), calls.clone(), wait.clone(), metrics.clone());
    let routes = main_routes(service, DrainStreams::new(health_service.clone(), stop_rx.clone()))?;

    let (drain_tx, drain_rx) = tokio::sync::watch::channel(false);
    let ready = tokio::spawn(readiness(health.clone(), listeners.audit_health, drain_rx, metrics.serving_gauge()));
    if let Some(tls) = &tls {
        tls.watch(reload_on_sighup, stop_rx.clone());
    }

    // The health-only port: stopped after the drain, so probes are answered throughout.
    let (health_stop_tx, health_stop_rx) = tokio::sync::watch::channel(false);
    let health_service = DrainStreams::new(health_service, stop_rx.clone());
    let health_task =
        listeners.health.map(|l| spawn_health_listener(l, &limits, &metrics, health_service, health_stop_rx));

    let conns = Connections::with_health_min_idle(limits.max_connections, transport::HEALTH_DISPLACE_MIN_IDLE, metrics);
    conns.set_worker_wait(wait);
    let incoming = transport::incoming(listeners.main, &limits, tls, conns.clone(), stop_rx.clone());
    let serve = http2::serve(incoming, routes, http2_settings(&limits), stop_rx);
    let stop = Stop { drain: drain_tx, ready, listener: stop_tx, health_listener: health_stop_tx, health_task };
    serve_until(serve, shutdown, stop, &calls, &conns, drain_timeout).await
}

/// The switches that stop the server, in the order the drain flips them, and its tasks.
struct Stop {
    /// Starts the drain: readiness turns NOT_SERVING, and its task returns.
    drain: tokio::sync::watch::Sender<bool>,
    ready: tokio::task::JoinHandle<()>,
    /// Stops the main listener and ends health streams.
    listener: tokio::sync::watch::Sender<bool>,
    /// Stops the health-only listener, once the drain has ended.
    health_listener: tokio::sync::watch::Sender<bool>,
    health_task: Option<tokio::task::JoinHandle<()>>,
}

/// Runs `serve` until it returns or `shutdown` resolves, then drains ([`drain`]) and stops
/// the tasks beside it.
async fn serve_until(
    serve: impl Future<Output = ()>,
    shutdown: impl Future<Output = ()>,
    mut stop: Stop,
    calls: &CallsInProgress,
    conns: &Connections,
    drain_timeout: Duration,
) -> Result<(), ServeError> {
    tokio::pin!(serve);
    tokio::pin!(shutdown);
    let result = tokio::select! {
        () = &mut serve => Ok(()),
        () = &mut shutdown => {
            info!("shutting down: health NOT_SERVING, draining in-flight calls");
            let _ = stop.drain.send(true);
            let _ = (&mut stop.ready).await;
            let _ = stop.listener.send(true);
            drain(serve, calls, conns, drain_timeout).await
        }
    };
    stop.ready.abort();
    let _ = stop.health_listener.send(true);
    if let Some(task) = stop.health_task {
        task.abort();
    }
    result
}

/// The RedDog service, its requests and answers of at most [`MAX_REQUEST_BYTES`].
fn reddog_server<S: RedDog>(service: S) -> RedDogServer<S> {
    RedDogServer::new(service).max_decoding_message_size(MAX_REQUEST_BYTES).max_encoding_message_size(MAX_REQUEST_BYTES)
}

/// The main listener's services: RedDog (guarded), health and reflection.
fn main_routes<S: RedDog, H: tonic_health::pb::health_server::Health>(
    service: Guarded<RedDogServer<S>>,
    health: DrainStreams<tonic_health::pb::health_server::HealthServer<H>>,
) -> Result<Routes, ServeError> {
    // RedDog calls count as their connection's activity in `Guarded`; the others here.
    Ok(Routes::new(Activity::health(health))
        .add_service(Activity::new(reflection().build_v1()?))
        .add_service(Activity::new(reflection().build_v1alpha()?))
        .add_service(service))
}

/// A listener's HTTP/2 settings under `limits`.
fn http2_settings(limits: &TransportLimits) -> http2::Settings {
    http2::Settings {
        max_concurrent_streams: limits.max_concurrent_streams_per_connection,
        stream_window: STREAM_WINDOW,
        connection_window: CONNECTION_WINDOW,
        keepalive_interval: limits.keepalive_interval,
        keepalive_timeout: KEEPALIVE_TIMEOUT,
        max_local_error_resets: limits.max_local_error_resets,
    }
}

/// Server reflection's descriptor sets: the RedDog and health services, and google.rpc
/// (ErrorInfo, BadRequest, …) so that buf curl and grpcurl decode error details.
fn reflection() -> tonic_reflection::server::Builder<'static> {
    tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_types::pb::FILE_DESCRIPTOR_SET)
}

/// The guard's limits for RedDog calls, from the transport's.
fn call_limits(limits: &TransportLimits) -> CallLimits {
    CallLimits {
        max_in_flight: limits.max_in_flight,
        per_connection: limits.max_in_flight_per_connection,
        max_queue_wait: limits.max_queue_wait,
        max_pending_bytes: limits.max_pending_request_bytes,
        timeout: limits.request_timeout,
        max_message: MAX_REQUEST_BYTES,
    }
}

/// Serves `health` alone on the health-only `listener`, with its own small connection table
/// ([`health_limits`]), until `stop` turns true.
fn spawn_health_listener<H: tonic_health::pb::health_server::Health>(
    listener: TcpListener,
    main: &TransportLimits,
    metrics: &MetricsRegistry,
    health: DrainStreams<tonic_health::pb::health_server::HealthServer<H>>,
    stop: tokio::sync::watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    let limits = health_limits(main);
    let conns = Connections::new(limits.max_connections, metrics.clone());
    let incoming = transport::incoming(listener, &limits, None, conns, stop.clone());
    // Health checks count as any call here: this table displaces them like any other.
    tokio::spawn(http2::serve(incoming, Routes::new(Activity::new(health)), http2_settings(&limits), stop))
}

/// The drain once the listener stopped accepting: waits until no RedDog call is in progress,
/// gives answers still being written [`DRAIN_WRITE_GRACE`], closes the connections left and
/// waits for `serve` to return — all within `drain_timeout`, after which every connection is
/// closed and the drain ends with calls open.
async fn drain(
    mut serve: std::pin::Pin<&mut impl Future<Output = ()>>,
    calls: &CallsInProgress,
    conns: &Connections,
    drain_timeout: Duration,
) -> Result<(), ServeError> {
    let drain = async {
        tokio::select! {
            () = &mut serve => return,
            () = calls.none() => {}
        }
        tokio::select! {
            () = &mut serve => return,
            () = tokio::time::sleep(DRAIN_WRITE_GRACE) => {}
        }
        let open = conns.len();
        if open > 0 {
            info!(connections = open, "no call in progress; closing the connections left");
            conns.abort_all();
        }
        (&mut serve).await
    };
    match tokio::time::timeout(drain_timeout, drain).await {
        Ok(()) => {
            info!("drained; stopped");
            Ok(())
        }
        Err(_) => {
            warn!(
                timeout_secs = drain_timeout.as_secs_f64(),
                calls = calls.get(),
                "drain timed out; stopping with calls open"
            );
            conns.abort_all();
            Ok(())
        }
    }
}
