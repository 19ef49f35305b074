//! Shared queues: `proxy_register_shared_queue`, `proxy_resolve_shared_queue`,
//! `proxy_enqueue_shared_queue` and `proxy_dequeue_shared_queue` (`Empty` when there is nothing).
//! An enqueue marks the queue ready; the simulator that registered it (last) calls its root
//! context's `proxy_on_queue_ready` once the current call into the module has returned, as Envoy
//! posts it to that VM's dispatcher (a sibling simulator delivers at its next call or
//! `Sim::run_pending`).

use crate::abi::status;
use crate::memory::{finish, give, read, read_string, write_u32, HostResult};
use crate::state::{Host, Queue};
use wasmtime::{Caller, Linker};

pub(super) fn add(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    linker.func_wrap(
        "env",
        "proxy_register_shared_queue",
        |mut c: Caller<'_, Host>, np: i32, nl: i32, ret: i32| finish(register(&mut c, np, nl, ret)),
    )?;
    linker.func_wrap(
        "env",
        "proxy_resolve_shared_queue",
        |mut c: Caller<'_, Host>, _vp: i32, _vl: i32, np: i32, nl: i32, ret: i32| finish(resolve(&mut c, np, nl, ret)),
    )?;
    linker.func_wrap(
        "env",
        "proxy_enqueue_shared_queue",
        |mut c: Caller<'_, Host>, id: i32, vp: i32, vl: i32| finish(enqueue(&mut c, id as u32, vp, vl)),
    )?;
    linker.func_wrap(
        "env",
        "proxy_dequeue_shared_queue",
        |mut c: Caller<'_, Host>, id: i32, rp: i32, rl: i32| finish(dequeue(&mut c, id as u32, rp, rl)),
    )?;
    Ok(())
}

/// Queue ids start at 1 so that 0 never names a queue.
fn index(id: u32) -> Option<usize> {
    (id as usize).checked_sub(1)
}

fn register(c: &mut Caller<'_, Host>, np: i32, nl: i32, ret: i32) -> HostResult {
    let name = read_string(c, np, nl)?;
    let owner = c.data().effective_context;
    let instance = c.data().instance;
    let id = {
        let host = c.data();
        let mut shared = host.shared();
        match shared.queues.iter().position(|q| q.name == name) {
            Some(i) => {
                shared.queues[i].owner_context = owner;
                shared.queues[i].owner_instance = instance;
                i + 1
            }
            None => {
                shared.queues.push(Queue {
                    name,
                    owner_instance: instance,
                    owner_context: owner,
                    items: Default::default(),
                });
                shared.queues.len()
            }
        }
    };
    write_u32(c, ret, id as u32)?;
    Ok(status::OK)
}

fn resolve(c: &mut Caller<'_, Host>, np: i32, nl: i32, ret: i32) -> HostResult {
    let name = read_string(c, np, nl)?;
    let found = c.data().shared().queues.iter().position(|q| q.name == name);
    match found {
        Some(i) => {
            write_u32(c, ret, i as u32 + 1)?;
            Ok(status::OK)
        }
        None => Ok(status::NOT_FOUND),
    }
}

fn enqueue(c: &mut Caller<'_, Host>, id: u32, vp: i32, vl: i32) -> HostResult {
    let value = read(c, vp, vl)?;
    let host = c.data_mut();
    let mine = {
        let mut shared = host.shared();
        let Some(queue) = index(id).and_then(|i| shared.queues.get_mut(i)) else {
            return Ok(status::NOT_FOUND);
        };
        queue.items.push_back(value);
        let owner = queue.owner_instance;
        if owner != host.instance && !shared.ready.contains(&(owner, id)) {
            shared.ready.push((owner, id));
        }
        owner == host.instance
    };
    if mine && !host.ready_queues.contains(&id) {
        host.ready_queues.push(id);
    }
    Ok(status::OK)
}

fn dequeue(c: &mut Caller<'_, Host>, id: u32, rp: i32, rl: i32) -> HostResult {
    let item = {
        let host = c.data();
        let mut shared = host.shared();
        let Some(queue) = index(id).and_then(|i| shared.queues.get_mut(i)) else {
            return Ok(status::NOT_FOUND);
        };
        queue.items.pop_front()
    };
    match item {
        Some(item) => give(c, &item, rp, rl),
        None => Ok(status::EMPTY),
    }
}
