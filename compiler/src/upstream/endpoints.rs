//! A Service's endpoints from its `discovery.k8s.io/v1` EndpointSlices (those labelled
//! `kubernetes.io/service-name`): the ready endpoints (a `ready` condition that is not `false`, as
//! the API asks consumers to read an unknown one), their first address, on the port the slice
//! lists under the Service port's name. That port is the Service's `targetPort` as Kubernetes
//! resolved it for the pods of the slice, by name or number. `FQDN` slices are skipped.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde::Serialize;

/// The label naming an EndpointSlice's Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// One endpoint: an address and a port.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Endpoint {
    /// The IP address.
    pub address: String,
    /// The port.
    pub port: u16,
}

/// The EndpointSlices of each Service, by namespace and Service name.
pub struct EndpointIndex<'o> {
    slices: BTreeMap<(&'o str, &'o str), Vec<&'o EndpointSlice>>,
}

impl<'o> EndpointIndex<'o> {
    /// The index of `slices`.
    pub fn new(slices: &'o [Arc<EndpointSlice>]) -> EndpointIndex<'o> {
        let mut index: BTreeMap<(&str, &str), Vec<&EndpointSlice>> = BTreeMap::new();
        for slice in slices {
            let labels = slice.metadata.labels.as_ref();
            let Some(service) = labels.and_then(|l| l.get(SERVICE_NAME_LABEL)) else {
                continue;
            };
            let namespace = slice.metadata.namespace.as_deref().unwrap_or("default");
            index.entry((namespace, service.as_str())).or_default().push(slice);
        }
        EndpointIndex { slices: index }
    }

    /// The ready endpoints of Service `namespace/service` on the port named `port_name` (a
    /// Service's only port may have no name), sorted, each once.
    pub fn ready(&self, namespace: &str, service: &str, port_name: Option<&str>) -> Vec<Endpoint> {
        let wanted = port_name.unwrap_or_default();
        let mut out = Vec::new();
        for slice in self.slices.get(&(namespace, service)).into_iter().flatten() {
            if slice.address_type == "FQDN" {
                continue;
            }
            let port = (slice.ports.iter().flatten())
                .find(|p| p.name.as_deref().unwrap_or_default() == wanted)
                .and_then(|p| p.port)
                .and_then(|p| u16::try_from(p).ok());
            let Some(port) = port else { continue };
            for endpoint in slice.endpoints.iter().flatten() {
                let ready = endpoint.conditions.as_ref().and_then(|c| c.ready) != Some(false);
                if let (true, Some(address)) = (ready, endpoint.addresses.first()) {
                    out.push(Endpoint {
                        address: address.clone(),
                        port,
                    });
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }
}
