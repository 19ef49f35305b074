//! Service ports: how a backend's port (a name or a number) becomes the port number of its cluster
//! (ROUTING.md §5), for Ingress and HTTPProxy alike.
//!
//! A port given by name needs the Service, and the Service needs a port of that name. A port given
//! by number needs nothing when the Service is not in the input (a folder of manifests often holds no
//! Services), but a Service that is there must list that port. A port that cannot be resolved is
//! reported as `ServicePortNotFound`, and the processors keep the rule as a 503, so a request never
//! falls through to a shorter path.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Service;
use switchyard_table::{ActionSpec, DirectResponse};

use crate::objects::{key_of, Kind};

/// The action of a rule whose backends cannot be resolved: a 503 answered by the filter.
pub fn service_unavailable() -> ActionSpec {
    ActionSpec::DirectResponse(DirectResponse {
        status: 503,
        ..DirectResponse::default()
    })
}

/// How a backend names its Service's port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortRef<'a> {
    /// `port.name` (Ingress only).
    Name(&'a str),
    /// `port.number` (Ingress) or `port` (HTTPProxy).
    Number(i32),
}

/// Service ports by namespace and service: (name, number) pairs as the Service lists them.
#[derive(Debug, Default)]
pub struct ServicePorts {
    ports: BTreeMap<(String, String), Vec<(String, i32)>>,
}

impl ServicePorts {
    /// Indexes the Services of the input.
    pub fn new(services: &[Arc<Service>]) -> ServicePorts {
        let mut ports = BTreeMap::new();
        for service in services {
            let key = key_of(Kind::Ingress, &service.metadata);
            let list: Vec<(String, i32)> = service
                .spec
                .iter()
                .flat_map(|spec| spec.ports.iter().flatten())
                .map(|p| (p.name.clone().unwrap_or_default(), p.port))
                .collect();
            ports.insert((key.namespace, key.name), list);
        }
        ServicePorts { ports }
    }

    /// The port number of `service`'s port `port`, or why there is none (a sentence naming the
    /// Service and the ports it has).
    pub fn resolve(&self, namespace: &str, service: &str, port: PortRef<'_>) -> Result<i32, String> {
        let listed = self.ports.get(&(namespace.to_owned(), service.to_owned()));
        let found = match (port, listed) {
            (PortRef::Number(number), None) => return Ok(number),
            (PortRef::Name(name), None) => {
                return Err(format!(
                    "the backend names port {name:?} of Service {namespace}/{service}, which is not in the input; give the port by number or add the Service"
                ))
            }
            (PortRef::Name(name), Some(ports)) => ports.iter().find(|(n, _)| n == name),
            (PortRef::Number(number), Some(ports)) => ports.iter().find(|(_, p)| *p == number),
        };
        found.map(|(_, number)| *number).ok_or_else(|| {
            let wanted = match port {
                PortRef::Name(name) => format!("named {name:?}"),
                PortRef::Number(number) => number.to_string(),
            };
            let have: Vec<String> = listed
                .into_iter()
                .flatten()
                .map(|(name, number)| {
                    if name.is_empty() {
                        number.to_string()
                    } else {
                        format!("{name}={number}")
                    }
                })
                .collect();
            format!(
                "Service {namespace}/{service} has no port {wanted} (its ports: [{}])",
                have.join(", ")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ports() -> ServicePorts {
        let service: Service = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "api", "namespace": "shop"},
            "spec": {"ports": [{"name": "http", "port": 8080}, {"port": 9090}]}
        }))
        .unwrap();
        ServicePorts::new(&[Arc::new(service)])
    }

    #[test]
    fn a_named_port_needs_the_service_and_a_port_of_that_name() {
        assert_eq!(ports().resolve("shop", "api", PortRef::Name("http")), Ok(8080));
        let missing = ports().resolve("shop", "api", PortRef::Name("grpc")).unwrap_err();
        assert_eq!(
            missing,
            "Service shop/api has no port named \"grpc\" (its ports: [http=8080, 9090])"
        );
        let absent = ports().resolve("shop", "web", PortRef::Name("http")).unwrap_err();
        assert!(
            absent.contains("Service shop/web, which is not in the input"),
            "{absent}"
        );
    }

    #[test]
    fn a_numbered_port_needs_no_service_but_one_that_is_there_must_list_it() {
        assert_eq!(ports().resolve("shop", "web", PortRef::Number(80)), Ok(80));
        assert_eq!(ports().resolve("shop", "api", PortRef::Number(9090)), Ok(9090));
        let missing = ports().resolve("shop", "api", PortRef::Number(80)).unwrap_err();
        assert_eq!(
            missing,
            "Service shop/api has no port 80 (its ports: [http=8080, 9090])"
        );
    }
}
