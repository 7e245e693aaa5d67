//! The Prometheus endpoint: `GET /metrics` answers the text format over HTTP/1.1 (with
//! keep-alive), `GET /` a pointer, anything else 404.

use std::io::{BufRead, BufReader, Read, Write};
use std::time::Duration;

/// Sends `request` and reads one response: (status line, body).
fn exchange(stream: &mut std::net::TcpStream, request: &str) -> (String, String) {
    stream.write_all(request.as_bytes()).unwrap();
    let mut r = BufReader::new(stream.try_clone().unwrap());
    let mut status = String::new();
    r.read_line(&mut status).unwrap();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        r.read_line(&mut h).unwrap();
        if h == "\r\n" {
            break;
        }
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).unwrap();
    (
        status.trim_end().to_string(),
        String::from_utf8(body).unwrap(),
    )
}

#[tokio::test]
async fn metrics_endpoint_serves_the_text_format_and_404s_the_rest() {
    let addr = reddog::service::metrics::spawn("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap()
        .expect("the recorder is installed");
    // Handles registered by a service show at 0 from the start.
    let _svc = reddog::service::metrics::Metrics::register();
    let result = tokio::task::spawn_blocking(move || {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let get = |path: &str| format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n");
        // Two requests on one connection: keep-alive works.
        let metrics = exchange(&mut s, &get("/metrics"));
        let root = exchange(&mut s, &get("/"));
        let missing = exchange(&mut s, &get("/nope"));
        let post = exchange(
            &mut s,
            "POST /metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n",
        );
        (metrics, root, missing, post)
    })
    .await
    .unwrap();
    let (metrics, root, missing, post) = result;
    assert_eq!(metrics.0, "HTTP/1.1 200 OK");
    assert!(
        metrics
            .1
            .contains("reddog_rpc_requests_total{method=\"Decide\",code=\"OK\"} "),
        "{}",
        metrics.1
    );
    assert_eq!(root.0, "HTTP/1.1 200 OK");
    assert!(root.1.contains("/metrics"));
    assert_eq!(missing.0, "HTTP/1.1 404 Not Found");
    assert_eq!(post.0, "HTTP/1.1 404 Not Found");
}
