//! Out-of-band calls: `proxy_http_call`, and gRPC (`proxy_grpc_call`, `proxy_grpc_stream`,
//! `proxy_grpc_send`, `proxy_grpc_cancel`, `proxy_grpc_close`). A call is recorded with a fresh
//! token and waits for the test to answer it (`Sim::respond_http_call`, `Sim::respond_grpc_call`,
//! or a responder installed with `Sim::on_http_call`). Like Envoy, an HTTP call without
//! `:method`, `:path` and `:authority`, or with a negative timeout, is refused with `BadArgument`.

use crate::abi::{deserialize_map, status};
use crate::memory::{finish, read, read_string, write_u32, Fault, HostResult};
use crate::state::{GrpcCall, Host, HttpCall};
use wasmtime::{Caller, Linker};

pub(super) fn add(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    linker.func_wrap(
        "env",
        "proxy_http_call",
        |mut c: Caller<'_, Host>,
         up: i32,
         ul: i32,
         hp: i32,
         hl: i32,
         bp: i32,
         bl: i32,
         tp: i32,
         tl: i32,
         timeout: i32,
         ret: i32| {
            finish(http_call(
                &mut c,
                [(up, ul), (hp, hl), (bp, bl), (tp, tl)],
                timeout,
                ret,
            ))
        },
    )?;
    linker.func_wrap(
        "env",
        "proxy_grpc_call",
        |mut c: Caller<'_, Host>,
         up: i32,
         ul: i32,
         sp: i32,
         sl: i32,
         mp: i32,
         ml: i32,
         _ip: i32,
         _il: i32,
         gp: i32,
         gl: i32,
         _timeout: i32,
         ret: i32| { finish(grpc_open(&mut c, [(up, ul), (sp, sl), (mp, ml)], Some((gp, gl)), ret)) },
    )?;
    linker.func_wrap(
        "env",
        "proxy_grpc_stream",
        |mut c: Caller<'_, Host>,
         up: i32,
         ul: i32,
         sp: i32,
         sl: i32,
         mp: i32,
         ml: i32,
         _ip: i32,
         _il: i32,
         ret: i32| { finish(grpc_open(&mut c, [(up, ul), (sp, sl), (mp, ml)], None, ret)) },
    )?;
    linker.func_wrap(
        "env",
        "proxy_grpc_send",
        |mut c: Caller<'_, Host>, token: i32, mp: i32, ml: i32, _end: i32| {
            finish(grpc_send(&mut c, token as u32, mp, ml))
        },
    )?;
    linker.func_wrap("env", "proxy_grpc_cancel", |mut c: Caller<'_, Host>, token: i32| {
        Ok(grpc_end(c.data_mut(), token as u32))
    })?;
    linker.func_wrap("env", "proxy_grpc_close", |mut c: Caller<'_, Host>, token: i32| {
        Ok(grpc_end(c.data_mut(), token as u32))
    })?;
    Ok(())
}

fn next_token(host: &mut Host) -> u32 {
    let token = host.next_token;
    host.next_token = host.next_token.wrapping_add(1).max(1);
    token
}

fn http_call(c: &mut Caller<'_, Host>, parts: [(i32, i32); 4], timeout: i32, ret: i32) -> HostResult {
    let [upstream, headers, body, trailers] = parts;
    let upstream = read_string(c, upstream.0, upstream.1)?;
    let headers =
        deserialize_map(&read(c, headers.0, headers.1)?).ok_or(Fault::Status(status::SERIALIZATION_FAILURE))?;
    let body = read(c, body.0, body.1)?;
    let trailers =
        deserialize_map(&read(c, trailers.0, trailers.1)?).ok_or(Fault::Status(status::SERIALIZATION_FAILURE))?;
    let has = |name: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    if timeout < 0 || !(has(":method") && has(":path") && has(":authority")) {
        return Ok(status::BAD_ARGUMENT);
    }
    let host = c.data_mut();
    let token = next_token(host);
    let context_id = host.effective_context;
    host.http_calls.push(HttpCall {
        token,
        context_id,
        upstream,
        headers,
        body,
        trailers,
        timeout_ms: timeout as u32,
    });
    write_u32(c, ret, token)?;
    Ok(status::OK)
}

fn grpc_open(c: &mut Caller<'_, Host>, names: [(i32, i32); 3], message: Option<(i32, i32)>, ret: i32) -> HostResult {
    let [upstream, service, method] = names;
    let upstream = read_string(c, upstream.0, upstream.1)?;
    let service = read_string(c, service.0, service.1)?;
    let method = read_string(c, method.0, method.1)?;
    let messages = match message {
        Some((p, l)) => vec![read(c, p, l)?],
        None => Vec::new(),
    };
    let host = c.data_mut();
    let token = next_token(host);
    let context_id = host.effective_context;
    let streaming = message.is_none();
    host.grpc_calls.push(GrpcCall {
        token,
        context_id,
        upstream,
        service,
        method,
        messages,
        streaming,
    });
    write_u32(c, ret, token)?;
    Ok(status::OK)
}

fn grpc_send(c: &mut Caller<'_, Host>, token: u32, mp: i32, ml: i32) -> HostResult {
    let message = read(c, mp, ml)?;
    match c.data_mut().grpc_calls.iter_mut().find(|g| g.token == token) {
        Some(call) => {
            call.messages.push(message);
            Ok(status::OK)
        }
        None => Ok(status::NOT_FOUND),
    }
}

fn grpc_end(host: &mut Host, token: u32) -> i32 {
    let before = host.grpc_calls.len();
    host.grpc_calls.retain(|g| g.token != token);
    if host.grpc_calls.len() < before {
        status::OK
    } else {
        status::NOT_FOUND
    }
}
