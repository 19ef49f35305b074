//! One Envoy process of the harness: started on `<dir>/envoy.yaml` with its admin API on a port the
//! OS picks (read back from `<dir>/admin.txt`), its log in `<dir>/envoy.log`; killed on drop, and
//! its folder removed unless a test is failing (then it stays, for the post-mortem).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::{get, send};

/// How long Envoy gets to start or to apply a configuration update.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// A running Envoy.
pub struct EnvoyProcess {
    child: Child,
    /// Its folder: `envoy.yaml`, `admin.txt`, `envoy.log` and whatever the test puts there.
    pub dir: PathBuf,
    /// Its admin API.
    pub admin: SocketAddr,
}

impl EnvoyProcess {
    /// Starts `envoy_bin` on `<dir>/envoy.yaml` with `workers` worker threads; returns once its
    /// admin API answers and `ready` says so.
    pub fn start(
        envoy_bin: &Path,
        dir: PathBuf,
        workers: usize,
        ready: impl Fn(&EnvoyProcess) -> bool,
    ) -> EnvoyProcess {
        let log = std::fs::File::create(dir.join("envoy.log")).unwrap_or_else(|e| panic!("log: {e}"));
        let child = Command::new(envoy_bin)
            .arg("-c")
            .arg(dir.join("envoy.yaml"))
            .args([
                "--concurrency",
                &workers.to_string(),
                "--disable-hot-restart",
                "--log-level",
                "info",
            ])
            .arg("--admin-address-path")
            .arg(dir.join("admin.txt"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", envoy_bin.display()));
        let mut envoy = EnvoyProcess {
            child,
            dir,
            admin: SocketAddr::from(([127, 0, 0, 1], 0)),
        };
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Ok(Some(status)) = envoy.child.try_wait() {
                panic!("Envoy exited ({status}) while starting:\n{}", envoy.log_tail());
            }
            assert!(
                Instant::now() < deadline,
                "Envoy did not become ready:\n{}",
                envoy.log_tail()
            );
            if let Some(addr) = std::fs::read_to_string(envoy.dir.join("admin.txt"))
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                envoy.admin = addr;
                let up = send(addr, &get("admin", "/ready")).is_ok_and(|r| r.status == 200);
                if up && ready(&envoy) {
                    return envoy;
                }
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// One stat's value from the admin API (`None` when Envoy does not have it).
    pub fn stat(&self, name: &str) -> Option<u64> {
        let stats = send(self.admin, &get("admin", &format!("/stats?filter=^{name}$"))).ok()?;
        stats
            .body
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: "))?.trim().parse().ok())
    }

    /// Envoy's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Envoy's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("envoy.log")).unwrap_or_default()
    }

    /// The last 40 lines of the log (without the periodic stats-flush line), for a failure message.
    pub fn log_tail(&self) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().filter(|l| !l.contains("server.cc:467")).collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for EnvoyProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
