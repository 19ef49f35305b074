//! The WASI preview1 imports that Rust (`wasm32-wasip1`) and TinyGo modules pull in, and no more:
//! stdout and stderr become log lines (info and error), clocks read the simulator's clock,
//! `random_get` draws from its seeded generator, the environment and arguments are the
//! simulator's, `proc_exit` stops the module with its code. There is no file system: no file
//! descriptor beyond the three standard ones, and no preopened directory.

use crate::memory::{read, with_bytes_mut, write, write_u32, write_u64, Fault};
use crate::outcome::LogLevel;
use crate::state::Host;
use std::fmt;
use wasmtime::{Caller, Linker};

const WASI: &str = "wasi_snapshot_preview1";
const SUCCESS: i32 = 0;
const EBADF: i32 = 8;
const EFAULT: i32 = 21;
const EINVAL: i32 = 28;
const ENOSYS: i32 = 52;
const ESPIPE: i32 = 70;

/// The module called `proc_exit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcExit(pub i32);

impl fmt::Display for ProcExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the module called proc_exit({})", self.0)
    }
}

impl std::error::Error for ProcExit {}

/// A memory fault is `EFAULT` in WASI's terms; a trap stays a trap.
fn errno(result: Result<i32, Fault>) -> wasmtime::Result<i32> {
    match result {
        Ok(code) => Ok(code),
        Err(Fault::Status(_)) => Ok(EFAULT),
        Err(Fault::Trap(e)) => Err(e),
    }
}

pub(super) fn add(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    linker.func_wrap(
        WASI,
        "fd_write",
        |mut c: Caller<'_, Host>, fd: i32, iovs: i32, n: i32, written: i32| {
            errno(fd_write(&mut c, fd, iovs, n, written))
        },
    )?;
    linker.func_wrap(
        WASI,
        "fd_read",
        |mut c: Caller<'_, Host>, fd: i32, _iovs: i32, _n: i32, read: i32| {
            errno(if fd == 0 {
                write_u32(&mut c, read, 0).map(|()| SUCCESS)
            } else {
                Ok(EBADF)
            })
        },
    )?;
    linker.func_wrap(WASI, "fd_close", |_c: Caller<'_, Host>, fd: i32| {
        Ok(if (0..3).contains(&fd) { SUCCESS } else { EBADF })
    })?;
    linker.func_wrap(
        WASI,
        "fd_seek",
        |_c: Caller<'_, Host>, fd: i32, _off: i64, _whence: i32, _ret: i32| {
            Ok(if (0..3).contains(&fd) { ESPIPE } else { EBADF })
        },
    )?;
    linker.func_wrap(WASI, "fd_fdstat_get", |mut c: Caller<'_, Host>, fd: i32, ret: i32| {
        if !(0..3).contains(&fd) {
            return Ok(EBADF);
        }
        // filetype character device, no flags, all rights.
        let mut stat = [0u8; 24];
        stat[0] = 2;
        stat[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        stat[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        errno(write(&mut c, ret, &stat).map(|()| SUCCESS))
    })?;
    linker.func_wrap(WASI, "fd_prestat_get", |_c: Caller<'_, Host>, _fd: i32, _ret: i32| {
        Ok(EBADF)
    })?;
    linker.func_wrap(
        WASI,
        "fd_prestat_dir_name",
        |_c: Caller<'_, Host>, _fd: i32, _p: i32, _l: i32| Ok(EBADF),
    )?;
    linker.func_wrap(
        WASI,
        "environ_sizes_get",
        |mut c: Caller<'_, Host>, count: i32, size: i32| {
            let items = env_items(c.data());
            errno(sizes(&mut c, &items, count, size))
        },
    )?;
    linker.func_wrap(WASI, "environ_get", |mut c: Caller<'_, Host>, ptrs: i32, buf: i32| {
        let items = env_items(c.data());
        errno(strings(&mut c, &items, ptrs, buf))
    })?;
    linker.func_wrap(
        WASI,
        "args_sizes_get",
        |mut c: Caller<'_, Host>, count: i32, size: i32| {
            let items = c.data().args.clone();
            errno(sizes(&mut c, &items, count, size))
        },
    )?;
    linker.func_wrap(WASI, "args_get", |mut c: Caller<'_, Host>, ptrs: i32, buf: i32| {
        let items = c.data().args.clone();
        errno(strings(&mut c, &items, ptrs, buf))
    })?;
    linker.func_wrap(WASI, "clock_res_get", |mut c: Caller<'_, Host>, id: i32, ret: i32| {
        if !(0..4).contains(&id) {
            return Ok(EINVAL);
        }
        errno(write_u64(&mut c, ret, 1).map(|()| SUCCESS))
    })?;
    linker.func_wrap(
        WASI,
        "clock_time_get",
        |mut c: Caller<'_, Host>, id: i32, _precision: i64, ret: i32| {
            let now = match id {
                0 => c.data().now_ns,
                1..=3 => c.data().monotonic_ns,
                _ => return Ok(EINVAL),
            };
            errno(write_u64(&mut c, ret, now).map(|()| SUCCESS))
        },
    )?;
    linker.func_wrap(WASI, "random_get", |mut c: Caller<'_, Host>, buf: i32, len: i32| {
        // Filled in place: a module asking for gigabytes gets EFAULT, not a host allocation.
        errno(with_bytes_mut(&mut c, buf, len, |bytes, host| {
            for chunk in bytes.chunks_mut(8) {
                let r = host.next_random().to_le_bytes();
                chunk.copy_from_slice(&r[..chunk.len()]);
            }
            SUCCESS
        }))
    })?;
    linker.func_wrap(WASI, "sched_yield", |_c: Caller<'_, Host>| Ok(SUCCESS))?;
    linker.func_wrap(
        WASI,
        "poll_oneoff",
        |_c: Caller<'_, Host>, _i: i32, _o: i32, _n: i32, _ret: i32| Ok(ENOSYS),
    )?;
    linker.func_wrap(
        WASI,
        "proc_exit",
        |mut c: Caller<'_, Host>, code: i32| -> wasmtime::Result<()> {
            c.data_mut().exit_code = Some(code);
            Err(wasmtime::Error::new(ProcExit(code)))
        },
    )?;
    Ok(())
}

