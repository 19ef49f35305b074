//! Why a table is refused: every error names the rule and the field at fault.

use crate::field::FieldValueFault;
use crate::format::VERSION;

/// A table that cannot be used. The filter logs it and keeps its previous table.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TableError {
    /// The bytes are not a table document (bad JSON, a missing or unknown field).
    #[error("the table is not valid JSON for format version {VERSION}: {0}")]
    Json(#[from] serde_json::Error),
    /// The document has the wrong shape: a missing, unknown or mistyped field (`at` is its path).
    #[error("field `{at}`: {problem}")]
    Shape {
        /// The field's path in the document (`rules[3].path.type`).
        at: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The compact form could not be decoded.
    #[error("the compact table does not decode: {0}")]
    Compact(#[from] crate::compact::CompactError),
    /// One shard of the sharded compact form (`crate::shards`) is refused: the whole table is.
    #[error("shard {index} of `{key}`: {error}", key = crate::format::SHARDS_KEY)]
    Shard {
        /// The shard's position in the list of shards.
        index: usize,
        /// Why it is refused.
        error: Box<TableError>,
    },
    /// The document says it is another version of the format.
    #[error("field `version`: unsupported table version {found}; this build reads version {VERSION}")]
    UnsupportedVersion {
        /// The version the document declares.
        found: u32,
    },
    /// The table-wide `cluster_header` is not a usable header name.
    #[error("field `cluster_header`: {0:?} is not a valid lowercase header name")]
    BadClusterHeader(String),
    /// One rule is invalid.
    #[error("rule {rule:?}: field `{field}`: {problem}")]
    Rule {
        /// The rule's name (or `#<index>` when the name itself is missing).
        rule: String,
        /// The field at fault, as a JSON path inside the rule (`path.value`, `conditions[1].value`).
        field: String,
        /// What is wrong with it.
        problem: Problem,
    },
}

/// What is wrong with one field of a rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// The rule has no name.
    #[error("a rule needs a non-empty name")]
    EmptyName,
    /// Another rule has the same name.
    #[error("the name is used by an earlier rule (position {first})")]
    DuplicateName {
        /// Position of the first rule with this name.
        first: usize,
    },
    /// The host is not a hostname or a single-label wildcard.
    #[error("{host:?} is not a valid host: {why}")]
    BadHost {
        /// The host as written.
        host: String,
        /// Which rule of host syntax it breaks.
        why: &'static str,
    },
    /// A path that does not start with `/`.
    #[error("{path:?} must start with '/'")]
    PathNotAbsolute {
        /// The path as written.
        path: String,
    },
    /// A regex that `regex-lite` cannot compile.
    #[error("regex {pattern:?} does not compile: {error}")]
    BadRegex {
        /// The pattern as written.
        pattern: String,
        /// The compiler's message.
        error: String,
    },
    /// A condition without the name it needs, or with a name it must not have.
    #[error("{0}")]
    ConditionName(&'static str),
    /// A condition without the operand its match kind needs.
    #[error("match {op} needs a value")]
    MissingValue {
        /// The match kind.
        op: &'static str,
    },
    /// A route action with no backend.
    #[error("a route needs at least one backend")]
    NoBackends,
    /// Backend weights that add up to zero (or overflow).
    #[error("backend weights sum to {sum}; they must sum to between 1 and 2^32-1")]
    BadWeights {
        /// The sum of the weights.
        sum: u64,
    },
    /// A backend without a cluster name.
    #[error("the cluster name is empty")]
    EmptyCluster,
    /// A header name that is empty or not a token.
    #[error("{0:?} is not a valid header name")]
    BadHeaderName(String),
    /// A value the filter writes into a header (a cluster name, a header value, a rewritten path,
    /// a rule name) that is not an HTTP field value.
    #[error("{value:?} is not a valid HTTP field value: {fault}")]
    BadFieldValue {
        /// The value as written.
        value: String,
        /// Which rule of RFC 9110 it breaks.
        fault: FieldValueFault,
    },
    /// A direct-response status outside 200..=599.
    #[error("status {0} is outside 200..=599")]
    BadStatus(u16),
    /// `ignore_case` on a match kind it does not apply to.
    #[error("ignore_case applies to exact, prefix and contains, not to {op} (a regex may start with (?i))")]
    IgnoreCaseNotAllowed {
        /// The match kind.
        op: &'static str,
    },
    /// A redirect status that is not 301, 302, 303, 307 or 308.
    #[error("redirect status {0} is not one of 301, 302, 303, 307, 308")]
    BadRedirectStatus(u16),
    /// A redirect URL that is empty or names a variable the filter does not know.
    #[error("redirect url {url:?}: {why}")]
    BadRedirectUrl {
        /// The URL as written.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// A prefix rewrite on a rule whose path is a regex (there is no prefix to replace).
    #[error("rewrite_prefix needs an exact or prefix path, not a regex")]
    RewriteNeedsPrefix,
    /// A `canary` the filter cannot decide with.
    #[error("{0}")]
    Canary(String),
    /// An `affinity` the filter cannot key requests with.
    #[error("{0}")]
    Affinity(String),
    /// A rule with both `rewrite_prefix` and `rewrite_regex`.
    #[error("rewrite_prefix and rewrite_regex cannot both be set")]
    TwoRewrites,
    /// A `rewrite_regex` path that is not a path template.
    #[error("rewrite_regex path {path:?}: {why}")]
    BadRewritePath {
        /// The template as written.
        path: String,
        /// Why it is refused.
        why: &'static str,
    },
}

impl TableError {
    pub(crate) fn rule(rule: &str, position: usize, field: impl Into<String>, problem: Problem) -> Self {
        let rule = if rule.is_empty() {
            format!("#{position}")
        } else {
            rule.to_owned()
        };
        TableError::Rule {
            rule,
            field: field.into(),
            problem,
        }
    }
}
