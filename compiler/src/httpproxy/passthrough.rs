//! ROUTING.md §8.5: an HTTPProxy root with `tls.passthrough` and `tcpproxy`: TLS whose SNI selects
//! its fqdn goes undecrypted to its services, as a TLS passthrough TransportServer's (§6). The root
//! claims its fqdn in the host contest (§2) even without routes; the passthrough route is taken once
//! it won it. Envoy's `tcp_proxy` reaches one cluster: with several services the first is used,
//! warned.

use crate::collisions::{Claim, HostWinners};
use crate::l4::{L4Backend, L4Route, L4Routes};
use crate::model::Options;
use crate::objects::ProxyService;
use crate::objects::{Age, ResourceKey};
use crate::processor::Settle;
use crate::status::StatusBook;

/// A root passing TLS through, waiting for the host contest.
#[derive(Debug, Clone)]
pub struct Passthrough {
    /// The root.
    pub key: ResourceKey,
    /// Its age.
    pub age: Age,
    /// Its fqdn.
    pub host: String,
    /// The service its `tcpproxy` names first.
    pub service: ProxyService,
}

/// Every passthrough root of one compilation.
#[derive(Debug, Clone, Default)]
pub struct Passthroughs(pub Vec<Passthrough>);

impl Passthroughs {
    /// The fqdns they claim (§2).
    pub fn claims(&self) -> Vec<Claim> {
        (self.0.iter())
            .map(|p| Claim {
                host: p.host.clone(),
                key: p.key.clone(),
                age: p.age.clone(),
            })
            .collect()
    }
}

impl Settle for Passthroughs {
    fn settle(self: Box<Self>, winners: &HostWinners, options: &Options, _: &mut StatusBook, l4: &mut L4Routes) {
        for root in self.0 {
            if !winners.get(&root.host).is_some_and(|w| w.contains(&root.key)) {
                continue;
            }
            let backend = L4Backend {
                namespace: root.key.namespace.clone(),
                service: root.service.name.clone(),
                port: u16::try_from(root.service.port).unwrap_or_default(),
            };
            l4.passthrough
                .push(L4Route::new(Some(root.host), backend, options, root.key.display()));
        }
    }
}
