//! `make soak`: Envoy's memory under a fast stream of large tables (issue 10).
//!
//! A real Envoy (`SOAK_WORKERS` workers, default 2) reads the filter from its ECDS file, which a real
//! `switchyard watch --manifests` (`SWITCHYARD_BIN`, the release build) writes. The manifests hold
//! `SOAK_RULES` rules (default 10,000: Ingresses of two paths, 100 to a file); one file is edited
//! every `SOAK_GAP_MS` (default 110, just over the watcher's 100 ms debounce, so every edit is a
//! table: the fastest rate `switchyard watch` produces) until the sidecar reports `SOAK_PUSHES`
//! pushes (default 1,000). With `SOAK_PACED=1` the sidecar gets `--envoy-admin`, so it pushes the
//! next table only once Envoy applied the last one (edits in between are coalesced).
//!
//! With `SOAK_DIRECT_MS=N` there is no sidecar: the soak itself writes the ECDS file (a
//! `SOAK_RULES`-rule table, a new generation each time) every N ms, as a producer faster than this
//! machine's `switchyard watch` (the issue's 0.2 s), to show what Envoy does when unpaced tables
//! outrun it.
//!
//! Printed: Envoy's RSS (from /proc) and its ECDS counters every `SOAK_EVERY` pushes (default 50),
//! then after the pushes stop and Envoy is quiet; the verdict compares the final RSS with the RSS
//! after the first `SOAK_EVERY` pushes (warm: V8 has compiled the module, a table is loaded):
//! flat when within 10 %. Exit 0 when flat, 1 otherwise.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use switchyard_e2e::{ecds_document, fresh_dir, get, required_path, send, write_file, ConfigForm, Envoy, FILTER_NAME};

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

const PER_FILE: usize = 100;

/// One manifest file: `PER_FILE` Ingresses of two paths each; `edit` changes the first one's path.
fn manifest_file(file: usize, edit: u64) -> String {
    let mut text = String::new();
    for i in 0..PER_FILE {
        let n = file * PER_FILE + i;
        let first = if i == 0 { format!("/e{edit}") } else { "/a".to_owned() };
        text.push_str(&format!(
            "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: ing-{n}, namespace: soak, creationTimestamp: \"2024-01-01T00:00:00Z\"}}\n\
             spec:\n  rules:\n  - host: h{n}.soak.example\n    http:\n      paths:\n\
             \x20     - {{path: {first}, pathType: Prefix, backend: {{service: {{name: s{n}, port: {{number: 80}}}}}}}}\n\
             \x20     - {{path: /b/c, pathType: Prefix, backend: {{service: {{name: t{n}, port: {{number: 80}}}}}}}}\n---\n"
        ));
    }
    text
}

