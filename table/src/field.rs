//! HTTP field syntax (RFC 9110 §5): what a header name and a header value may hold.
//!
//! Everything the filter writes into a request or response header comes from the table: cluster
//! names (the cluster header), `set_headers` values, the rewritten `:path`, and rule names (the
//! debug response header). A CR, LF or NUL there makes Envoy refuse the header and answer 503 for
//! every request the rule wins, so the table refuses such values up front, and the compiler calls
//! the same [`field_value`] to give the resource a status naming its own field.

use std::fmt;

/// An HTTP token (RFC 9110 §5.6.2): what a header name may be made of.
pub fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Why a text is not an HTTP field value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValueFault {
    /// A control character (anything below 0x20 but HTAB, and DEL) at this byte offset.
    Control {
        /// The byte.
        byte: u8,
        /// Its offset in the value.
        at: usize,
    },
    /// A space or tab at the start or the end (RFC 9110 strips them, so the value would change).
    EdgeWhitespace,
}

impl fmt::Display for FieldValueFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FieldValueFault::Control { byte, at } => {
                let name = match byte {
                    b'\r' => "CR",
                    b'\n' => "LF",
                    0 => "NUL",
                    0x7f => "DEL",
                    _ => "a control character",
                };
                write!(
                    f,
                    "it holds {name} (0x{byte:02x}) at byte {at}; an HTTP field value (RFC 9110 §5.5) may hold no control character but tab"
                )
            }
            FieldValueFault::EdgeWhitespace => f.write_str(
                "it starts or ends with a space or tab, which an HTTP field value (RFC 9110 §5.5) cannot keep",
            ),
        }
    }
}

/// Checks that `value` is an HTTP field value as RFC 9110 §5.5 defines it: visible ASCII, bytes
/// above 0x7F (`obs-text`, so UTF-8 passes), and spaces or tabs only between them. Empty is fine.
pub fn field_value(value: &str) -> Result<(), FieldValueFault> {
    if let Some(at) = value.bytes().position(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        let byte = value.as_bytes().get(at).copied().unwrap_or(0);
        return Err(FieldValueFault::Control { byte, at });
    }
    if value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']) {
        return Err(FieldValueFault::EdgeWhitespace);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn field_values_refuse_controls_and_edge_whitespace() {
        for good in [
            "",
            "shop",
            "a b\tc",
            "production/service1:80",
            "outbound|80||s.ns.svc",
            "café",
            "~!\"#",
        ] {
            assert_eq!(field_value(good), Ok(()), "{good:?}");
        }
        let control = |value: &str| match field_value(value) {
            Err(FieldValueFault::Control { byte, at }) => Some((byte, at)),
            _ => None,
        };
        assert_eq!(control("shop\r\nx-injected: 1"), Some((b'\r', 4)));
        assert_eq!(control("a\nb"), Some((b'\n', 1)));
        assert_eq!(control("a\0"), Some((0, 1)));
        assert_eq!(control("\u{1}x"), Some((1, 0)));
        assert_eq!(control("x\u{1b}[0m"), Some((0x1b, 1)));
        assert_eq!(control("del\u{7f}"), Some((0x7f, 3)));
        for edge in [" a", "a ", "\ta", "a\t", " "] {
            assert_eq!(field_value(edge), Err(FieldValueFault::EdgeWhitespace), "{edge:?}");
        }
        let message = field_value("a\r").unwrap_err().to_string();
        assert!(
            message.contains("CR (0x0d) at byte 1") && message.contains("RFC 9110"),
            "{message}"
        );
    }
}
