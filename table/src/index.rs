//! The lookup index: from a request's host and path to the few rules that could match it.
//!
//! Cost follows the request, not the table: one hash probe per host level (exact host, the host
//! less its first label for wildcards, and the catch-all), then per level a path index:
//! - exact paths: one probe with the whole path;
//! - segment prefixes: one probe per `/` in the path (walking a segment trie, flattened into one
//!   map of whole prefixes);
//! - string prefixes: one probe per distinct prefix length stored for that host (walking a
//!   character trie, flattened the same way);
//! - regexes: a list in table order, tried lazily, only while no earlier rule has won.
//!
//! The maps hash with FxHash: their keys come from the table, not from clients, so a client can
//! only probe them, never fill them with collisions; SipHash's protection buys nothing here.
//!
//! Rule ids are positions in the table; every list is ascending, so the first match in id order
//! is the first match in table order.

use rustc_hash::FxHashMap as HashMap;

use crate::host::{wildcard_suffix, HostPattern};
use crate::path::PathPattern;

/// A rule's position in the table.
pub(crate) type RuleId = u32;

/// Rules by host level, then by path.
#[derive(Debug, Default)]
pub(crate) struct HostIndex {
    exact: HashMap<Box<str>, PathIndex>,
    wildcard: HashMap<Box<str>, PathIndex>,
    any: PathIndex,
}

/// One host's rules by path.
#[derive(Debug, Default)]
pub(crate) struct PathIndex {
    exact: HashMap<Box<str>, Vec<RuleId>>,
    segment: HashMap<Box<str>, Vec<RuleId>>,
    prefix: HashMap<Box<str>, Vec<RuleId>>,
    /// The distinct lengths of the keys of `prefix`, ascending.
    prefix_lengths: Vec<usize>,
    regex: Vec<RuleId>,
}

/// The candidates for one request: ids whose host and path match, plus regex ids still to try.
pub(crate) struct Candidates<'i> {
    /// Ids from the maps, ascending; those before `next_fixed` have been handed out.
    fixed: Vec<RuleId>,
    next_fixed: usize,
    /// Regex ids per host level, each ascending; their path is not tested yet.
    regex: [&'i [RuleId]; 3],
}

impl HostIndex {
    pub fn insert(&mut self, id: RuleId, host: &HostPattern, path: &PathPattern) {
        let level = match host {
            HostPattern::Exact(name) => self.exact.entry(name.as_str().into()).or_default(),
            HostPattern::Wildcard(suffix) => self.wildcard.entry(suffix.as_str().into()).or_default(),
            HostPattern::Any => &mut self.any,
        };
        level.insert(id, path);
    }

    /// Gathers the candidates for a normalised host and a path without query string.
    pub fn candidates(&self, host: &str, path: &str) -> Candidates<'_> {
        let mut fixed = Vec::with_capacity(16);
        let mut regex: [&[RuleId]; 3] = [&[], &[], &[]];
        let levels = [
            probe(&self.exact, Some(host)),
            probe(&self.wildcard, wildcard_suffix(host)),
            Some(&self.any),
        ];
        for (slot, level) in regex.iter_mut().zip(levels) {
            if let Some(level) = level {
                level.collect(path, &mut fixed);
                *slot = &level.regex;
            }
        }
        fixed.sort_unstable();
        Candidates {
            fixed,
            next_fixed: 0,
            regex,
        }
    }
}

fn probe<'i>(map: &'i HashMap<Box<str>, PathIndex>, key: Option<&str>) -> Option<&'i PathIndex> {
    if map.is_empty() {
        return None;
    }
    map.get(key?)
}

impl PathIndex {
    fn insert(&mut self, id: RuleId, path: &PathPattern) {
        let (map, key) = match path {
            PathPattern::Exact(path) => (&mut self.exact, path),
            PathPattern::SegmentPrefix(prefix) => (&mut self.segment, prefix),
            PathPattern::Prefix(prefix) => {
                if let Err(at) = self.prefix_lengths.binary_search(&prefix.len()) {
                    self.prefix_lengths.insert(at, prefix.len());
                }
                (&mut self.prefix, prefix)
            }
            PathPattern::Regex(..) => {
                self.regex.push(id);
                return;
            }
        };
        map.entry(key.as_str().into()).or_default().push(id);
    }

    fn collect(&self, path: &str, out: &mut Vec<RuleId>) {
        let found = |map: &HashMap<Box<str>, Vec<RuleId>>, key: &str, out: &mut Vec<RuleId>| {
            if let Some(ids) = map.get(key) {
                out.extend_from_slice(ids);
            }
        };
        if !self.exact.is_empty() {
            found(&self.exact, path, out);
        }
        if !self.segment.is_empty() {
            // Every prefix ending just before a `/`, and the whole path.
            for (at, _) in path.bytes().enumerate().filter(|&(_, b)| b == b'/') {
                if let Some(head) = path.get(..at) {
                    found(&self.segment, head, out);
                }
            }
            found(&self.segment, path, out);
        }
        for &len in &self.prefix_lengths {
            match path.get(..len) {
                Some(head) => found(&self.prefix, head, out),
                None if len > path.len() => break,
                None => {} // not a character boundary: no stored prefix ends there
            }
        }
    }
}

impl<'i> Candidates<'i> {
    /// The next id in table order, with whether its path still needs the regex test.
    pub fn next_id(&mut self) -> Option<(RuleId, bool)> {
        let mut best: Option<(RuleId, Option<usize>)> = self.fixed.get(self.next_fixed).map(|&id| (id, None));
        for (level, list) in self.regex.iter().enumerate() {
            if let Some(&id) = list.first() {
                if best.is_none_or(|(b, _)| id < b) {
                    best = Some((id, Some(level)));
                }
            }
        }
        let (id, level) = best?;
        match level {
            None => self.next_fixed += 1,
            Some(level) => {
                if let Some(slot) = self.regex.get_mut(level) {
                    *slot = slot.get(1..).unwrap_or(&[]);
                }
            }
        }
        Some((id, level.is_some()))
    }
}
