//! Affinity (`action.route.affinity`): the key by which a route's request is hashed to one
//! endpoint of its backend. The backend's cluster hashes on a ring (the sidecar's `lb=ring-hash`
//! variant, issue "The upstream side"); the route that sends to it (one for every rule: `envoy.yaml`,
//! `deploy/`) hashes, in this order:
//!
//! 1. [`HASH_HEADER`], when the filter set it: the key alone (`terminal`);
//! 2. [`HASH_WITH_ADDRESS_HEADER`], when the filter set it, then the client's address: a key that
//!    holds the client's address, which Envoy knows and the filter does not;
//! 3. the client's address alone (a key of nothing but it: NGINX's `ip_hash`, Contour's
//!    `hashSourceIP`).
//!
//! A cookie affinity (ingress-nginx's `affinity: cookie`, Contour's `Cookie` strategy, NGINX's
//! `sessionCookie`) keys a request by its cookie; a request without one gets a new random key,
//! and its response the `Set-Cookie` that carries the key on the client's next requests. A hash
//! (ingress-nginx's `upstream-hash-by`, Contour's `RequestHash`, NGINX's `hash`) keys it by parts of
//! the request; when they give nothing, a random key spreads the requests, as NGINX's round robin
//! fallback does.
//!
//! The headers are the filter's alone: a client's values of them are removed on every rule with
//! an affinity (on other rules they reach a cluster that does not hash).

use std::borrow::Cow;

use crate::error::Problem;
use crate::field::{field_value, is_token};
use crate::format::{Affinity, AffinityCookie, HashPart};
use crate::request::RequestView;

/// The request header whose value is the whole key.
pub const HASH_HEADER: &str = "x-switchyard-hash";
/// The request header whose value is the key but the client's address, which Envoy adds.
pub const HASH_WITH_ADDRESS_HEADER: &str = "x-switchyard-hash-with-address";

/// One request's key: the header to set and its value, and the `Set-Cookie` its response carries
/// (a cookie affinity's new key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AffinityKey {
    /// [`HASH_HEADER`] or [`HASH_WITH_ADDRESS_HEADER`]; `None`: the client's address alone keys it.
    pub header: Option<&'static str>,
    /// The header's value.
    pub value: String,
    /// The `Set-Cookie` value of the response.
    pub set_cookie: Option<String>,
}

/// Checks an affinity; the `String` names the failing field inside `affinity`.
pub fn validate(affinity: &Affinity) -> Result<(), (String, Problem)> {
    let bad = |field: &str, why: String| (field.to_owned(), Problem::Affinity(why));
    match affinity {
        Affinity::Cookie(cookie) => {
            if !is_token(&cookie.name) {
                return Err(bad("cookie.name", format!("{:?} is not a cookie name", cookie.name)));
            }
            field_value(&cookie.attributes)
                .map_err(|fault| bad("cookie.attributes", format!("{:?}: {fault}", cookie.attributes)))
        }
        Affinity::Hash(parts) => {
            for (i, part) in parts.iter().enumerate() {
                if let HashPart::Header(name) | HashPart::Cookie(name) | HashPart::Query(name) = part {
                    if name.is_empty() || (matches!(part, HashPart::Header(_)) && !is_token(name)) {
                        return Err(bad(&format!("hash[{i}]"), format!("{name:?} is not a name")));
                    }
                }
            }
            Ok(())
        }
    }
}

/// The key of `request` under `affinity`; `random` makes a new key when the request has none.
pub fn key(affinity: &Affinity, request: &impl RequestView, random: u64) -> AffinityKey {
    match affinity {
        Affinity::Cookie(cookie) => cookie_key(cookie, request, random),
        Affinity::Hash(parts) => hash_key(parts, request, random),
    }
}

fn cookie_key(cookie: &AffinityCookie, request: &impl RequestView, random: u64) -> AffinityKey {
    let mut found = None;
    request.any_cookie_value(&cookie.name, &mut |value| {
        let usable = !value.is_empty() && field_value(value).is_ok();
        if usable {
            found = Some(value.to_owned());
        }
        usable
    });
    match found {
        Some(value) => AffinityKey {
            header: Some(HASH_HEADER),
            value,
            set_cookie: None,
        },
        None => {
            let value = new_key(random);
            let set_cookie = match cookie.attributes.is_empty() {
                true => format!("{}={value}", cookie.name),
                false => format!("{}={value}; {}", cookie.name, cookie.attributes),
            };
            AffinityKey {
                header: Some(HASH_HEADER),
                value,
                set_cookie: Some(set_cookie),
            }
        }
    }
}

