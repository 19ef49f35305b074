//! Helpers of the Envoy benchmarks: a paced request loop on one keep-alive connection that records
//! each request's latency, an RSS sampler, the filter's `table accepted … loaded in` log lines, Envoy's
//! own route configuration for a table, and percentiles.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::response_complete;

/// One request of a [`RequestLoop`]: when it was sent (seconds since the loop's start), its
/// latency in milliseconds and its status (0 when the connection failed).
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// Seconds since the loop started, when the request was sent.
    pub at: f64,
    /// From the first byte written to the last byte of the response read, in milliseconds.
    pub ms: f64,
    /// The response's status; 0 when the connection failed.
    pub status: u16,
}

/// A thread sending `GET path` with `Host: host` to `addr` on one keep-alive connection, one
/// request every `every` (or at once after a slower response: a stalled request delays the next, as
/// a client's would), until stopped.
pub struct RequestLoop {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<Sample>>,
    /// When the loop started: [`Sample::at`] counts from here.
    pub started: Instant,
}

impl RequestLoop {
    /// Starts the loop.
    pub fn start(addr: SocketAddr, host: &str, path: &str, every: Duration) -> RequestLoop {
        let stop = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        let request = format!("GET {path} HTTP/1.1\r\nhost: {host}\r\n\r\n");
        let flag = stop.clone();
        let handle = thread::spawn(move || {
            let mut samples = Vec::new();
            let mut connection: Option<TcpStream> = None;
            let mut next = Instant::now();
            let mut buf = vec![0u8; 16 * 1024];
            while !flag.load(Ordering::Relaxed) {
                let now = Instant::now();
                if next > now {
                    thread::sleep(next - now);
                }
                next = Instant::now() + every;
                let sent = Instant::now();
                let status = round_trip(&mut connection, addr, request.as_bytes(), &mut buf);
                samples.push(Sample {
                    at: sent.duration_since(started).as_secs_f64(),
                    ms: sent.elapsed().as_secs_f64() * 1000.0,
                    status,
                });
            }
            samples
        });
        RequestLoop { stop, handle, started }
    }

    /// Seconds since the loop started.
    pub fn now(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Stops the loop and returns its samples.
    pub fn finish(self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

/// One request on `connection` (opened when there is none); its status, 0 on failure (the
/// connection is then dropped, and the next request opens another).
fn round_trip(connection: &mut Option<TcpStream>, addr: SocketAddr, request: &[u8], buf: &mut [u8]) -> u16 {
    if connection.is_none() {
        *connection = TcpStream::connect(addr).ok().inspect(|s| {
            let _ = s.set_nodelay(true);
            let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
        });
    }
    let Some(stream) = connection.as_mut() else { return 0 };
    let mut raw = Vec::new();
    let ok = stream.write_all(request).is_ok()
        && loop {
            match stream.read(buf) {
                Ok(0) | Err(_) => break false,
                Ok(n) => raw.extend_from_slice(&buf[..n]),
            }
            if response_complete(&raw) {
                break true;
            }
        };
    let status = std::str::from_utf8(&raw[..raw.len().min(16)])
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse().ok());
    match (ok, status) {
        (true, Some(status)) => status,
        _ => {
            *connection = None;
            0
        }
    }
}

/// A thread reading a process's `VmRSS` every `every` until stopped: (seconds since `started`, KiB).
pub struct RssSampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<(f64, u64)>>,
}

impl RssSampler {
    /// Starts sampling process `pid`.
    pub fn start(pid: u32, started: Instant, every: Duration) -> RssSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = thread::spawn(move || {
            let mut samples = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                if let Some(kib) = rss_kib(pid) {
                    samples.push((started.elapsed().as_secs_f64(), kib));
                }
                thread::sleep(every);
            }
            samples
        });
        RssSampler { stop, handle }
    }

    /// Stops sampling and returns the samples.
    pub fn finish(self) -> Vec<(f64, u64)> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

/// A process's resident memory in KiB (`VmRSS` of `/proc/<pid>/status`).
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
    line.trim().trim_end_matches("kB").trim().parse().ok()
}

/// One `table accepted: generation "G", … loaded in N us` line of the filter in Envoy's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// Envoy's thread id (the log's second bracketed field): one VM per thread.
    pub thread: String,
    /// The table's generation.
    pub generation: String,
    /// The filter's own measure of the load, in microseconds.
    pub micros: u64,
    /// For the sharded form: the table's shards, how many this VM decoded, and how many it took
    /// from the catalogue.
    pub shards: Option<ShardCounts>,
}

/// What one load of the sharded form did with its shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardCounts {
    /// The table's shards.
    pub shards: usize,
    /// New to the VM, decoded and validated by it.
    pub decoded: usize,
    /// New to the VM, taken from the catalogue.
    pub from_catalogue: usize,
}

/// ` (S shards, D new decoded, C new from the catalogue)` at the end of a `table accepted` line.
fn shard_counts(rest: &str) -> Option<ShardCounts> {
    let numbers: Vec<usize> = rest
        .rsplit_once(" (")?
        .1
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    match numbers[..] {
        [shards, decoded, from_catalogue] => Some(ShardCounts {
            shards,
            decoded,
            from_catalogue,
        }),
        // The native module's line: it has no catalogue.
        [shards, decoded] => Some(ShardCounts {
            shards,
            decoded,
            from_catalogue: 0,
        }),
        _ => None,
    }
}

