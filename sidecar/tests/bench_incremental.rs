//! `make bench-incremental`'s whole-sidecar figure: `switchyard watch --manifests` (the release
//! build, `SWITCHYARD_BIN`) on the 100,000-rule cluster of issue 13 (1,000 Ingress files of 100
//! paths each over 300 hosts, plus one HTTPProxy on host `h0.example`), writing an ECDS file. One
//! Ingress file is edited at a time, and the process's CPU (user + system, all its threads) is read
//! from `/proc/<pid>` before the edit and once it is idle again after the new table reached the ECDS
//! file (its `pushed` log line):
//! - `app500` (host `h200.example`, Ingresses only): the incremental path;
//! - `app300` (host `h0.example`, which the HTTPProxy also claims): the full path.
//!
//! Side by side in one run, alternately, `BENCH_ROUNDS` times (default 5), for each table encoding
//! in `BENCH_ENCODINGS` (default `json compact`). Not a test: `#[ignore]`, run by name.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use switchyard_watch_process::{http, Address, WatchProcess};

mod cpu;

use cpu::cpu_ns;

/// Ingress `app{i}` on host `h{i % 300}.example`, paths `/app{i}/p0` … `/app{i}/p99`; `version`
/// changes the backend of its first path.
fn ingress(i: usize, version: usize) -> String {
    let mut yaml = format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: app{i}, namespace: bench, creationTimestamp: '2024-01-01T00:{:02}:{:02}Z'}}\nspec:\n  rules:\n  - host: h{}.example\n    http:\n      paths:\n",
        i / 60 % 60,
        i % 60,
        i % 300
    );
    for p in 0..100 {
        let service = if p == 0 {
            format!("s0-v{version}")
        } else {
            format!("s{p}")
        };
        yaml.push_str(&format!(
            "      - {{path: /app{i}/p{p}, pathType: Prefix, backend: {{service: {{name: {service}, port: {{number: 80}}}}}}}}\n"
        ));
    }
    yaml
}

const PROXY: &str = "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: root, namespace: bench, creationTimestamp: '2025-01-01T00:00:00Z'}\nspec:\n  virtualhost: {fqdn: h0.example}\n  routes:\n  - services: [{name: proxy, port: 80}]\n";

/// utime + stime of `pid` from `/proc/<pid>/stat`, in clock ticks (100 per second on Linux).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    rest[11].parse::<u64>().unwrap() + rest[12].parse::<u64>().unwrap()
}

/// Waits until `pid` used under 1 ms of CPU in 300 ms; returns its CPU then (ns, ticks).
fn idle(pid: u32) -> (u64, u64) {
    let mut last = cpu_ns(pid);
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let now = cpu_ns(pid);
        if now - last < 1_000_000 {
            return (now, cpu_ticks(pid));
        }
        last = now;
    }
}

/// The log's `pushed` lines and its compile lines so far.
fn log_lines(log: &Path) -> (usize, Vec<String>) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let pushed = text.lines().filter(|l| l.contains(" pushed: ")).count();
    let compiles = text
        .lines()
        .filter(|l| l.contains("path=") && l.contains("compiled"))
        .map(str::to_owned)
        .collect();
    (pushed, compiles)
}

/// `switchyard watch --manifests MANIFESTS --ecds-file ECDS` (the .wasm path is never read: no Envoy)
/// with `more` arguments, its log in `log`.
fn watch_writing_ecds(bin: &str, manifests: &Path, ecds: &Path, log: &Path, more: &[&str]) -> WatchProcess {
    let mut args = vec![
        "--manifests",
        manifests.to_str().unwrap(),
        "--ecds-file",
        ecds.to_str().unwrap(),
        "--wasm",
        "/nonexistent/switchyard_filter.wasm",
    ];
    args.extend_from_slice(more);
    WatchProcess::spawn(bin, &args, log)
}

/// One edit: (sidecar CPU in ms from schedstat, from stat, wall ms to the push, the compile line).
fn edit(pid: u32, log: &Path, file: &Path, text: &str) -> (f64, u64, u128, String) {
    let (before_ns, before_ticks) = idle(pid);
    let (pushed, compiles) = log_lines(log);
    let started = Instant::now();
    std::fs::write(file, text).unwrap();
    let deadline = started + Duration::from_secs(120);
    let wall = loop {
        if log_lines(log).0 > pushed {
            break started.elapsed().as_millis();
        }
        assert!(Instant::now() < deadline, "no push after editing {}", file.display());
        std::thread::sleep(Duration::from_millis(5));
    };
    let (after_ns, after_ticks) = idle(pid);
    let line = log_lines(log).1.get(compiles.len()).cloned().unwrap_or_default();
    (
        (after_ns - before_ns) as f64 / 1e6,
        (after_ticks - before_ticks) * 10,
        wall,
        line,
    )
}

