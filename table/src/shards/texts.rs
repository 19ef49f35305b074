//! [`Texts`]: where a sharded document's shard texts are (in a parsed document, or in a
//! configuration still to be read by ranges), and [`TextReader`], which reads those a store lacks.
//!
//! A text read by ranges is checked against the bytes the writer puts around it: its quotes and
//! the `,` (or, after the last shard, `]`) that follows. The reader takes runs of adjacent texts
//! the store lacks in one range of at most [`RUN_BYTES`]: a VM that lacks every shard (in Envoy,
//! the canary) asks the host for its configuration some tens of times, not once per shard, and a
//! VM that lacks a few reads no byte of the shards it holds. The texts of a run are not copied out
//! of it: each is a [`ShardText`], a range of the run's buffer, which the run's shards share. A
//! fresh VM's every byte is on a page it touches first, about 0.75 ms a megabyte in wasmtime
//! (BENCHMARKS.md, "The canary's load"), so a copy of every text was an eighth of the canary's load.
//! Only a store's first table keeps its texts so ([`ShardText::detached`] otherwise), as the
//! records' hashes (`hashes.rs`).

use std::collections::VecDeque;
use std::fmt;
use std::ops::{Deref, Range};
use std::sync::Arc;

use super::fingerprint::{self, Fingerprint};
use super::{shape, Source};
use crate::error::TableError;

/// At most how many bytes one read of adjacent texts takes (a run of one text may be longer).
pub const RUN_BYTES: usize = 64 * 1024;

/// Where the shards' texts are.
pub enum Texts<'s> {
    /// In the parsed document, each shard's text in table order.
    Inline(Vec<&'s str>),
    /// In `source`, not read yet: each shard's text's byte range, in table order.
    Ranged {
        /// The configuration the texts are read from.
        source: &'s dyn Source,
        /// Each text's bytes (without its quotes).
        ranges: Vec<Range<usize>>,
    },
}

impl fmt::Debug for Texts<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Texts::Inline(texts) => write!(f, "Inline({} texts)", texts.len()),
            Texts::Ranged { ranges, .. } => write!(f, "Ranged({} ranges)", ranges.len()),
        }
    }
}

/// A shard's text: in the parsed document, or a range of the buffer of a run of texts read
/// together, shared with the run's other shards.
#[derive(Debug, Clone)]
pub enum ShardText<'s> {
    /// In the document.
    Borrowed(&'s str),
    /// `range` of a run read by ranges.
    Run {
        /// The run's bytes, from the quote before its first text to the `,` or `]` after its last.
        run: Arc<String>,
        /// This text's bytes in `run`, between its quotes.
        range: Range<usize>,
    },
}

impl ShardText<'_> {
    /// Whether the text's buffer holds more than the text.
    #[cfg(test)]
    pub fn shares_a_buffer(&self) -> bool {
        matches!(self, ShardText::Run { run, range } if run.len() > range.len())
    }

    /// The text in a buffer of its own, which keeps no other text alive.
    pub fn detached(&self) -> ShardText<'static> {
        ShardText::Borrowed(self).into_owned()
    }

    /// The text, owned (a borrowed one copied; a run's shared).
    pub fn into_owned(self) -> ShardText<'static> {
        match self {
            ShardText::Borrowed(text) => ShardText::Run {
                range: 0..text.len(),
                run: Arc::new(text.to_owned()),
            },
            ShardText::Run { run, range } => ShardText::Run { run, range },
        }
    }
}

impl Deref for ShardText<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            ShardText::Borrowed(text) => text,
            // A text's bounds are next to quotes, so they are character boundaries.
            ShardText::Run { run, range } => run.get(range.clone()).unwrap_or_default(),
        }
    }
}

