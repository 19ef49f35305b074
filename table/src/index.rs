//! The lookup index: from a request's host and path to the few rules that could match it.
//!
//! Cost follows the request, not the table, and grows linearly with the path: one hash probe per
//! host level (exact host, the host less its first label for wildcards, and the catch-all), then
//! per level one walk down a radix tree that holds the level's exact paths, segment prefixes and
//! string prefixes together:
//! - every node is a stored path (or a branch point) and carries the rules ending there;
//! - the walk compares each byte of the request path at most once, from the root down, and stops
//!   at the first byte no stored path continues with;
//! - at a node of depth `d`, its string prefixes match, its segment prefixes match when the path
//!   ends at `d` or has a `/` there, and its exact paths match when the path ends at `d`;
//! - regexes: those with a literal start (the text every match starts with, [`Start`]) in a second
//!   tree of the same kind, keyed by that text in lowercase and walked comparing the path in any
//!   ASCII case, so a host's hundred regex-mode locations cost one walk, not a hundred tests; the
//!   others in a list in table order. Either way a regex runs lazily, only while no earlier rule
//!   has won.
//!
//! So a 60 KB path of slashes costs one pass over at most 60 KB, never a hash of every prefix
//! (which made a path of `n` slashes cost `n²`/2 bytes of hashing).
//!
//! The host maps hash with FxHash: their keys come from the table, not from clients, so a client
//! can only probe them, never fill them with collisions; SipHash's protection buys nothing here.
//!
//! Rule ids are positions in the table; every list is ascending, so the first match in id order
//! is the first match in table order.

use rustc_hash::FxHashMap as HashMap;

use crate::host::{wildcard_suffix, HostPattern};
use crate::path::{PathPattern, Start};

/// A rule's position in the table.
pub(crate) type RuleId = u32;

/// Rules by host level, then by path.
#[derive(Debug, Default)]
pub(crate) struct HostIndex {
    exact: HashMap<Box<str>, PathIndex>,
    wildcard: HashMap<Box<str>, PathIndex>,
    any: PathIndex,
}

/// One host's rules by path: a radix tree of the stored paths, and the regex rules.
#[derive(Debug, Default)]
pub(crate) struct PathIndex {
    /// The tree's nodes; the root (the empty path) is the first, once anything is stored.
    nodes: Vec<Node>,
    /// Every edge label, as a range of this buffer (a label is a piece of the path it came from,
    /// and splitting an edge splits its range).
    labels: Vec<u8>,
    /// The regex rules whose matches start with a text: a tree of string prefixes, that text in
    /// lowercase (it holds no regex rules of its own). A rule it yields still needs its regex test.
    regex_starts: Option<Box<PathIndex>>,
    /// The other regex rules, ascending.
    regex: Vec<RuleId>,
}

/// A node of the radix tree: the path spelled by the labels from the root down to it.
#[derive(Debug)]
struct Node {
    /// Start and length of the label of the edge from the parent, in [`PathIndex::labels`].
    label: (u32, u32),
    /// The children, by the first byte of their label, ascending.
    children: Vec<(u8, u32)>,
    /// The rules whose path is this node's, ascending.
    rules: Vec<(PathKind, RuleId)>,
}

/// How a rule stored in the tree matches at its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PathKind {
    /// The request path ends here.
    Exact,
    /// The request path ends here or continues with `/`.
    Segment,
    /// Whatever follows.
    Prefix,
}

/// The candidates for one request: ids whose host and path match, plus regex ids still to try.
pub(crate) struct Candidates<'i> {
    /// Ids from the trees, ascending; those before `next_fixed` have been handed out.
    fixed: Vec<RuleId>,
    next_fixed: usize,
    /// Regex ids whose literal start the path has, from the trees of starts, ascending; their path
    /// is not tested yet. Those before `next_start` have been handed out.
    starts: Vec<RuleId>,
    next_start: usize,
    /// Regex ids per host level, each ascending; their path is not tested yet.
    regex: [&'i [RuleId]; 3],
}

impl HostIndex {
    /// The number of distinct hosts (exact and wildcard) the rules name.
    pub fn hosts(&self) -> usize {
        self.exact.len() + self.wildcard.len()
    }

    pub fn insert(&mut self, id: RuleId, host: &HostPattern, path: &PathPattern) {
        let level = match host {
            HostPattern::Exact(name) => self.exact.entry(name.as_str().into()).or_default(),
            HostPattern::Wildcard(suffix) => self.wildcard.entry(suffix.as_str().into()).or_default(),
            HostPattern::Any => &mut self.any,
        };
        level.insert(id, path);
    }

