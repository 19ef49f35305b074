//! Stream control and the rest of the context calls: `proxy_continue_stream` /
//! `proxy_close_stream` (and 0.2.0's `proxy_continue_request` / `proxy_continue_response`),
//! `proxy_send_local_response`, `proxy_set_tick_period_milliseconds`,
//! `proxy_set_effective_context`, `proxy_done` and `proxy_get_status` (the foreign functions are
//! in `foreign`).

use crate::abi::{deserialize_map, status, stream_type};
use crate::memory::{finish, give, read, read_string, write_u32, Fault, HostResult};
use crate::outcome::LocalResponse;
use crate::state::Host;
use wasmtime::{Caller, Linker};

pub(super) fn add(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    linker.func_wrap("env", "proxy_continue_stream", |mut c: Caller<'_, Host>, kind: i32| {
        Ok(resume(c.data_mut(), kind))
    })?;
    linker.func_wrap("env", "proxy_continue_request", |mut c: Caller<'_, Host>| {
        Ok(resume(c.data_mut(), stream_type::REQUEST))
    })?;
    linker.func_wrap("env", "proxy_continue_response", |mut c: Caller<'_, Host>| {
        Ok(resume(c.data_mut(), stream_type::RESPONSE))
    })?;
    linker.func_wrap("env", "proxy_close_stream", |mut c: Caller<'_, Host>, _kind: i32| {
        Ok(match c.data_mut().stream.as_mut() {
            Some(stream) => {
                stream.reset = true;
                status::OK
            }
            None => status::NOT_FOUND,
        })
    })?;
    linker.func_wrap(
        "env",
        "proxy_send_local_response",
        |mut c: Caller<'_, Host>, code: i32, dp: i32, dl: i32, bp: i32, bl: i32, hp: i32, hl: i32, grpc: i32| {
            finish(local_response(&mut c, code, (dp, dl), (bp, bl), (hp, hl), grpc))
        },
    )?;
    linker.func_wrap(
        "env",
        "proxy_set_tick_period_milliseconds",
        |mut c: Caller<'_, Host>, period: i32| {
            c.data_mut().tick_period_ms = period as u32;
            Ok(status::OK)
        },
    )?;
    linker.func_wrap(
        "env",
        "proxy_set_effective_context",
        |mut c: Caller<'_, Host>, context: i32| {
            c.data_mut().effective_context = context as u32;
            Ok(status::OK)
        },
    )?;
    linker.func_wrap("env", "proxy_done", |mut c: Caller<'_, Host>| {
        let host = c.data_mut();
        let context = host.effective_context;
        host.done_contexts.push(context);
        Ok(status::OK)
    })?;
    linker.func_wrap(
        "env",
        "proxy_get_status",
        |mut c: Caller<'_, Host>, code_ptr: i32, mp: i32, ml: i32| finish(get_status(&mut c, code_ptr, mp, ml)),
    )?;
    Ok(())
}

fn resume(host: &mut Host, kind: i32) -> i32 {
    let Some(stream) = host.stream.as_mut() else {
        return status::NOT_FOUND;
    };
    match kind {
        stream_type::REQUEST => stream.resumed_request = true,
        stream_type::RESPONSE => stream.resumed_response = true,
        _ => return status::BAD_ARGUMENT,
    }
    status::OK
}

fn local_response(
    c: &mut Caller<'_, Host>,
    code: i32,
    details: (i32, i32),
    body: (i32, i32),
    headers: (i32, i32),
    grpc_status: i32,
) -> HostResult {
    let details = read_string(c, details.0, details.1)?;
    let body = read(c, body.0, body.1)?;
    let headers = read(c, headers.0, headers.1)?;
    let headers = deserialize_map(&headers).ok_or(Fault::Status(status::SERIALIZATION_FAILURE))?;
    let Some(stream) = c.data_mut().stream.as_mut() else {
        return Ok(status::NOT_FOUND);
    };
    stream.local_response = Some(LocalResponse {
        status: code as u32,
        details,
        headers: headers.into_iter().map(|(k, v)| (k.to_ascii_lowercase(), v)).collect(),
        body,
        grpc_status,
    });
    Ok(status::OK)
}

fn get_status(c: &mut Caller<'_, Host>, code_ptr: i32, mp: i32, ml: i32) -> HostResult {
    let (code, message) = c.data().grpc_status.clone();
    write_u32(c, code_ptr, code)?;
    give(c, message.as_bytes(), mp, ml)
}
