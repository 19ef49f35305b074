//! The affinities of every dialect in the table's terms ([`switchyard_table::Affinity`]): nginx's
//! hash keys (ingress-nginx's `upstream-hash-by`, a VirtualServer upstream's `lb-method: hash …`),
//! written with nginx variables, as the parts of a request the filter joins; and an affinity
//! cookie's `Set-Cookie` attributes.

use switchyard_table::{Affinity, AffinityCookie, HashPart};

/// The `Set-Cookie` attributes of an affinity cookie.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CookieAttributes {
    /// `Path`.
    pub path: Option<String>,
    /// `Max-Age`, in seconds.
    pub max_age: Option<u64>,
    /// `Domain`.
    pub domain: Option<String>,
    /// `SameSite` (`None`, `Lax`, `Strict`).
    pub same_site: Option<String>,
    /// `Secure`.
    pub secure: bool,
    /// `HttpOnly`.
    pub http_only: bool,
}

impl CookieAttributes {
    /// The cookie affinity of cookie `name` with these attributes.
    pub fn affinity(&self, name: &str) -> Affinity {
        let mut attributes = Vec::new();
        attributes.extend(self.path.iter().map(|path| format!("Path={path}")));
        attributes.extend(self.max_age.iter().map(|seconds| format!("Max-Age={seconds}")));
        attributes.extend(self.domain.iter().map(|domain| format!("Domain={domain}")));
        attributes.extend(self.same_site.iter().map(|same_site| format!("SameSite={same_site}")));
        if self.secure {
            attributes.push("Secure".to_owned());
        }
        if self.http_only {
            attributes.push("HttpOnly".to_owned());
        }
        Affinity::Cookie(AffinityCookie {
            name: name.to_owned(),
            attributes: attributes.join("; "),
        })
    }
}

/// nginx's `hash` key `template` (`$request_uri`, `$http_x_user$arg_id`, `${cookie_sid}-x`) as
/// the parts of a request hash; the error names the variable the filter cannot read.
pub fn nginx_hash(template: &str) -> Result<Vec<HashPart>, String> {
    let mut parts = Vec::new();
    let mut rest = template.trim();
    if rest.is_empty() {
        return Err("the key is empty".to_owned());
    }
    while !rest.is_empty() {
        let Some(at) = rest.find('$') else {
            parts.push(HashPart::Text(rest.to_owned()));
            break;
        };
        if at > 0 {
            parts.push(HashPart::Text(rest[..at].to_owned()));
        }
        let after = &rest[at + 1..];
        let (name, next) = match after.strip_prefix('{') {
            Some(braced) => {
                let end = braced
                    .find('}')
                    .ok_or_else(|| format!("{template:?}: a ${{ without its }}"))?;
                (&braced[..end], &braced[end + 1..])
            }
            None => {
                let end = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                (&after[..end], &after[end..])
            }
        };
        parts.push(variable(name).ok_or_else(|| format!("${name} is not a variable Switchyard can hash by"))?);
        rest = next;
    }
    Ok(parts)
}

/// The part nginx variable `name` reads.
fn variable(name: &str) -> Option<HashPart> {
    let named = |prefix: &str| name.strip_prefix(prefix).filter(|n| !n.is_empty());
    Some(match name {
        "request_uri" => HashPart::Uri,
        "uri" | "document_uri" => HashPart::Path,
        "args" | "query_string" => HashPart::Args,
        "host" | "http_host" => HashPart::Host,
        "request_method" => HashPart::Method,
        "remote_addr" | "binary_remote_addr" => HashPart::ClientAddress,
        _ => {
            if let Some(header) = named("http_") {
                HashPart::Header(header.replace('_', "-").to_ascii_lowercase())
            } else if let Some(cookie) = named("cookie_") {
                HashPart::Cookie(cookie.to_owned())
            } else if let Some(argument) = named("arg_") {
                HashPart::Query(argument.to_owned())
            } else {
                return None;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nginx_variables_become_the_parts_of_the_key() {
        assert_eq!(nginx_hash("$request_uri").unwrap(), [HashPart::Uri]);
        assert_eq!(
            nginx_hash("$http_x_user-${arg_id}x$binary_remote_addr").unwrap(),
            [
                HashPart::Header("x-user".into()),
                HashPart::Text("-".into()),
                HashPart::Query("id".into()),
                HashPart::Text("x".into()),
                HashPart::ClientAddress,
            ]
        );
        assert_eq!(nginx_hash("$cookie_sid").unwrap(), [HashPart::Cookie("sid".into())]);
    }

    #[test]
    fn a_variable_switchyard_cannot_read_is_named() {
        let why = nginx_hash("$ssl_client_s_dn").unwrap_err();
        assert!(why.contains("$ssl_client_s_dn"), "{why}");
        assert!(nginx_hash("").is_err());
        assert!(nginx_hash("${arg_id").is_err());
    }

    #[test]
    fn cookie_attributes_are_written_in_set_cookie_order() {
        let attributes = CookieAttributes {
            path: Some("/".into()),
            max_age: Some(3600),
            same_site: Some("Lax".into()),
            secure: true,
            http_only: true,
            ..CookieAttributes::default()
        };
        assert_eq!(
            attributes.affinity("INGRESSCOOKIE"),
            Affinity::Cookie(AffinityCookie {
                name: "INGRESSCOOKIE".into(),
                attributes: "Path=/; Max-Age=3600; SameSite=Lax; Secure; HttpOnly".into()
            })
        );
    }
}
