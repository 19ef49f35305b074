//! An HTTPProxy's `ipAllowPolicy` and `ipDenyPolicy` (issue "Policies beyond the route";
//! Contour's IP filtering through Envoy's RBAC filter): lists of `{cidr, source}`, on the virtual
//! host (every route of the host, its includes' too) or on a route (in the host's place). An
//! allow list lets only its ranges through, a deny list refuses its ranges; anything else is
//! answered 403. They become the rule's address ranges, which the filter checks against the
//! client's address as Envoy derives it (`source.address`).
//!
//! That address is Contour's `source: Remote` (the client `X-Forwarded-For` names when the
//! listener trusts it, else the connection's peer). `source: Peer` asks for the connection's own
//! peer whatever the listener trusts, which the filter cannot read: a list with a `Peer` entry is
//! not enforced and keeps answering 403 (ROUTING.md §9). A list whose entry is no range, or no
//! source, or both lists at one place, is refused, as Contour refuses them.

use switchyard_table::IpRange;

/// Which address an entry is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The connection's own peer.
    Peer,
    /// The client as the listener derives it.
    Remote,
}

/// What a place's IP filter asks.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IpFilter {
    /// The ranges let through (empty: any).
    pub allow: Vec<IpRange>,
    /// The ranges refused.
    pub deny: Vec<IpRange>,
}

/// An IP filter as this gateway can apply it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IpFilterRead {
    /// No list at this place.
    None,
    /// Enforced by the rule's address ranges.
    Enforced(IpFilter),
    /// A `source: Peer` entry: not enforced (it denies, §9), saying why.
    NotEnforced(String),
}

/// The IP filter of `allow` and `deny` (the `ipAllowPolicy` and `ipDenyPolicy` at `at`), or why
/// Contour refuses it.
pub fn read(
    allow: Option<&serde_json::Value>,
    deny: Option<&serde_json::Value>,
    at: &str,
) -> Result<IpFilterRead, String> {
    let allow = entries(allow, &format!("{at}.ipAllowPolicy"))?;
    let deny = entries(deny, &format!("{at}.ipDenyPolicy"))?;
    if !allow.is_empty() && !deny.is_empty() {
        return Err(format!("{at}: ipAllowPolicy and ipDenyPolicy cannot both be set"));
    }
    if allow.is_empty() && deny.is_empty() {
        return Ok(IpFilterRead::None);
    }
    if allow.iter().chain(&deny).any(|(_, source)| *source == Source::Peer) {
        return Ok(IpFilterRead::NotEnforced(
            "source Peer asks for the connection's own peer address, which the filter cannot read (it reads the \
             client's address as the listener derives it: source Remote)"
                .to_owned(),
        ));
    }
    let ranges = |list: Vec<(IpRange, Source)>| list.into_iter().map(|(range, _)| range).collect();
    Ok(IpFilterRead::Enforced(IpFilter {
        allow: ranges(allow),
        deny: ranges(deny),
    }))
}

/// The entries of one list at `at`.
fn entries(list: Option<&serde_json::Value>, at: &str) -> Result<Vec<(IpRange, Source)>, String> {
    let Some(list) = list.filter(|l| !l.is_null()) else {
        return Ok(Vec::new());
    };
    let Some(items) = list.as_array() else {
        return Err(format!("{at}: is not a list"));
    };
    (items.iter().enumerate())
        .map(|(i, item)| {
            let cidr = item.get("cidr").and_then(|c| c.as_str()).unwrap_or_default();
            let range =
                IpRange::parse(cidr).ok_or_else(|| format!("{at}[{i}].cidr: {cidr:?} is not an address range"))?;
            let source = match item.get("source").and_then(|s| s.as_str()) {
                Some("Peer") => Source::Peer,
                Some("Remote") => Source::Remote,
                other => return Err(format!("{at}[{i}].source: {other:?} is neither Peer nor Remote")),
            };
            Ok((range, source))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(allow: serde_json::Value, deny: serde_json::Value) -> Result<IpFilterRead, String> {
        read(Some(&allow), Some(&deny), "spec.virtualhost")
    }

    #[test]
    fn remote_entries_become_the_ranges_a_bare_address_one_of_itself() {
        let read = at(
            json!([{"cidr": "10.0.0.0/8", "source": "Remote"}, {"cidr": "192.168.1.7", "source": "Remote"}]),
            json!(null),
        );
        let IpFilterRead::Enforced(filter) = read.unwrap() else {
            panic!("enforced")
        };
        let shown: Vec<String> = filter
            .allow
            .iter()
            .map(|r| format!("{}/{}", r.network, r.prefix))
            .collect();
        assert_eq!(shown, ["10.0.0.0/8", "192.168.1.7/32"]);
        assert!(filter.deny.is_empty());
    }

    #[test]
    fn a_peer_entry_is_not_enforced_and_says_why() {
        let read = at(json!(null), json!([{"cidr": "10.0.0.0/8", "source": "Peer"}])).unwrap();
        assert!(matches!(read, IpFilterRead::NotEnforced(why) if why.contains("source Peer")));
    }

    #[test]
    fn what_contour_refuses_is_an_error_naming_the_field() {
        let both = at(
            json!([{"cidr": "10.0.0.0/8", "source": "Remote"}]),
            json!([{"cidr": "10.1.0.0/16", "source": "Remote"}]),
        );
        assert!(both.unwrap_err().contains("cannot both be set"));
        let range = at(json!([{"cidr": "10.0.0/8", "source": "Remote"}]), json!(null)).unwrap_err();
        assert!(range.contains("spec.virtualhost.ipAllowPolicy[0].cidr"), "{range}");
        let source = at(json!([{"cidr": "10.0.0.0/8", "source": "Direct"}]), json!(null)).unwrap_err();
        assert!(source.contains("[0].source"), "{source}");
        assert_eq!(at(json!([]), json!(null)), Ok(IpFilterRead::None));
    }
}
