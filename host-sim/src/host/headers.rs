//! Header maps: `proxy_get_header_map_pairs`, `proxy_set_header_map_pairs`,
//! `proxy_get_header_map_size`,
//! `proxy_get_header_map_value`, `proxy_add_header_map_value`, `proxy_replace_header_map_value`
//! and `proxy_remove_header_map_value` over the stream's request and response headers and
//! trailers and the HTTP call response's headers and trailers. Names are stored lower-case, as
//! Envoy does; each mutation of the request headers counts as a route-cache clear.

use crate::abi::{deserialize_map, map_type, serialize_map, status};
use crate::memory::{finish, give, lossy, read, with_bytes, with_two, write_u32, Fault, HostResult};
use crate::state::{HeaderMap, Host};
use wasmtime::{Caller, Linker};

pub(super) fn add(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    linker.func_wrap(
        "env",
        "proxy_get_header_map_pairs",
        |mut c: Caller<'_, Host>, map: i32, rp: i32, rl: i32| finish(get_pairs(&mut c, map, rp, rl)),
    )?;
    linker.func_wrap(
        "env",
        "proxy_get_header_map_size",
        |mut c: Caller<'_, Host>, map_type: i32, ret: i32| finish(get_size(&mut c, map_type, ret)),
    )?;
    linker.func_wrap(
        "env",
        "proxy_set_header_map_pairs",
        |mut c: Caller<'_, Host>, map: i32, p: i32, l: i32| finish(set_pairs(&mut c, map, p, l)),
    )?;
    linker.func_wrap(
        "env",
        "proxy_get_header_map_value",
        |mut c: Caller<'_, Host>, map: i32, kp: i32, kl: i32, rp: i32, rl: i32| {
            finish(get_value(&mut c, map, kp, kl, rp, rl))
        },
    )?;
    linker.func_wrap(
        "env",
        "proxy_add_header_map_value",
        |mut c: Caller<'_, Host>, map: i32, kp: i32, kl: i32, vp: i32, vl: i32| {
            finish(mutate(&mut c, map, kp, kl, Some((vp, vl)), Edit::Add))
        },
    )?;
    linker.func_wrap(
        "env",
        "proxy_replace_header_map_value",
        |mut c: Caller<'_, Host>, map: i32, kp: i32, kl: i32, vp: i32, vl: i32| {
            finish(mutate(&mut c, map, kp, kl, Some((vp, vl)), Edit::Replace))
        },
    )?;
    linker.func_wrap(
        "env",
        "proxy_remove_header_map_value",
        |mut c: Caller<'_, Host>, map: i32, kp: i32, kl: i32| finish(mutate(&mut c, map, kp, kl, None, Edit::Remove)),
    )?;
    Ok(())
}

/// The map a `map_type` names, if it exists right now. As in Envoy, asking for a map that does
/// not exist (no request in flight, no call response being read, an unknown type) is
/// `BadArgument`, and only the stream's four maps can be changed.
fn map(host: &mut Host, map: i32, mutable: bool) -> Result<&mut HeaderMap, Fault> {
    let missing = Fault::Status(status::BAD_ARGUMENT);
    match map {
        map_type::REQUEST_HEADERS => host.stream.as_mut().map(|s| &mut s.request_headers).ok_or(missing),
        map_type::REQUEST_TRAILERS => host.stream.as_mut().map(|s| &mut s.request_trailers).ok_or(missing),
        map_type::RESPONSE_HEADERS => host.stream.as_mut().map(|s| &mut s.response_headers).ok_or(missing),
        map_type::RESPONSE_TRAILERS => host.stream.as_mut().map(|s| &mut s.response_trailers).ok_or(missing),
        _ if mutable => Err(missing),
        map_type::HTTP_CALL_RESPONSE_HEADERS | map_type::GRPC_INITIAL_METADATA => {
            host.callout.as_mut().map(|c| &mut c.headers).ok_or(missing)
        }
        map_type::HTTP_CALL_RESPONSE_TRAILERS | map_type::GRPC_TRAILING_METADATA => {
            host.callout.as_mut().map(|c| &mut c.trailers).ok_or(missing)
        }
        _ => Err(missing),
    }
}

