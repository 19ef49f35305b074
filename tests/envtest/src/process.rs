//! Child processes that never outlive the test binary, and free loopback ports.
//!
//! Every child is spawned by one long-lived thread with `PR_SET_PDEATHSIG` = `SIGKILL`: the kernel
//! kills it when that thread (so the test process) ends, however it ends (a failed test, an abort,
//! a killed `cargo test`). [`Proc`] also kills and reaps its child when dropped.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

type Request = (Command, mpsc::Sender<std::io::Result<Child>>);

/// A running child; killed and reaped on drop.
#[derive(Debug)]
pub struct Proc {
    child: Option<Child>,
    name: String,
}

impl Proc {
    /// Spawns `command` (named `name` in errors) so that it dies with the test process.
    pub fn spawn(name: &str, command: Command) -> Result<Proc, String> {
        let child = spawner()
            .and_then(|tx| {
                let (reply, answer) = mpsc::channel();
                tx.send((command, reply))
                    .map_err(|_| "the spawner thread is gone".to_owned())?;
                answer.recv().map_err(|_| "the spawner thread is gone".to_owned())
            })?
            .map_err(|e| format!("cannot start {name}: {e}"))?;
        Ok(Proc {
            child: Some(child),
            name: name.to_owned(),
        })
    }

    /// The process id.
    pub fn id(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Whether it exited already (with its status).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.as_mut().and_then(|c| c.try_wait().ok().flatten())
    }

    /// Sends a signal (`libc::SIGTERM`, ...).
    pub fn signal(&self, signal: i32) {
        if let Some(child) = &self.child {
            // SAFETY: kill(2) on our own child's pid, which is not reaped before `self.child` is taken.
            unsafe {
                libc::kill(child.id() as i32, signal);
            }
        }
    }

    /// Waits for the exit (after a signal).
    pub fn wait(&mut self) -> Result<std::process::ExitStatus, String> {
        match self.child.take() {
            Some(mut child) => child.wait().map_err(|e| format!("{}: {e}", self.name)),
            None => Err(format!("{} was already reaped", self.name)),
        }
    }

    /// Kills and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The thread that spawns every child (a `PR_SET_PDEATHSIG` fires when the spawning *thread*
/// exits, and test threads end with their test).
fn spawner() -> Result<mpsc::Sender<Request>, String> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Request>>> = OnceLock::new();
    let tx = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("envtest-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
                    unsafe {
                        command.pre_exec(|| {
                            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                                return Err(std::io::Error::last_os_error());
                            }
                            Ok(())
                        });
                    }
                    let _ = reply.send(command.spawn());
                }
            })
            .map(|_| ())
            .map_err(|e| e.to_string())
            .ok();
        Mutex::new(tx)
    });
    Ok(tx.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone())
}
