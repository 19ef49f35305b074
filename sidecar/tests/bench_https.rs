//! HTTPS at scale (ROUTING.md §8; `make bench-https`, figures in BENCHMARKS.md "HTTPS"): the whole
//! sidecar (`switchyard watch`, release build, folder mode) on 1,000 Ingresses, each a host with its
//! own Secret: its CPU and memory until the HTTPS listener and the 1,000 certificate files are
//! written, then one Secret renewed until its file holds the new certificate. A benchmark: it prints
//! figures, asserts only that the work was done.

use std::path::Path;
use std::time::{Duration, Instant};

use switchyard_watch_process::WatchProcess;

mod cpu;

use cpu::cpu_ns;

/// How many hosts, each with its own Secret.
const HOSTS: usize = 1_000;

/// CPU time of every thread of `pid`, in milliseconds.
fn cpu_ms(pid: u32) -> f64 {
    cpu_ns(pid) as f64 / 1e6
}

/// Resident memory of `pid`, in MiB.
fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

/// A Secret of a self-signed certificate for `host`, made now (ECDSA P-256, as cert-manager's
/// default key is RSA 2048: the key type changes only the reading of the key, not what is written).
fn secret(i: usize, host: &str) -> (String, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec![host.to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let indent = |pem: &str| pem.lines().map(|l| format!("    {l}\n")).collect::<String>();
    let yaml = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: tls-{i}, namespace: bench}}\ntype: kubernetes.io/tls\nstringData:\n  tls.crt: |\n{}  tls.key: |\n{}",
        indent(&cert.pem()),
        indent(&key.serialize_pem())
    );
    (yaml, cert.pem())
}

fn ingress(i: usize, host: &str) -> String {
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: web-{i}, namespace: bench}}\nspec:\n  tls: [{{hosts: [{host}], secretName: tls-{i}}}]\n  rules:\n  - host: {host}\n    http:\n      paths:\n      - {{path: /, pathType: Prefix, backend: {{service: {{name: web-{i}, port: {{number: 80}}}}}}}}\n"
    )
}

/// The certificate chain an SDS file holds.
fn sds_chain(file: &Path) -> Option<String> {
    let document: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()?;
    document["resources"][0]["tls_certificate"]["certificate_chain"]["inline_string"]
        .as_str()
        .map(str::to_owned)
}

fn wait(what: &str, watch: &WatchProcess, done: impl Fn() -> bool) -> Duration {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{what}: not done\n{}",
            watch.log()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    started.elapsed()
}

#[test]
#[ignore = "benchmark: make bench-https"]
fn bench_https_1000_hosts_with_1000_secrets() {
    let bin = std::env::var("SWITCHYARD_BIN").expect("SWITCHYARD_BIN: the release switchyard (make bench-https)");
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    for i in 0..HOSTS {
        let host = format!("h{i}.example.com");
        std::fs::write(manifests.join(format!("secret-{i}.yaml")), secret(i, &host).0).unwrap();
        std::fs::write(manifests.join(format!("ingress-{i}.yaml")), ingress(i, &host)).unwrap();
    }
    let (ecds, lds, sds) = (
        dir.path().join("ecds/filter.json"),
        dir.path().join("lds/listeners.json"),
        dir.path().join("sds"),
    );
    std::fs::create_dir_all(ecds.parent().unwrap()).unwrap();
    std::fs::create_dir_all(lds.parent().unwrap()).unwrap();
    let args = [
        "--manifests",
        manifests.to_str().unwrap(),
        "--ecds-file",
        ecds.to_str().unwrap(),
        "--wasm",
        "/nonexistent/switchyard_filter.wasm",
        "--lds-file",
        lds.to_str().unwrap(),
        "--sds-dir",
        sds.to_str().unwrap(),
    ];
    let started = Instant::now();
    let watch = WatchProcess::spawn(&bin, &args, &dir.path().join("watch.log"));
    let pid = watch.pid();
    let last = sds.join(format!("bench_tls-{}.json", HOSTS - 1));
    let listeners_written =
        || std::fs::read_to_string(&lds).is_ok_and(|t| t.matches("\"server_names\"").count() >= HOSTS) && last.exists();
    wait("the HTTPS listener and its certificates", &watch, listeners_written);
    let first = started.elapsed();
    let (cpu, rss) = (cpu_ms(pid), rss_mib(pid));
    let files = std::fs::read_dir(&sds).unwrap().count();
    assert_eq!(files, HOSTS + 1, "one file per certificate and the default's");

    std::thread::sleep(Duration::from_millis(500));
    let before = cpu_ms(pid);
    let (renewed, chain) = secret(7, "h7.example.com");
    let file = sds.join("bench_tls-7.json");
    let renewing = Instant::now();
    std::fs::write(manifests.join("secret-7.yaml"), renewed).unwrap();
    let to_file = wait("the renewed certificate", &watch, || {
        sds_chain(&file).is_some_and(|c| c == chain)
    });
    let renew_cpu = cpu_ms(pid) - before;
    let _ = renewing;
    println!("HTTPS, {HOSTS} hosts each with its own Secret (switchyard watch, release, folder mode):");
    println!("  first config (start to the listener and {files} certificate files written): {first:.2?} wall, {cpu:.0} ms of sidecar CPU, {rss:.1} MiB resident");
    println!("  one Secret renewed to its SDS file: {to_file:.2?} wall (debounce included), {renew_cpu:.0} ms of sidecar CPU");
}
