//! The Secrets of the input, by namespace and name, each read once ([`Certificate::of_secret`]):
//! what every kind's certificate choice asks (ROUTING.md §8.2).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::https::certificate::{Certificate, Unusable};
use crate::objects::secret::{Secret, OPAQUE_TYPE, TLS_TYPE};

/// The types Ingress and HTTPProxy accept (§8.2: Contour's `validTLSSecret`; ingress-nginx reads
/// no type).
pub const TLS_OR_OPAQUE: &[&str] = &[TLS_TYPE, OPAQUE_TYPE];
/// The type a VirtualServer accepts (§8.6).
pub const TLS_ONLY: &[&str] = &[TLS_TYPE];

/// Why a named Secret gives no certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretProblem {
    /// No Secret of that name in that namespace.
    Missing,
    /// It is there, but its certificate cannot be served.
    Unusable(Unusable),
}

impl fmt::Display for SecretProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretProblem::Missing => f.write_str("it does not exist"),
            SecretProblem::Unusable(why) => why.fmt(f),
        }
    }
}

/// A Secret's certificate as read for the types of one kind, by namespace, name and those types.
type Read = BTreeMap<(String, String, &'static [&'static str]), Result<Arc<Certificate>, SecretProblem>>;

/// The Secrets of one compilation.
#[derive(Default)]
pub struct Secrets<'o> {
    by_name: BTreeMap<(&'o str, &'o str), &'o Secret>,
    read: Read,
}

impl<'o> Secrets<'o> {
    /// Indexes `secrets` (a namespace-less manifest counts as `default`, as everywhere).
    pub fn new(secrets: &'o [Arc<Secret>]) -> Secrets<'o> {
        let by_name = (secrets.iter())
            .map(|s| {
                let namespace = s.metadata.namespace.as_deref().unwrap_or("default");
                let name = s.metadata.name.as_deref().unwrap_or("");
                ((namespace, name), &**s)
            })
            .collect();
        Secrets {
            by_name,
            read: BTreeMap::new(),
        }
    }

    /// Secret `namespace/name`, if the input has it.
    pub fn get(&self, namespace: &str, name: &str) -> Option<&'o Secret> {
        self.by_name.get(&(namespace, name)).copied()
    }

    /// The certificate of Secret `namespace/name`, given the types its user's kind accepts.
    pub fn certificate(
        &mut self,
        namespace: &str,
        name: &str,
        accepted: &'static [&'static str],
    ) -> Result<Arc<Certificate>, SecretProblem> {
        let Some(&secret) = self.by_name.get(&(namespace, name)) else {
            return Err(SecretProblem::Missing);
        };
        self.read
            .entry((namespace.to_owned(), name.to_owned(), accepted))
            .or_insert_with(|| {
                Certificate::of_secret(secret, accepted)
                    .map(Arc::new)
                    .map_err(SecretProblem::Unusable)
            })
            .clone()
    }
}
