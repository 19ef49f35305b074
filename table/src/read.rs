//! Reading the table document into the [`crate::format`] types, by hand, from a [`Doc`] tree.
//!
//! The same reader serves both forms of the table: JSON text (read straight into a [`Doc`] by
//! [`crate::json`]) and the compact form ([`crate::compact`], whose binary document decodes straight
//! into a [`Doc`] borrowing the inflated bytes). It needs no serde derive, which keeps the filter's
//! `.wasm` small (BENCHMARKS.md, "Filter size"); the sidecar writes tables with the format types'
//! `Serialize` derive.
//!
//! Each type has one [`FromDoc`] impl that lists its fields once: required ones, optional ones,
//! defaults, and it refuses unknown fields (as the format's `deny_unknown_fields` does) and a field
//! written twice (which `serde_json` would have let the last one win). Errors name the field's path
//! in the document (`rules[3].path.type`); the path and the message are only built on error, out of
//! line (`#[cold]`), and the few helpers every field calls are never inlined (`#[inline(never)]`), so
//! the reader stays small in the filter (BENCHMARKS.md, "Filter size").

use serde_json::Value;

use crate::basic_auth::{BasicAuth, Credential};
use crate::doc::{Doc, Item, Node};
use crate::error::TableError;
use crate::external_auth::ExternalAuth;
use crate::format::{
    ActionSpec, Affinity, AffinityCookie, Backend, Canary, CanaryHeader, ConditionSource, ConditionSpec, Cors,
    CorsSemantics, DirectResponse, HashPart, HeaderValue, IpRange, MatchOp, MetricsFold, NoRoute, OriginRegex,
    PathSpec, Policy, Rate, RateLimit, Redirect, RegexRewrite, RouteAction, RuleSpec, TableSpec,
    DEFAULT_CLUSTER_HEADER,
};

/// Where a value sits in the document: rendered as `rules[3].path.type` only when an error needs it.
#[derive(Clone, Copy)]
pub(crate) enum At<'a> {
    /// The document itself.
    Root,
    /// A field of an object.
    Key(&'a At<'a>, &'a str),
    /// An element of a list.
    Index(&'a At<'a>, usize),
}

impl At<'_> {
    fn render(&self) -> String {
        match self {
            At::Root => String::new(),
            At::Key(At::Root, key) => (*key).to_owned(),
            At::Key(parent, key) => format!("{}.{key}", parent.render()),
            At::Index(parent, i) => format!("{}[{i}]", parent.render()),
        }
    }

    #[cold]
    #[inline(never)]
    fn error(&self, problem: std::fmt::Arguments<'_>) -> TableError {
        TableError::Shape {
            at: self.render(),
            problem: problem.to_string(),
        }
    }

    /// `expected <what>, found <the value's kind>`.
    #[cold]
    #[inline(never)]
    fn expected(&self, what: &str, found: Node<'_>) -> TableError {
        self.error(format_args!("expected {what}, found {}", found.kind()))
    }
}

/// A format type read from its document value.
pub(crate) trait FromDoc: Sized {
    /// Reads `value` of `doc`, found at `at`.
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError>;
}

/// The most fields an object may have (they are tracked in one `u64`; a table's have at most 6).
const MAX_FIELDS: usize = 64;

/// An object's fields, taken one by one; [`Fields::finish`] refuses the ones nobody took.
struct Fields<'x, 'd> {
    doc: &'x Doc<'d>,
    items: &'x [Item<'d>],
    taken: u64,
    at: &'x At<'x>,
}

impl<'x, 'd> Fields<'x, 'd> {
    #[inline(never)]
    fn new(value: Node<'d>, doc: &'x Doc<'d>, at: &'x At<'x>) -> Result<Fields<'x, 'd>, TableError> {
        let Node::Object(span) = value else {
            return Err(at.expected("an object", value));
        };
        let items = doc.items(span);
        if items.len() > MAX_FIELDS {
            return Err(at.error(format_args!("an object of more than {MAX_FIELDS} fields")));
        }
        Ok(Fields {
            doc,
            items,
            taken: 0,
            at,
        })
    }

