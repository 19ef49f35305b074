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
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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

/// CPU time of every thread of `pid`, in nanoseconds (`/proc/<pid>/task/*/schedstat`).
fn cpu_ns(pid: u32) -> u64 {
    let mut total = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().flatten() {
        let text = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        total += text
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
    }
    total
}

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

struct Watch(Child);

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
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
        let watch = Watch(
            Command::new(&bin)
                .args(["watch", "--manifests"])
                .arg(&manifests)
                .arg("--ecds-file")
                .arg(&ecds)
                .args([
                    "--wasm",
                    "/nonexistent/switchyard_filter.wasm",
                    "--table-encoding",
                    encoding,
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .unwrap(),
        );
        let pid = watch.0.id();
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
