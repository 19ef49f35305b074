//! `switchyard watch` as a process, the way every suite starts one: its stderr (the log) in a file,
//! the addresses it logged once bound (`--listen` and `--dashboard-listen`, each given as
//! `127.0.0.1:0` so that parallel tests never race for a port), and a plain HTTP/1.1 client that asks
//! each path on the address that serves it.
//!
//! The log lines are the contract with `sidecar/src/watch/mod.rs`: `listening on http://ADDR (…)` and
//! `dashboard on http://ADDR/ (…)`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// One of the watch's two HTTP addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Address {
    /// `--listen`: `/healthz`, `/readyz`, `/metrics`.
    Operations,
    /// `--dashboard-listen`: the dashboard, `/table`, `/status`, `/rules`, `/explain`, `/events`.
    Dashboard,
}

impl Address {
    /// The flag that sets it.
    pub fn flag(self) -> &'static str {
        match self {
            Address::Operations => "--listen",
            Address::Dashboard => "--dashboard-listen",
        }
    }

    /// What the log says before the bound address.
    fn marker(self) -> &'static str {
        match self {
            Address::Operations => "listening on http://",
            Address::Dashboard => "dashboard on http://",
        }
    }

    /// The address that serves `path`.
    pub fn serving(path: &str) -> Address {
        match path.split('?').next().unwrap_or(path) {
            "/healthz" | "/readyz" | "/metrics" => Address::Operations,
            _ => Address::Dashboard,
        }
    }

    /// Both flags on free loopback ports: `--listen 127.0.0.1:0 --dashboard-listen 127.0.0.1:0`.
    pub fn both_on_free_ports() -> [&'static str; 4] {
        ["--listen", "127.0.0.1:0", "--dashboard-listen", "127.0.0.1:0"]
    }
}

/// The address that `log` says was bound for `address`, once it says so: the last such line, as a
/// watch restarted on the same log appends its own.
pub fn logged_address(log: &str, address: Address) -> Option<SocketAddr> {
    log.lines().rev().find_map(|line| {
        line.split(address.marker())
            .nth(1)?
            .split(['/', ' '])
            .next()?
            .parse()
            .ok()
    })
}

/// An HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The status code.
    pub code: u16,
    /// The body (the whole rest of the connection: the server closes it).
    pub body: String,
}

