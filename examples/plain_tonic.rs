//! The gRPC benchmark's baseline: what a user would otherwise run — a plain tonic server
//! with tonic's default settings (`Server::builder()`, tokio's default multi-thread runtime,
//! no transport limits, no log subscriber) serving `reddog.v1.RedDog` with canned answers.
//!
//! ```text
//! plain_tonic RESPONSES_FILE
//! ```
//! RESPONSES_FILE holds the engine's real answers to the benchmark's requests (GetRules,
//! CommitSeed, StartRound, Decide, Settle), each a 4-byte big-endian length and the encoded
//! message, as `examples/grpc_ratio.rs` writes it; each RPC answers its stored copy, so the
//! server moves the same bytes as the engine and does none of its work. Prints
//! `listening on ADDR` (127.0.0.1, any free port) and serves until SIGINT.

use std::io::Write;

use reddog::service::proto::red_dog_server::RedDogServer;

#[path = "support/canned.rs"]
mod canned;

#[tokio::main]
async fn main() {
    let path = std::env::args().nth(1).expect("usage: plain_tonic RESPONSES_FILE");
    let canned = canned::read_responses(std::path::Path::new(&path));
    // What `Server::serve(addr)` does with tonic's defaults (TCP_NODELAY on), on a port the
    // caller learns from the `listening on` line.
    let incoming = tonic::transport::server::TcpIncoming::bind("127.0.0.1:0".parse().unwrap())
        .expect("bind")
        .with_nodelay(Some(true));
    println!("listening on {}", incoming.local_addr().expect("addr"));
    let _ = std::io::stdout().flush();
    tonic::transport::Server::builder()
        .add_service(RedDogServer::new(canned))
        .serve_with_incoming_shutdown(incoming, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .expect("serve");
}