    /// Releases the spare capacity left by building, once every rule is in.
    pub fn shrink(&mut self) {
        for level in self.exact.values_mut().chain(self.wildcard.values_mut()) {
            level.shrink();
        }
        self.any.shrink();
        self.exact.shrink_to_fit();
        self.wildcard.shrink_to_fit();
    }

    /// Gathers the candidates for a normalised host and a path without query string.
    pub fn candidates(&self, host: &str, path: &str) -> Candidates<'_> {
        let (mut fixed, mut starts) = (Vec::with_capacity(16), Vec::new());
        let mut regex: [&[RuleId]; 3] = [&[], &[], &[]];
        for (slot, level) in regex.iter_mut().zip(self.levels(host)) {
            if let Some(level) = level {
                level.collect(path.as_bytes(), false, &mut fixed);
                if let Some(tree) = &level.regex_starts {
                    tree.collect(path.as_bytes(), true, &mut starts);
                }
                *slot = &level.regex;
            }
        }
        fixed.sort_unstable();
        starts.sort_unstable();
        Candidates {
            fixed,
            next_fixed: 0,
            starts,
            next_start: 0,
            regex,
        }
    }

    /// The path indexes of the three host levels that apply to a normalised host.
    fn levels(&self, host: &str) -> [Option<&PathIndex>; 3] {
        [
            probe(&self.exact, Some(host)),
            probe(&self.wildcard, wildcard_suffix(host)),
            Some(&self.any),
        ]
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
        let (kind, key) = match path {
            PathPattern::Exact(path) => (PathKind::Exact, path),
            PathPattern::SegmentPrefix(prefix) => (PathKind::Segment, prefix),
            PathPattern::Prefix(prefix) => (PathKind::Prefix, prefix),
            PathPattern::Regex(regex) => {
                self.insert_regex(id, regex.start());
                return;
            }
        };
        self.store(key.as_bytes(), kind, id);
    }

    /// A regex rule goes to the tree of literal starts when it has one, else to the list.
    fn insert_regex(&mut self, id: RuleId, start: &Start) {
        let text = start.text();
        if text.is_empty() {
            self.regex.push(id);
        } else {
            let starts = self.regex_starts.get_or_insert_default();
            starts.store(text.to_ascii_lowercase().as_bytes(), PathKind::Prefix, id);
        }
    }

    fn store(&mut self, key: &[u8], kind: PathKind, id: RuleId) {
        let at = self.node_for(key);
        if let Some(node) = self.nodes.get_mut(at) {
            node.rules.push((kind, id));
        }
    }

    /// The node spelling `key`, made (splitting an edge if need be) when it is missing.
    fn node_for(&mut self, key: &[u8]) -> usize {
        if self.nodes.is_empty() {
            self.nodes.push(Node::new((0, 0)));
        }
        let (mut at, mut rest) = (0, key);
        while let Some(&first) = rest.first() {
            let Some(node) = self.nodes.get(at) else { break };
            let slot = node.children.binary_search_by_key(&first, |&(byte, _)| byte);
            let Ok(slot) = slot else {
                // No child starts with this byte: the rest of the key is a new leaf.
                let leaf = self.push_node(rest);
                if let (Err(slot), Some(node)) = (slot, self.nodes.get_mut(at)) {
                    node.children.insert(slot, (first, leaf as u32));
                }
                return leaf;
            };
            let child = node.children.get(slot).map_or(0, |&(_, c)| c as usize);
            let label = self.label(child);
            let common = label.iter().zip(rest).take_while(|(a, b)| a == b).count();
            rest = rest.get(common..).unwrap_or_default();
            if common < label.len() {
                // The key leaves the edge part-way: a new node where it does, the old child below it.
                let (start, len) = self.nodes.get(child).map_or((0, 0), |n| n.label);
                let split = self.nodes.len();
                let next_byte = label.get(common).copied().unwrap_or(0);
                let mut middle = Node::new((start, common as u32));
                middle.children.push((next_byte, child as u32));
                self.nodes.push(middle);
                if let Some(old) = self.nodes.get_mut(child) {
                    old.label = (start + common as u32, len - common as u32);
                }
                if let Some(edge) = self.nodes.get_mut(at).and_then(|n| n.children.get_mut(slot)) {
                    edge.1 = split as u32;
                }
                at = split;
            } else {
                at = child;
            }
        }
        at
    }

    fn push_node(&mut self, label: &[u8]) -> usize {
        let start = self.labels.len() as u32;
        self.labels.extend_from_slice(label);
        self.nodes.push(Node::new((start, label.len() as u32)));
        self.nodes.len() - 1
    }

    fn label(&self, node: usize) -> &[u8] {
        let (start, len) = self.nodes.get(node).map_or((0, 0), |n| n.label);
        self.labels
            .get(start as usize..(start + len) as usize)
            .unwrap_or_default()
    }

    fn shrink(&mut self) {
        for node in &mut self.nodes {
            node.children.shrink_to_fit();
            node.rules.shrink_to_fit();
        }
        self.nodes.shrink_to_fit();
        self.labels.shrink_to_fit();
        self.regex.shrink_to_fit();
        if let Some(starts) = &mut self.regex_starts {
            starts.shrink();
        }
    }

    /// Adds the ids of the stored paths that match `path`; returns the work done (nodes visited
    /// plus path bytes compared), which is at most twice the path's length plus one. With
    /// `regex_starts` the tree is a [`PathIndex::regex_starts`], and the path is compared in any
    /// ASCII case.
    fn collect(&self, path: &[u8], regex_starts: bool, out: &mut Vec<RuleId>) -> usize {
        let Some(mut node) = self.nodes.first() else { return 0 };
        let (mut depth, mut work) = (0, 0);
        loop {
            work += 1;
            let next = path.get(depth).copied();
            for &(kind, id) in &node.rules {
                let matches = match kind {
                    PathKind::Prefix => true,
                    PathKind::Segment => matches!(next, None | Some(b'/')),
                    PathKind::Exact => next.is_none(),
                };
                if matches {
                    out.push(id);
                }
            }
            let Some(byte) = next else { break };
            let byte = if regex_starts { byte.to_ascii_lowercase() } else { byte };
            let Ok(slot) = node.children.binary_search_by_key(&byte, |&(b, _)| b) else {
                break;
            };
            let Some(&(_, child)) = node.children.get(slot) else {
                break;
            };
            let label = self.label(child as usize);
            let rest = path.get(depth..).unwrap_or_default();
            work += label.len().min(rest.len());
            let follows = match rest.get(..label.len()) {
                Some(head) if regex_starts => head.eq_ignore_ascii_case(label),
                Some(head) => head == label,
                None => false,
            };
            if !follows {
                break;
            }
            depth += label.len();
            match self.nodes.get(child as usize) {
                Some(child) => node = child,
                None => break,
            }
        }
        work
    }
}