    /// Takes the field `key` out of the object, if it is there.
    #[inline(never)]
    fn take(&mut self, key: &str) -> Option<Node<'d>> {
        let (taken, doc) = (self.taken, self.doc);
        let i =
            (self.items.iter().enumerate()).position(|(i, item)| taken & (1 << i) == 0 && doc.text(item.key) == key)?;
        self.taken |= 1 << i;
        self.items.get(i).map(|item| item.node)
    }

    /// Whether the object has the field `key`.
    fn has(&self, key: &str) -> bool {
        self.items.iter().any(|item| self.doc.text(item.key) == key)
    }

    /// A field that must be there.
    fn required<T: FromDoc>(&mut self, key: &str) -> Result<T, TableError> {
        match self.take(key) {
            Some(value) => T::from_doc(value, self.doc, &At::Key(self.at, key)),
            None => Err(self.at.error(format_args!("missing field `{key}`"))),
        }
    }

    /// A field that may be absent (or null).
    fn optional<T: FromDoc>(&mut self, key: &str) -> Result<Option<T>, TableError> {
        match self.take(key) {
            None | Some(Node::Null) => Ok(None),
            Some(value) => T::from_doc(value, self.doc, &At::Key(self.at, key)).map(Some),
        }
    }

    /// A field that is `default` when absent.
    fn or<T: FromDoc>(&mut self, key: &str, default: T) -> Result<T, TableError> {
        Ok(self.optional(key)?.unwrap_or(default))
    }

    /// Refuses the fields no one read: unknown ones, and the second of a field written twice (`take`
    /// takes the first), so a duplicate costs nothing until it is found.
    #[inline(never)]
    fn finish(&self) -> Result<(), TableError> {
        let taken = self.taken;
        match (self.items.iter().enumerate()).find(|(i, _)| taken & (1 << i) == 0) {
            None => Ok(()),
            Some((_, item)) => Err(self.leftover(self.doc.text(item.key))),
        }
    }

    /// The error of an object whose reading failed: a field written twice, if one is, explains the
    /// trouble better than what it caused (`{"value": …, "value": …}` misses every table field).
    #[cold]
    #[inline(never)]
    fn failed(&self, error: TableError) -> TableError {
        let key = |item: &Item<'d>| self.doc.text(item.key);
        let earlier = |i: usize| self.items.get(..i).unwrap_or_default().iter();
        match (self.items.iter().enumerate()).find(|(i, item)| earlier(*i).any(|e| key(e) == key(item))) {
            Some((_, item)) => self.at.error(format_args!("field `{}` written twice", key(item))),
            None => error,
        }
    }

    #[cold]
    #[inline(never)]
    fn leftover(&self, key: &str) -> TableError {
        let taken = self.taken;
        let twice =
            (self.items.iter().enumerate()).any(|(i, item)| taken & (1 << i) != 0 && self.doc.text(item.key) == key);
        match twice {
            true => self.at.error(format_args!("field `{key}` written twice")),
            false => self.at.error(format_args!("unknown field `{key}`")),
        }
    }
}

/// Reads an object: `read` takes its fields, then the ones it did not take are refused.
fn object<'x, 'd, T>(
    value: Node<'d>,
    doc: &'x Doc<'d>,
    at: &'x At<'x>,
    read: impl FnOnce(&mut Fields<'x, 'd>) -> Result<T, TableError>,
) -> Result<T, TableError> {
    let mut fields = Fields::new(value, doc, at)?;
    match read(&mut fields) {
        Ok(out) => fields.finish().map(|()| out),
        Err(error) => Err(fields.failed(error)),
    }
}

/// The text of a string value.
#[inline(never)]
fn text<'x, 'd: 'x>(value: Node<'d>, doc: &'x Doc<'d>, at: &At<'_>) -> Result<&'x str, TableError> {
    match value {
        Node::Str(text) => Ok(doc.text(text)),
        other => Err(at.expected("a string", other)),
    }
}