fn count_clear(host: &mut Host, map_type: i32) {
    if map_type == map_type::REQUEST_HEADERS {
        if let Some(stream) = host.stream.as_mut() {
            stream.header_mutation_clears += 1;
        }
    }
}

/// Once the request has gone upstream, keeps the headers it went with before a later phase edits
/// them (the outcome reports what the upstream saw).
fn freeze(host: &mut Host, map_type: i32) {
    if map_type != map_type::REQUEST_HEADERS {
        return;
    }
    if let Some(stream) = host.stream.as_mut() {
        if stream.request_sent && stream.sent_request_headers.is_none() {
            stream.sent_request_headers = Some(stream.request_headers.clone());
        }
    }
}

fn get_pairs(c: &mut Caller<'_, Host>, map_type: i32, rp: i32, rl: i32) -> HostResult {
    // Envoy answers a map that does not exist with an empty one.
    let bytes = match map(c.data_mut(), map_type, false) {
        Ok(headers) => serialize_map(&headers.0),
        Err(_) => serialize_map::<&str, &str>(&[]),
    };
    give(c, &bytes, rp, rl)
}

/// Envoy's `byteSize`: the names' and values' lengths added up.
fn get_size(c: &mut Caller<'_, Host>, map_type: i32, ret: i32) -> HostResult {
    let size: usize = map(c.data_mut(), map_type, true)?
        .0
        .iter()
        .map(|(k, v)| k.len() + v.len())
        .sum();
    write_u32(c, ret, size as u32)?;
    Ok(status::OK)
}

fn set_pairs(c: &mut Caller<'_, Host>, map_type: i32, p: i32, l: i32) -> HostResult {
    let bytes = read(c, p, l)?;
    let pairs = deserialize_map(&bytes).ok_or(Fault::Status(status::SERIALIZATION_FAILURE))?;
    freeze(c.data_mut(), map_type);
    map(c.data_mut(), map_type, true)?.set_all(pairs);
    count_clear(c.data_mut(), map_type);
    Ok(status::OK)
}

fn get_value(c: &mut Caller<'_, Host>, map_type: i32, kp: i32, kl: i32, rp: i32, rl: i32) -> HostResult {
    let value = with_bytes(c, kp, kl, |key, host| {
        let key = std::str::from_utf8(key).ok()?;
        map(host, map_type, false).ok()?.get(key).map(|v| v.as_bytes().to_vec())
    })?;
    if value.is_none() {
        // Tell a missing map (BadArgument) from a missing header (NotFound).
        map(c.data_mut(), map_type, false)?;
    }
    match value {
        Some(value) => give(c, &value, rp, rl),
        None => Ok(status::NOT_FOUND),
    }
}

enum Edit {
    Add,
    Replace,
    Remove,
}

fn mutate(
    c: &mut Caller<'_, Host>,
    map_type: i32,
    kp: i32,
    kl: i32,
    value: Option<(i32, i32)>,
    edit: Edit,
) -> HostResult {
    // Read in place: the map keeps its own copies, and nothing else is allocated.
    with_two(
        c,
        (kp, kl),
        value.unwrap_or((0, 0)),
        |key, value, host| -> Result<(), Fault> {
            let (key, value) = (lossy(key), lossy(value));
            freeze(host, map_type);
            let headers = map(host, map_type, true)?;
            match edit {
                Edit::Add => headers.add(&key, &value),
                Edit::Replace => headers.replace(&key, &value),
                Edit::Remove => headers.remove(&key),
            }
            count_clear(host, map_type);
            Ok(())
        },
    )??;
    Ok(status::OK)
}
