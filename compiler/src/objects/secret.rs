//! `v1` Secrets, as the HTTPS stage reads them (ROUTING.md §8.2): the type and the `tls.crt` and
//! `tls.key` entries, and the `ca.crt` a backend's certificate is checked against; and as basic
//! authentication reads them: the `auth` entry (an htpasswd file), NGINX's `htpasswd` entry (a
//! `basicAuth` Policy's file) and every entry whose value is a password hash (an `auth-map`,
//! [`Scheme::of`]); nothing else.
//!
//! Declared here rather than taken from `k8s-openapi` for two reasons:
//! - **Nothing else is kept.** A cluster's Secrets hold service-account tokens, Helm releases and
//!   application passwords; decoding keeps only the two entries a certificate needs, so the rest is
//!   never held by a watcher's store.
//! - **A key is never printed.** `Debug` names the entries and their sizes, never their bytes, so
//!   a `{:?}` in a log line or a panic message cannot leak a private key.
//!
//! A manifest may write `stringData` (as `kubectl apply` accepts); it is read as `data`.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::ByteString;
use serde::{Deserialize, Deserializer, Serialize};
use switchyard_table::basic_auth::Scheme;

/// The entry holding the PEM certificate chain.
pub const CERTIFICATE: &str = "tls.crt";
/// The entry holding the PEM private key.
pub const PRIVATE_KEY: &str = "tls.key";
/// The entry holding the PEM certificate authorities a backend's certificate is checked against
/// (ingress-nginx's `proxy-ssl-secret`, HTTPProxy's `validation.caSecret`).
pub const CA_CERTIFICATE: &str = "ca.crt";
/// The type of a TLS Secret.
pub const TLS_TYPE: &str = "kubernetes.io/tls";
/// The type of a Secret without one.
pub const OPAQUE_TYPE: &str = "Opaque";

/// A Secret, reduced to what a certificate needs.
#[derive(Clone, Default, PartialEq, Serialize)]
pub struct Secret {
    /// Its metadata.
    pub metadata: ObjectMeta,
    /// `type` (`Opaque` when absent, as the API server defaults it).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// `tls.crt` and `tls.key`, when present.
    #[serde(default)]
    pub data: BTreeMap<String, ByteString>,
}

impl Secret {
    /// Its type, `Opaque` when unset.
    pub fn type_name(&self) -> &str {
        self.type_.as_deref().unwrap_or(OPAQUE_TYPE)
    }

    /// The bytes of entry `key`, if present.
    pub fn entry(&self, key: &str) -> Option<&[u8]> {
        self.data.get(key).map(|b| b.0.as_slice())
    }

    /// Whether it holds basic authentication's users (an htpasswd file or password hashes), which
    /// the rules read, and not only a certificate, which the HTTPS listener reads.
    pub fn holds_credentials(&self) -> bool {
        (self.data.keys()).any(|key| ![CERTIFICATE, PRIVATE_KEY, CA_CERTIFICATE].contains(&key.as_str()))
    }

    /// Whether two versions hold the same certificate (what a recompilation depends on).
    pub fn same_content(&self, other: &Secret) -> bool {
        self.type_ == other.type_ && self.data == other.data
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sizes: BTreeMap<&str, usize> = self.data.iter().map(|(k, v)| (k.as_str(), v.0.len())).collect();
        f.debug_struct("Secret")
            .field("namespace", &self.metadata.namespace)
            .field("name", &self.metadata.name)
            .field("type", &self.type_)
            .field("entry_sizes", &sizes)
            .finish()
    }
}

/// The wire form: `data` (base64) and `stringData` (text), of which only the two entries are kept.
#[derive(Deserialize)]
struct Wire {
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(rename = "type", default)]
    type_: Option<String>,
    #[serde(default)]
    data: Option<BTreeMap<String, ByteString>>,
    #[serde(rename = "stringData", default)]
    string_data: Option<BTreeMap<String, String>>,
}

/// The entry holding a basic authentication's htpasswd file (ingress-nginx's `auth-file`).
pub const HTPASSWD: &str = "auth";
/// The entry holding the htpasswd file of an NGINX `basicAuth` Policy's Secret.
pub const NGINX_HTPASSWD: &str = "htpasswd";
/// The type of an NGINX `basicAuth` Policy's Secret.
pub const NGINX_HTPASSWD_TYPE: &str = "nginx.org/htpasswd";

/// Whether entry `key` with `value` is kept: a certificate's, a key's, an htpasswd file, or a
/// password hash.
fn kept(key: &str, value: &[u8]) -> bool {
    let hash = std::str::from_utf8(value).is_ok_and(|text| Scheme::of(text.trim()).is_some());
    [CERTIFICATE, PRIVATE_KEY, CA_CERTIFICATE, HTPASSWD, NGINX_HTPASSWD].contains(&key) || hash
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = Wire::deserialize(deserializer)?;
        let mut data: BTreeMap<String, ByteString> = (wire.data.unwrap_or_default().into_iter())
            .filter(|(k, v)| kept(k, &v.0))
            .collect();
        // `stringData` wins over `data`, as the API server merges them.
        for (key, text) in wire.string_data.unwrap_or_default() {
            if kept(&key, text.as_bytes()) {
                data.insert(key, ByteString(text.into_bytes()));
            }
        }
        Ok(Secret {
            metadata: wire.metadata,
            type_: wire.type_,
            data,
        })
    }
}

impl kube::Resource for Secret {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(_: &()) -> std::borrow::Cow<'_, str> {
        "Secret".into()
    }

    fn group(_: &()) -> std::borrow::Cow<'_, str> {
        "".into()
    }

    fn version(_: &()) -> std::borrow::Cow<'_, str> {
        "v1".into()
    }

    fn plural(_: &()) -> std::borrow::Cow<'_, str> {
        "secrets".into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_keeps_only_its_certificate_and_key_and_never_prints_them() {
        let secret: Secret = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "shop-tls", "namespace": "prod"},
            "type": "kubernetes.io/tls",
            "data": {"tls.crt": "Q0VSVA==", "password": "aHVudGVyMg=="},
            "stringData": {"tls.key": "PRIVATE KEY BYTES"}
        }))
        .unwrap();
        assert_eq!(secret.entry(CERTIFICATE), Some(&b"CERT"[..]));
        assert_eq!(secret.entry(PRIVATE_KEY), Some(&b"PRIVATE KEY BYTES"[..]));
        assert_eq!(secret.entry("password"), None);
        let printed = format!("{secret:?}");
        assert!(
            !printed.contains("PRIVATE KEY BYTES") && !printed.contains("80, 82"),
            "{printed}"
        );
        assert!(printed.contains("tls.key") && printed.contains("shop-tls"), "{printed}");
    }

    #[test]
    fn a_secret_keeps_its_htpasswd_file_and_password_hashes_never_a_plain_value() {
        let secret: Secret = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "users", "namespace": "shop"},
            "stringData": {
                "auth": "alice:$apr1$x$y", "bob": "$2y$05$abc", "carol": "{SHA}abc=", "token": "hunter2",
                "htpasswd": "dave:$apr1$x$y"
            }
        }))
        .unwrap();
        let kept: Vec<&str> = secret.data.keys().map(String::as_str).collect();
        assert_eq!(
            kept,
            ["auth", "bob", "carol", "htpasswd"],
            "htpasswd: an NGINX basicAuth Policy's file"
        );
    }
}
