//! Traces across services, against a real OTLP/gRPC receiver: an in-test
//! `opentelemetry.proto.collector.trace.v1.TraceService` built from the published OTLP
//! protos (crate `opentelemetry-proto`, its generated tonic server). The real binary runs as
//! a child process exporting to it; calls carry a W3C `traceparent` with a known trace id,
//! and the exported spans must continue that trace under the caller's span, with the RPC's
//! attributes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{Span, span::SpanKind, status::StatusCode};
use reddog::service::proto;
use tonic::{Request, Response, Status};

use crate::common::{ServerProcess, connect, eventually, req};

/// A received span with its resource's attributes.
type Received = (Vec<KeyValue>, Span);

#[derive(Clone, Default)]
struct Receiver {
    /// Every span received.
    spans: Arc<Mutex<Vec<Received>>>,
}

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: Request<ExportTraceServiceRequest>,
    ) -> Result<Response<ExportTraceServiceResponse>, Status> {
        let mut spans = self.spans.lock().unwrap();
        for rs in request.into_inner().resource_spans {
            let resource = rs.resource.map(|r| r.attributes).unwrap_or_default();
            for ss in rs.scope_spans {
                for span in ss.spans {
                    spans.push((resource.clone(), span));
                }
            }
        }
        Ok(Response::new(ExportTraceServiceResponse { partial_success: None }))
    }
}

fn attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a any_value::Value> {
    attrs.iter().find(|kv| kv.key == key).and_then(|kv| kv.value.as_ref()).and_then(|v: &AnyValue| v.value.as_ref())
}

fn string_attr(attrs: &[KeyValue], key: &str) -> Option<String> {
    match attr(attrs, key) {
        Some(any_value::Value::StringValue(s)) => Some(s.clone()),
        _ => None,
    }
}

fn int_attr(attrs: &[KeyValue], key: &str) -> Option<i64> {
    match attr(attrs, key) {
        Some(any_value::Value::IntValue(i)) => Some(*i),
        _ => None,
    }
}

fn with_traceparent<T>(message: T, traceparent: &str) -> Request<T> {
    let mut req = Request::new(message);
    req.metadata_mut().insert("traceparent", traceparent.parse().unwrap());
    req.metadata_mut().insert("tracestate", "platform=7".parse().unwrap());
    req
}

/// Waits (bounded) until the receiver holds a span of `trace_id`, and returns it.
async fn span_of(rx: &Receiver, trace_id: &[u8]) -> Received {
    let find = || rx.spans.lock().unwrap().iter().find(|(_, s)| s.trace_id == trace_id).cloned();
    eventually(Duration::from_secs(15), &format!("a span with trace id {}", hex::encode(trace_id)), || {
        find().is_some()
    })
    .await;
    find().unwrap()
}

