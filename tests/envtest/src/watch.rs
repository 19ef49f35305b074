//! `switchyard watch --kubernetes` as a process, as a user runs it: its kubeconfig names the API
//! server and a user, `--listen` serves `/readyz` and `--dashboard-listen` `/status` on free loopback
//! ports (read from its log, `switchyard_watch_process`), `-o` writes the table file, and its log
//! (stderr) goes to a file the test can read.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use switchyard_watch_process::{http, logged_address, Address};

use crate::process::Proc;

/// A running `switchyard watch`.
#[derive(Debug)]
pub struct Watch {
    proc: Proc,
    table: PathBuf,
    log: PathBuf,
    dir: tempfile::TempDir,
}

pub use switchyard_watch_process::Answer;

impl Watch {
    /// Starts `bin watch --kubernetes -o TABLE --listen 127.0.0.1:PORT ARGS...` with `KUBECONFIG`.
    pub fn start(bin: &Path, kubeconfig: &Path, args: &[&str]) -> Result<Watch, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        Watch::start_in(dir, bin, kubeconfig, args)
    }

    /// The same without the table file (`-o`), whose indented JSON a benchmark of pushes must not
    /// pay for; [`Watch::table`] is then `Null`.
    pub fn start_without_table_file(bin: &Path, kubeconfig: &Path, args: &[&str]) -> Result<Watch, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        Watch::spawn(dir, bin, kubeconfig, args, false)
    }

    /// The same, in a folder that already holds files (a restart keeps the table and the log).
    pub fn start_in(dir: tempfile::TempDir, bin: &Path, kubeconfig: &Path, args: &[&str]) -> Result<Watch, String> {
        Watch::spawn(dir, bin, kubeconfig, args, true)
    }

    fn spawn(
        dir: tempfile::TempDir,
        bin: &Path,
        kubeconfig: &Path,
        args: &[&str],
        table_file: bool,
    ) -> Result<Watch, String> {
        let table = dir.path().join("table.json");
        let log = dir.path().join("switchyard.log");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(|e| e.to_string())?;
        let mut command = Command::new(bin);
        command.args(["watch", "--kubernetes"]);
        if table_file {
            command.arg("-o").arg(&table);
        }
        command
            .args(Address::both_on_free_ports())
            .args(args)
            .env("KUBECONFIG", kubeconfig)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file);
        let proc = Proc::spawn("switchyard watch", command)?;
        Ok(Watch { proc, table, log, dir })
    }

    /// Stops it with SIGTERM and returns its folder (table file and log), for a restart.
    pub fn stop(mut self) -> Result<(std::process::ExitStatus, tempfile::TempDir), String> {
        self.proc.signal(libc::SIGTERM);
        let status = self.proc.wait()?;
        Ok((status, self.dir))
    }

    /// Kills it with SIGKILL (no clean-up of any kind: a crashed pod) and waits for it.
    pub fn kill(mut self) -> Result<std::process::ExitStatus, String> {
        self.proc.signal(libc::SIGKILL);
        self.proc.wait()
    }

    /// Sends SIGTERM without waiting (see [`Watch::wait`]).
    pub fn terminate(&self) {
        self.proc.signal(libc::SIGTERM);
    }

    /// Waits for it to exit.
    pub fn wait(mut self) -> Result<std::process::ExitStatus, String> {
        self.proc.wait()
    }

    /// GET `path` on the address that serves it (`--listen`: `/healthz`, `/readyz`, `/metrics`;
    /// `--dashboard-listen`: `/status`, `/table`, the dashboard); code 0 when nothing answered (not
    /// bound yet, or gone).
    pub fn get(&self, path: &str) -> Answer {
        logged_address(&self.log(), Address::serving(path))
            .and_then(|addr| http(addr, "GET", path, &[], "").ok())
            .unwrap_or(Answer {
                code: 0,
                body: String::new(),
            })
    }

    /// `/readyz`.
    pub fn readyz(&self) -> Answer {
        self.get("/readyz")
    }

    /// `/status` as JSON (`Null` when it does not answer).
    pub fn status(&self) -> Value {
        serde_json::from_str(&self.get("/status").body).unwrap_or(Value::Null)
    }

    /// The table file (`Null` before the first push).
    pub fn table(&self) -> Value {
        std::fs::read_to_string(&self.table)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null)
    }

    /// The table file's path.
    pub fn table_path(&self) -> &Path {
        &self.table
    }

    /// Its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.proc.id()
    }

    /// Its resident memory (VmRSS) in KiB and CPU time (user + system) so far, from /proc.
    pub fn usage(&self) -> Option<(u64, Duration)> {
        let pid = self.pid();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let rss = status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // Fields after the command (which may hold spaces) : utime is the 14th field, stime the 15th.
        let rest = &stat[stat.rfind(')')? + 2..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
        // SAFETY: sysconf has no preconditions.
        let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
        Some((rss, Duration::from_millis(ticks * 1000 / per_second)))
    }

    /// Whether it exited (with its status).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.proc.exited()
    }

    /// Waits until `/readyz` answers 200.
    pub async fn ready(&mut self, within: Duration) -> Result<(), String> {
        let deadline = Instant::now() + within;
        loop {
            let answer = self.readyz();
            if answer.code == 200 {
                return Ok(());
            }
            if let Some(status) = self.exited() {
                return Err(format!("switchyard exited ({status}):\n{}", self.log()));
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "not ready after {within:?}: {} {}\nlog:\n{}",
                    answer.code,
                    answer.body,
                    self.log()
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Whether the table file has a rule for `host` (sending to `cluster`, when given).
    pub fn routes(&self, host: &str, cluster: Option<&str>) -> bool {
        table_routes(&self.table(), host, cluster)
    }

    /// Waits until the table file has a rule for `host` (sending to `cluster`, when given), or
    /// panics after `within` with the watch's log.
    pub async fn eventually_routes(&self, host: &str, cluster: Option<&str>, within: Duration) {
        let what = format!("{host} routed");
        eventually(
            &what,
            within,
            || self.routes(host, cluster).then_some(()),
            || self.log(),
        )
        .await
    }
}

/// Whether `table` has a rule for `host` (with a backend `cluster`, when given: `ns/service:port`
/// with the default cluster template).
pub fn table_routes(table: &Value, host: &str, cluster: Option<&str>) -> bool {
    table["rules"].as_array().is_some_and(|rules| {
        rules.iter().any(|rule| {
            rule["host"] == host
                && cluster.is_none_or(|c| {
                    rule["action"]["route"]["backends"]
                        .as_array()
                        .is_some_and(|b| b.iter().any(|b| b["cluster"] == c))
                })
        })
    })
}

/// Polls `check` every 50 ms until it gives `Some`, or panics after `within` naming `what` and the
/// last thing `describe` says (the log, a status).
pub async fn eventually<T>(
    what: &str,
    within: Duration,
    mut check: impl FnMut() -> Option<T>,
    describe: impl Fn() -> String,
) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = check() {
            return value;
        }
        if Instant::now() > deadline {
            panic!("{what}: not within {within:?}\n{}", describe());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Polls the async `check` every 100 ms until it gives `Ok`, or panics after `within` with `what`,
/// the last `Err` (what was seen instead) and `describe()` (the log, say).
pub async fn eventually_async<T, F, Fut>(what: &str, within: Duration, mut check: F, describe: impl Fn() -> String) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + within;
    loop {
        match check().await {
            Ok(value) => return value,
            Err(seen) if Instant::now() > deadline => {
                panic!("{what}: not within {within:?}; seen: {seen}\n{}", describe())
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}
