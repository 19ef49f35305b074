//! The one builder of table rules for tests: `rule("name").host("example.net").segment_prefix("/bar")
//! .when("header", "key", "exact", "value").to("ns/svc:80")`, giving the rule's JSON (table/README.md).
//! Path kinds and condition fields are spelled as the table spells them.

use serde_json::{json, Value};

/// A table rule under construction; [`RuleBuilder::to`] or [`RuleBuilder::action`] finish it.
#[derive(Debug, Clone)]
pub struct RuleBuilder {
    rule: Value,
}

/// A rule named `name`, for any host, on the segment prefix `/`, without conditions.
pub fn rule(name: &str) -> RuleBuilder {
    RuleBuilder {
        rule: json!({ "name": name, "path": { "type": "segment_prefix", "value": "/" } }),
    }
}

impl RuleBuilder {
    /// The host (`example.net`, `*.example.net`); without it the rule matches any host.
    pub fn host(mut self, host: &str) -> Self {
        self.rule["host"] = json!(host);
        self
    }

    /// The path, as the table writes it: `kind` is `exact`, `segment_prefix`, `prefix` or `regex`.
    pub fn path(mut self, kind: &str, value: &str) -> Self {
        self.rule["path"] = json!({ "type": kind, "value": value });
        self
    }

    /// An `exact` path.
    pub fn exact(self, value: &str) -> Self {
        self.path("exact", value)
    }

    /// A `segment_prefix` path (Ingress `Prefix`).
    pub fn segment_prefix(self, value: &str) -> Self {
        self.path("segment_prefix", value)
    }

    /// A string `prefix` path (HTTPProxy `prefix`).
    pub fn prefix(self, value: &str) -> Self {
        self.path("prefix", value)
    }

    /// A `regex` path (anchored at both ends).
    pub fn regex(self, value: &str) -> Self {
        self.path("regex", value)
    }

    /// One more condition: `on` is `header`, `cookie`, `query` or `method`; `name` is left out when
    /// empty (a method), `value` when empty and `op` is `present`.
    pub fn when(self, on: &str, name: &str, op: &str, value: &str) -> Self {
        self.condition(on, name, op, value, false)
    }

    /// One more inverted condition (`"invert": true`).
    pub fn unless(self, on: &str, name: &str, op: &str, value: &str) -> Self {
        self.condition(on, name, op, value, true)
    }

    fn condition(mut self, on: &str, name: &str, op: &str, value: &str, invert: bool) -> Self {
        let mut condition = json!({ "on": on, "match": op });
        if !name.is_empty() {
            condition["name"] = json!(name);
        }
        if !value.is_empty() || op != "present" {
            condition["value"] = json!(value);
        }
        if invert {
            condition["invert"] = json!(true);
        }
        match self.rule["conditions"].as_array_mut() {
            Some(list) => list.push(condition),
            None => self.rule["conditions"] = json!([condition]),
        }
        self
    }

    /// The finished rule, routing to `cluster`.
    pub fn to(self, cluster: &str) -> Value {
        self.action(json!({ "route": { "backends": [ { "cluster": cluster } ] } }))
    }

    /// The finished rule with any action (weighted backends, rewrites, a direct response).
    pub fn action(mut self, action: Value) -> Value {
        self.rule["action"] = action;
        self.rule
    }
}
