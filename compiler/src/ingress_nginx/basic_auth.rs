//! ingress-nginx's basic authentication (`auth-type: basic`, `auth-secret`, `auth-secret-type`,
//! `auth-realm`), read as v1.15's `auth` annotation parser reads it, into the rule's
//! [`BasicAuth`]: the users of the Secret in the Ingress's namespace, from its `auth` entry (an
//! htpasswd file, `auth-secret-type: auth-file`, the default) or from every entry (`auth-map`: the
//! key a user, the value its hash); the realm as written (none: `realm=""`, as nginx sends it).
//!
//! What ingress-nginx denies the location for (no `auth-secret`, a Secret of another namespace or
//! missing, no `auth` entry) is an [`Unenforceable`]: the annotations stay access controls that
//! deny (ROUTING.md §9), with the reason in the status. `auth-type: digest` is never read here,
//! and denies too.

use std::collections::BTreeMap;
use std::sync::Arc;

use switchyard_table::basic_auth::{BasicAuth, Credential};

use super::access::Unenforceable;
use crate::https::secrets::Secrets;
use crate::objects::secret::HTPASSWD;

/// The annotations (without the prefix) that basic authentication enforces when it is read.
pub const ANNOTATIONS: &[&str] = &["auth-type", "auth-secret", "auth-secret-type", "auth-realm"];

/// The basic authentication of an Ingress in `namespace` with `annotations` (under `prefix`):
/// its users and realm, or why it cannot be enforced; `None` when `auth-type` is not `basic`.
pub fn read(
    annotations: &BTreeMap<String, String>,
    prefix: &str,
    namespace: &str,
    secrets: &Secrets<'_>,
) -> Option<Result<Arc<BasicAuth>, Unenforceable>> {
    let annotation = |name: &str| annotations.get(&format!("{prefix}/{name}")).map(|v| v.trim());
    if annotation("auth-type") != Some("basic") {
        return None;
    }
    let users = users(
        annotation("auth-secret"),
        annotation("auth-secret-type"),
        namespace,
        secrets,
    );
    Some(users.map(|(source, users)| {
        // Quotes and control characters would break the header nginx writes the realm into.
        let realm = annotation("auth-realm").unwrap_or_default();
        let realm = realm.chars().filter(|c| !c.is_control() && *c != '"').collect();
        Arc::new(BasicAuth { realm, source, users })
    }))
}

/// The Secret's description and its users, as `auth-secret` and `auth-secret-type` name them.
fn users(
    secret: Option<&str>,
    secret_type: Option<&str>,
    namespace: &str,
    secrets: &Secrets<'_>,
) -> Result<(String, Vec<Credential>), Unenforceable> {
    let deny = |why: String| Err(Unenforceable(why));
    let Some(written) = secret.filter(|s| !s.is_empty()) else {
        return deny("auth-type basic without auth-secret".to_owned());
    };
    let (secret_namespace, name) = written.split_once('/').unwrap_or((namespace, written));
    if secret_namespace != namespace {
        return deny(format!(
            "Secret {written} is in another namespace than the Ingress, which ingress-nginx refuses"
        ));
    }
    let source = format!("Secret {namespace}/{name}");
    let Some(secret) = secrets.get(namespace, name) else {
        return deny(format!("{source} does not exist"));
    };
    let users = match secret_type.unwrap_or("auth-file") {
        "auth-file" => match secret.entry(HTPASSWD) {
            None => return deny(format!("{source} has no entry {HTPASSWD:?}")),
            Some(file) => htpasswd(&String::from_utf8_lossy(file)),
        },
        "auth-map" => (secret.data.iter())
            .map(|(user, hash)| Credential {
                user: user.clone(),
                hash: String::from_utf8_lossy(&hash.0).trim().to_owned(),
            })
            .collect(),
        other => return deny(format!("auth-secret-type {other:?} is neither auth-file nor auth-map")),
    };
    Ok((source, users))
}