fn hash_key(parts: &[HashPart], request: &impl RequestView, random: u64) -> AffinityKey {
    let mut key = String::new();
    let (mut address, mut last_gave) = (false, false);
    for part in parts {
        let value: Option<Cow<'_, str>> = match part {
            HashPart::Text(text) => Some(Cow::Borrowed(text.as_str())),
            HashPart::Header(name) => request.header_values(name).into_iter().next(),
            HashPart::Cookie(name) => request.cookie_values(name).into_iter().next().map(Cow::Owned),
            HashPart::Query(name) => request.query_values(name).into_iter().next().map(Cow::Owned),
            HashPart::Path => Some(Cow::Borrowed(crate::path::request_path(request.path()))),
            HashPart::Uri => Some(Cow::Borrowed(request.path())),
            HashPart::Args => Some(Cow::Borrowed(crate::path::query_string(request.path()))),
            HashPart::Host => Some(crate::host::normalize_authority(request.authority())),
            HashPart::Method => Some(Cow::Borrowed(request.method())),
            HashPart::ClientAddress => {
                address = true;
                last_gave = true;
                continue;
            }
            HashPart::Stop if last_gave => break,
            HashPart::Stop => continue,
        };
        last_gave = value.as_deref().is_some_and(|v| !v.is_empty());
        key.push_str(value.as_deref().unwrap_or_default());
    }
    // A header value may not hold what a request's parts may (a decoded query value, say).
    let key: String = key.chars().filter(|c| !c.is_control()).collect();
    match (address, key.is_empty()) {
        (true, true) => AffinityKey {
            header: None,
            value: key,
            set_cookie: None,
        },
        (true, false) => AffinityKey {
            header: Some(HASH_WITH_ADDRESS_HEADER),
            value: key,
            set_cookie: None,
        },
        (false, true) => AffinityKey {
            header: Some(HASH_HEADER),
            value: new_key(random),
            set_cookie: None,
        },
        (false, false) => AffinityKey {
            header: Some(HASH_HEADER),
            value: key,
            set_cookie: None,
        },
    }
}

/// A new key: 16 hex digits from `random`, mixed (splitmix64's finaliser) so that it says
/// nothing of the draws the weights took from the same number.
fn new_key(random: u64) -> String {
    let mut z = random.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    format!("{:016x}", z ^ (z >> 31))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::SimpleRequest;

    fn cookie() -> Affinity {
        Affinity::Cookie(AffinityCookie {
            name: "INGRESSCOOKIE".into(),
            attributes: "Path=/; HttpOnly".into(),
        })
    }

    #[test]
    fn a_request_with_the_affinity_cookie_is_keyed_by_its_value_and_sets_no_cookie() {
        let request = SimpleRequest::get("shop.example", "/").cookie("INGRESSCOOKIE", "abc");
        assert_eq!(
            key(&cookie(), &request, 7),
            AffinityKey {
                header: Some(HASH_HEADER),
                value: "abc".into(),
                set_cookie: None
            }
        );
    }

    #[test]
    fn a_request_without_the_cookie_gets_a_new_random_key_and_its_set_cookie() {
        let request = SimpleRequest::get("shop.example", "/");
        let (a, b) = (key(&cookie(), &request, 1), key(&cookie(), &request, 2));
        assert_ne!(a.value, b.value, "another client, another key");
        assert_eq!(a.value.len(), 16);
        assert_eq!(
            a.set_cookie.as_deref(),
            Some(format!("INGRESSCOOKIE={}; Path=/; HttpOnly", a.value).as_str())
        );
    }

    #[test]
    fn a_hash_joins_the_requests_parts_in_order() {
        let parts = Affinity::Hash(vec![
            HashPart::Header("x-user".into()),
            HashPart::Text("|".into()),
            HashPart::Uri,
        ]);
        let request = SimpleRequest::get("shop.example", "/a?b=1").header("x-user", "ann");
        assert_eq!(key(&parts, &request, 0).value, "ann|/a?b=1");
        assert_eq!(key(&parts, &request, 0).header, Some(HASH_HEADER));
    }

    #[test]
    fn a_hash_with_the_client_address_leaves_the_address_to_envoy() {
        let only = Affinity::Hash(vec![HashPart::ClientAddress]);
        let request = SimpleRequest::get("shop.example", "/a");
        assert_eq!(key(&only, &request, 0).header, None);
        let with = Affinity::Hash(vec![HashPart::ClientAddress, HashPart::Path]);
        let keyed = key(&with, &request, 0);
        assert_eq!(
            (keyed.header, keyed.value.as_str()),
            (Some(HASH_WITH_ADDRESS_HEADER), "/a")
        );
    }

    #[test]
    fn a_stop_after_a_part_that_gave_a_value_ends_the_key() {
        let parts = Affinity::Hash(vec![
            HashPart::Header("x-a".into()),
            HashPart::Stop,
            HashPart::Query("b".into()),
        ]);
        let with_a = SimpleRequest::get("h", "/?b=2").header("x-a", "1");
        assert_eq!(key(&parts, &with_a, 0).value, "1");
        let without_a = SimpleRequest::get("h", "/?b=2");
        assert_eq!(key(&parts, &without_a, 0).value, "2");
    }

    #[test]
    fn a_hash_whose_parts_give_nothing_is_a_random_key() {
        let parts = Affinity::Hash(vec![HashPart::Header("x-a".into())]);
        let request = SimpleRequest::get("h", "/");
        assert_ne!(key(&parts, &request, 1).value, key(&parts, &request, 2).value);
    }
}
