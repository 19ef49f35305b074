//! ingress-nginx's Ingresses (ROUTING.md §7), served by the pipeline's ingress-nginx processor:
//!
//! - [`flags`]: the `--ingress-nginx-*` flags as the options hold them; [`class`]: §7.1, whether
//!   an Ingress is ingress-nginx's ([`class::decide_by`], which [`crate::class::Classes`] calls
//!   before §1 judges anything).
//! - [`access`]: §9, the access-control annotations and ConfigMap keys, each enforced or denying.
//! - [`annotations`]: §7.5, §7.7, §7.9, an Ingress's annotations read once into
//!   [`annotations::IngressNginxAnnotations`], each invalid one (`AnnotationInvalid`) and each one
//!   not honoured (`AnnotationNotHonored`) listed; [`canary`]: §7.6's settings and the table's
//!   canary; [`configmap`]: §7.8, the controller's ConfigMap; [`upstream`] and [`proxying`]: how
//!   the backend is spoken to, and the timeouts and retries of a request; [`cors`]: its CORS;
//!   [`buffering`]: the buffering annotations, equivalent to Envoy's streaming; [`ratelimit`]: its
//!   request rates.
//! - [`paths`]: §7.2–7.4's building blocks: ingress-nginx's Ingress order, path normalisation,
//!   location order, the trailing-slash redirect, each location's table path.
//! - [`server`]: the Ingresses gathered into one server per host (`PathTaken`, the root, regex
//!   mode, aliases, certificates, canaries attached); [`layout`]: a server laid out as rules in the
//!   order a request meets them (§7.7); [`processor`]: the processor that drafts them, one
//!   contender per server in §2's contest.
//! - [`explain`]: `switchyard explain` in ingress-nginx's terms, from the rule names [`layout`] writes.
//!
//! Their status reasons are [`crate::status::Reason`]'s (`PathTaken`, `RegexMode`, `AliasTaken`,
//! `PathRegexUnsupported`, `AnnotationInvalid`, `AnnotationNotHonored`, `CanaryWithoutMain`, ...).

pub mod access;
pub mod annotations;
pub mod basic_auth;
pub mod buffering;
pub mod canary;
pub mod class;
pub mod configmap;
pub mod cors;
pub mod explain;
pub mod external_auth;
pub mod flags;
pub mod layout;
pub mod passthrough;
pub mod paths;
pub mod processor;
pub mod proxying;
pub mod ratelimit;
pub mod server;
pub mod upstream;
