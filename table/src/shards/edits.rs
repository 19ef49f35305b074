//! The sharded form's oracle over random pushes: a table edited at random (rules added, changed,
//! removed, runs of rules moved), each version encoded by one [`ShardEncoder`] kept from push to
//! push and loaded into one [`ShardStore`] kept likewise, must route every request exactly as the
//! same version built whole from scratch ([`RouteTable::try_from`]) routes it; the table of the
//! push before must still route as its own version did; and the encoder's text must be a fresh
//! encoder's. As in Envoy, each version is first loaded by a *canary*, a store of its own, and
//! both stores share a [`catalogue`](super::catalogue): the canary's table must route alike too,
//! whichever of its shards it took from the catalogue. The store reads each version by ranges, as
//! the filter does (only the texts of the shards it lacks); the canary by ranges or whole. Now and then a version with one name given
//! to two rules comes between two pushes, and both stores must refuse it. Used by the unit tests
//! and by `fuzz/fuzz_targets/shard_pushes.rs`.

use super::{read, read_ranged, InMemory, ShardEncoder, ShardStore, ShardedTable};
use crate::compact::Miniz;
use crate::format::{RuleSpec, TableSpec};
use crate::{oracle, RouteTable};

/// A table edited at random from push to push (rules added, changed, removed, runs of rules
/// moved): the versions the oracle checks, here and through the real filter in host-sim.
pub struct Pushes {
    rules: Vec<RuleSpec>,
    named: usize,
    push: usize,
}

impl Pushes {
    /// A first table of up to 40 random rules.
    pub fn new(choose: &mut impl FnMut(usize) -> usize) -> Pushes {
        let mut named = 0;
        let rules = (0..choose(40)).map(|_| new_rule(choose, &mut named)).collect();
        Pushes { rules, named, push: 0 }
    }

    /// The next version: the first table as it is, then each with one to three random edits;
    /// generation `g<push>`.
    pub fn next_table(&mut self, choose: &mut impl FnMut(usize) -> usize) -> TableSpec {
        for _ in 0..usize::from(self.push > 0) * (1 + choose(3)) {
            edit(choose, &mut self.rules, &mut self.named);
        }
        let spec = TableSpec {
            generation: format!("g{}", self.push),
            rules: self.rules.clone(),
            ..TableSpec::default()
        };
        self.push += 1;
        spec
    }
}

/// Runs `pushes` random pushes drawn with `choose(n)` (a number below `n`); the first difference
/// from the oracle is the error.
pub fn check_pushes(choose: &mut impl FnMut(usize) -> usize, pushes: usize) -> Result<(), String> {
    let mut versions = Pushes::new(choose);
    let params = (1 + choose(8) as u64, 1usize << (6 + choose(10)));
    let mut encoder = ShardEncoder::with_params(params.0, params.1);
    let shared = InMemory::default();
    let mut store = ShardStore::with_decoded_rules(choose(64));
    if choose(4) > 0 {
        store = ShardStore::sharing(shared.clone());
    }
    let mut previous: Option<(ShardedTable, RouteTable)> = None;
    for push in 0..pushes {
        let spec = versions.next_table(choose);
        let text = encoder.encode(&spec).map_err(|e| e.to_string())?;
        let fresh = ShardEncoder::with_params(params.0, params.1)
            .encode(&spec)
            .map_err(|e| e.to_string())?;
        if text != fresh {
            return Err(format!(
                "push {push}: the kept encoder's text differs from a fresh encoder's"
            ));
        }
        if spec.rules.len() > 1 && choose(3) == 0 {
            check_a_name_twice_is_refused(&spec, &mut encoder, &shared, &mut store, choose)
                .map_err(|e| format!("push {push}, a name twice: {e}"))?;
        }
        let whole = RouteTable::try_from(spec).map_err(|e| format!("push {push}: the whole table: {e}"))?;
        let doc = crate::json::parse(text.as_bytes()).map_err(|e| e.to_string())?;
        let bytes = text.as_bytes();
        // The store reads by ranges, as the filter does; the canary either way.
        let parts = read_ranged(&bytes).ok_or("the encoder's text is not read by ranges")?;
        let canary_parts = match choose(2) {
            0 => read_ranged(&bytes).ok_or("the encoder's text is not read by ranges")?,
            _ => read(&doc, doc.root())
                .ok_or("not the sharded form")?
                .map_err(|e| e.to_string())?,
        };
        let canary = ShardStore::sharing(shared.clone())
            .load(canary_parts, &Miniz)
            .map_err(|e| format!("push {push}, the canary: {e}"))?
            .0;
        agree(&canary, &whole, choose).map_err(|e| format!("push {push}, the canary: {e}"))?;
        let (sharded, _) = store.load(parts, &Miniz).map_err(|e| format!("push {push}: {e}"))?;
        if sharded.rule_count() != whole.rules().len() {
            return Err(format!(
                "push {push}: {} rules, not {}",
                sharded.rule_count(),
                whole.rules().len()
            ));
        }
        agree(&sharded, &whole, choose).map_err(|e| format!("push {push}: {e}"))?;
        if let Some((old, old_whole)) = &previous {
            agree(old, old_whole, choose).map_err(|e| format!("push {push}, the table before: {e}"))?;
        }
        previous = Some((sharded, whole));
    }
    Ok(())
}