fn env_items(host: &Host) -> Vec<String> {
    host.env.iter().map(|(k, v)| format!("{k}={v}")).collect()
}

fn sizes(c: &mut Caller<'_, Host>, items: &[String], count: i32, size: i32) -> Result<i32, Fault> {
    write_u32(c, count, items.len() as u32)?;
    write_u32(c, size, items.iter().map(|s| s.len() as u32 + 1).sum())?;
    Ok(SUCCESS)
}

/// Writes NUL-terminated strings to `buf` and their addresses to `ptrs`.
fn strings(c: &mut Caller<'_, Host>, items: &[String], ptrs: i32, buf: i32) -> Result<i32, Fault> {
    let mut at = buf as u32;
    for (i, item) in items.iter().enumerate() {
        write_u32(c, ptrs.wrapping_add(4 * i as i32), at)?;
        let mut bytes = item.as_bytes().to_vec();
        bytes.push(0);
        write(c, at as i32, &bytes)?;
        at = at.wrapping_add(bytes.len() as u32);
    }
    Ok(SUCCESS)
}

fn fd_write(c: &mut Caller<'_, Host>, fd: i32, iovs: i32, n: i32, written: i32) -> Result<i32, Fault> {
    let stream = match fd {
        1 => 0,
        2 => 1,
        _ => return Ok(EBADF),
    };
    let mut total = 0u32;
    for i in 0..n.max(0) {
        let iov = read(c, iovs.wrapping_add(8 * i), 8)?;
        let ptr = i32::from_le_bytes([iov[0], iov[1], iov[2], iov[3]]);
        let len = i32::from_le_bytes([iov[4], iov[5], iov[6], iov[7]]);
        let bytes = read(c, ptr, len)?;
        total = total.wrapping_add(bytes.len() as u32);
        let host = c.data_mut();
        host.stdio[stream].extend_from_slice(&bytes);
        while let Some(newline) = host.stdio[stream].iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = host.stdio[stream].drain(..=newline).collect();
            let text = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
            let level = if stream == 0 { LogLevel::Info } else { LogLevel::Error };
            host.log(level, text);
        }
    }
    write_u32(c, written, total)?;
    Ok(SUCCESS)
}
