//! Moving bytes across the module boundary: reading the module's arguments out of its linear
//! memory, writing scalars to the pointers it passes, and handing it host data in memory it
//! allocates itself (`proxy_on_memory_allocate`), as the ABI requires. A bad pointer from the module
//! is answered with `InvalidMemoryAccess`, never a host panic.

use crate::abi::status;
use crate::state::Host;
use wasmtime::{Caller, Error};

/// Why a host call stops early: a status for the module, or a trap to unwind it.
pub(crate) enum Fault {
    Status(i32),
    Trap(Error),
}

impl From<Error> for Fault {
    fn from(e: Error) -> Fault {
        Fault::Trap(e)
    }
}

/// What a host call's body returns; [`finish`] turns it into the import's result.
pub(crate) type HostResult = Result<i32, Fault>;

pub(crate) fn finish(result: HostResult) -> wasmtime::Result<i32> {
    match result {
        Ok(code) | Err(Fault::Status(code)) => Ok(code),
        Err(Fault::Trap(e)) => Err(e),
    }
}

fn range(ptr: i32, len: i32) -> Option<std::ops::Range<usize>> {
    let start = ptr as u32 as usize;
    Some(start..start.checked_add(len as u32 as usize)?)
}

fn memory(caller: &Caller<'_, Host>) -> Result<wasmtime::Memory, Fault> {
    caller.data().memory.ok_or(Fault::Status(status::INTERNAL_FAILURE))
}

/// A copy of `len` bytes at `ptr`.
pub(crate) fn read(caller: &mut Caller<'_, Host>, ptr: i32, len: i32) -> Result<Vec<u8>, Fault> {
    let mem = memory(caller)?;
    let data = mem.data(&*caller);
    range(ptr, len)
        .and_then(|r| data.get(r))
        .map(<[u8]>::to_vec)
        .ok_or(Fault::Status(status::INVALID_MEMORY_ACCESS))
}

/// Calls `f` with the bytes at `ptr` (read in place, no copy) and the host state.
pub(crate) fn with_bytes<R>(
    caller: &mut Caller<'_, Host>,
    ptr: i32,
    len: i32,
    f: impl FnOnce(&[u8], &mut Host) -> R,
) -> Result<R, Fault> {
    let mem = memory(caller)?;
    let (data, host) = mem.data_and_store_mut(&mut *caller);
    let bytes = range(ptr, len)
        .and_then(|r| data.get(r))
        .ok_or(Fault::Status(status::INVALID_MEMORY_ACCESS))?;
    Ok(f(bytes, host))
}

/// Calls `f` with the bytes at two places (read in place, no copy) and the host state.
pub(crate) fn with_two<R>(
    caller: &mut Caller<'_, Host>,
    (p1, l1): (i32, i32),
    (p2, l2): (i32, i32),
    f: impl FnOnce(&[u8], &[u8], &mut Host) -> R,
) -> Result<R, Fault> {
    let mem = memory(caller)?;
    let (data, host) = mem.data_and_store_mut(&mut *caller);
    let at = |ptr, len| range(ptr, len).and_then(|r| data.get(r));
    match (at(p1, l1), at(p2, l2)) {
        (Some(first), Some(second)) => Ok(f(first, second, host)),
        _ => Err(Fault::Status(status::INVALID_MEMORY_ACCESS)),
    }
}

/// `bytes` as text: borrowed when they are UTF-8, else with U+FFFD in place of what is not.
pub(crate) fn lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    // `from_utf8` first: its check runs a word at a time, `from_utf8_lossy`'s a chunk at a time.
    match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Calls `f` with the module's memory at `ptr..ptr + len`, writable in place, and the host state.
pub(crate) fn with_bytes_mut<R>(
    caller: &mut Caller<'_, Host>,
    ptr: i32,
    len: i32,
    f: impl FnOnce(&mut [u8], &mut Host) -> R,
) -> Result<R, Fault> {
    let mem = memory(caller)?;
    let (data, host) = mem.data_and_store_mut(&mut *caller);
    let bytes = range(ptr, len)
        .and_then(|r| data.get_mut(r))
        .ok_or(Fault::Status(status::INVALID_MEMORY_ACCESS))?;
    Ok(f(bytes, host))
}

/// The bytes at `ptr` as text (lossy: header names and values are ASCII in practice).
pub(crate) fn read_string(caller: &mut Caller<'_, Host>, ptr: i32, len: i32) -> Result<String, Fault> {
    with_bytes(caller, ptr, len, |bytes, _| lossy(bytes).into_owned())
}

/// Writes `bytes` at `ptr`.
pub(crate) fn write(caller: &mut Caller<'_, Host>, ptr: i32, bytes: &[u8]) -> Result<(), Fault> {
    let mem = memory(caller)?;
    let data = mem.data_mut(&mut *caller);
    let target = range(ptr, bytes.len() as i32)
        .and_then(|r| data.get_mut(r))
        .ok_or(Fault::Status(status::INVALID_MEMORY_ACCESS))?;
    target.copy_from_slice(bytes);
    Ok(())
}

pub(crate) fn write_u32(caller: &mut Caller<'_, Host>, ptr: i32, value: u32) -> Result<(), Fault> {
    write(caller, ptr, &value.to_le_bytes())
}

pub(crate) fn write_u64(caller: &mut Caller<'_, Host>, ptr: i32, value: u64) -> Result<(), Fault> {
    write(caller, ptr, &value.to_le_bytes())
}

/// Hands `bytes` to the module: allocates room with the module's allocator, copies the bytes in,
/// and writes the address and the size to `ret_ptr` and `ret_len`. Empty data is returned as a
/// null pointer and a zero size.
pub(crate) fn give(caller: &mut Caller<'_, Host>, bytes: &[u8], ret_ptr: i32, ret_len: i32) -> HostResult {
    let address = if bytes.is_empty() {
        0
    } else {
        let allocate = caller
            .data()
            .allocate
            .clone()
            .ok_or(Fault::Status(status::INTERNAL_FAILURE))?;
        let address = allocate.call(&mut *caller, bytes.len() as i32)?;
        if address == 0 {
            return Err(Fault::Status(status::INVALID_MEMORY_ACCESS));
        }
        write(caller, address, bytes)?;
        address
    };
    write_u32(caller, ret_ptr, address as u32)?;
    write_u32(caller, ret_len, bytes.len() as u32)?;
    Ok(status::OK)
}