/// Reads one of a vocabulary's names (`names` pairs each written name with its value).
fn one_of<T: Copy>(value: Node<'_>, doc: &Doc<'_>, at: &At<'_>, names: &[(&str, T)]) -> Result<T, TableError> {
    let text = text(value, doc, at)?;
    match names.iter().find(|(name, _)| *name == text) {
        Some((_, value)) => Ok(*value),
        None => Err(not_one_of(
            text,
            at,
            &names.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
        )),
    }
}

#[cold]
#[inline(never)]
fn not_one_of(text: &str, at: &At<'_>, names: &[&str]) -> TableError {
    at.error(format_args!("{text:?} is not one of {}", names.join(", ")))
}

impl FromDoc for String {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        text(value, doc, at).map(str::to_owned)
    }
}

impl FromDoc for bool {
    fn from_doc<'d>(value: Node<'d>, _doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        match value {
            Node::Bool(b) => Ok(b),
            other => Err(at.expected("true or false", other)),
        }
    }
}

impl FromDoc for u64 {
    fn from_doc<'d>(value: Node<'d>, _doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        match value {
            Node::UInt(n) => Ok(n),
            other => Err(at.expected("a whole number >= 0", other)),
        }
    }
}

impl FromDoc for u32 {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        let n = u64::from_doc(value, doc, at)?;
        u32::try_from(n).map_err(|_| too_large(n, u64::from(u32::MAX), at))
    }
}

impl FromDoc for u16 {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        let n = u64::from_doc(value, doc, at)?;
        u16::try_from(n).map_err(|_| too_large(n, u64::from(u16::MAX), at))
    }
}

#[cold]
#[inline(never)]
fn too_large(n: u64, max: u64, at: &At<'_>) -> TableError {
    at.error(format_args!("{n} is over {max}"))
}

impl<T: FromDoc> FromDoc for Vec<T> {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        match value {
            Node::List(span) => (doc.items(span).iter().enumerate())
                .map(|(i, item)| T::from_doc(item.node, doc, &At::Index(at, i)))
                .collect(),
            other => Err(at.expected("a list", other)),
        }
    }
}

impl TableSpec {
    /// Reads a table document parsed from JSON (not its compact form: see
    /// [`crate::RouteTable::from_document`]). The shape is checked here; [`crate::RouteTable::try_from`]
    /// validates the rules.
    pub fn from_value(value: Value) -> Result<TableSpec, TableError> {
        TableSpec::from_tree(&Doc::from_value(&value))
    }

    /// Reads a table document's tree (from JSON or from the compact form).
    pub fn from_tree(doc: &Doc<'_>) -> Result<TableSpec, TableError> {
        TableSpec::from_node(doc, doc.root())
    }

    /// Reads the table document that is `node` of `doc` (a table inside a wrapper).
    pub fn from_node<'d>(doc: &Doc<'d>, node: Node<'d>) -> Result<TableSpec, TableError> {
        TableSpec::from_doc(node, doc, &At::Root)
    }
}

impl RuleSpec {
    /// Reads one rule's document (as [`TableSpec::from_value`] reads each of a table's rules).
    pub fn from_value(value: Value) -> Result<RuleSpec, TableError> {
        let doc = Doc::from_value(&value);
        RuleSpec::from_doc(doc.root(), &doc, &At::Root)
    }
}

impl FromDoc for TableSpec {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        object(value, doc, at, |f| {
            Ok(TableSpec {
                version: f.required("version")?,
                generation: f.or("generation", String::new())?,
                cluster_header: f.or("cluster_header", DEFAULT_CLUSTER_HEADER.to_owned())?,
                no_route: f.or("no_route", NoRoute::default())?,
                debug_rule_header: f.or("debug_rule_header", false)?,
                metrics_fold: f.optional("metrics_fold")?,
                rules: f.or("rules", Vec::new())?,
            })
        })
    }
}

impl FromDoc for MetricsFold {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        object(value, doc, at, |f| {
            Ok(MetricsFold {
                last_own: f.required("last_own")?,
                folded: f.required("folded")?,
            })
        })
    }
}

