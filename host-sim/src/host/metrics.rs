//! Metrics: `proxy_define_metric` (the same name gives the same id), `proxy_increment_metric`,
//! `proxy_record_metric` and `proxy_get_metric`, with Envoy's rules: a counter only grows
//! (a negative increment is `BadArgument`), a gauge moves both ways and is set by a record, a
//! histogram counts its records (keeping the last [`HISTOGRAM_TAIL`]) and has no single value to get.

use crate::abi::status;
use crate::memory::{finish, read_string, write_u32, write_u64, HostResult};
use crate::outcome::{MetricKind, HISTOGRAM_TAIL};
use crate::state::{Host, Metric};
use std::collections::VecDeque;
use std::sync::Arc;
use wasmtime::{Caller, Linker};

pub(super) fn add(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    linker.func_wrap(
        "env",
        "proxy_define_metric",
        |mut c: Caller<'_, Host>, kind: i32, np: i32, nl: i32, ret: i32| finish(define(&mut c, kind, np, nl, ret)),
    )?;
    linker.func_wrap(
        "env",
        "proxy_increment_metric",
        |mut c: Caller<'_, Host>, id: i32, offset: i64| Ok(increment(c.data_mut(), id as u32, offset)),
    )?;
    linker.func_wrap(
        "env",
        "proxy_record_metric",
        |mut c: Caller<'_, Host>, id: i32, value: i64| Ok(record(c.data_mut(), id as u32, value as u64)),
    )?;
    linker.func_wrap(
        "env",
        "proxy_get_metric",
        |mut c: Caller<'_, Host>, id: i32, ret: i32| finish(get(&mut c, id as u32, ret)),
    )?;
    Ok(())
}

fn metric(host: &mut Host, id: u32) -> Option<&mut Metric> {
    (id as usize).checked_sub(1).and_then(|i| host.metrics.get_mut(i))
}

fn define(c: &mut Caller<'_, Host>, kind: i32, np: i32, nl: i32, ret: i32) -> HostResult {
    let kind = match kind {
        0 => MetricKind::Counter,
        1 => MetricKind::Gauge,
        2 => MetricKind::Histogram,
        _ => return Ok(status::BAD_ARGUMENT),
    };
    let name = read_string(c, np, nl)?;
    let host = c.data_mut();
    let id = match host.metric_ids.get(name.as_str()) {
        Some(&i) => i + 1,
        None => {
            let name: Arc<str> = name.into();
            host.metrics.push(Metric {
                name: Arc::clone(&name),
                kind,
                value: 0,
                records: VecDeque::new(),
            });
            host.metric_ids.insert(name, host.metrics.len() - 1);
            host.metrics.len()
        }
    };
    write_u32(c, ret, id as u32)?;
    Ok(status::OK)
}

fn increment(host: &mut Host, id: u32, offset: i64) -> i32 {
    let Some(m) = metric(host, id) else {
        return status::NOT_FOUND;
    };
    match m.kind {
        MetricKind::Counter if offset < 0 => status::BAD_ARGUMENT,
        MetricKind::Counter | MetricKind::Gauge => {
            m.value = m.value.wrapping_add_signed(offset);
            status::OK
        }
        MetricKind::Histogram => status::BAD_ARGUMENT,
    }
}

fn record(host: &mut Host, id: u32, value: u64) -> i32 {
    let Some(m) = metric(host, id) else {
        return status::NOT_FOUND;
    };
    match m.kind {
        // Envoy raises a counter to the recorded value; it never lowers it.
        MetricKind::Counter => m.value = m.value.max(value),
        MetricKind::Gauge => m.value = value,
        MetricKind::Histogram => {
            m.value += 1;
            if m.records.len() == HISTOGRAM_TAIL {
                m.records.pop_front();
            }
            m.records.push_back(value);
        }
    }
    status::OK
}

fn get(c: &mut Caller<'_, Host>, id: u32, ret: i32) -> HostResult {
    let value = match metric(c.data_mut(), id) {
        None => return Ok(status::NOT_FOUND),
        Some(m) if m.kind == MetricKind::Histogram => return Ok(status::BAD_ARGUMENT),
        Some(m) => m.value,
    };
    write_u64(c, ret, value)?;
    Ok(status::OK)
}
