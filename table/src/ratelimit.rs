//! A rule's request rates per client address ([`RateLimit`], issue "Policies beyond the route"),
//! counted as nginx's `limit_req` with `nodelay` counts (ingress-nginx's `limit-rps`,
//! `limit-rpm`): per address, an excess that drains at the rate; a request that would take it over
//! the burst is answered at once ([`RateLimit::status`], 503 by default) and counts nothing.
//!
//! The counts live in the host's shared data ([`Counters`]), so the worker VMs of one Envoy share
//! them, as the workers of one nginx did; each gateway replica counts on its own, as each
//! ingress-nginx pod did. An address's count sits in one of [`SLOTS`] slots per zone and rate (a
//! bounded store, as nginx's zone is): an address whose slot another address holds with a count
//! not drained yet shares that count (it may be limited sooner, never later). A count that cannot
//! be written after a few tries (other workers writing the same slot) lets the request through:
//! a rate limit protects the backend's capacity, not access (that is the address ranges').
//!
//! The requests in flight per address (`limit-connections`, nginx's `limit_conn`) are counted the
//! same way: [`enter`] holds one while a request is in flight (refused past the limit), and
//! [`leave`] lets it go when the stream ends.

use std::net::IpAddr;

use crate::format::{Rate, RateLimit};

/// The slots of one zone and rate.
pub const SLOTS: u64 = 4096;
/// The tries at writing a count before the request is let through.
const TRIES: usize = 4;

/// The host's shared counts: values with a version, written only if the version is unchanged.
pub trait Counters {
    /// The value at `key`, and its version.
    fn get(&self, key: &str) -> Option<(Vec<u8>, u32)>;
    /// Writes `value` at `key` if its version is still `version` (`None`: absent before); `false`
    /// when another write came first, or the host refused.
    fn set(&self, key: &str, value: &[u8], version: Option<u32>) -> bool;
}

/// What a rate limit says of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// It goes on.
    Pass,
    /// Answer with this status.
    Refuse(u16),
}

/// One slot's count: the excess in thousandths of a request, when it was counted, and whose it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Count {
    excess: u64,
    at_ms: u64,
    address: [u8; 16],
}

impl Count {
    const BYTES: usize = 32;

    fn encode(&self) -> [u8; Count::BYTES] {
        let mut out = [0; Count::BYTES];
        out[..8].copy_from_slice(&self.excess.to_le_bytes());
        out[8..16].copy_from_slice(&self.at_ms.to_le_bytes());
        out[16..].copy_from_slice(&self.address);
        out
    }

    fn decode(bytes: &[u8]) -> Option<Count> {
        let word = |at: usize| Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?));
        Some(Count {
            excess: word(0)?,
            at_ms: word(8)?,
            address: bytes.get(16..32)?.try_into().ok()?,
        })
    }
}

/// `request`'s admission under `limit`, for the client `client` (`None`, an address the host
/// cannot tell: let through, uncounted by a zone per address) at `now_ms`.
pub fn admit<C: Counters + ?Sized>(limit: &RateLimit, counters: &C, client: Option<IpAddr>, now_ms: u64) -> Admission {
    if client.is_some_and(|client| limit.exempt.iter().any(|range| range.contains(client))) {
        return Admission::Pass;
    }
    // A zone that counts every client together counts them all in one slot of one key.
    let address = match (limit.per_client, client) {
        (false, _) => [0; 16],
        (true, Some(client)) => octets(client),
        (true, None) => return Admission::Pass,
    };
    let rates = [
        ("s", limit.per_second, 1_000u64),
        ("m", limit.per_minute, 60_000),
        ("h", limit.per_hour, 3_600_000),
    ];
    for (period, rate, period_ms) in rates {
        let Some(rate) = rate else { continue };
        let key = key("rate", &limit.zone, Some(period), slot(&address));
        if !take(counters, &key, (rate, period_ms), address, now_ms) {
            return Admission::Refuse(limit.status);
        }
    }
    Admission::Pass
}

/// A request in flight, held against its address's limit until [`leave`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    key: String,
}

/// The address as 16 bytes (an IPv4 address mapped).
fn octets(client: IpAddr) -> [u8; 16] {
    match client {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }
}

