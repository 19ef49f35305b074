//! Pacing ECDS pushes by what Envoy has applied (`--envoy-admin`).
//!
//! Envoy reloads the ECDS file on every rename, and every reload builds a fresh filter
//! configuration: a new root context in the main thread's and every worker's wasm VM, each parsing
//! the table. Tables written faster than Envoy applies them pile up in those VMs, whose memory
//! never shrinks (issue 10: 10,000-rule tables every 0.2 s took each VM from 11 to 230 MiB). With
//! `--envoy-admin ADDR`, a push to the ECDS file returns only once Envoy's admin stats say the
//! update was applied or rejected (`extension_config_discovery.http_filter.<name>.update_success`
//! or `.update_rejected` moved); edits made meanwhile are coalesced by the watcher's debounce, so
//! the next push carries the newest table and none is lost.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long one admin request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the stats are read while waiting.
const POLL: Duration = Duration::from_millis(20);
/// How long a push waits for Envoy before it counts as failed (and is retried).
const APPLY_TIMEOUT: Duration = Duration::from_secs(60);

/// Envoy's admin API, for one ECDS filter.
#[derive(Debug, Clone)]
pub struct EnvoyAdmin {
    /// The admin address (`admin.address` in Envoy's bootstrap).
    pub addr: SocketAddr,
    /// The ECDS resource name (the HTTP filter's name).
    pub filter_name: String,
}

impl EnvoyAdmin {
    /// How many ECDS updates of the filter Envoy has settled so far (applied plus rejected).
    pub async fn settled(&self) -> Result<u64, String> {
        let prefix = format!("extension_config_discovery.http_filter.{}.", self.filter_name);
        let body = self
            .get(&format!("/stats?filter=^{}", prefix.replace('.', "\\.")))
            .await?;
        Ok(settled_count(&body, &prefix))
    }

    /// Waits until more than `before` updates are settled.
    pub async fn wait_settled_beyond(&self, before: u64) -> Result<(), String> {
        let deadline = Instant::now() + APPLY_TIMEOUT;
        loop {
            if self.settled().await? > before {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "Envoy ({}) has not applied the ECDS update within {} s",
                    self.addr,
                    APPLY_TIMEOUT.as_secs()
                ));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    async fn get(&self, path: &str) -> Result<String, String> {
        get(self.addr, path).await
    }
}

/// `GET path` of the admin API at `addr`: the body of a 200, else an error naming the address (and
/// what Envoy answered). Also what the traffic of the dashboard is read with (`crate::watch::traffic`).
pub async fn get(addr: SocketAddr, path: &str) -> Result<String, String> {
    let fail = |e: std::io::Error| format!("Envoy admin {addr}: {e}");
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.map_err(fail)?;
        let request = format!("GET {path} HTTP/1.1\r\nHost: envoy-admin\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.map_err(fail)?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.map_err(fail)?;
        Ok::<_, String>(raw)
    };
    let raw = tokio::time::timeout(REQUEST_TIMEOUT, exchange)
        .await
        .map_err(|_| format!("Envoy admin {addr}: no answer within {} s", REQUEST_TIMEOUT.as_secs()))??;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut status_line = head.split_whitespace();
    if !(status_line.next().is_some_and(|v| v.starts_with("HTTP/1.")) && status_line.next() == Some("200")) {
        let status = head.lines().next().unwrap_or_default();
        return Err(format!("Envoy admin {addr}{path}: {status}"));
    }
    let chunked = head
        .to_ascii_lowercase()
        .lines()
        .any(|l| l.starts_with("transfer-encoding:") && l.contains("chunked"));
    Ok(if chunked { dechunk(body) } else { body.to_owned() })
}

/// The sum of `<prefix>update_success` and `<prefix>update_rejected` in Envoy's stats text.
fn settled_count(stats: &str, prefix: &str) -> u64 {
    stats
        .lines()
        .filter_map(|line| line.strip_prefix(prefix)?.split_once(": "))
        .filter(|(name, _)| matches!(*name, "update_success" | "update_rejected"))
        .filter_map(|(_, value)| value.trim().parse::<u64>().ok())
        .sum()
}

/// The body of a chunked HTTP/1.1 message.
fn dechunk(mut raw: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = raw.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 {
            break;
        }
        let Some(chunk) = rest.get(..size) else { break };
        out.push_str(chunk);
        raw = rest.get(size + 2..).unwrap_or_default();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settled_updates_are_applied_plus_rejected_of_this_filter_only() {
        let stats = "extension_config_discovery.http_filter.switchyard.config_reload: 7\n\
                     extension_config_discovery.http_filter.switchyard.update_attempt: 9\n\
                     extension_config_discovery.http_filter.switchyard.update_rejected: 1\n\
                     extension_config_discovery.http_filter.switchyard.update_success: 8\n\
                     extension_config_discovery.http_filter.other.update_success: 100\n";
        assert_eq!(
            settled_count(stats, "extension_config_discovery.http_filter.switchyard."),
            9
        );
    }

    /// Serves one connection on 127.0.0.1 with `answer` (the whole HTTP response); returns the
    /// address and what the client asked.
    async fn answering(answer: &'static str) -> (SocketAddr, tokio::task::JoinHandle<String>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let asked = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut head = vec![0; 1024];
            let n = stream.read(&mut head).await.unwrap();
            stream.write_all(answer.as_bytes()).await.unwrap();
            String::from_utf8_lossy(&head[..n]).into_owned()
        });
        (addr, asked)
    }

    #[test]
    fn get_reads_a_chunked_body_and_names_the_address_of_an_error() {
        crate::watch::block_on(async {
            let (addr, asked) =
                answering("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nm 1\r\n1\r\n\n\r\n0\r\n\r\n")
                    .await;
            assert_eq!(get(addr, "/stats/prometheus?filter=m").await.unwrap(), "m 1\n");
            assert!(asked
                .await
                .unwrap()
                .starts_with("GET /stats/prometheus?filter=m HTTP/1.1\r\n"));

            // An HTTP/1.0 server's answer reads as well.
            let (addr, asked) = answering("HTTP/1.0 200 OK\r\n\r\nm 2\n").await;
            assert_eq!(get(addr, "/stats/prometheus?filter=m").await.unwrap(), "m 2\n");
            assert!(asked
                .await
                .unwrap()
                .starts_with("GET /stats/prometheus?filter=m HTTP/1.1\r\n"));

            let (addr, _) = answering("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n").await;
            assert_eq!(
                get(addr, "/nothing").await.unwrap_err(),
                format!("Envoy admin {addr}/nothing: HTTP/1.1 404 Not Found")
            );
        });
    }

    #[test]
    fn chunked_bodies_are_joined() {
        assert_eq!(dechunk("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"), "hello world");
    }
}
