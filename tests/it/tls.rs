//! TLS and mutual TLS with certificates made by `rcgen` for each test: a client with a
//! certificate from the configured CA plays a full round; no client certificate, one from
//! another CA, or an expired one is refused at the handshake; a reload (file change, or
//! SIGHUP on the binary) swaps the served certificate without dropping the server.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, date_time_ymd};
use reddog::service::{Application, TlsSettings};
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

use crate::common::*;

/// A CA that can issue server and client certificates.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

fn ca(name: &str) -> Ca {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(rcgen::DnType::CommonName, name);
    let cert = params.self_signed(&key).unwrap();
    Ca { pem: cert.pem(), issuer: Issuer::new(params, key) }
}

/// A leaf certificate (PEM) and its key (PEM).
fn leaf(ca: &Ca, name: &str, server: bool, expired: bool) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let sans = if server {
        vec!["localhost".to_string(), "127.0.0.1".to_string()]
    } else {
        vec![format!("{name}.clients.example")]
    };
    let mut params = CertificateParams::new(sans).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, name);
    params.extended_key_usages =
        vec![if server { ExtendedKeyUsagePurpose::ServerAuth } else { ExtendedKeyUsagePurpose::ClientAuth }];
    if expired {
        params.not_before = date_time_ymd(2020, 1, 1);
        params.not_after = date_time_ymd(2021, 1, 1);
    }
    let cert = params.signed_by(&key, &ca.issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    // Write then rename, as a Secret volume update does, so a reader never sees half a file.
    // Private (0600): the engine refuses a private key others may read.
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, text).unwrap();
    std::fs::set_permissions(&tmp, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    path
}

