//! The certificates an Istio gateway serves (ROUTING.md §8 through `--istio-gateway`), copied into
//! the gateway's namespace: Istio reads a server's `credentialName` only there
//! ([`switchyard_compiler::https::istio`]; `docs/deploy-istio.md`, "HTTPS").
//!
//! Each copy is a `kubernetes.io/tls` Secret named by
//! [`switchyard_compiler::https::istio::credential_name`], labelled as ours
//! (`app.kubernetes.io/managed-by: switchyard`, `switchyard.io/gateway: <Gateway name>`) and
//! annotated with the Secret it copies. Copies are written (server-side apply) before the Gateway
//! that names them, only when their content differs from what the namespace holds, and deleted
//! after it, once no server names them: a renewed Secret reaches the gateway as an updated copy,
//! and the Gateway never names a copy that is not there. Only Secrets labelled as this Gateway's
//! are ever listed, changed or deleted.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::ByteString;
use kube::api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams};
use kube::{Api, Client};
use switchyard_compiler::https::istio::MADE_CREDENTIAL;
use switchyard_compiler::https::{LastServed, Presented};
use switchyard_compiler::objects::secret::{CERTIFICATE, PRIVATE_KEY, TLS_TYPE};

use crate::watch::cluster::FIELD_MANAGER;

/// The label every copy carries, with [`GATEWAY_LABEL`].
const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "switchyard");
/// The label naming the Gateway a copy serves.
const GATEWAY_LABEL: &str = "switchyard.io/gateway";
/// The annotation naming the Secret a copy holds.
const SOURCE_ANNOTATION: &str = "switchyard.io/copied-from";

/// The copies of one Gateway.
#[derive(Clone)]
pub struct Credentials {
    /// The client.
    client: Client,
    /// The Gateway's namespace (the gateway pods').
    namespace: String,
    /// The Gateway's name.
    gateway: String,
    /// The default certificate made at start: (chain PEM, key PEM).
    made: (String, String),
}

impl Credentials {
    /// The copies of Gateway `namespace/gateway`, with `made` as the default certificate.
    pub fn new(client: Client, namespace: &str, gateway: &str, made: (String, String)) -> Credentials {
        Credentials {
            client,
            namespace: namespace.to_owned(),
            gateway: gateway.to_owned(),
            made,
        }
    }

    /// Writes the copies `wanted` names (each copy's name and what it holds) that are missing or
    /// differ, from `certificates` (the Secrets the plan serves); returns the names of the copies
    /// that were there already, for [`Credentials::remove_unused`].
    pub async fn write(
        &self,
        wanted: &BTreeMap<String, Presented<'_>>,
        certificates: &LastServed,
    ) -> Result<Vec<String>, String> {
        let held = self.held().await?;
        for (name, presented) in wanted {
            let Some(copy) = self.copy(name, *presented, certificates) else {
                continue;
            };
            if held.get(name) == Some(&copy.data) {
                continue;
            }
            let params = PatchParams::apply(FIELD_MANAGER).force();
            self.api()
                .patch(name, &params, &Patch::Apply(&copy))
                .await
                .map_err(|e| format!("Secret {}/{name}: {e}", self.namespace))?;
        }
        Ok(held.into_keys().collect())
    }

    /// Deletes the copies of `held` (what [`Credentials::write`] found) that `wanted` does not name.
    pub async fn remove_unused(&self, held: &[String], wanted: &BTreeMap<String, Presented<'_>>) -> Result<(), String> {
        for name in held.iter().filter(|name| !wanted.contains_key(*name)) {
            match self.api().delete(name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(format!("Secret {}/{name}: cannot delete: {e}", self.namespace)),
            }
        }
        Ok(())
    }

    fn api(&self) -> Api<Secret> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// This Gateway's copies in its namespace: their data, by name.
    async fn held(&self) -> Result<BTreeMap<String, Option<BTreeMap<String, ByteString>>>, String> {
        let selector = format!("{}={},{GATEWAY_LABEL}={}", MANAGED_BY.0, MANAGED_BY.1, self.gateway);
        let list = (self.api().list(&ListParams::default().labels(&selector)).await)
            .map_err(|e| format!("Secrets {} labelled {selector}: cannot list: {e}", self.namespace))?;
        Ok((list.items.into_iter())
            .filter_map(|secret| Some((secret.metadata.name?, secret.data)))
            .collect())
    }

    /// The copy named `name` of what `presented` names; `None` when the plan serves a Secret it
    /// was not handed (it cannot: [`crate::watch::sink::https::HttpsOutput::new`]).
    fn copy(&self, name: &str, presented: Presented<'_>, certificates: &LastServed) -> Option<Secret> {
        let (source, chain, key) = match presented {
            Presented::Secret(secret) => {
                let object = certificates.get(secret)?;
                let entry = |key: &str| object.entry(key).map(<[u8]>::to_vec);
                (secret.to_string(), entry(CERTIFICATE)?, entry(PRIVATE_KEY)?)
            }
            Presented::Made => (
                format!("the default certificate made at start ({MADE_CREDENTIAL})"),
                self.made.0.clone().into_bytes(),
                self.made.1.clone().into_bytes(),
            ),
        };
        Some(Secret {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some(self.namespace.clone()),
                labels: Some(BTreeMap::from([
                    (MANAGED_BY.0.to_owned(), MANAGED_BY.1.to_owned()),
                    (GATEWAY_LABEL.to_owned(), self.gateway.clone()),
                ])),
                annotations: Some(BTreeMap::from([(SOURCE_ANNOTATION.to_owned(), source)])),
                ..ObjectMeta::default()
            },
            type_: Some(TLS_TYPE.to_owned()),
            data: Some(BTreeMap::from([
                (CERTIFICATE.to_owned(), ByteString(chain)),
                (PRIVATE_KEY.to_owned(), ByteString(key)),
            ])),
            ..Secret::default()
        })
    }
}
