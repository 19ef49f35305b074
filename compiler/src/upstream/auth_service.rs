//! The clusters of external authentication's services (ingress-nginx's `auth-url`): a rule's
//! policy names its service's cluster by the URL's scheme, host and port
//! (`external-auth|https|auth.example.com|443`), and the sink that makes the gateway's clusters
//! reads the name back ([`AuthService::of_cluster`]) to make it: a DNS cluster on the host and
//! port, over TLS (the host as SNI, the certificate not checked, as nginx's `proxy_ssl_verify`
//! defaults to off) for `https`.

/// An auth service: the scheme, host and port of an `auth-url`, and the cluster that reaches it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct AuthService {
    /// Whether it is spoken to over TLS.
    pub tls: bool,
    /// The host (a name or an address).
    pub host: String,
    /// The port.
    pub port: u16,
}

/// The first word of an auth service's cluster name.
const CLUSTER_PREFIX: &str = "external-auth";

impl AuthService {
    /// Its cluster's name: `external-auth|https|auth.example.com|443`.
    pub fn cluster_name(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{CLUSTER_PREFIX}|{scheme}|{}|{}", self.host, self.port)
    }

    /// The service a cluster name of [`AuthService::cluster_name`] names; `None` for another name.
    pub fn of_cluster(name: &str) -> Option<AuthService> {
        let mut parts = name.split('|');
        if parts.next()? != CLUSTER_PREFIX {
            return None;
        }
        let tls = match parts.next()? {
            "https" => true,
            "http" => false,
            _ => return None,
        };
        let host = parts.next()?.to_owned();
        let port = parts.next()?.parse().ok()?;
        (parts.next().is_none() && !host.is_empty()).then_some(AuthService { tls, host, port })
    }
}
