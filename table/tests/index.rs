//! The index is only a faster way to the same answer: on random tables and requests, `route`
//! agrees with a plain scan of `Rule::matches` in table order, and `candidates` lists exactly the
//! rules whose host and path match.

mod common;

use common::{rule, with};
use switchyard_table::{RouteTable, SimpleRequest};
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

/// A small deterministic generator (xorshift), so failures reproduce.
struct Dice(u64);

impl Dice {
    fn roll(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.roll(from.len())]
    }
}

const HOSTS: &[&str] = &[
    "a.example.net",
    "b.example.net",
    "example.net",
    "x.a.example.net",
    "other.org",
];
const RULE_HOSTS: &[&str] = &[
    "a.example.net",
    "*.example.net",
    "example.net",
    "*.net",
    "",
    "other.org",
];
const PATHS: &[&str] = &[
    "/", "/a", "/a/", "/a/b", "/ab", "/a/bc", "/a/b/c", "/b", "/é/x", "/a//b",
];
const RULE_PATHS: &[&str] = &[
    "segment:/",
    "segment:/a",
    "segment:/a/",
    "segment:/a/b",
    "prefix:/a",
    "prefix:/a/b",
    "prefix:/",
    "exact:/a",
    "exact:/a/b",
    "regex:/a/.*",
    "regex:/[ab]+",
    "regex:/ab?/?b*",
    "regex:/a|/b/c",
    "prefix:/é",
    "segment:/é",
];

fn random_table(dice: &mut Dice, size: usize) -> RouteTable {
    let rules = (0..size)
        .map(|i| {
            let r = rule(&format!("r{i}"), dice.pick(RULE_HOSTS), dice.pick(RULE_PATHS), "c");
            match dice.roll(4) {
                0 => with(r, "header", "h", "exact", "1"),
                1 => with(r, "cookie", "k", "present", ""),
                _ => r,
            }
        })
        .collect();
    common::table(rules)
}

fn random_request(dice: &mut Dice) -> SimpleRequest {
    let mut request = SimpleRequest::get(dice.pick(HOSTS), dice.pick(PATHS));
    if dice.roll(2) == 0 {
        request = request.header("h", "1");
    }
    if dice.roll(2) == 0 {
        request = request.cookie("k", "v");
    }
    request
}

/// `route` returns the first rule in table order that `Rule::matches`, on every random case.
#[test]
fn index_agrees_with_linear_scan() {
    let mut dice = Dice(0x5eed_1234_abcd_ef01);
    for _ in 0..200 {
        let size = 1 + dice.roll(40);
        let table = random_table(&mut dice, size);
        for _ in 0..30 {
            let request = random_request(&mut dice);
            let scanned = table.rules().iter().position(|r| r.matches(&request));
            let routed = table.route(&request, 0).map(|d| d.position);
            assert_eq!(routed, scanned, "{request:?}");
        }
    }
}

/// `candidates` lists, in table order, exactly the rules whose host and path match, and the first
/// without a failed condition is the winner.
#[test]
fn candidates_are_every_host_and_path_match_in_order() {
    let mut dice = Dice(0x0dd_ba11);
    for _ in 0..100 {
        let size = 1 + dice.roll(30);
        let table = random_table(&mut dice, size);
        let request = random_request(&mut dice);
        let positions: Vec<usize> = table.candidates(&request).iter().map(|c| c.position).collect();
        let bare = SimpleRequest {
            headers: vec![("h".into(), "1".into()), ("cookie".into(), "k=v".into())],
            ..request.clone()
        };
        let expected: Vec<usize> = table
            .rules()
            .iter()
            .enumerate()
            .filter(|(_, r)| r.matches(&bare))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(positions, expected, "{request:?}");
        let first = table
            .candidates(&request)
            .into_iter()
            .find(|c| c.failed_condition.is_none())
            .map(|c| c.position);
        assert_eq!(first, table.route(&request, 0).map(|d| d.position));
    }
}
