//! ingress-nginx's Ingresses (ROUTING.md §7): the building blocks, as pure functions over the
//! manifests, for the pipeline's ingress-nginx processor.
//!
//! - [`class`]: §7.1, whether an Ingress is ingress-nginx's ([`class::decide`]) and the flags.
//! - [`annotations`]: §7.5, §7.7, §7.9, the annotations read once into
//!   [`annotations::IngressNginxAnnotations`] (prefix configurable), each invalid one
//!   (`AnnotationInvalid`) and each one not honoured (`AnnotationNotHonored`) listed.
//! - [`paths`]: §7.2–7.4, ingress-nginx's Ingress order, path normalisation, `PathTaken`, the
//!   regex-mode decision, location order, `PathRegexUnsupported`, and the table's path for a
//!   location ([`paths::table_path`]: `(?i)(?:P).*` in regex mode, table/README.md).
//! - [`configmap`]: §7.8, the controller's ConfigMap keys.
//! - Their status reasons are [`crate::status::Reason`]'s (`PathTaken`, `AliasTaken`,
//!   `PathRegexUnsupported`, `AnnotationInvalid`, `AnnotationNotHonored`, ...).
//!
//! **What is wired and what is not (phase 1 of issue 25).** The table and the filter do everything
//! these blocks describe (table/README.md: the regex-mode path, `rewrite_regex` with `headers`,
//! `:authority` in `set_headers`, the `:scheme` condition, the redirect variables). Nothing here is
//! called by the pipeline yet: no flag reaches [`class::Flags`], no Ingress is judged by §7.1, no
//! server is formed into rules (the implicit root, the trailing-slash and HTTPS redirect rules,
//! from-to-www, app-root, `server-alias`, the catch-all server), no reason reaches the status book,
//! and `explain`, `watch`, the dashboard and the examples know nothing of §7. The canary (§7.6) is
//! not here: its annotations are kept raw ([`annotations::IngressNginxAnnotations::canary`]) for it.

pub mod annotations;
pub mod canary;
pub mod class;
pub mod configmap;
pub mod explain;
pub mod flags;
pub mod layout;
pub mod paths;
pub mod processor;
pub mod server;
