//! Properties: `proxy_get_property` and `proxy_set_property`. A path arrives NUL-separated and is
//! looked up dotted (`request.path`): first the request's own properties (`Request::property`),
//! then what the module set, then the simulator's (`Sim::property`), then the Envoy attributes
//! host-sim derives from the request in flight (`request.path`, `request.url_path`,
//! `request.host`, `request.method`, `request.scheme`, `request.query`, `request.id`,
//! `request.protocol`, `request.useragent`, `request.referer`, `response.code`, `source.address`,
//! `destination.address`, `connection.mtls`, `plugin_name`, `plugin_root_id`, `plugin_vm_id`).
//! Strings are raw bytes, integers 8-byte little-endian, booleans one byte, as Envoy encodes them.

use crate::abi::{property_key, status};
use crate::memory::{finish, give, read, with_bytes, HostResult};
use crate::state::Host;
use wasmtime::{Caller, Linker};

pub(super) fn add(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    linker.func_wrap(
        "env",
        "proxy_get_property",
        |mut c: Caller<'_, Host>, pp: i32, pl: i32, rp: i32, rl: i32| finish(get(&mut c, pp, pl, rp, rl)),
    )?;
    linker.func_wrap(
        "env",
        "proxy_set_property",
        |mut c: Caller<'_, Host>, pp: i32, pl: i32, vp: i32, vl: i32| finish(set(&mut c, pp, pl, vp, vl)),
    )?;
    Ok(())
}

fn get(c: &mut Caller<'_, Host>, pp: i32, pl: i32, rp: i32, rl: i32) -> HostResult {
    let key = with_bytes(c, pp, pl, |path, _| property_key(path))?;
    match lookup(c.data(), &key) {
        Some(value) => give(c, &value, rp, rl),
        None => Ok(status::NOT_FOUND),
    }
}

fn set(c: &mut Caller<'_, Host>, pp: i32, pl: i32, vp: i32, vl: i32) -> HostResult {
    let key = property_key(&read(c, pp, pl)?);
    let value = read(c, vp, vl)?;
    let host = c.data_mut();
    match host.stream.as_mut() {
        Some(stream) => stream.properties.insert(key, value),
        None => host.properties.insert(key, value),
    };
    Ok(status::OK)
}

pub(crate) fn lookup(host: &Host, key: &str) -> Option<Vec<u8>> {
    if let Some(v) = host.stream.as_ref().and_then(|s| s.properties.get(key)) {
        return Some(v.clone());
    }
    if let Some(v) = host.properties.get(key) {
        return Some(v.clone());
    }
    attribute(host, key)
}

fn attribute(host: &Host, key: &str) -> Option<Vec<u8>> {
    let text = |s: &str| Some(s.as_bytes().to_vec());
    match key {
        "plugin_name" => return text("host-sim"),
        "plugin_root_id" | "plugin_vm_id" => return text(""),
        "source.address" => return text("10.0.0.1:50000"),
        "source.port" => return Some(50000i64.to_le_bytes().to_vec()),
        "destination.address" => return text("10.0.0.2:8080"),
        "destination.port" => return Some(8080i64.to_le_bytes().to_vec()),
        "connection.mtls" => return Some(vec![0]),
        _ => {}
    }
    let stream = host.stream.as_ref()?;
    let request = &stream.request_headers;
    let path = || request.get(":path").unwrap_or("/");
    match key {
        "request.path" => text(path()),
        "request.url_path" => text(path().split('?').next().unwrap_or("/")),
        "request.query" => text(path().split_once('?').map(|(_, q)| q).unwrap_or("")),
        "request.host" => text(request.get(":authority")?),
        "request.method" => text(request.get(":method")?),
        "request.scheme" => text(request.get(":scheme").unwrap_or("http")),
        "request.id" => text(request.get("x-request-id")?),
        "request.protocol" => text("HTTP/1.1"),
        "request.useragent" => text(request.get("user-agent")?),
        "request.referer" => text(request.get("referer")?),
        "response.code" => {
            let code: i64 = stream.response_headers.get(":status")?.parse().ok()?;
            Some(code.to_le_bytes().to_vec())
        }
        _ => None,
    }
}