/// Every `table accepted` line of `log`, in order.
pub fn accepted_lines(log: &str) -> Vec<Accepted> {
    log.lines()
        .filter_map(|line| {
            let (_, rest) = line.split_once("table accepted: generation ")?;
            let generation = rest.split(',').next()?.trim_matches('"').to_owned();
            // `… loaded in N us`, then for the sharded form ` (S shards, D new decoded, C new from the
            // catalogue)` (the native module's: ` (S shards, D new decoded)`).
            let micros = rest
                .split_once("loaded in ")?
                .1
                .split(" us")
                .next()?
                .trim()
                .parse()
                .ok()?;
            // `[time][thread][level][logger] …`
            let thread = line.split('[').nth(2)?.split(']').next()?.to_owned();
            Some(Accepted {
                thread,
                generation,
                micros,
                shards: shard_counts(rest),
            })
        })
        .collect()
}

/// The `q`-quantile (0 ≤ q ≤ 1) of `values` (nearest rank); 0 when empty.
pub fn quantile(values: &[f64], q: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Envoy's own virtual hosts for a table document (table/README.md's format): one virtual host per
/// rule host (in the order hosts first appear; rules without a host under `*`), one route per rule in
/// table order, each to `cluster`. Paths: `exact` as `path`, `prefix` as `prefix`, `segment_prefix`
/// as `path_separated_prefix` (`/` as `prefix: /`), `regex` as `safe_regex`; header conditions as
/// header matchers (other conditions are left out: the comparison is of the route table's size and
/// speed, not of its meaning).
pub fn native_virtual_hosts(table: &Value, cluster: &str) -> Value {
    let mut hosts: Vec<(String, Vec<Value>)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let empty = Vec::new();
    for rule in table.get("rules").and_then(Value::as_array).unwrap_or(&empty) {
        let host = rule.get("host").and_then(Value::as_str).unwrap_or("*").to_owned();
        let route = native_route(rule, cluster);
        match index.get(&host) {
            Some(&i) => hosts[i].1.push(route),
            None => {
                index.insert(host.clone(), hosts.len());
                hosts.push((host, vec![route]));
            }
        }
    }
    Value::Array(
        hosts
            .into_iter()
            .enumerate()
            .map(|(i, (host, routes))| json!({ "name": format!("vh{i}"), "domains": [host], "routes": routes }))
            .collect(),
    )
}

fn native_route(rule: &Value, cluster: &str) -> Value {
    let path = rule.get("path");
    let kind = path
        .and_then(|p| p.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("prefix");
    let value = path.and_then(|p| p.get("value")).and_then(Value::as_str).unwrap_or("/");
    let mut matcher = match (kind, value) {
        ("exact", v) => json!({ "path": v }),
        ("segment_prefix", "/") | ("prefix", _) => json!({ "prefix": value }),
        ("segment_prefix", v) => json!({ "path_separated_prefix": v.trim_end_matches('/') }),
        ("regex", v) => json!({ "safe_regex": { "regex": v } }),
        _ => json!({ "prefix": "/" }),
    };
    let headers: Vec<Value> = rule
        .get("conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c.get("on").and_then(Value::as_str) == Some("header"))
        .filter_map(|c| {
            let name = c.get("name")?.as_str()?;
            let value = c.get("value").and_then(Value::as_str).unwrap_or("");
            let mut header = match c.get("match")?.as_str()? {
                "present" => json!({ "name": name, "present_match": true }),
                "exact" => json!({ "name": name, "string_match": { "exact": value } }),
                "prefix" => json!({ "name": name, "string_match": { "prefix": value } }),
                "contains" => json!({ "name": name, "string_match": { "contains": value } }),
                _ => return None,
            };
            if c.get("invert").and_then(Value::as_bool) == Some(true) {
                header["invert_match"] = json!(true);
            }
            Some(header)
        })
        .collect();
    if !headers.is_empty() {
        matcher["headers"] = Value::Array(headers);
    }
    json!({ "match": matcher, "route": { "cluster": cluster } })
}

#[cfg(test)]
mod tests {
    use super::accepted_lines;

    #[test]
    fn accepted_lines_read_the_whole_and_the_sharded_forms_log() {
        let log = "[2026-11-27 10:00:00.000][12][info][wasm] wasm log switchyard: table accepted: generation \"push-0\", 10 rules, 3 hosts, loaded in 250 us\n\
                   [2026-11-27 10:00:01.000][13][info][wasm] wasm log switchyard: table accepted: generation \"push-1\", 100000 rules, loaded in 1830 us (781 shards, 1 new decoded, 0 new from the catalogue)\n\
                   [2026-11-27 10:00:02.000][13][info][wasm] something else\n";
        let lines = accepted_lines(log);
        let read: Vec<(&str, &str, u64)> = lines
            .iter()
            .map(|a| (a.thread.as_str(), a.generation.as_str(), a.micros))
            .collect();
        assert_eq!(read, [("12", "push-0", 250), ("13", "push-1", 1830)]);
        let shards = super::ShardCounts {
            shards: 781,
            decoded: 1,
            from_catalogue: 0,
        };
        assert_eq!((lines[0].shards, lines[1].shards), (None, Some(shards)));
    }
}