/// One kind of edit and what it cost, round by round (milliseconds).
struct Figures {
    what: &'static str,
    /// The Ingress edited.
    ingress: usize,
    cpu: Vec<f64>,
    stat: Vec<f64>,
    wall: Vec<f64>,
}

impl Figures {
    fn new(what: &'static str, ingress: usize) -> Figures {
        Figures {
            what,
            ingress,
            cpu: Vec::new(),
            stat: Vec::new(),
            wall: Vec::new(),
        }
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[test]
#[ignore]
fn bench_incremental_watch_one_changed_ingress_in_100k_rules() {
    let bin = std::env::var("SWITCHYARD_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_switchyard").to_owned());
    let rounds: usize = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let encodings = std::env::var("BENCH_ENCODINGS").unwrap_or_else(|_| "json compact".to_owned());
    let dir = tempfile::tempdir().unwrap();
    let manifests: PathBuf = dir.path().join("manifests");
    std::fs::create_dir(&manifests).unwrap();
    for i in 0..1_000 {
        std::fs::write(manifests.join(format!("app{i}.yaml")), ingress(i, 0)).unwrap();
    }
    std::fs::write(manifests.join("proxy.yaml"), PROXY).unwrap();
    eprintln!("switchyard: {bin}");
    for encoding in encodings.split_whitespace() {
        let log = dir.path().join(format!("watch-{encoding}.log"));
        let ecds = dir.path().join(format!("ecds-{encoding}.yaml"));
        let watch = watch_writing_ecds(&bin, &manifests, &ecds, &log, &["--table-encoding", encoding]);
        let pid = watch.pid();
        let started = Instant::now();
        while log_lines(&log).0 == 0 {
            assert!(started.elapsed() < Duration::from_secs(300), "no first push");
            std::thread::sleep(Duration::from_millis(50));
        }
        let (startup_ns, _) = idle(pid);
        eprintln!(
            "--table-encoding {encoding}: first table after {:.1} s, {:.0} ms of CPU; ECDS file {} bytes",
            started.elapsed().as_secs_f64(),
            startup_ns as f64 / 1e6,
            std::fs::metadata(&ecds).map(|m| m.len()).unwrap_or(0)
        );
        let mut figures = [
            Figures::new("incremental (app500, host h200)", 500),
            Figures::new("full (app300, host h0 shared with an HTTPProxy)", 300),
        ];
        for round in 0..rounds {
            for figures in &mut figures {
                let file = manifests.join(format!("app{}.yaml", figures.ingress));
                let (cpu, ticks_ms, wall, line) = edit(pid, &log, &file, &ingress(figures.ingress, round + 1));
                eprintln!(
                    "  {}: {cpu:.1} ms CPU (stat: {ticks_ms} ms), push after {wall} ms | {line}",
                    figures.what
                );
                figures.cpu.push(cpu);
                figures.stat.push(ticks_ms as f64);
                figures.wall.push(wall as f64);
            }
        }
        for f in &mut figures {
            eprintln!(
                "--table-encoding {encoding}, {}: median {:.0} ms of sidecar CPU (schedstat; /proc/stat {:.0} ms), the ECDS file written {:.0} ms after the edit (100 ms of it debounce)",
                f.what,
                median(&mut f.cpu),
                median(&mut f.stat),
                median(&mut f.wall)
            );
        }
        drop(watch);
    }
}

/// POST `body` to `/explain` at `addr`: the status code (0 when the connection failed).
fn explain(addr: std::net::SocketAddr, body: &str) -> u16 {
    http(addr, "POST", "/explain", &[], body).map_or(0, |answer| answer.code)
}

/// Wall time from an edit of `file` to its table in the ECDS file (the `pushed` log line), in ms.
fn edit_to_table(log: &Path, file: &Path, text: &str) -> f64 {
    let pushed = log_lines(log).0;
    let started = Instant::now();
    std::fs::write(file, text).unwrap();
    while log_lines(log).0 == pushed {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no push after editing {}",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    started.elapsed().as_secs_f64() * 1e3
}

/// `make bench-explain`: the same 100,000-rule folder, `switchyard watch` with `--dashboard-listen`;
/// the edit-to-table latency of one changed Ingress (incremental path) with the dashboard idle, then
/// while `BENCH_CLIENTS` (default 100) clients each send `POST /explain` for a request on the
/// largest host without pause. Alternately, `BENCH_ROUNDS` (default 5) edits each. Prints the
/// medians, maxima and their ratio (the goal: within 2x of idle), and how the explains were answered.
#[test]
#[ignore]
fn bench_explain_burst_during_edits_in_100k_rules() {
    use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
    use std::sync::Arc;
    let bin = std::env::var("SWITCHYARD_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_switchyard").to_owned());
    let env_number =
        |name: &str, default: usize| std::env::var(name).ok().and_then(|r| r.parse().ok()).unwrap_or(default);
    let (rounds, clients) = (env_number("BENCH_ROUNDS", 5), env_number("BENCH_CLIENTS", 100));
    let dir = tempfile::tempdir().unwrap();
    let manifests: PathBuf = dir.path().join("manifests");
    std::fs::create_dir(&manifests).unwrap();
    for i in 0..1_000 {
        std::fs::write(manifests.join(format!("app{i}.yaml")), ingress(i, 0)).unwrap();
    }
    let log = dir.path().join("watch.log");
    let ecds = dir.path().join("ecds.yaml");
    let mut watch = watch_writing_ecds(&bin, &manifests, &ecds, &log, &["--dashboard-listen", "127.0.0.1:0"]);
    let started = Instant::now();
    while log_lines(&log).0 == 0 {
        assert!(started.elapsed() < Duration::from_secs(300), "no first push");
        std::thread::sleep(Duration::from_millis(50));
    }
    let addr = watch.wait_for_address(Address::Dashboard, Duration::from_secs(10));
    let body = r#"{"url": "http://h200.example/app500/p50/x", "headers": ["x-a: 1"], "cookies": ["c=1"]}"#;
    let one = Instant::now();
    assert_eq!(explain(addr, body), 200);
    eprintln!(
        "switchyard: {bin}; one explain on the 100,000-rule table: {:.1} ms",
        one.elapsed().as_secs_f64() * 1e3
    );

    // The clients' phase: paused, sending, or done.
    const PAUSED: u8 = 0;
    const SENDING: u8 = 1;
    const DONE: u8 = 2;
    let phase = Arc::new(AtomicU8::new(PAUSED));
    let answered: Arc<[AtomicU64; 3]> = Arc::new(Default::default());
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let (phase, answered) = (phase.clone(), answered.clone());
            std::thread::spawn(move || loop {
                match phase.load(Ordering::Relaxed) {
                    DONE => return,
                    PAUSED => std::thread::sleep(Duration::from_millis(5)),
                    _ => {
                        let slot = match explain(addr, body) {
                            200 => 0,
                            503 => 1,
                            _ => 2,
                        };
                        answered[slot].fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    let (mut idle, mut loaded) = (Vec::new(), Vec::new());
    let file = manifests.join("app500.yaml");
    for round in 0..rounds {
        for burst in [false, true] {
            phase.store(if burst { SENDING } else { PAUSED }, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(500));
            let ms = edit_to_table(&log, &file, &ingress(500, 2 * round + usize::from(burst) + 1));
            eprintln!(
                "  round {round}, {}: {ms:.0} ms",
                if burst { "explain burst" } else { "idle dashboard" }
            );
            if burst {
                loaded.push(ms)
            } else {
                idle.push(ms)
            }
        }
    }
    phase.store(DONE, Ordering::Relaxed);
    for thread in threads {
        let _ = thread.join();
    }
    let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    let (idle_max, loaded_max) = (max(&idle), max(&loaded));
    let (idle_median, loaded_median) = (median(&mut idle), median(&mut loaded));
    let [ok, busy, other] = [0, 1, 2].map(|i| answered[i].load(Ordering::Relaxed));
    eprintln!(
        "edit-to-table, one changed Ingress among 100,000 rules: idle median {idle_median:.0} ms (max {idle_max:.0}), \
         during {clients} concurrent explains median {loaded_median:.0} ms (max {loaded_max:.0}): ratio {:.2} (max {:.2}); \
         explains answered 200: {ok}, 503 busy: {busy}, other: {other}",
        loaded_median / idle_median,
        loaded_max / idle_max
    );
}
