//! The compact form's zlib stream inflated by the proxy, not in the module: Envoy registers the
//! foreign function `uncompress` (`source/extensions/common/wasm/foreign.cc`: zlib's `uncompress()`
//! into a buffer that doubles until the output fits; compiled into every Envoy with Wasm, Istio's
//! proxy included), so the `.wasm` links no inflater (miniz_oxide's inflate took 15 KB of it).
//!
//! Envoy's `uncompress` starts with an output buffer twice the argument's length and, while the
//! output does not fit, inflates again from the start into one twice as large: a table's binary
//! document is about 18 times its zlib stream, so the stream alone would be inflated five times
//! over (a millisecond more for 10,000 rules than miniz in the module; BENCHMARKS.md, "Filter
//! size"). So the argument is the stream followed by zero bytes up to [`ARGUMENT_FACTOR`] times its
//! length: zlib's `uncompress()` stops at the stream's end and ignores what follows (zlib's manual:
//! `uncompress2` reports how much of the source it consumed), and the first buffer, 20 times the
//! stream, fits. Were Envoy's first guess to change, inflating would only be slower, never wrong.
//!
//! A host without `uncompress` answers `NotFound` (or `Unimplemented`, without any foreign
//! function): the table is refused with an error that says so
//! and that the JSON form works, and the table serving before keeps serving. Envoy's `uncompress`
//! has no size limit of its own: a stream that inflates to more than the table crate's limit is
//! refused after the host inflated it (the table comes from the control plane, not from a client).

use switchyard_table::compact::{CompactError, Inflater};

use crate::host::HostCallFailed;

/// The name of the host's foreign function.
pub const FOREIGN_FUNCTION: &str = "uncompress";

/// The argument's length in multiples of the stream's: the stream, then zero bytes.
pub const ARGUMENT_FACTOR: usize = 10;

/// proxy-wasm's `NotFound`: the host has no foreign function of that name.
const NOT_FOUND: u32 = 1;

/// proxy-wasm's `Unimplemented`: the host has no foreign functions at all.
const UNIMPLEMENTED: u32 = 12;

/// proxy-wasm's `SerializationFailure`: what Envoy's `uncompress` answers for a bad stream.
const SERIALIZATION_FAILURE: u32 = 3;

/// An [`Inflater`] over a call of the host's `uncompress` (the filter's is
/// `proxy_call_foreign_function`; tests pass a closure), which it hands the zlib stream followed by
/// zero bytes ([`ARGUMENT_FACTOR`]).
pub struct HostUncompress<F>(pub F);

impl<F: Fn(&[u8]) -> Result<Vec<u8>, HostCallFailed>> Inflater for HostUncompress<F> {
    fn inflate_zlib(&self, deflated: &[u8], limit: usize) -> Result<Vec<u8>, CompactError> {
        let mut argument = Vec::with_capacity(deflated.len().saturating_mul(ARGUMENT_FACTOR));
        argument.extend_from_slice(deflated);
        argument.resize(argument.capacity(), 0);
        match (self.0)(&argument) {
            Ok(inflated) if inflated.len() <= limit => Ok(inflated),
            Ok(inflated) => Err(CompactError::Zlib(format!(
                "the host's `{FOREIGN_FUNCTION}` inflated it to {} bytes",
                inflated.len()
            ))),
            Err(HostCallFailed(NOT_FOUND | UNIMPLEMENTED)) => Err(CompactError::NoInflater(format!(
                "this host has no foreign function `{FOREIGN_FUNCTION}` (Envoy and Istio's proxy have it), and \
                 the filter has no inflater of its own"
            ))),
            Err(HostCallFailed(SERIALIZATION_FAILURE)) => Err(CompactError::Zlib(format!(
                "the host's `{FOREIGN_FUNCTION}` refused it (proxy-wasm status SerializationFailure)"
            ))),
            Err(HostCallFailed(status)) => Err(CompactError::Zlib(format!(
                "the host's `{FOREIGN_FUNCTION}` failed (proxy-wasm status {status})"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_table::compact::MAX_INFLATED;

    #[test]
    fn the_hosts_answer_is_the_inflated_document() {
        let host = HostUncompress(|_: &[u8]| Ok(b"inflated".to_vec()));
        assert_eq!(host.inflate_zlib(b"zlib", MAX_INFLATED), Ok(b"inflated".to_vec()));
    }

    /// The host gets the stream and zero bytes up to ten times its length (that a zlib inflater
    /// reads past them: `config`'s tests, miniz as in host-sim; Envoy's zlib, the e2e suite).
    #[test]
    fn the_stream_is_handed_over_followed_by_zero_bytes() {
        let seen = std::cell::RefCell::new(Vec::new());
        let host = HostUncompress(|argument: &[u8]| {
            seen.replace(argument.to_vec());
            Ok(Vec::new())
        });
        assert_eq!(host.inflate_zlib(b"zlib stream", MAX_INFLATED), Ok(Vec::new()));
        let argument = seen.into_inner();
        assert_eq!(argument.len(), b"zlib stream".len() * ARGUMENT_FACTOR);
        assert!(argument.starts_with(b"zlib stream") && argument[11..].iter().all(|&b| b == 0));
    }

    #[test]
    fn a_host_without_uncompress_refuses_the_table_and_names_the_json_form() {
        for status in [NOT_FOUND, UNIMPLEMENTED] {
            let host = HostUncompress(|_: &[u8]| Err(HostCallFailed(status)));
            let error = host.inflate_zlib(b"zlib", MAX_INFLATED).unwrap_err();
            assert!(matches!(error, CompactError::NoInflater(_)), "{error:?}");
            let text = error.to_string();
            assert!(text.contains("no foreign function `uncompress`"), "{text}");
            assert!(text.contains("JSON form"), "{text}");
            assert!(text.contains("--table-encoding json"), "{text}");
        }
    }

    #[test]
    fn a_stream_the_host_refuses_or_that_inflates_too_far_is_a_zlib_error() {
        let refused = HostUncompress(|_: &[u8]| Err(HostCallFailed(SERIALIZATION_FAILURE)));
        let error = refused.inflate_zlib(b"not zlib", MAX_INFLATED).unwrap_err().to_string();
        assert!(
            error.contains("not a zlib stream") && error.contains("SerializationFailure"),
            "{error}"
        );
        let other = HostUncompress(|_: &[u8]| Err(HostCallFailed(10)));
        let error = other.inflate_zlib(b"", MAX_INFLATED).unwrap_err().to_string();
        assert!(error.contains("proxy-wasm status 10"), "{error}");
        let big = HostUncompress(|_: &[u8]| Ok(vec![0; 11]));
        let error = big.inflate_zlib(b"", 10).unwrap_err().to_string();
        assert!(error.contains("inflated it to 11 bytes"), "{error}");
    }
}