/// A TLS client trusting `server_ca`, presenting `identity` if given. `Err` if the
/// connection or the first call fails.
async fn tls_client(
    addr: std::net::SocketAddr,
    server_ca: &str,
    identity: Option<&(String, String)>,
) -> Result<TestClient, String> {
    let mut tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(server_ca)).domain_name("localhost");
    if let Some((cert, key)) = identity {
        tls = tls.identity(Identity::from_pem(cert, key));
    }
    let endpoint = Endpoint::from_shared(format!("https://{addr}"))
        .unwrap()
        .tls_config(tls)
        .map_err(|e| format!("tls config: {e}"))?
        .connect_timeout(Duration::from_secs(5));
    let ch = tokio::time::timeout(Duration::from_secs(10), endpoint.connect())
        .await
        .map_err(|_| "connect: timed out".to_string())?
        .map_err(|e| format!("connect: {e:?}"))?;
    let mut c = TestClient::new(ch);
    // With TLS 1.3 the server checks the client's certificate after the client considers the
    // handshake done, so a refusal can surface at the first call.
    tokio::time::timeout(Duration::from_secs(10), c.get_rules(req::get_rules()))
        .await
        .map_err(|_| "first call: timed out".to_string())?
        .map_err(|s| format!("first call: {s:?}"))?;
    Ok(c)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_admits_only_current_certificates_from_the_ca() {
    let dir = tempfile::tempdir().unwrap();
    let server_ca = ca("server-ca");
    let client_ca = ca("client-ca");
    let other_ca = ca("other-ca");
    let (cert, key) = leaf(&server_ca, "reddog", true, false);
    let mut s = settings(&ring_a());
    s.tls = Some(TlsSettings {
        cert: write(dir.path(), "tls.crt", &cert),
        key: write(dir.path(), "tls.key", &key),
        client_ca: Some(write(dir.path(), "client-ca.crt", &client_ca.pem)),
        reload_poll: Duration::from_secs(3600),
    });
    let server = TestServer::spawn(s).await;

    // A good client plays a full round.
    let good = leaf(&client_ca, "platform", false, false);
    let mut c =
        tls_client(server.addr, &server_ca.pem, Some(&good)).await.expect("a client with a certificate from the CA");
    let played = c.play_round(req::round().nonce(7).bets(&[500])).await;
    assert_eq!(played.settled.reveal.unwrap().commitment, played.committed.commitment);

    // Refused at the handshake: no certificate, another CA's, an expired one.
    // The server's own count: only this test's handshakes reach it.
    let refused = || server.metric("reddog_connections_closed_total{reason=\"tls\"}").expect("registered at 0");
    assert_eq!(refused(), 0.0, "the good client's handshake was not refused");
    let foreign = leaf(&other_ca, "intruder", false, false);
    let expired = leaf(&client_ca, "old-platform", false, true);
    for (what, identity) in [
        ("no client certificate", None),
        ("a certificate from another CA", Some(&foreign)),
        ("an expired certificate", Some(&expired)),
    ] {
        let result = tls_client(server.addr, &server_ca.pem, identity).await;
        assert!(result.is_err(), "{what}: admitted");
    }
    eventually(Duration::from_secs(5), "3 TLS refusals counted", || refused() >= 3.0).await;
    // A plaintext client gets nowhere either.
    let plain =
        Endpoint::from_shared(format!("http://{}", server.addr)).unwrap().connect_timeout(Duration::from_secs(2));
    if let Ok(ch) = plain.connect().await {
        TestClient::new(ch).get_rules(req::get_rules()).await.expect_err("plaintext over a TLS port");
    }
    // The good client's connection still works.
    c.get_rules(req::get_rules()).await.unwrap();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_certificate_file_is_served_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (ca1, ca2) = (ca("first-ca"), ca("second-ca"));
    let (cert, key) = leaf(&ca1, "reddog", true, false);
    let mut s = settings(&ring_a());
    s.tls = Some(TlsSettings {
        cert: write(dir.path(), "tls.crt", &cert),
        key: write(dir.path(), "tls.key", &key),
        client_ca: None,
        reload_poll: Duration::from_millis(100),
    });
    let app = Application::build(s).await.unwrap();
    let reloader = app.tls().expect("TLS configured").clone();
    let server = TestServer::run(app);
    let mut old = tls_client(server.addr, &ca1.pem, None).await.expect("server-only TLS with the first certificate");
    assert!(tls_client(server.addr, &ca2.pem, None).await.is_err());
    assert_eq!(reloader.reloads(), (0, 0));

    // Rotate: a certificate from the second CA (key first, then the certificate). The file
    // watcher may see the new key alone first (refused), then both (reloaded).
    let (cert2, key2) = leaf(&ca2, "reddog", true, false);
    write(dir.path(), "tls.key", &key2);
    write(dir.path(), "tls.crt", &cert2);
    eventually(Duration::from_secs(10), "a reload of the changed files", || reloader.reloads().0 >= 1).await;
    let (_, refused_before) = reloader.reloads();
    tls_client(server.addr, &ca2.pem, None).await.expect("the new certificate is served after the reload");
    // New connections get the new certificate only; the old connection is not dropped.
    assert!(tls_client(server.addr, &ca1.pem, None).await.is_err());
    old.get_rules(req::get_rules()).await.unwrap();

    // A broken file set is refused and the certificate in force stays.
    write(dir.path(), "tls.crt", "not a certificate");
    eventually(Duration::from_secs(10), "the broken files refused", || reloader.reloads().1 > refused_before).await;
    assert_eq!(reloader.reloads().0, 1, "nothing reloaded from the broken files");
    tls_client(server.addr, &ca2.pem, None).await.expect("a bad reload leaves the previous certificate in force");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_mutual_tls_and_reloads_on_sighup() {
    let dir = tempfile::tempdir().unwrap();
    let (ca1, ca2, client_ca) = (ca("first-ca"), ca("second-ca"), ca("client-ca"));
    let (cert, key) = leaf(&ca1, "reddog", true, false);
    let cert_path = write(dir.path(), "tls.crt", &cert);
    let key_path = write(dir.path(), "tls.key", &key);
    let ca_path = write(dir.path(), "client-ca.crt", &client_ca.pem);
    let ring = ring_a();
    let (cert_s, key_s, ca_s) = (cert_path.to_str().unwrap(), key_path.to_str().unwrap(), ca_path.to_str().unwrap());
    let server = ServerProcess::spawn(
        &[
            ("REDDOG_KEY_RING", ring.as_str()),
            ("RUST_LOG", "warn"),
            ("REDDOG_TLS_CERT", cert_s),
            ("REDDOG_TLS_KEY", key_s),
            ("REDDOG_TLS_CLIENT_CA", ca_s),
            ("REDDOG_TLS_RELOAD_POLL_SECS", "3600"),
        ],
        std::process::Stdio::null(),
    );
    let client = leaf(&client_ca, "platform", false, false);
    tls_client(server.addr, &ca1.pem, Some(&client)).await.expect("mTLS on the binary");
    assert!(tls_client(server.addr, &ca1.pem, None).await.is_err());

    let (cert2, key2) = leaf(&ca2, "reddog", true, false);
    write(dir.path(), "tls.key", &key2);
    write(dir.path(), "tls.crt", &cert2);
    server.signal("HUP");
    let (addr, ca2, client) = (server.addr, &ca2.pem, &client);
    eventually_async(Duration::from_secs(10), "the certificate swapped on SIGHUP", || async move {
        tls_client(addr, ca2, Some(client)).await.is_ok()
    })
    .await;
    let exit = server.terminate().await;
    assert!(exit.success(), "{exit:?}");
}