#[tokio::test]
async fn a_callers_traceparent_becomes_the_parent_of_the_engines_span_exported_over_otlp() {
    let receiver = Receiver::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let otlp_addr = listener.local_addr().unwrap();
    let svc = TraceServiceServer::new(receiver.clone());
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(svc)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    let endpoint = format!("http://{otlp_addr}");
    let engine = ServerProcess::spawn(
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_SERVICE_NAME", "reddog-under-test"),
            // Export batches every 100 ms instead of 5 s.
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("RUST_LOG", "warn"),
        ],
        std::process::Stdio::null(),
    );
    let mut client = connect(engine.addr).await;

    // A successful call and a refused one, each in its own caller trace.
    let ok_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let ok_parent = "00f067aa0ba902b7";
    client
        .raw
        .get_rules(with_traceparent(req::get_rules().build(), &format!("00-{ok_trace}-{ok_parent}-01")))
        .await
        .expect("GetRules");
    let bad_trace = "0af7651916cd43dd8448eb211c80319c";
    let bad_parent = "b7ad6b7169203331";
    let refused = client
        .raw
        .settle(with_traceparent(req::settle(vec![1, 2, 3]).build(), &format!("00-{bad_trace}-{bad_parent}-01")))
        .await
        .expect_err("a bad token is refused");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);

    let (resource, span) = span_of(&receiver, &hex::decode(ok_trace).unwrap()).await;
    assert_eq!(hex::encode(&span.parent_span_id), ok_parent, "the caller's span is the parent");
    assert_eq!(span.name, "reddog.v1.RedDog/GetRules");
    assert_eq!(span.kind, SpanKind::Server as i32);
    assert_eq!(string_attr(&span.attributes, "rpc.system").as_deref(), Some("grpc"));
    assert_eq!(string_attr(&span.attributes, "rpc.service").as_deref(), Some("reddog.v1.RedDog"));
    assert_eq!(string_attr(&span.attributes, "rpc.method").as_deref(), Some("GetRules"));
    assert_eq!(int_attr(&span.attributes, "rpc.grpc.status_code"), Some(0));
    assert_eq!(span.trace_state, "platform=7", "the caller's tracestate is kept");
    assert_eq!(string_attr(&resource, "service.name").as_deref(), Some("reddog-under-test"));

    let (_, refused_span) = span_of(&receiver, &hex::decode(bad_trace).unwrap()).await;
    assert_eq!(hex::encode(&refused_span.parent_span_id), bad_parent);
    assert_eq!(refused_span.name, "reddog.v1.RedDog/Settle");
    assert_eq!(int_attr(&refused_span.attributes, "rpc.grpc.status_code"), Some(tonic::Code::InvalidArgument as i64));
    // A caller's mistake is not a server error: the span status stays unset.
    assert_ne!(refused_span.status.map(|s| s.code), Some(StatusCode::Error as i32));
    // No token bytes or seeds in the exported attributes.
    for kv in &refused_span.attributes {
        assert!(!format!("{:?}", kv.value).contains("AQID"), "token bytes in a span attribute: {kv:?}");
    }

    // A call without traceparent starts a new trace of its own (no parent).
    client.get_rules(proto::GetRulesRequest::default()).await.unwrap();
    let root = || {
        let spans = receiver.spans.lock().unwrap();
        spans.iter().find(|(_, s)| s.parent_span_id.is_empty() && s.name == "reddog.v1.RedDog/GetRules").cloned()
    };
    eventually(Duration::from_secs(15), "a root span for the call without traceparent", || root().is_some()).await;
    let (_, root) = root().unwrap();
    assert_ne!(hex::encode(&root.trace_id), ok_trace);

    let status = engine.terminate().await;
    assert!(status.success(), "exit {status:?}");
    server.abort();
}

/// A collector that accepts connections and never answers (the production overlay's collector
/// unreachable behind a silent firewall): exports time out, the engine counts each failure in
/// `reddog_otlp_export_failures_total`, logs one WARN for them all (at most one a minute) and
/// no ERROR, and SIGTERM still ends the process at once: no log line after "drained; stopped"
/// and no wait for the queued spans.
#[tokio::test]
async fn an_unreachable_collector_costs_one_warning_and_no_shutdown_time() {
    let blackhole = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", blackhole.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut conns = Vec::new();
        while let Ok((c, _)) = blackhole.accept().await {
            conns.push(c);
        }
    });
    let mut engine = ServerProcess::builder()
        .envs(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            // Each export gives up after 500 ms (the default is 10 s).
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "500"),
            ("RUST_LOG", "info"),
        ])
        .log(crate::common::Log::Keep)
        .spawn();
    let mut client = connect(engine.addr).await;
    // Spans to export, until at least three exports have failed.
    let failures = async {
        loop {
            client.raw.get_rules(req::get_rules().build()).await.expect("GetRules");
            if engine.scrape("reddog_otlp_export_failures_total").await.unwrap_or(0.0) >= 3.0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), failures).await.expect("three failed exports within 60 s");
    client.raw.get_rules(req::get_rules().build()).await.expect("GetRules: spans queued at shutdown");
    let failed = engine.scrape("reddog_otlp_export_failures_total").await.unwrap();
    let started = std::time::Instant::now();
    engine.signal("TERM");
    let status = engine.wait_exit(Duration::from_secs(30)).await;
    let took = started.elapsed();
    held.abort();
    let lines = engine.log_lines();
    let warnings: Vec<&String> = lines.iter().filter(|l| l.contains("OTLP trace export failing")).collect();
    let errors: Vec<&String> = lines.iter().filter(|l| l.contains(" ERROR ")).collect();
    println!(
        "{failed} failed exports, {} warning(s), {} error line(s); SIGTERM to exit {took:?}",
        warnings.len(),
        errors.len()
    );
    assert!(status.success(), "{lines:#?}");
    assert_eq!(warnings.len(), 1, "{lines:#?}");
    assert!(warnings[0].contains(" WARN "), "{}", warnings[0]);
    assert!(errors.is_empty(), "{errors:#?}");
    assert!(lines.last().is_some_and(|l| l.contains("drained; stopped")), "lines after the drain: {lines:#?}");
    // The drain has no call to wait for; the bound is generous for a loaded machine, and
    // well under the SDK's 5 s flush timeout the engine no longer waits for.
    assert!(took < Duration::from_secs(3), "SIGTERM to exit took {took:?}");
}