/// A plain HTTP/1.1 request to `addr`, `extra_headers` as `Name: value` lines (no CRLF), `body` sent
/// with its length; the connection closes after the answer.
pub fn http(addr: SocketAddr, method: &str, path: &str, extra_headers: &[&str], body: &str) -> std::io::Result<Answer> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut request = format!("{method} {path} HTTP/1.1\r\nhost: switchyard\r\nconnection: close\r\n");
    for header in extra_headers {
        request.push_str(header);
        request.push_str("\r\n");
    }
    if !body.is_empty() || method == "POST" {
        request.push_str(&format!(
            "content-type: application/json\r\ncontent-length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes())?;
    let mut raw = String::new();
    stream.read_to_string(&mut raw)?;
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((raw.as_str(), ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP answer: {head:?}")))?;
    Ok(Answer {
        code,
        body: body.to_owned(),
    })
}

/// A running `switchyard watch`, killed and reaped when dropped.
#[derive(Debug)]
pub struct WatchProcess {
    child: Child,
    log: PathBuf,
}

impl WatchProcess {
    /// Runs `bin watch ARGS...`, its stderr into `log` (created anew), stdin and stdout closed.
    pub fn spawn(bin: impl AsRef<Path>, args: &[&str], log: &Path) -> WatchProcess {
        let mut command = Command::new(bin.as_ref());
        command.arg("watch").args(args);
        WatchProcess::spawn_command(command, log)
    }

    /// Runs `command` (a `switchyard watch …` with what else it needs, such as an environment), its
    /// stderr into `log` (created anew), stdin and stdout closed.
    pub fn spawn_command(mut command: Command, log: &Path) -> WatchProcess {
        let file = std::fs::File::create(log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", command.get_program()));
        WatchProcess {
            child,
            log: log.to_owned(),
        }
    }

    /// Its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it exited (with its status).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// The address it logged for `address`, if it did yet.
    pub fn address(&self, address: Address) -> Option<SocketAddr> {
        logged_address(&self.log(), address)
    }

    /// Waits up to `within` until `ready` holds, panicking with the log if the watch exits or time
    /// runs out (`what` names the wait).
    pub fn wait_until(&mut self, what: &str, within: Duration, mut ready: impl FnMut(&Self) -> bool) {
        let deadline = Instant::now() + within;
        loop {
            if ready(self) {
                return;
            }
            if let Some(status) = self.exited() {
                panic!("switchyard watch exited ({status}) before {what}:\n{}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not within {within:?}\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits up to `within` for the address it logs for `address`.
    pub fn wait_for_address(&mut self, address: Address, within: Duration) -> SocketAddr {
        self.wait_until(address.flag(), within, |watch| watch.address(address).is_some());
        self.address(address)
            .unwrap_or_else(|| unreachable!("checked just before"))
    }

    /// GET `path` on the address that serves it ([`Address::serving`]).
    pub fn get(&self, path: &str) -> std::io::Result<Answer> {
        self.ask("GET", path, &[], "")
    }

    /// `method path` on the address that serves it, with these header lines and body.
    pub fn ask(&self, method: &str, path: &str, headers: &[&str], body: &str) -> std::io::Result<Answer> {
        let address = Address::serving(path);
        let addr = self.address(address).ok_or_else(|| {
            std::io::Error::other(format!(
                "{} was not given or not bound yet:\n{}",
                address.flag(),
                self.log()
            ))
        })?;
        http(addr, method, path, headers, body)
    }

    /// Sends SIGTERM (as Kubernetes stops a pod) and waits for the exit.
    pub fn terminate(mut self) -> ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        self.child
            .wait()
            .unwrap_or_else(|e| panic!("waiting for switchyard watch: {e}"))
    }
}

impl Drop for WatchProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// CPU time of every thread of process `pid` as the kernel counts it (their run times from
/// `/proc/<pid>/task/*/schedstat`), in nanoseconds: what a benchmark charges to the watch.
pub fn cpu_ns(pid: u32) -> u64 {
    let mut total = 0;
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten();
    for task in tasks {
        let text = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        total += (text.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_logged_addresses_are_read_from_the_watch_log_lines() {
        let log = "INFO listening on http://127.0.0.1:40001 (/healthz /readyz /metrics)\n\
                   INFO dashboard on http://127.0.0.1:40002/ (/table /status POST /explain; no token)\n";
        assert_eq!(
            logged_address(log, Address::Operations),
            Some(SocketAddr::from(([127, 0, 0, 1], 40001)))
        );
        assert_eq!(
            logged_address(log, Address::Dashboard),
            Some(SocketAddr::from(([127, 0, 0, 1], 40002)))
        );
        assert_eq!(logged_address("INFO watching m/", Address::Dashboard), None);
        let restarted = format!("{log}INFO stopping\nINFO listening on http://127.0.0.1:40003 (/healthz)\n");
        assert_eq!(
            logged_address(&restarted, Address::Operations),
            Some(SocketAddr::from(([127, 0, 0, 1], 40003))),
            "a restart on the same log: its own address"
        );
    }

    #[test]
    fn probes_and_metrics_are_asked_on_listen_the_rest_on_the_dashboard() {
        assert_eq!(Address::serving("/readyz"), Address::Operations);
        assert_eq!(Address::serving("/metrics"), Address::Operations);
        assert_eq!(Address::serving("/status"), Address::Dashboard);
        assert_eq!(Address::serving("/"), Address::Dashboard);
    }
}