impl FromDoc for NoRoute {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        one_of(value, doc, at, &[("404", NoRoute::NotFound), ("pass", NoRoute::Pass)])
    }
}

impl FromDoc for RuleSpec {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        object(value, doc, at, |f| {
            Ok(RuleSpec {
                name: f.required("name")?,
                host: f.optional("host")?,
                path: f.required("path")?,
                conditions: f.or("conditions", Vec::new())?,
                action: f.required("action")?,
                hsts: f.optional::<String>("hsts")?.map(std::sync::Arc::new),
                policy: f.optional::<Policy>("policy")?.map(std::sync::Arc::new),
            })
        })
    }
}

impl FromDoc for IpRange {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        let text = text(value, doc, at)?;
        IpRange::parse(text).ok_or_else(|| at.error(format_args!("{text:?} is not an address range")))
    }
}

impl FromDoc for Policy {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        object(value, doc, at, |f| {
            Ok(Policy {
                max_body_bytes: f.optional("max_body_bytes")?,
                allow: f.or("allow", Vec::new())?,
                deny: f.or("deny", Vec::new())?,
                route: f.optional("route")?,
                cors: f.optional::<Cors>("cors")?.map(std::sync::Arc::new),
                rate_limit: f.optional("rate_limit")?,
                basic_auth: f.optional::<BasicAuth>("basic_auth")?.map(std::sync::Arc::new),
                external_auth: f.optional::<ExternalAuth>("external_auth")?.map(std::sync::Arc::new),
            })
        })
        .and_then(|policy| {
            match policy.cors.as_ref().is_some_and(|cors| cors.by_route) && policy.route.is_none() {
                true => Err(at.error(format_args!("cors.by_route needs a route to add the headers"))),
                false => Ok(policy),
            }
        })
    }
}

impl FromDoc for RateLimit {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        object(value, doc, at, |f| {
            Ok(RateLimit {
                zone: f.required("zone")?,
                per_second: f.optional("per_second")?,
                per_minute: f.optional("per_minute")?,
                per_hour: f.optional("per_hour")?,
                per_client: f.or("per_client", true)?,
                in_flight: f.optional("in_flight")?,
                exempt: f.or("exempt", Vec::new())?,
                status: f.or("status", 503)?,
                in_flight_status: f.or("in_flight_status", 503)?,
            })
        })
    }
}

impl FromDoc for Rate {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        object(value, doc, at, |f| {
            Ok(Rate {
                requests: f.required("requests")?,
                burst: f.or("burst", 0)?,
            })
        })
    }
}

impl FromDoc for BasicAuth {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        object(value, doc, at, |f| {
            Ok(BasicAuth {
                realm: f.or("realm", String::new())?,
                source: f.or("source", String::new())?,
                users: f.required("users")?,
            })
        })
    }
}

impl FromDoc for ExternalAuth {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        object(value, doc, at, |f| {
            Ok(ExternalAuth {
                cluster: f.required("cluster")?,
                url: f.or("url", String::new())?,
                authority: f.required("authority")?,
                path: f.required("path")?,
                method: f.optional("method")?,
                signin: f.optional("signin")?,
                response_headers: f.or("response_headers", Vec::new())?,
                request_redirect: f.optional("request_redirect")?,
                always_set_cookie: f.or("always_set_cookie", false)?,
                timeout_ms: f.required("timeout_ms")?,
            })
        })
    }
}

impl FromDoc for Credential {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        object(value, doc, at, |f| {
            Ok(Credential {
                user: f.required("user")?,
                hash: f.required("hash")?,
            })
        })
    }
}