/// Whether `sharded` routes random requests as `whole` does: the same position, rule and backend.
pub fn agree(
    sharded: &ShardedTable,
    whole: &RouteTable,
    choose: &mut impl FnMut(usize) -> usize,
) -> Result<(), String> {
    for _ in 0..24 {
        let request = oracle::request(choose);
        let random = choose(1 << 16) as u64;
        let expected = whole.route(&request, random).map(|d| {
            let cluster = d.backend.map(|b| b.cluster.clone());
            (d.position, d.rule.name().to_owned(), cluster)
        });
        let got = sharded
            .route(&request, random, &Miniz, |winner| {
                winner.map(|w| {
                    let cluster = w.decision.backend.map(|b| b.cluster.clone());
                    (w.position, w.decision.rule.name().to_owned(), cluster)
                })
            })
            .map_err(|e| format!("{request:?}: {e}"))?;
        if got != expected {
            return Err(format!("{request:?}: sharded {got:?}, whole {expected:?}"));
        }
    }
    Ok(())
}

/// `spec` with one rule's name given to another rule, pushed between two good versions: refused
/// by the whole table, a canary (which took what it could from the catalogue) and the store alike.
fn check_a_name_twice_is_refused(
    spec: &TableSpec,
    encoder: &mut ShardEncoder,
    shared: &InMemory,
    store: &mut ShardStore,
    choose: &mut impl FnMut(usize) -> usize,
) -> Result<(), String> {
    let mut bad = spec.clone();
    let (from, to) = (choose(bad.rules.len()), choose(bad.rules.len() - 1));
    let to = if to >= from { to + 1 } else { to };
    bad.rules[to].name = bad.rules[from].name.clone();
    if RouteTable::try_from(bad.clone()).is_ok() {
        return Err("the whole table accepts it".into());
    }
    let text = encoder.encode(&bad).map_err(|e| e.to_string())?;
    let bytes = text.as_bytes();
    let parts = || read_ranged(&bytes).ok_or("the encoder's text is not read by ranges");
    if ShardStore::sharing(shared.clone()).load(parts()?, &Miniz).is_ok() {
        return Err("a canary accepts it".into());
    }
    if store.load(parts()?, &Miniz).is_ok() {
        return Err("the store accepts it".into());
    }
    Ok(())
}

fn new_rule(choose: &mut impl FnMut(usize) -> usize, named: &mut usize) -> RuleSpec {
    *named += 1;
    oracle::rule(choose, *named)
}

/// One random edit of `rules`.
fn edit(choose: &mut impl FnMut(usize) -> usize, rules: &mut Vec<RuleSpec>, named: &mut usize) {
    let len = rules.len();
    match choose(5) {
        0 | 1 => {
            let rule = new_rule(choose, named);
            rules.insert(choose(len + 1), rule);
        }
        2 if len > 0 => {
            rules.remove(choose(len));
        }
        3 if len > 0 => {
            // Changed in place: the same name, another host, path, conditions.
            let at = choose(len);
            let name = rules[at].name.clone();
            rules[at] = RuleSpec {
                name,
                ..new_rule(choose, named)
            };
        }
        _ if len > 1 => {
            // A run of rules moved elsewhere.
            let start = choose(len);
            let end = start + 1 + choose(len - start);
            let run: Vec<RuleSpec> = rules.drain(start..end).collect();
            let to = choose(rules.len() + 1);
            rules.splice(to..to, run);
        }
        _ => {}
    }
}
