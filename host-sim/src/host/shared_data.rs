//! Shared data with compare-and-swap: `proxy_get_shared_data` returns a value and its CAS token;
//! `proxy_set_shared_data` with a non-zero CAS succeeds only while the token is current (else
//! `CasMismatch`), and every write issues a new token. The store belongs to the simulator.

use crate::abi::status;
use crate::memory::{finish, give, lossy, with_bytes, with_two, write_u32, HostResult};
use crate::state::Host;
use wasmtime::{Caller, Linker};

pub(super) fn add(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    linker.func_wrap(
        "env",
        "proxy_get_shared_data",
        |mut c: Caller<'_, Host>, kp: i32, kl: i32, rp: i32, rl: i32, rcas: i32| {
            finish(get(&mut c, kp, kl, rp, rl, rcas))
        },
    )?;
    linker.func_wrap(
        "env",
        "proxy_set_shared_data",
        |mut c: Caller<'_, Host>, kp: i32, kl: i32, vp: i32, vl: i32, cas: i32| {
            finish(set(&mut c, kp, kl, vp, vl, cas as u32))
        },
    )?;
    Ok(())
}

fn get(c: &mut Caller<'_, Host>, kp: i32, kl: i32, rp: i32, rl: i32, rcas: i32) -> HostResult {
    let found = with_bytes(c, kp, kl, |key, host| host.shared().data.get(&*lossy(key)).cloned())?;
    let Some((value, cas)) = found else {
        return Ok(status::NOT_FOUND);
    };
    write_u32(c, rcas, cas)?;
    give(c, &value, rp, rl)
}

fn set(c: &mut Caller<'_, Host>, kp: i32, kl: i32, vp: i32, vl: i32, cas: u32) -> HostResult {
    with_two(c, (kp, kl), (vp, vl), |key, value, host| {
        let key = lossy(key);
        let mut shared = host.shared();
        let current = shared.data.get(&*key).map(|(_, version)| *version);
        if cas != 0 && current != Some(cas) {
            return status::CAS_MISMATCH;
        }
        shared.next_cas = shared.next_cas.wrapping_add(1).max(1);
        let next = shared.next_cas;
        match shared.data.get_mut(&*key) {
            // Written in place: a key written again costs no new allocation.
            Some((stored, version)) => {
                stored.clear();
                stored.extend_from_slice(value);
                *version = next;
            }
            None => {
                shared.data.insert(key.into_owned(), (value.to_vec(), next));
            }
        }
        status::OK
    })
}