/// Holds one of `limit`'s requests in flight for `client`: `Ok(None)` when none is counted (no
/// limit, an exempt or unknown address, a count that could not be written), `Err(status)` when the
/// address has the limit in flight already.
pub fn enter<C: Counters + ?Sized>(
    limit: &RateLimit,
    counters: &C,
    client: Option<IpAddr>,
) -> Result<Option<Held>, u16> {
    let (Some(max), Some(client)) = (limit.in_flight, client) else {
        return Ok(None);
    };
    if limit.exempt.iter().any(|range| range.contains(client)) {
        return Ok(None);
    }
    let key = key("in-flight", &limit.zone, None, slot(&octets(client)));
    for _ in 0..TRIES {
        let (count, version) = in_flight(counters, &key);
        if count >= max {
            return Err(limit.in_flight_status);
        }
        if counters.set(&key, &(count + 1).to_le_bytes(), version) {
            return Ok(Some(Held { key }));
        }
    }
    Ok(None)
}

/// Lets a held request go.
pub fn leave<C: Counters + ?Sized>(counters: &C, held: &Held) {
    for _ in 0..TRIES {
        let (count, version) = in_flight(counters, &held.key);
        if counters.set(&held.key, &count.saturating_sub(1).to_le_bytes(), version) {
            return;
        }
    }
}

/// The requests in flight at `key`, and the value's version.
fn in_flight<C: Counters + ?Sized>(counters: &C, key: &str) -> (u32, Option<u32>) {
    match counters.get(key) {
        Some((bytes, version)) => {
            let count = bytes
                .get(..4)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u32::from_le_bytes);
            (count, Some(version))
        }
        None => (0, None),
    }
}

/// The shared-data key `switchyard.KIND/ZONE/[PERIOD/]SLOT`, written by hand: `format!`'s
/// machinery cost the wasm filter more than the shared-data call the key is for.
fn key(kind: &str, zone: &str, period: Option<&str>, slot: u64) -> String {
    let mut key = String::with_capacity(16 + kind.len() + zone.len() + 24);
    for part in ["switchyard.", kind, "/", zone, "/"] {
        key.push_str(part);
    }
    if let Some(period) = period {
        key.push_str(period);
        key.push('/');
    }
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = slot;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    key.extend(digits[at..].iter().map(|&digit| char::from(digit)));
    key
}

/// The slot of `address` (FNV-1a).
fn slot(address: &[u8; 16]) -> u64 {
    let hash = address.iter().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    });
    hash % SLOTS
}