impl FromDoc for Cors {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        object(value, doc, at, |f| {
            Ok(Cors {
                allow_origin: f.required("allow_origin")?,
                allow_methods: f.required("allow_methods")?,
                allow_headers: f.required("allow_headers")?,
                expose_headers: f.or("expose_headers", String::new())?,
                allow_credentials: f.or("allow_credentials", false)?,
                max_age: f.optional("max_age")?,
                semantics: f.or("semantics", CorsSemantics::Nginx)?,
                allow_origin_regex: f.or("allow_origin_regex", Vec::new())?,
                allow_private_network: f.or("allow_private_network", false)?,
                by_route: f.or("by_route", false)?,
            })
        })
        .and_then(|cors| match cors.semantics {
            _ if cors.by_route && !cors.same_for_every_response() => Err(at.error(format_args!(
                "by_route needs the headers of every response the same: semantics \"nginx\" and allow_origin \"*\""
            ))),
            CorsSemantics::Envoy => Ok(cors),
            CorsSemantics::Nginx if cors.allow_origin_regex.is_empty() && !cors.allow_private_network => Ok(cors),
            CorsSemantics::Nginx => Err(at.error(format_args!(
                "allow_origin_regex and allow_private_network need semantics \"envoy\""
            ))),
        })
    }
}

impl FromDoc for CorsSemantics {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        one_of(
            value,
            doc,
            at,
            &[("nginx", CorsSemantics::Nginx), ("envoy", CorsSemantics::Envoy)],
        )
    }
}

impl FromDoc for OriginRegex {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        let text = text(value, doc, at)?;
        OriginRegex::new(text).ok_or_else(|| at.error(format_args!("{text:?} is not a regex that compiles")))
    }
}

/// The `type` of a [`PathSpec`].
#[derive(Clone, Copy)]
enum PathType {
    Exact,
    SegmentPrefix,
    Prefix,
    Regex,
}

impl FromDoc for PathSpec {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        let mut f = Fields::new(value, doc, at)?;
        let names = [
            ("exact", PathType::Exact),
            ("segment_prefix", PathType::SegmentPrefix),
            ("prefix", PathType::Prefix),
            ("regex", PathType::Regex),
        ];
        let kind = match f.take("type") {
            Some(value) => one_of(value, doc, &At::Key(at, "type"), &names)?,
            None => return Err(at.error(format_args!("missing field `type`"))),
        };
        let value: String = f.required("value")?;
        f.finish()?;
        Ok(match kind {
            PathType::Exact => PathSpec::Exact(value),
            PathType::SegmentPrefix => PathSpec::SegmentPrefix(value),
            PathType::Prefix => PathSpec::Prefix(value),
            PathType::Regex => PathSpec::Regex(value),
        })
    }
}

impl FromDoc for ConditionSpec {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        object(value, doc, at, |f| {
            Ok(ConditionSpec {
                on: f.required("on")?,
                name: f.optional("name")?,
                op: f.required("match")?,
                value: f.optional("value")?,
                invert: f.or("invert", false)?,
                ignore_case: f.or("ignore_case", false)?,
            })
        })
    }
}

impl FromDoc for ConditionSource {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        use ConditionSource::*;
        one_of(
            value,
            doc,
            at,
            &[
                ("cookie", Cookie),
                ("header", Header),
                ("query", Query),
                ("method", Method),
            ],
        )
    }
}

impl FromDoc for MatchOp {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        use MatchOp::*;
        let names = [
            ("exact", Exact),
            ("prefix", Prefix),
            ("contains", Contains),
            ("regex", Regex),
            ("present", Present),
        ];
        one_of(value, doc, at, &names)
    }
}

impl FromDoc for ActionSpec {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        let mut f = Fields::new(value, doc, at)?;
        // Externally tagged: exactly one of the variants' keys.
        let action = if f.has("route") {
            ActionSpec::Route(f.required("route")?)
        } else if f.has("direct_response") {
            ActionSpec::DirectResponse(f.required("direct_response")?)
        } else if f.has("redirect") {
            ActionSpec::Redirect(f.required("redirect")?)
        } else {
            return Err(at.error(format_args!("expected one of `route`, `direct_response`, `redirect`")));
        };
        f.finish()?;
        Ok(action)
    }
}

