//! Buffers: `proxy_get_buffer_bytes` and `proxy_set_buffer_bytes` over the request and response
//! bodies, the HTTP call or gRPC response body, the VM and plugin configurations and a foreign
//! function's call data.

use crate::abi::{buffer_type, status};
use crate::memory::{finish, give, read, Fault, HostResult};
use crate::state::Host;
use wasmtime::{Caller, Linker};

pub(super) fn add(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    linker.func_wrap(
        "env",
        "proxy_get_buffer_bytes",
        |mut c: Caller<'_, Host>, kind: i32, start: i32, max: i32, rp: i32, rl: i32| {
            finish(get(&mut c, kind, start, max, rp, rl))
        },
    )?;
    linker.func_wrap(
        "env",
        "proxy_set_buffer_bytes",
        |mut c: Caller<'_, Host>, kind: i32, start: i32, size: i32, dp: i32, dl: i32| {
            finish(set(&mut c, kind, start, size, dp, dl))
        },
    )?;
    Ok(())
}

fn buffer(host: &mut Host, kind: i32) -> Result<&mut Vec<u8>, Fault> {
    let missing = Fault::Status(status::NOT_FOUND);
    match kind {
        buffer_type::REQUEST_BODY => host
            .stream
            .as_mut()
            .and_then(|s| s.request_body.as_mut())
            .ok_or(missing),
        buffer_type::RESPONSE_BODY => host
            .stream
            .as_mut()
            .and_then(|s| s.response_body.as_mut())
            .ok_or(missing),
        buffer_type::HTTP_CALL_RESPONSE_BODY | buffer_type::GRPC_RECEIVE_BUFFER => {
            host.callout.as_mut().map(|c| &mut c.body).ok_or(missing)
        }
        buffer_type::VM_CONFIGURATION => Ok(&mut host.vm_config),
        buffer_type::PLUGIN_CONFIGURATION => Ok(&mut host.plugin_config),
        buffer_type::CALL_DATA => Ok(&mut host.call_data),
        // Downstream and upstream data belong to TCP filters, which host-sim does not drive.
        _ => Err(Fault::Status(status::BAD_ARGUMENT)),
    }
}

fn get(c: &mut Caller<'_, Host>, kind: i32, start: i32, max: i32, rp: i32, rl: i32) -> HostResult {
    let bytes = {
        let buffer = buffer(c.data_mut(), kind)?;
        let start = start as u32 as usize;
        if start > buffer.len() {
            return Ok(status::BAD_ARGUMENT);
        }
        let end = start.saturating_add(max as u32 as usize).min(buffer.len());
        let bytes = buffer[start..end].to_vec();
        if kind == buffer_type::PLUGIN_CONFIGURATION {
            c.data_mut().plugin_config_read += bytes.len();
        }
        bytes
    };
    give(c, &bytes, rp, rl)
}

/// Replaces `size` bytes at `start` with the module's data (so `start = 0, size = len` replaces
/// the whole buffer, `start = len` appends), clamped to the buffer.
fn set(c: &mut Caller<'_, Host>, kind: i32, start: i32, size: i32, dp: i32, dl: i32) -> HostResult {
    if !matches!(kind, buffer_type::REQUEST_BODY | buffer_type::RESPONSE_BODY) {
        return Ok(status::BAD_ARGUMENT);
    }
    let data = read(c, dp, dl)?;
    let buffer = buffer(c.data_mut(), kind)?;
    let start = (start as u32 as usize).min(buffer.len());
    let end = start.saturating_add(size as u32 as usize).min(buffer.len());
    buffer.splice(start..end, data);
    Ok(status::OK)
}