/// Counts a request at `key`; `false` when it takes the excess over the burst (nothing written).
/// nginx's arithmetic: the excess, in thousandths of a request, drains at the rate; a request adds
/// a thousand; over the burst's thousands it is refused; an address's first request counts zero.
fn take<C: Counters + ?Sized>(
    counters: &C,
    key: &str,
    (rate, period_ms): (Rate, u64),
    address: [u8; 16],
    now_ms: u64,
) -> bool {
    let drain = |count: &Count| {
        let elapsed = now_ms.saturating_sub(count.at_ms);
        u64::from(rate.requests).saturating_mul(1000).saturating_mul(elapsed) / period_ms
    };
    for _ in 0..TRIES {
        let stored = counters.get(key);
        let version = stored.as_ref().map(|(_, version)| *version);
        // Another address's count in the slot is taken over once it drained, else shared.
        let before = (stored.and_then(|(bytes, _)| Count::decode(&bytes)))
            .filter(|count| count.address == address || count.excess > drain(count));
        let excess = match &before {
            None => 0,
            Some(count) => (count.excess + 1000).saturating_sub(drain(count)),
        };
        if before.is_some() && excess > u64::from(rate.burst).saturating_mul(1000) {
            return false;
        }
        let count = Count {
            excess,
            at_ms: now_ms,
            address,
        };
        if counters.set(key, &count.encode(), version) {
            return true;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::HashMap;

    #[derive(Default)]
    struct Memory(RefCell<HashMap<String, (Vec<u8>, u32)>>);

    impl Counters for Memory {
        fn get(&self, key: &str) -> Option<(Vec<u8>, u32)> {
            self.0.borrow().get(key).cloned()
        }

        fn set(&self, key: &str, value: &[u8], version: Option<u32>) -> bool {
            let mut map = self.0.borrow_mut();
            let current = map.get(key).map(|(_, v)| *v);
            if current != version {
                return false;
            }
            map.insert(key.to_owned(), (value.to_vec(), current.map_or(1, |v| v + 1)));
            true
        }
    }

    fn limit(requests: u32, burst: u32) -> RateLimit {
        RateLimit {
            zone: "shop/api".to_owned(),
            per_second: Some(Rate { requests, burst }),
            ..RateLimit::default()
        }
    }

    fn passed(limit: &RateLimit, counters: &Memory, from: &str, at_ms: &[u64]) -> usize {
        let client = from.parse().ok();
        at_ms
            .iter()
            .filter(|at| admit(limit, counters, client, **at) == Admission::Pass)
            .count()
    }

    #[test]
    fn a_burst_is_taken_at_once_and_the_rest_refused_until_the_rate_drains_it() {
        let (limit, counters) = (limit(2, 10), Memory::default());
        assert_eq!(
            passed(&limit, &counters, "10.0.0.1", &[0; 30]),
            11,
            "one, then the burst of 10"
        );
        assert_eq!(
            passed(&limit, &counters, "10.0.0.1", &[500]),
            1,
            "half a second drains one"
        );
        assert_eq!(passed(&limit, &counters, "10.0.0.1", &[500]), 0);
        assert_eq!(
            passed(&limit, &counters, "10.0.0.2", &[500; 3]),
            3,
            "another address counts apart"
        );
    }

    #[test]
    fn without_a_burst_one_request_per_period_of_the_rate() {
        let (limit, counters) = (limit(2, 0), Memory::default());
        assert_eq!(passed(&limit, &counters, "10.0.0.1", &[0, 0, 100, 500, 600, 1000]), 3);
    }

    #[test]
    fn a_key_spells_its_kind_zone_period_and_slot() {
        assert_eq!(key("rate", "shop/api", Some("s"), 0), "switchyard.rate/shop/api/s/0");
        assert_eq!(key("in-flight", "z", None, 4_095), "switchyard.in-flight/z/4095");
        assert_eq!(
            key("rate", "", Some("m"), u64::MAX),
            format!("switchyard.rate//m/{}", u64::MAX)
        );
    }

    #[test]
    fn an_exempt_or_unknown_address_is_never_limited() {
        let mut limit = limit(1, 0);
        limit.exempt = vec![crate::format::IpRange::parse("10.0.0.0/8").unwrap()];
        let counters = Memory::default();
        assert_eq!(passed(&limit, &counters, "10.9.9.9", &[0; 5]), 5);
        assert_eq!(passed(&limit, &counters, "not an address", &[0; 5]), 5);
        assert_eq!(passed(&limit, &counters, "192.0.2.1", &[0; 5]), 1);
    }

    #[test]
    fn requests_in_flight_are_held_to_the_limit_and_a_leaving_one_frees_its_place() {
        let limit = RateLimit {
            per_second: None,
            in_flight: Some(2),
            in_flight_status: 429,
            ..limit(1, 0)
        };
        let counters = Memory::default();
        let client = "10.0.0.1".parse().ok();
        let first = enter(&limit, &counters, client).unwrap().unwrap();
        let _second = enter(&limit, &counters, client).unwrap().unwrap();
        assert_eq!(enter(&limit, &counters, client), Err(429));
        assert!(
            enter(&limit, &counters, "10.0.0.2".parse().ok()).unwrap().is_some(),
            "another address"
        );
        leave(&counters, &first);
        assert!(enter(&limit, &counters, client).unwrap().is_some());
        assert_eq!(
            enter(&limit, &counters, None),
            Ok(None),
            "an unknown address is not counted"
        );
    }

    #[test]
    fn a_zone_of_every_client_counts_them_together() {
        let limit = RateLimit {
            per_client: false,
            ..limit(1, 2)
        };
        let counters = Memory::default();
        let passed = ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]
            .iter()
            .filter(|from| admit(&limit, &counters, from.parse().ok(), 0) == Admission::Pass)
            .count();
        assert_eq!(passed, 3, "one and the burst of two, whoever sends them");
    }

    #[test]
    fn a_refused_request_answers_the_limits_status() {
        let mut limit = limit(1, 0);
        limit.status = 429;
        let counters = Memory::default();
        let client = "10.0.0.1".parse().ok();
        assert_eq!(admit(&limit, &counters, client, 0), Admission::Pass);
        assert_eq!(admit(&limit, &counters, client, 0), Admission::Refuse(429));
    }
}