impl Node {
    fn new(label: (u32, u32)) -> Self {
        Node {
            label,
            children: Vec::new(),
            rules: Vec::new(),
        }
    }
}

impl<'i> Candidates<'i> {
    /// The next id in table order, with whether its path still needs the regex test.
    pub fn next_id(&mut self) -> Option<(RuleId, bool)> {
        // The source of the best id so far: the trees' list, the starts' list, or a host level's regexes.
        enum From {
            Fixed,
            Starts,
            Regex(usize),
        }
        let mut best: Option<(RuleId, From)> = self.fixed.get(self.next_fixed).map(|&id| (id, From::Fixed));
        if let Some(&id) = self.starts.get(self.next_start) {
            if best.as_ref().is_none_or(|&(b, _)| id < b) {
                best = Some((id, From::Starts));
            }
        }
        for (level, list) in self.regex.iter().enumerate() {
            if let Some(&id) = list.first() {
                if best.as_ref().is_none_or(|&(b, _)| id < b) {
                    best = Some((id, From::Regex(level)));
                }
            }
        }
        let (id, from) = best?;
        match from {
            From::Fixed => self.next_fixed += 1,
            From::Starts => self.next_start += 1,
            From::Regex(level) => {
                if let Some(slot) = self.regex.get_mut(level) {
                    *slot = slot.get(1..).unwrap_or(&[]);
                }
            }
        }
        Some((id, !matches!(from, From::Fixed)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::PathSpec;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn index(paths: &[PathSpec]) -> PathIndex {
        let mut index = PathIndex::default();
        for (id, spec) in paths.iter().enumerate() {
            index.insert(id as RuleId, &PathPattern::compile(spec).unwrap());
        }
        index
    }

    fn found(index: &PathIndex, path: &str) -> Vec<RuleId> {
        let mut out = Vec::new();
        index.collect(path.as_bytes(), false, &mut out);
        out.sort_unstable();
        out
    }

    /// Paths that share bytes split edges part-way; each kind still matches where it should.
    #[test]
    fn the_tree_finds_exact_segment_and_string_prefixes_through_split_edges() {
        let index = index(&[
            PathSpec::SegmentPrefix("/foo/bar".into()), // 0
            PathSpec::Prefix("/fo".into()),             // 1
            PathSpec::Exact("/foo".into()),             // 2
            PathSpec::SegmentPrefix("/".into()),        // 3
            PathSpec::SegmentPrefix("/foo/".into()),    // 4: held as /foo
            PathSpec::Prefix("/foo/ba".into()),         // 5
            PathSpec::Exact("/foo/barn".into()),        // 6
        ]);
        assert_eq!(found(&index, "/foo"), [1, 2, 3, 4]);
        assert_eq!(found(&index, "/foo/"), [1, 3, 4]);
        assert_eq!(found(&index, "/foo/bar"), [0, 1, 3, 4, 5]);
        assert_eq!(found(&index, "/foo/barn"), [1, 3, 4, 5, 6]);
        assert_eq!(found(&index, "/foo/bar/x"), [0, 1, 3, 4, 5]);
        assert_eq!(found(&index, "/foobar"), [1, 3]);
        assert_eq!(found(&index, "/f"), [3]);
        assert_eq!(found(&index, ""), [3]);
        assert_eq!(found(&index, "foo"), Vec::<RuleId>::new());
    }

    /// Regex rules with a literal start come from the tree of starts, walked in any ASCII case (a
    /// non-ASCII byte must be equal), each still needing its regex test; the others from the list.
    #[test]
    fn regex_rules_are_found_by_their_start_in_any_ascii_case() {
        let regex = |body: &str| PathSpec::Regex(format!("(?i)(?:{body}).*"));
        let index = index(&[
            regex("/api/v1"),                  // 0
            regex("/r48(/|$)(.*)"),            // 1
            regex("/r4"),                      // 2
            PathSpec::Regex("/API/.*".into()), // 3: case-sensitive start /API/
            regex("/caf\u{e9}"),               // 4
            regex("(/a|/b)"),                  // 5: no literal start
            PathSpec::Prefix("/r".into()),     // 6
            regex("/"),                        // 7
        ]);
        assert_eq!(index.regex, [5]);
        let starts = |path: &str| {
            let mut out = Vec::new();
            if let Some(tree) = &index.regex_starts {
                tree.collect(path.as_bytes(), true, &mut out);
            }
            out.sort_unstable();
            out
        };
        assert_eq!(starts("/R48/items/42"), [1, 2, 7]);
        assert_eq!(starts("/Api/V1/x"), [0, 3, 7]);
        assert_eq!(starts("/CAF\u{e9}"), [4, 7]);
        assert_eq!(starts("/CAF\u{c9}"), [7]);
        assert_eq!(starts("x"), Vec::<RuleId>::new());
        assert_eq!(found(&index, "/r48"), [6]);
    }

    /// The regression guard for hostile paths: whatever the path's shape, the walk does work
    /// linear in its length (nodes visited plus bytes compared, at most twice the length plus
    /// one), even on a table whose paths follow the same shape deep down. The former index hashed
    /// every prefix ending at a `/`: `n`²/2 bytes for `n` slashes.
    #[test]
    fn lookup_work_is_linear_in_the_path_length_for_every_shape() {
        let deep = |unit: &str, times: usize| format!("/{}", unit.repeat(times));
        let mut specs = Vec::new();
        for unit in ["/", "a/", "a", "ab/c/"] {
            for times in [1, 2, 10, 100, 1000] {
                specs.push(PathSpec::SegmentPrefix(deep(unit, times)));
                specs.push(PathSpec::Prefix(deep(unit, times)));
                specs.push(PathSpec::Exact(deep(unit, times)));
            }
        }
        let index = index(&specs);
        for unit in ["/", "a/", "a", "ab/c/", "x/", "/a"] {
            for len in [1_000, 4_000, 16_000, 60_000] {
                let path = deep(unit, len / unit.len());
                let mut out = Vec::new();
                let work = index.collect(path.as_bytes(), false, &mut out);
                assert!(
                    work <= 2 * path.len() + 1,
                    "{unit:?} x {len}: work {work} for {} bytes",
                    path.len()
                );
            }
        }
    }
}