impl<'s> Texts<'s> {
    /// Shard `index`'s text.
    pub fn get(&self, index: usize) -> Result<ShardText<'s>, TableError> {
        self.get_run(index..index + 1)?
            .pop()
            .ok_or_else(|| shape(&format!("shards[{index}]"), "missing"))
    }

    /// The texts of the shards `run` (adjacent), a ranged run in one read.
    fn get_run(&self, run: Range<usize>) -> Result<Vec<ShardText<'s>>, TableError> {
        let at = |index: usize| format!("shards[{index}]");
        match self {
            Texts::Inline(texts) => texts
                .get(run.clone())
                .map(|texts| texts.iter().map(|text| ShardText::Borrowed(text)).collect())
                .ok_or_else(|| shape(&at(run.start), "missing")),
            Texts::Ranged { source, ranges } => {
                let (Some(first), Some(last)) = (ranges.get(run.start), ranges.get(run.end.wrapping_sub(1))) else {
                    return Err(shape(&at(run.start), "missing"));
                };
                let start = first
                    .start
                    .checked_sub(1)
                    .ok_or_else(|| shape(&at(run.start), "not where `index` and `front` place it"))?;
                let bytes = source
                    .read(start..last.end.saturating_add(2))
                    .ok_or_else(|| shape(&at(run.start), "the host did not hand over the shard's bytes"))?;
                let place = |index: usize| ranges.get(index).map(|r| r.start - start..r.end - start);
                for index in run.clone() {
                    let after = if index + 1 == ranges.len() { b']' } else { b',' };
                    let around = place(index).and_then(|r| bytes.get(r.start - 1..r.end + 2));
                    if !matches!(around, Some([b'"', .., b'"', last]) if *last == after) {
                        return Err(shape(&at(index), "not where `index` and `front` place it"));
                    }
                }
                // Taken as it is when the host handed it over (no copy), checked once.
                let text = String::from_utf8(bytes.into_owned()).map_err(|error| {
                    let bad = error.utf8_error().valid_up_to();
                    let index = run.clone().find(|&i| place(i).is_some_and(|r| bad < r.end));
                    shape(&at(index.unwrap_or(run.start)), "not text")
                })?;
                let text = Arc::new(text);
                Ok(run
                    .filter_map(|index| {
                        Some(ShardText::Run {
                            run: Arc::clone(&text),
                            range: place(index)?,
                        })
                    })
                    .collect())
            }
        }
    }

    /// How many texts there are.
    pub fn len(&self) -> usize {
        match self {
            Texts::Inline(texts) => texts.len(),
            Texts::Ranged { ranges, .. } => ranges.len(),
        }
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A reader of the texts of the shards `wanted` (ascending), adjacent ones read together.
    pub(crate) fn reader(&self, wanted: Vec<usize>) -> TextReader<'_, 's> {
        TextReader {
            texts: self,
            wanted,
            next: 0,
            ready: VecDeque::new(),
        }
    }

    /// The size of shard `index`'s text, for grouping reads (0 when unknown: inline texts are read).
    fn size(&self, index: usize) -> usize {
        match self {
            Texts::Inline(_) => 0,
            Texts::Ranged { ranges, .. } => ranges.get(index).map_or(0, |r| r.len() + 3),
        }
    }
}

/// Reads the texts of some shards ([`Texts::reader`]) in table order, each run of adjacent ones
/// (up to [`RUN_BYTES`]) in one read, and fingerprints them (a run's two at a time:
/// [`fingerprint::fingerprints`]), for the store to check against the index.
pub(crate) struct TextReader<'t, 's> {
    texts: &'t Texts<'s>,
    /// The shards whose texts are wanted, ascending.
    wanted: Vec<usize>,
    /// The first of `wanted` not read yet.
    next: usize,
    /// Texts read and not taken yet, by shard, with their fingerprints.
    ready: VecDeque<(usize, ShardText<'s>, Fingerprint)>,
}

impl<'s> TextReader<'_, 's> {
    /// Shard `index`'s text and its fingerprint. Texts read for shards before it and not taken
    /// are dropped (a shard twice in a table is read once); a shard not among those wanted is read
    /// alone.
    pub fn take(&mut self, index: usize) -> Result<(ShardText<'s>, Fingerprint), TableError> {
        while self.ready.front().is_some_and(|(i, ..)| *i < index) {
            self.ready.pop_front();
        }
        if self.ready.is_empty() {
            self.read_run_from(index)?;
        }
        match self.ready.front() {
            Some((i, ..)) if *i == index => match self.ready.pop_front() {
                Some((_, text, fingerprint)) => Ok((text, fingerprint)),
                None => self.read_alone(index),
            },
            _ => self.read_alone(index),
        }
    }

    fn read_alone(&self, index: usize) -> Result<(ShardText<'s>, Fingerprint), TableError> {
        let text = self.texts.get(index)?;
        let fingerprint = fingerprint::fingerprint(&text);
        Ok((text, fingerprint))
    }

    /// Reads the run of adjacent wanted shards that starts at `index`, if `index` is wanted.
    fn read_run_from(&mut self, index: usize) -> Result<(), TableError> {
        let Some(skip) = self
            .wanted
            .get(self.next..)
            .and_then(|rest| rest.iter().position(|&i| i >= index))
        else {
            return Ok(());
        };
        self.next += skip;
        if self.wanted.get(self.next) != Some(&index) {
            return Ok(());
        }
        let (mut end, mut bytes) = (index + 1, self.texts.size(index));
        while self.wanted.get(self.next + end - index) == Some(&end) && bytes + self.texts.size(end) <= RUN_BYTES {
            bytes += self.texts.size(end);
            end += 1;
        }
        self.next += end - index;
        let texts = self.texts.get_run(index..end)?;
        let fingerprints = fingerprint::fingerprints(texts.iter().map(|text| &**text));
        for ((index, text), fingerprint) in (index..end).zip(texts).zip(fingerprints) {
            self.ready.push_back((index, text, fingerprint));
        }
        Ok(())
    }
}
