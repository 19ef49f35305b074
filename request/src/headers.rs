//! A request's header map as the proxy hands it over: one text buffer and the places of each name
//! and value in it.
//!
//! `proxy_get_header_map_pairs` answers with the ABI's serialised map (a count, then each pair's
//! name and value lengths as little-endian `u32`, then the names and values, each followed by a
//! NUL). Decoding it into a `Vec<(String, String)>` cost two allocations and two UTF-8 checks per
//! header on every request; a [`HeaderBlock`] keeps the host's buffer (the lengths are dropped in
//! place, and the text is checked once) and records ranges, so a request's headers cost one
//! allocation for the ranges, whatever their number. A name or value that is not UTF-8 is read
//! lossily, as before (the whole block is then rebuilt, which only such a request pays).

use std::ops::Range;

/// The place of one name or value in [`HeaderBlock`]'s text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    start: u32,
    end: u32,
}

impl Span {
    fn new(range: Range<usize>) -> Option<Span> {
        Some(Span {
            start: u32::try_from(range.start).ok()?,
            end: u32::try_from(range.end).ok()?,
        })
    }

    fn range(self) -> Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// Header names and values in one buffer, in the order the proxy gave them.
#[derive(Debug, Default)]
pub struct HeaderBlock {
    text: String,
    pairs: Vec<(Span, Span)>,
}

impl HeaderBlock {
    /// The block holding `pairs`, in order (tests and hosts without the serialised form).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> HeaderBlock {
        let mut block = HeaderBlock::default();
        for (name, value) in pairs {
            block.push(name, value);
        }
        block
    }

    /// The block holding `pairs` of names and values as bytes, in order; one that is not UTF-8 is
    /// read lossily (each is checked once, and copied into the block once).
    pub fn from_byte_pairs<'a>(pairs: impl IntoIterator<Item = (&'a [u8], &'a [u8])>) -> HeaderBlock {
        let mut block = HeaderBlock::default();
        for (name, value) in pairs {
            block.push(&String::from_utf8_lossy(name), &String::from_utf8_lossy(value));
        }
        block
    }

    /// Decodes the ABI's serialised map; `None` when the bytes are not one (a host fault: the
    /// request is then matched as if it had no headers).
    pub fn decode(mut bytes: Vec<u8>) -> Option<HeaderBlock> {
        let count = word(&bytes, 0)?;
        let data_start = count.checked_mul(8)?.checked_add(4)?;
        let text_len = bytes.len().checked_sub(data_start)?;
        let mut pairs = Vec::with_capacity(count);
        let mut at = 0usize;
        for i in 0..count {
            let (name_len, value_len) = (word(&bytes, 4 + 8 * i)?, word(&bytes, 8 + 8 * i)?);
            let name = at..at.checked_add(name_len)?;
            let value_start = name.end.checked_add(1)?;
            let value = value_start..value_start.checked_add(value_len)?;
            at = value.end.checked_add(1)?;
            pairs.push((Span::new(name)?, Span::new(value)?));
        }
        if at > text_len {
            return None;
        }
        // The lengths are no longer needed: the text moves to the buffer's start, no new allocation.
        bytes.drain(..data_start);
        match String::from_utf8(bytes) {
            Ok(text) => Some(HeaderBlock { text, pairs }),
            Err(error) => {
                let bytes = error.into_bytes();
                let at = |s: Span| bytes.get(s.range()).unwrap_or_default();
                Some(HeaderBlock::from_byte_pairs(
                    pairs.into_iter().map(|(n, v)| (at(n), at(v))),
                ))
            }
        }
    }

    fn push(&mut self, name: &str, value: &str) {
        let mut span = |text: &str| {
            let start = self.text.len();
            self.text.push_str(text);
            Span::new(start..self.text.len())
        };
        if let (Some(name), Some(value)) = (span(name), span(value)) {
            self.pairs.push((name, value));
        }
    }

    /// The text at `span` (empty for a span of another block).
    pub fn text(&self, span: Span) -> &str {
        self.text.get(span.range()).unwrap_or_default()
    }

    /// Every pair as spans, in order.
    pub fn spans(&self) -> impl Iterator<Item = (Span, Span)> + '_ {
        self.pairs.iter().copied()
    }

    /// Every pair, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.spans().map(|(name, value)| (self.text(name), self.text(value)))
    }

    /// The value of the first header named `name` (exactly: names are lowercase), as a span.
    pub fn first(&self, name: &str) -> Option<Span> {
        self.spans()
            .find(|&(n, _)| self.text(n) == name)
            .map(|(_, value)| value)
    }
}

/// The little-endian `u32` at `at`.
fn word(bytes: &[u8], at: usize) -> Option<usize> {
    let four: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
    usize::try_from(u32::from_le_bytes(four)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ABI's serialised form of `pairs`, as a proxy writes it.
    fn serialise(pairs: &[(&[u8], &[u8])]) -> Vec<u8> {
        let mut bytes = (pairs.len() as u32).to_le_bytes().to_vec();
        for (name, value) in pairs {
            bytes.extend((name.len() as u32).to_le_bytes());
            bytes.extend((value.len() as u32).to_le_bytes());
        }
        for (name, value) in pairs {
            bytes.extend(*name);
            bytes.push(0);
            bytes.extend(*value);
            bytes.push(0);
        }
        bytes
    }

    #[test]
    fn a_serialised_map_decodes_to_its_pairs_in_order() {
        let bytes = serialise(&[(b":authority", b"example.net"), (b"x-a", b""), (b"x-a", b"2")]);
        let block = HeaderBlock::decode(bytes).unwrap();
        let pairs: Vec<_> = block.iter().collect();
        assert_eq!(pairs, [(":authority", "example.net"), ("x-a", ""), ("x-a", "2")]);
        assert_eq!(block.first("x-a").map(|s| block.text(s)), Some(""));
        assert_eq!(block.first("x-b"), None);
    }

    #[test]
    fn a_value_that_is_not_utf8_is_read_lossily_and_the_others_kept() {
        let bytes = serialise(&[(b"x-bin", b"a\xffb"), (b"x-ok", b"fine")]);
        let block = HeaderBlock::decode(bytes).unwrap();
        let pairs: Vec<_> = block.iter().collect();
        assert_eq!(pairs, [("x-bin", "a\u{fffd}b"), ("x-ok", "fine")]);
    }

    #[test]
    fn bytes_that_are_not_a_serialised_map_are_refused() {
        assert!(HeaderBlock::decode(Vec::new()).is_none());
        // A count of pairs whose lengths are not there.
        assert!(HeaderBlock::decode(vec![5, 0, 0, 0, 1, 0, 0, 0]).is_none());
        // Lengths past the end of the text.
        let mut bytes = serialise(&[(b"x-a", b"1")]);
        bytes.truncate(bytes.len() - 2);
        assert!(HeaderBlock::decode(bytes).is_none());
        // A count that overflows.
        assert!(HeaderBlock::decode(vec![0xff, 0xff, 0xff, 0xff]).is_none());
    }

    #[test]
    fn an_empty_map_decodes_to_no_pairs() {
        let block = HeaderBlock::decode(serialise(&[])).unwrap();
        assert_eq!(block.iter().count(), 0);
    }

    #[test]
    fn from_pairs_keeps_every_pair() {
        let block = HeaderBlock::from_pairs([("a", "1"), ("b", "2")]);
        assert_eq!(block.iter().collect::<Vec<_>>(), [("a", "1"), ("b", "2")]);
    }
}