impl FromDoc for RouteAction {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        object(value, doc, at, |f| {
            Ok(RouteAction {
                backends: f.required("backends")?,
                rewrite_prefix: f.optional("rewrite_prefix")?,
                rewrite_regex: f.optional("rewrite_regex")?,
                set_headers: f.or("set_headers", Vec::new())?,
                remove_headers: f.or("remove_headers", Vec::new())?,
                canary: f.optional::<Canary>("canary")?.map(Box::new),
                affinity: f.optional::<Affinity>("affinity")?.map(Box::new),
            })
        })
    }
}

impl FromDoc for Affinity {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        let mut f = Fields::new(value, doc, at)?;
        let affinity = if f.has("cookie") {
            Affinity::Cookie(f.required("cookie")?)
        } else if f.has("hash") {
            Affinity::Hash(f.required("hash")?)
        } else {
            return Err(at.error(format_args!("expected one of `cookie`, `hash`")));
        };
        f.finish()?;
        Ok(affinity)
    }
}

impl FromDoc for AffinityCookie {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        object(value, doc, at, |f| {
            Ok(AffinityCookie {
                name: f.required("name")?,
                attributes: f.or("attributes", String::new())?,
            })
        })
    }
}

impl FromDoc for HashPart {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        use HashPart::*;
        if let Node::Str(_) = value {
            let names = [
                ("path", 0),
                ("uri", 1),
                ("args", 2),
                ("host", 3),
                ("method", 4),
                ("client_address", 5),
                ("stop", 6),
            ];
            let parts = [Path, Uri, Args, Host, Method, ClientAddress, Stop];
            return Ok(parts[one_of(value, doc, at, &names)?].clone());
        }
        let mut f = Fields::new(value, doc, at)?;
        let part = if f.has("text") {
            Text(f.required("text")?)
        } else if f.has("header") {
            Header(f.required("header")?)
        } else if f.has("cookie") {
            Cookie(f.required("cookie")?)
        } else if f.has("query") {
            Query(f.required("query")?)
        } else {
            return Err(at.error(format_args!("expected one of `text`, `header`, `cookie`, `query`")));
        };
        f.finish()?;
        Ok(part)
    }
}

impl FromDoc for Canary {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        object(value, doc, at, |f| {
            Ok(Canary {
                cluster: f.required("cluster")?,
                header: f.optional("header")?,
                cookie: f.optional("cookie")?,
                weight: f.or("weight", 0)?,
                weight_total: f.or("weight_total", 100)?,
            })
        })
    }
}

impl FromDoc for CanaryHeader {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        object(value, doc, at, |f| {
            Ok(CanaryHeader {
                name: f.required("name")?,
                value: f.optional("value")?,
                pattern: f.optional("pattern")?,
                main: f.or("main", false)?,
            })
        })
    }
}

impl FromDoc for Backend {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        object(value, doc, at, |f| {
            Ok(Backend {
                cluster: f.required("cluster")?,
                weight: f.or("weight", 1)?,
            })
        })
    }
}

impl FromDoc for HeaderValue {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        object(value, doc, at, |f| {
            Ok(HeaderValue {
                name: f.required("name")?,
                value: f.required("value")?,
            })
        })
    }
}

impl FromDoc for DirectResponse {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        object(value, doc, at, |f| {
            Ok(DirectResponse {
                status: f.required("status")?,
                body: f.optional("body")?,
                content_type: f.optional("content_type")?,
                headers: f.or("headers", Vec::new())?,
            })
        })
    }
}

impl FromDoc for RegexRewrite {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        object(value, doc, at, |f| {
            Ok(RegexRewrite {
                pattern: f.required("pattern")?,
                path: f.required("path")?,
                headers: f.or("headers", Vec::new())?,
            })
        })
    }
}

impl FromDoc for Redirect {
    fn from_doc<'d>(value: Node<'d>, doc: &Doc<'d>, at: &At<'_>) -> Result<Self, TableError> {
        object(value, doc, at, |f| {
            Ok(Redirect {
                url: f.required("url")?,
                status: f.required("status")?,
            })
        })
    }
}
