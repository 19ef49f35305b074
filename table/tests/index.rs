//! The index is only a faster way to the same answer: on random tables and requests (from
//! `switchyard_table::oracle`, which the fuzz targets draw from too), `route` agrees with a plain
//! scan of `Rule::matches` in table order, and `candidates` lists exactly the rules whose host and
//! path match.

use switchyard_table::{normalize_authority, oracle, request_path, RequestView};
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

/// A small deterministic generator (xorshift), so failures reproduce.
struct Dice(u64);

impl Dice {
    fn roll(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

/// `route` returns the first rule in table order that `Rule::matches`, on every random case.
#[test]
fn index_agrees_with_linear_scan() {
    let mut dice = Dice(0x5eed_1234_abcd_ef01);
    let choose = &mut |n| dice.roll(n);
    for _ in 0..300 {
        let table = oracle::table(choose, 40).unwrap();
        for _ in 0..30 {
            let request = oracle::request(choose);
            oracle::agree(&table, &request).unwrap();
        }
    }
}

/// `candidates` lists, in table order, exactly the rules whose host and path match, and the first
/// without a failed condition is the winner.
#[test]
fn candidates_are_every_host_and_path_match_in_order() {
    let mut dice = Dice(0x0dd_ba11);
    let choose = &mut |n| dice.roll(n);
    for _ in 0..200 {
        let table = oracle::table(choose, 30).unwrap();
        let request = oracle::request(choose);
        let positions: Vec<usize> = table.candidates(&request).iter().map(|c| c.position).collect();
        let host = normalize_authority(request.authority());
        let path = request_path(request.path());
        let expected: Vec<usize> = table
            .rules()
            .iter()
            .enumerate()
            .filter(|(_, r)| r.host().matches(&host) && r.path().matches(path))
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

/// Every VM of the proxy holds every rule: what only a few rules have (a regex path, a redirect, a
/// regex rewrite, a canary) is boxed so the others pay no room for it. A rule was 816 bytes on a
/// 64-bit target with them inline, 400 boxed (about half of either on wasm32); 408 with
/// ingress-nginx's HSTS value (ROUTING.md §8.4), one pointer to the table's one copy of it; 416
/// with a route's affinity, boxed too; 424 with its policy, one pointer to the table's one copy.
#[test]
fn a_rule_pays_no_room_for_what_only_few_rules_have() {
    assert!(
        std::mem::size_of::<switchyard_table::Rule>() <= 424,
        "{} bytes",
        std::mem::size_of::<switchyard_table::Rule>()
    );
    assert!(std::mem::size_of::<switchyard_table::PathPattern>() <= 32);
}

/// A value every ingress-nginx rule carries (its HSTS header, ROUTING.md §8.4) is held once by the
/// table, not once per rule.
#[test]
fn rules_with_the_same_hsts_value_share_one_string() {
    let json = r#"{"version":1,"rules":[
        {"name":"a#0","host":"a.example","path":{"type":"prefix","value":"/"},"hsts":"max-age=60","action":{"direct_response":{"status":200}}},
        {"name":"b#0","host":"b.example","path":{"type":"prefix","value":"/"},"hsts":"max-age=60","action":{"direct_response":{"status":200}}}]}"#;
    let table = switchyard_table::RouteTable::from_json(json.as_bytes()).unwrap();
    let [a, b] = [0, 1].map(|i| table.rules()[i].hsts().unwrap().as_ptr());
    assert_eq!(a, b, "one copy");
}