/// `switchyard_pushes_total` summed over sinks, from the sidecar's /metrics.
fn pushes(metrics: SocketAddr) -> u64 {
    let Ok(response) = send(metrics, &get("switchyard", "/metrics")) else {
        return 0;
    };
    response
        .body
        .lines()
        .filter(|l| l.starts_with("switchyard_pushes_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

struct Sidecar(Child);

impl Drop for Sidecar {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn main() {
    let pushes_wanted = env_number("SOAK_PUSHES", 1000);
    let rules = env_number("SOAK_RULES", 10_000) as usize;
    let workers = env_number("SOAK_WORKERS", 2) as usize;
    let gap = Duration::from_millis(env_number("SOAK_GAP_MS", 110));
    let every = env_number("SOAK_EVERY", 50).max(1);
    let paced = env_number("SOAK_PACED", 0) == 1;
    let switchyard = required_path("SWITCHYARD_BIN");
    let wasm = required_path("SWITCHYARD_WASM");

    let envoy = Envoy::start_with(r#"{"version": 1, "rules": []}"#, &[], ConfigForm::StringValue, workers);
    let manifests = fresh_dir("soak-manifests");
    let files = rules.div_ceil(2 * PER_FILE);
    for file in 0..files {
        write_file(&manifests.join(format!("f{file}.yaml")), &manifest_file(file, 0));
    }
    let listen = SocketAddr::from(([127, 0, 0, 1], switchyard_free_port::free_port()));
    let mut command = Command::new(&switchyard);
    command
        .args(["watch", "--manifests"])
        .arg(&manifests)
        .arg("--ecds-file")
        .arg(envoy.ecds_file())
        .arg("--wasm")
        .arg(&wasm)
        .args(["--listen", &listen.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if paced {
        command.args(["--envoy-admin", &envoy.admin.to_string()]);
    }
    let direct = env_number("SOAK_DIRECT_MS", 0);
    let _sidecar = (direct == 0).then(|| {
        Sidecar(
            command
                .spawn()
                .unwrap_or_else(|e| panic!("{}: {e}", switchyard.display())),
        )
    });
    let direct_table = |generation: u64| {
        let rules: Vec<serde_json::Value> = (0..rules)
            .map(|n| {
                serde_json::json!({
                    "name": format!("Ingress/soak/ing-{n}#0"),
                    "host": format!("h{}.soak.example", n / 2),
                    "path": { "type": "segment_prefix", "value": format!("/p{}", n % 2) },
                    "action": { "route": { "backends": [ { "cluster": format!("soak/s{n}:80") } ] } }
                })
            })
            .collect();
        serde_json::json!({ "version": 1, "generation": format!("direct-{generation}"), "rules": rules }).to_string()
    };
    let pushed = |edits: u64| if direct == 0 { pushes(listen) } else { edits };

    let ecds = |what: &str| {
        envoy
            .stat(&format!("extension_config_discovery.http_filter.{FILTER_NAME}.{what}"))
            .unwrap_or(0)
    };
    let rss_mib = || envoy.rss_kib().unwrap_or(0) as f64 / 1024.0;
    println!(
        "soak: {rules} rules in {files} files, {workers} Envoy workers, an edit every {} ms until {pushes_wanted} pushes{}",
        gap.as_millis(),
        match (direct, paced) {
            (0, true) => ", pushes paced by Envoy's admin (--envoy-admin)".to_owned(),
            (0, false) => String::new(),
            (ms, _) => format!(", no sidecar: the ECDS file written every {ms} ms"),
        }
    );
    println!(
        "{:>7} {:>7} {:>9} {:>9} {:>9}",
        "edits", "pushes", "applied", "rejected", "RSS MiB"
    );
    let started = Instant::now();
    let mut baseline = None;
    let mut peak: f64 = 0.0;
    let mut edits = 0u64;
    let mut next_report = every;
    loop {
        let done = pushed(edits);
        if done >= next_report {
            let rss = rss_mib();
            peak = peak.max(rss);
            baseline.get_or_insert(rss);
            println!(
                "{edits:>7} {done:>7} {:>9} {:>9} {rss:>9.1}",
                ecds("update_success"),
                ecds("update_rejected")
            );
            next_report = done + every;
        }
        if done >= pushes_wanted {
            break;
        }
        edits += 1;
        if direct > 0 {
            let tmp = envoy.ecds_file().with_extension("tmp");
            let table = direct_table(edits);
            write_file(&tmp, &ecds_document(&wasm, &table, ConfigForm::StringValue));
            std::fs::rename(&tmp, envoy.ecds_file()).unwrap_or_else(|e| panic!("rename: {e}"));
            sleep(Duration::from_millis(direct));
            continue;
        }
        let file = (edits as usize) % files;
        write_file(&manifests.join(format!("f{file}.yaml")), &manifest_file(file, edits));
        sleep(gap);
    }
    let pushing = started.elapsed();
    // Quiet: Envoy's ECDS counters unchanged for 5 s.
    let mut last = (ecds("update_success"), ecds("update_rejected"));
    let mut quiet_since = Instant::now();
    while quiet_since.elapsed() < Duration::from_secs(5) {
        sleep(Duration::from_millis(500));
        let now = (ecds("update_success"), ecds("update_rejected"));
        if now != last {
            last = now;
            quiet_since = Instant::now();
        }
        peak = peak.max(rss_mib());
    }
    let final_rss = rss_mib();
    let baseline = baseline.unwrap_or(final_rss);
    println!(
        "after the pushes (quiet): {edits} edits, {} pushes in {:.0} s, {} applied, {} rejected, RSS {final_rss:.1} MiB",
        pushed(edits),
        pushing.as_secs_f64(),
        last.0,
        last.1
    );
    let ratio = final_rss / baseline;
    let flat = ratio <= 1.10;
    println!(
        "verdict: RSS {baseline:.1} MiB after the first {every} pushes, {final_rss:.1} MiB at the end ({:+.1} %), peak {peak:.1} MiB: {}",
        (ratio - 1.0) * 100.0,
        if flat { "FLAT (within 10 %)" } else { "NOT FLAT (more than 10 %)" }
    );
    let _ = std::fs::remove_dir_all(&manifests);
    std::process::exit(if flat { 0 } else { 1 });
}
