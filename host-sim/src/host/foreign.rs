//! `proxy_call_foreign_function` and the foreign functions Envoy registers that modules call here:
//!
//! - `clear_route_cache` (counted; also ABI 0.1.0's `proxy_clear_route_cache`);
//! - `uncompress`: the argument, a zlib stream, inflated (Envoy's `foreign.cc` calls zlib's
//!   `uncompress()`; here miniz_oxide inflates the same format natively). A stream that is not zlib
//!   answers `SerializationFailure`, as Envoy's does. Envoy sets no size limit (its buffer doubles
//!   until the output fits); here the output stops at 4 GiB, more than a wasm32 module can take.
//!
//! Any other name, or one withheld (`Sim::without_foreign_function`), answers `NotFound`, as a
//! host without that function does.

use crate::abi::status;
use crate::memory::{finish, give, read, read_string, HostResult};
use crate::state::Host;
use wasmtime::{Caller, Linker};

/// The most `uncompress` inflates: a wasm32 module's whole address space.
const MAX_UNCOMPRESSED: usize = u32::MAX as usize;

pub(super) fn add(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    linker.func_wrap(
        "env",
        "proxy_call_foreign_function",
        |mut c: Caller<'_, Host>, np: i32, nl: i32, ap: i32, al: i32, rp: i32, rl: i32| {
            finish(foreign(&mut c, (np, nl), (ap, al), rp, rl))
        },
    )?;
    // ABI 0.1.0's spelling, still imported by some modules.
    linker.func_wrap("env", "proxy_clear_route_cache", |mut c: Caller<'_, Host>| {
        count_clear(c.data_mut());
        Ok(status::OK)
    })?;
    Ok(())
}

fn count_clear(host: &mut Host) {
    match host.stream.as_mut() {
        Some(stream) => stream.foreign_clears += 1,
        None => host.root_foreign_clears += 1,
    }
}

fn foreign(c: &mut Caller<'_, Host>, name: (i32, i32), args: (i32, i32), rp: i32, rl: i32) -> HostResult {
    let name = read_string(c, name.0, name.1)?;
    let args = read(c, args.0, args.1)?;
    if c.data().withheld_foreign.contains(&name) {
        return Ok(status::NOT_FOUND);
    }
    match name.as_str() {
        "clear_route_cache" => {
            count_clear(c.data_mut());
            give(c, &[], rp, rl)
        }
        "uncompress" => match miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(&args, MAX_UNCOMPRESSED) {
            Ok(inflated) => give(c, &inflated, rp, rl),
            Err(_) => Ok(status::SERIALIZATION_FAILURE),
        },
        _ => Ok(status::NOT_FOUND),
    }
}
