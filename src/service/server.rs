//! The gRPC server: the RedDog service, standard health and server reflection, request
//! limits, and graceful shutdown.
//!
//! Health names: `""` (overall) and `reddog.v1.RedDog` are SERVING while the server accepts
//! calls and NOT_SERVING once draining starts; `liveness` stays SERVING until the process
//! exits. Point a Kubernetes readiness probe at `""` and its liveness probe at `liveness`.

use std::future::Future;
use std::time::Duration;

use tokio::net::TcpListener;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tonic_health::ServingStatus;
use tracing::{info, warn};

use super::api::{EngineConfig, RedDogService};
use super::proto::{self, red_dog_server::RedDog, red_dog_server::RedDogServer};

/// Health service name the liveness probe asks; SERVING until the process exits.
pub const LIVENESS: &str = "liveness";
/// Health service name of the RedDog service.
pub const SERVICE_NAME: &str = "reddog.v1.RedDog";
/// Largest request accepted (bytes); a request is at most a token and a client seed.
pub const MAX_REQUEST_BYTES: usize = 64 * 1024;

/// How the server runs.
#[derive(Debug)]
pub struct ServerConfig {
    pub engine: EngineConfig,
    /// How long in-flight calls may take to finish after shutdown starts.
    pub drain_timeout: Duration,
}

/// Why the server stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("gRPC transport: {0}")]
    Transport(#[from] tonic::transport::Error),
    #[error("reflection service: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
}

/// The tokio runtime `reddog serve` runs on (the benchmark's no-op baseline uses the same).
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build()
}

/// Serves on `listener` until `shutdown` resolves, then flips health to NOT_SERVING, stops
/// accepting, lets in-flight calls finish and returns — after at most `drain_timeout`.
pub async fn run(
    listener: TcpListener,
    config: ServerConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    serve(listener, RedDogService::new(config.engine), config.drain_timeout, shutdown).await
}

/// [`run`] with any implementation of `reddog.v1.RedDog`: the same transport, limits, health,
/// reflection and shutdown. `run` serves the engine; the gRPC benchmark
/// (`examples/grpc_ratio.rs`) serves a no-op baseline through this so both share every
/// transport setting.
pub async fn serve<S: RedDog>(
    listener: TcpListener,
    service: S,
    drain_timeout: Duration,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_service_status("", ServingStatus::Serving).await;
    health.set_service_status(SERVICE_NAME, ServingStatus::Serving).await;
    health.set_service_status(LIVENESS, ServingStatus::Serving).await;

    let reflection_v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;

    let service = RedDogServer::new(service)
        .max_decoding_message_size(MAX_REQUEST_BYTES)
        .max_encoding_message_size(MAX_REQUEST_BYTES);

    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let serve = Server::builder()
        .http2_keepalive_interval(Some(Duration::from_secs(30)))
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(service)
        // Accepted sockets get TCP_NODELAY here: `Server::tcp_nodelay` only applies when tonic
        // binds the listener itself, and without it responses stall on Nagle + delayed ACK.
        .serve_with_incoming_shutdown(TcpIncoming::from(listener).with_nodelay(Some(true)), async {
            let _ = stop_rx.await;
        });
    tokio::pin!(serve);
    tokio::pin!(shutdown);

    tokio::select! {
        result = &mut serve => return result.map_err(Into::into),
        () = &mut shutdown => {}
    }
    info!("shutting down: health NOT_SERVING, draining in-flight calls");
    health.set_service_status("", ServingStatus::NotServing).await;
    health.set_service_status(SERVICE_NAME, ServingStatus::NotServing).await;
    let _ = stop_tx.send(());
    match tokio::time::timeout(drain_timeout, serve).await {
        Ok(result) => {
            info!("drained; stopped");
            result.map_err(Into::into)
        }
        Err(_) => {
            warn!(timeout_secs = drain_timeout.as_secs_f64(), "drain timed out; stopping with calls open");
            Ok(())
        }
    }
}
