//! Logging: `proxy_log` into the simulator's log, `proxy_get_log_level` from its level, and the
//! clock (`proxy_get_current_time_nanoseconds`), which the module reads mostly to stamp logs.

use crate::abi::status;
use crate::memory::{finish, read_string, write_u32, write_u64, HostResult};
use crate::outcome::LogLevel;
use crate::state::Host;
use wasmtime::{Caller, Linker};

pub(super) fn add(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    linker.func_wrap(
        "env",
        "proxy_log",
        |mut c: Caller<'_, Host>, level: i32, ptr: i32, len: i32| finish(log(&mut c, level, ptr, len)),
    )?;
    linker.func_wrap("env", "proxy_get_log_level", |mut c: Caller<'_, Host>, ret: i32| {
        let level = c.data().log_level.code();
        finish(write_u32(&mut c, ret, level).map(|()| status::OK))
    })?;
    linker.func_wrap(
        "env",
        "proxy_get_current_time_nanoseconds",
        |mut c: Caller<'_, Host>, ret: i32| {
            let now = c.data().now_ns;
            finish(write_u64(&mut c, ret, now).map(|()| status::OK))
        },
    )?;
    Ok(())
}

fn log(c: &mut Caller<'_, Host>, level: i32, ptr: i32, len: i32) -> HostResult {
    let level = LogLevel::from_code(level);
    if level < c.data().log_level {
        return Ok(status::OK);
    }
    let message = read_string(c, ptr, len)?;
    c.data_mut().log(level, message);
    Ok(status::OK)
}
