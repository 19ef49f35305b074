//! What a VirtualServer's `tls` changes in its rules (ROUTING.md §8.6): without `tls` its host is
//! not served on HTTPS (its rules take plain HTTP only); with `tls.redirect.enable`, a request that
//! came over plain HTTP (by `:scheme`, or by `X-Forwarded-Proto` with `basedOn:
//! x-forwarded-proto`) is redirected to https before any route, as NGINX's server block does
//! (`nginx.virtualserver.tmpl`), whether its Secret is usable or not. Which certificate it is
//! served with is the HTTPS stage's ([`crate::https`]).

use switchyard_table::{ActionSpec, ConditionSpec, PathSpec, Redirect, RuleSpec};

use crate::https::routing::{header_is, only, scheme_is, Scheme, HTTPS_LOCATION};
use crate::objects::nginx::VirtualServerTls;
use crate::objects::ResourceKey;

/// The codes `tls.redirect.code` may take (NGINX's validation).
const REDIRECT_CODES: [i64; 4] = [301, 302, 307, 308];

/// A VirtualServer's HTTPS, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerTls {
    /// No `tls`: plain HTTP only.
    None,
    /// `tls`, without a redirect.
    Served,
    /// `tls` with `redirect.enable`: this code, on this test of plain HTTP.
    Redirected(u16, ConditionSpec),
}

impl ServerTls {
    /// Checks `tls`; `Err` is why the VirtualServer is invalid.
    pub fn check(tls: Option<&VirtualServerTls>) -> Result<ServerTls, String> {
        let Some(tls) = tls else { return Ok(ServerTls::None) };
        let Some(redirect) = tls.redirect.as_ref().filter(|r| r.enable) else {
            return Ok(ServerTls::Served);
        };
        let code = redirect.code.unwrap_or(301);
        let status = match u16::try_from(code) {
            Ok(status) if REDIRECT_CODES.contains(&code) => status,
            _ => {
                return Err(format!(
                    "spec.tls.redirect.code: {code} is not one of 301, 302, 307, 308"
                ))
            }
        };
        let plain = match redirect.based_on.as_deref().unwrap_or("scheme") {
            "scheme" => scheme_is(Scheme::Http),
            "x-forwarded-proto" => header_is("x-forwarded-proto", "http"),
            other => {
                return Err(format!(
                    "spec.tls.redirect.basedOn: {other:?} is not \"scheme\" or \"x-forwarded-proto\""
                ))
            }
        };
        Ok(ServerTls::Redirected(status, plain))
    }

    /// Applies it to the VirtualServer's rules: the plain-HTTP limit on each, or the redirect rule
    /// that goes before them all (named `…#https-redirect`).
    pub fn apply(
        &self,
        key: &ResourceKey,
        host: &str,
        rules: &mut dyn Iterator<Item = &mut RuleSpec>,
    ) -> Option<RuleSpec> {
        match self {
            ServerTls::None => {
                rules.for_each(|rule| only(rule, Scheme::Http));
                None
            }
            ServerTls::Served => None,
            ServerTls::Redirected(status, plain) => Some(RuleSpec {
                name: format!("{}#https-redirect", key.display()),
                host: Some(host.to_owned()),
                path: PathSpec::Prefix("/".to_owned()),
                conditions: vec![plain.clone()],
                action: ActionSpec::Redirect(Redirect {
                    url: HTTPS_LOCATION.to_owned(),
                    status: *status,
                }),
                hsts: None,
                policy: None,
            }),
        }
    }
}
