//! A port on 127.0.0.1 for a server that a test starts later on a port the test chooses (Envoy's
//! listeners from an LDS file, etcd and kube-apiserver, a watch's `--listen`).
//!
//! A port from `bind(":0")` is in the kernel's ephemeral range (`ip_local_port_range`), where an
//! outgoing connection or another `bind(":0")` can take it between the test's check and the
//! server's bind: `Address already in use`, once in Envoy and once in kube-apiserver on CI. So the
//! port is taken below that range instead, where neither can. Each process starts at its own place
//! in the range and never hands out the same port twice, so that parallel tests and test binaries
//! do not meet.

use std::net::{TcpListener, UdpSocket};
use std::sync::atomic::{AtomicU32, Ordering};

/// The lowest port handed out: above the well-known and most registered services' ports.
const LOWEST: u32 = 10_000;

/// A TCP port free on 127.0.0.1 now, for a server that binds it later.
///
/// # Panics
///
/// When no port between 10,000 and the ephemeral range is free: a test cannot go on without one.
pub fn free_port() -> u16 {
    free(|port| TcpListener::bind(("127.0.0.1", port)).is_ok())
}

/// A UDP port free on 127.0.0.1 now, for a socket bound later.
///
/// # Panics
///
/// As [`free_port`].
pub fn free_udp_port() -> u16 {
    free(|port| UdpSocket::bind(("127.0.0.1", port)).is_ok())
}

/// The next port below the ephemeral range that `bindable` finds free.
fn free(bindable: impl Fn(u16) -> bool) -> u16 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let high = ephemeral_range_start().max(LOWEST + 1);
    let span = high - LOWEST;
    let start = std::process::id().wrapping_mul(7919) % span;
    for _ in 0..span {
        let step = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = (LOWEST + (start + step) % span) as u16;
        if bindable(port) {
            return port;
        }
    }
    panic!("no free port between {LOWEST} and {high}")
}

/// The first port of the kernel's ephemeral range (32768 where it cannot be read).
fn ephemeral_range_start() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_below_the_ephemeral_range_and_never_handed_out_twice() {
        let ports: Vec<u16> = (0..50)
            .map(|i| if i % 2 == 1 { free_udp_port() } else { free_port() })
            .collect();
        let high = ephemeral_range_start();
        assert!(
            ports.iter().all(|&p| u32::from(p) >= LOWEST && u32::from(p) < high),
            "{ports:?}"
        );
        let distinct: std::collections::BTreeSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), ports.len(), "{ports:?}");
    }
}
