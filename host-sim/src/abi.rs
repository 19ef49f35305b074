//! The numbers and byte layouts of proxy-wasm ABI 0.2.1 that host and module agree on: status
//! codes, map, buffer and stream types, filter actions, and the serialization of header maps and
//! property paths. Pure functions, no wasmtime.

/// `WasmResult` status codes a host call returns.
pub(crate) mod status {
    pub const OK: i32 = 0;
    pub const NOT_FOUND: i32 = 1;
    pub const BAD_ARGUMENT: i32 = 2;
    pub const SERIALIZATION_FAILURE: i32 = 3;
    pub const INVALID_MEMORY_ACCESS: i32 = 6;
    pub const EMPTY: i32 = 7;
    pub const CAS_MISMATCH: i32 = 8;
    pub const INTERNAL_FAILURE: i32 = 10;
}

/// `proxy_*_header_map_*`'s `map_type`.
pub(crate) mod map_type {
    pub const REQUEST_HEADERS: i32 = 0;
    pub const REQUEST_TRAILERS: i32 = 1;
    pub const RESPONSE_HEADERS: i32 = 2;
    pub const RESPONSE_TRAILERS: i32 = 3;
    pub const GRPC_INITIAL_METADATA: i32 = 4;
    pub const GRPC_TRAILING_METADATA: i32 = 5;
    pub const HTTP_CALL_RESPONSE_HEADERS: i32 = 6;
    pub const HTTP_CALL_RESPONSE_TRAILERS: i32 = 7;
}

/// `proxy_get_buffer_bytes`' `buffer_type`.
pub(crate) mod buffer_type {
    pub const REQUEST_BODY: i32 = 0;
    pub const RESPONSE_BODY: i32 = 1;
    pub const HTTP_CALL_RESPONSE_BODY: i32 = 4;
    pub const GRPC_RECEIVE_BUFFER: i32 = 5;
    pub const VM_CONFIGURATION: i32 = 6;
    pub const PLUGIN_CONFIGURATION: i32 = 7;
    pub const CALL_DATA: i32 = 8;
}

/// `proxy_continue_stream` / `proxy_close_stream`'s `stream_type`.
pub(crate) mod stream_type {
    pub const REQUEST: i32 = 0;
    pub const RESPONSE: i32 = 1;
}

/// Serializes header pairs as proxy-wasm does: a little-endian u32 count, then a (key length,
/// value length) u32 pair per entry, then each key and value followed by a NUL byte.
pub fn serialize_map<K: AsRef<[u8]>, V: AsRef<[u8]>>(pairs: &[(K, V)]) -> Vec<u8> {
    let size = 4 + pairs
        .iter()
        .map(|(k, v)| 10 + k.as_ref().len() + v.as_ref().len())
        .sum::<usize>();
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(&(pairs.len() as u32).to_le_bytes());
    for (k, v) in pairs {
        out.extend_from_slice(&(k.as_ref().len() as u32).to_le_bytes());
        out.extend_from_slice(&(v.as_ref().len() as u32).to_le_bytes());
    }
    for (k, v) in pairs {
        out.extend_from_slice(k.as_ref());
        out.push(0);
        out.extend_from_slice(v.as_ref());
        out.push(0);
    }
    out
}

/// Reads the layout [`serialize_map`] writes. `None` when the bytes are truncated or the sizes do
/// not add up (the module sent garbage); an empty input is an empty map.
pub fn deserialize_map(bytes: &[u8]) -> Option<Vec<(String, String)>> {
    if bytes.is_empty() {
        return Some(Vec::new());
    }
    let word = |at: usize| -> Option<usize> {
        let b = bytes.get(at..at.checked_add(4)?)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    let count = word(0)?;
    let mut data = 4usize.checked_add(count.checked_mul(8)?)?;
    if data > bytes.len() {
        return None;
    }
    let mut pairs = Vec::with_capacity(count);
    for i in 0..count {
        let key_len = word(4 + i * 8)?;
        let value_len = word(8 + i * 8)?;
        let key = bytes.get(data..data.checked_add(key_len)?)?;
        data += key_len + 1;
        let value = bytes.get(data..data.checked_add(value_len)?)?;
        data += value_len + 1;
        pairs.push((
            String::from_utf8_lossy(key).into_owned(),
            String::from_utf8_lossy(value).into_owned(),
        ));
    }
    Some(pairs)
}

/// A property path arrives as its segments separated by NUL bytes (`request\0path`); host-sim
/// names properties with dots (`request.path`).
pub fn property_key(path: &[u8]) -> String {
    let path = path.strip_suffix(&[0]).unwrap_or(path);
    String::from_utf8_lossy(path).replace('\0', ".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_survives_serialization() {
        let pairs = vec![
            (":path".to_string(), "/a".to_string()),
            ("x".to_string(), String::new()),
        ];
        let bytes = serialize_map(&pairs);
        assert_eq!(&bytes[..4], &2u32.to_le_bytes());
        assert_eq!(deserialize_map(&bytes), Some(pairs));
    }

    #[test]
    fn truncated_maps_are_refused_not_panicked_on() {
        let bytes = serialize_map(&[("key", "value")]);
        for cut in 1..bytes.len() - 1 {
            assert_eq!(deserialize_map(&bytes[..cut]), None, "cut at {cut}");
        }
        assert_eq!(deserialize_map(&[255, 255, 255, 255]), None);
    }

    #[test]
    fn property_paths_use_dots() {
        assert_eq!(property_key(b"request\0path"), "request.path");
        assert_eq!(property_key(b"plugin_name\0"), "plugin_name");
    }
}