/// The users of an htpasswd file: `user:hash` lines, in order (blank lines and `#` comments left
/// out, as nginx reads them).
pub(crate) fn htpasswd(file: &str) -> Vec<Credential> {
    (file.lines())
        .map(|line| line.trim_end_matches('\r'))
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .filter_map(|line| line.split_once(':'))
        .map(|(user, hash)| Credential {
            user: user.to_owned(),
            hash: hash.to_owned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::secret::Secret;

    const P: &str = "nginx.ingress.kubernetes.io";

    fn secret(name: &str, entries: &[(&str, &str)]) -> Arc<Secret> {
        let document = serde_json::json!({
            "metadata": {"namespace": "shop", "name": name},
            "stringData": entries.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
        });
        Arc::new(serde_json::from_value(document).unwrap())
    }

    fn read_with(
        annotations: &[(&str, &str)],
        secrets: &[Arc<Secret>],
    ) -> Option<Result<Arc<BasicAuth>, Unenforceable>> {
        let annotations = (annotations.iter())
            .map(|(k, v)| (format!("{P}/{k}"), (*v).to_owned()))
            .collect();
        read(&annotations, P, "shop", &Secrets::new(secrets))
    }

    const FILE: &str = "# staff\nalice:$apr1$lZL6V/ci$PR6QJXkRFUzdUuaYcwrI//\n\nbob:abJnggxhB/yWI\r\n";

    #[test]
    fn an_auth_file_secret_gives_its_users_in_order_and_the_realm() {
        let secrets = [secret("basic-auth", &[("auth", FILE)])];
        let read = read_with(
            &[
                ("auth-type", "basic"),
                ("auth-secret", "basic-auth"),
                ("auth-realm", "Staff \"only\""),
            ],
            &secrets,
        )
        .unwrap();
        let auth = read.unwrap();
        assert_eq!(auth.realm, "Staff only");
        assert_eq!(auth.source, "Secret shop/basic-auth");
        let users: Vec<&str> = auth.users.iter().map(|c| c.user.as_str()).collect();
        assert_eq!(users, ["alice", "bob"]);
        assert_eq!(auth.unusable_users(), ["bob"], "a DES hash is checked by no scheme");
    }

    #[test]
    fn an_auth_map_secret_gives_one_user_per_entry() {
        let secrets = [secret("users", &[("carol", "{PLAIN}x"), ("dave", "$2y$05$abc")])];
        let read = read_with(
            &[
                ("auth-type", "basic"),
                ("auth-secret", "shop/users"),
                ("auth-secret-type", "auth-map"),
            ],
            &secrets,
        );
        let auth = read.unwrap().unwrap();
        assert_eq!(auth.users.len(), 2);
        assert_eq!(auth.realm, "", "no auth-realm: realm=\"\", as nginx sends it");
    }

    #[test]
    fn what_ingress_nginx_denies_the_location_for_cannot_be_enforced() {
        let secrets = [secret("no-file", &[("other", "x")])];
        let why = |annotations: &[(&str, &str)]| read_with(annotations, &secrets).unwrap().unwrap_err().0;
        assert!(why(&[("auth-type", "basic")]).contains("without auth-secret"));
        assert!(why(&[("auth-type", "basic"), ("auth-secret", "missing")]).contains("shop/missing does not exist"));
        assert!(why(&[("auth-type", "basic"), ("auth-secret", "other/s")]).contains("another namespace"));
        assert!(why(&[("auth-type", "basic"), ("auth-secret", "no-file")]).contains("no entry \"auth\""));
        let odd = [
            ("auth-type", "basic"),
            ("auth-secret", "no-file"),
            ("auth-secret-type", "x"),
        ];
        assert!(why(&odd).contains("neither auth-file nor auth-map"));
    }

    #[test]
    fn digest_or_no_auth_type_is_not_basic_auth() {
        assert_eq!(read_with(&[("auth-type", "digest"), ("auth-secret", "s")], &[]), None);
        assert_eq!(read_with(&[("auth-secret", "s")], &[]), None);
    }
}
