//! The compiler's flags, shared by `switchyard compile` ([`crate::cli`]) and `switchyard watch`
//! ([`crate::watch::args`]): `--ingress-class`, `--controller-name`, `--host-collision`, ... and
//! the [`Options`] they make. A leaf of the command line: it imports neither command.

use clap::ValueEnum;
use switchyard_table::{NoRoute, TableSpec};

use switchyard_compiler::ingress_nginx::configmap::ControllerConfig;
use switchyard_compiler::ingress_nginx::flags::{
    Flags as IngressNginxFlags, DEFAULT_ANNOTATIONS_PREFIX as INGRESS_NGINX_PREFIX,
    DEFAULT_CONTROLLER as INGRESS_NGINX_CONTROLLER,
};
use switchyard_compiler::model::{
    HostCollision, Options, DEFAULT_CLUSTER_TEMPLATE, DEFAULT_CONTROLLER, DEFAULT_TLS_PASSTHROUGH_PORT,
};

/// `--host-collision`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum CollisionArg {
    /// Ingresses naming the same host share it.
    Merge,
    /// The oldest resource wins a host alone.
    Winner,
}

/// `--no-route`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum NoRouteArg {
    /// Answer 404 locally.
    #[value(name = "404")]
    NotFound,
    /// Let the request through untouched.
    Pass,
}

/// `--encoding` (compile) and `--table-encoding` (watch): how the table is written as the filter's
/// plugin configuration. The filter reads every one; `table/README.md` describes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum TableEncoding {
    /// `{"table_shards": …}`: the rules in shards, each the binary document zlib-compressed on its
    /// own, so that a filter that holds the table before decodes only the shards that changed (and
    /// keeps the others compressed until a request needs them). What `watch` writes to every sink
    /// but `-o` (`--table-encoding`'s default).
    Sharded,
    /// `{"table_z": "<base64>"}`: the document in binary, zlib-compressed in one stream; about 35
    /// times smaller than the JSON, a little smaller than `sharded`, and decoded whole at each push.
    /// The type's default (sinks made without an encoding, as tests make them), not the command
    /// line's.
    #[default]
    Compact,
    /// The table's JSON, for people, `switchyard explain` and `jq`.
    Json,
}

impl TableEncoding {
    /// `table` as the filter's plugin configuration, on one line (one table: see [`TableEncoder`]
    /// for one after another).
    pub fn plugin_config(self, table: &TableSpec) -> Result<String, String> {
        self.encoder().plugin_config(table)
    }

    /// An encoder of tables one after another in this encoding.
    pub fn encoder(self) -> TableEncoder {
        TableEncoder {
            encoding: self,
            compact: None,
            sharded: None,
        }
    }

    /// `table` as a file for people: indented JSON, or the compact or sharded form; ends with a
    /// newline.
    pub fn file_text(self, table: &TableSpec) -> Result<String, String> {
        let text = match self {
            TableEncoding::Json => serde_json::to_string_pretty(table).map_err(|e| e.to_string())?,
            TableEncoding::Compact | TableEncoding::Sharded => self.plugin_config(table)?,
        };
        Ok(text + "\n")
    }
}

/// Writes the plugin configuration of one table after another (`switchyard watch` keeps one for
/// its sinks): in the compact form, the chunks of rules that did not change since the last table
/// are not compressed again ([`switchyard_table::compact::Encoder`]); in the sharded form, the
/// shards ([`switchyard_table::shards::ShardEncoder`]); either way the text is the same as
/// [`TableEncoding::plugin_config`]'s. The JSON is written whole each time (BENCHMARKS.md,
/// "Compact table", says what each costs on 100,000 rules).
pub struct TableEncoder {
    encoding: TableEncoding,
    /// Made at the first compact table.
    compact: Option<switchyard_table::compact::Encoder>,
    /// Made at the first sharded table.
    sharded: Option<switchyard_table::shards::ShardEncoder>,
}

impl TableEncoder {
    /// The encoding it writes.
    pub fn encoding(&self) -> TableEncoding {
        self.encoding
    }

    /// `table` as the filter's plugin configuration, on one line.
    pub fn plugin_config(&mut self, table: &TableSpec) -> Result<String, String> {
        match self.encoding {
            TableEncoding::Json => serde_json::to_string(table).map_err(|e| format!("cannot serialize the table: {e}")),
            TableEncoding::Compact => self
                .compact
                .get_or_insert_with(switchyard_table::compact::Encoder::new)
                .encode(table)
                .map_err(|e| e.to_string()),
            TableEncoding::Sharded => self
                .sharded
                .get_or_insert_with(switchyard_table::shards::ShardEncoder::new)
                .encode(table)
                .map_err(|e| e.to_string()),
        }
    }
}

/// A table document in any form the filter reads (its JSON, the compact form, the sharded form),
/// as a [`TableSpec`]; `name` names the source in errors.
pub fn read_table(bytes: &[u8], name: &str) -> Result<TableSpec, String> {
    let doc = switchyard_table::json::parse(bytes).map_err(|e| format!("{name}: not JSON: {e}"))?;
    if let Some(parts) = switchyard_table::shards::read(&doc, doc.root()) {
        let parts = parts.map_err(|e| format!("{name}: {e}"))?;
        return switchyard_table::shards::assemble(parts, &switchyard_table::compact::Miniz)
            .map_err(|e| format!("{name}: {e}"));
    }
    let document = serde_json::from_slice(bytes).map_err(|e| format!("{name}: not JSON: {e}"))?;
    let document = switchyard_table::compact::unwrap(document).map_err(|e| format!("{name}: {e}"))?;
    switchyard_table::TableSpec::from_value(document).map_err(|e| format!("{name}: {e}"))
}

/// The compiler's options, shared by `compile` and `watch`.
#[derive(Debug, clap::Args)]
pub struct TableArgs {
    /// The class this controller serves; empty: resources without a class annotation (ROUTING.md §1).
    #[arg(long, default_value = "", value_name = "NAME")]
    ingress_class: String,
    /// With --ingress-class set, also accept resources that name no class at all.
    #[arg(long)]
    empty_ingress_class: bool,
    /// The spec.controller of our IngressClasses (with --ingress-class: `<name>/<class>`).
    #[arg(long, default_value = DEFAULT_CONTROLLER, value_name = "NAME")]
    controller_name: String,
    /// How Ingresses that name the same host share it.
    #[arg(long, value_enum, default_value = "merge")]
    host_collision: CollisionArg,
    /// Namespaces where root HTTPProxies are allowed (comma-separated); all when absent.
    #[arg(long, value_delimiter = ',', value_name = "NS,...")]
    root_namespaces: Vec<String>,
    /// Cluster names, over {namespace}, {service} and {port}.
    #[arg(long, default_value = DEFAULT_CLUSTER_TEMPLATE, value_name = "TEMPLATE")]
    cluster_template: String,
    /// Name a variant cluster (`<template name>~tls`, `~h2c+connect=10000ms`, …) for a backend
    /// spoken to with other settings than the defaults (ingress-nginx's backend-protocol and
    /// proxy-connect-timeout, HTTPProxy's services[].protocol, a VirtualServer upstream's tls and
    /// connect-timeout). Only a gateway whose clusters come from `switchyard watch --clusters-dir`
    /// has them, and that sets this itself; without it those settings are reported as not
    /// honoured and the template's cluster serves the backend.
    #[arg(long)]
    variant_clusters: bool,
    /// Give a rule whose timeouts or retries are not the gateway route's (ingress-nginx's
    /// proxy-read-timeout, proxy-send-timeout, proxy-next-upstream*, and its 60 s defaults) a
    /// route of its own, named in its policy. Only a gateway whose routes come from `switchyard
    /// watch --clusters-dir` (DIR/rds.json) has them, and that sets this itself; without it those
    /// settings are reported as not honoured and the gateway's route applies.
    #[arg(long)]
    gateway_routes: bool,
    /// How long the filter waits for an auth service (ingress-nginx's auth-url) before answering
    /// the request 500, in milliseconds (nginx's 60 s by default). The service's cluster exists
    /// only on a gateway whose clusters come from `switchyard watch --clusters-dir` or
    /// `--istio-clusters`; elsewhere auth-url is not enforced and its rules answer 403.
    #[arg(long, default_value_t = switchyard_compiler::model::DEFAULT_EXTERNAL_AUTH_TIMEOUT_MS, value_name = "MS")]
    external_auth_timeout_ms: u64,
    /// The request header the filter sets to the cluster name.
    #[arg(long, default_value = switchyard_table::format::DEFAULT_CLUSTER_HEADER, value_name = "NAME")]
    cluster_header: String,
    /// What the filter does when no rule matches.
    #[arg(long, value_enum, default_value = "404")]
    no_route: NoRouteArg,
    /// Make the filter add `x-switchyard-rule: <rule>` to responses.
    #[arg(long)]
    debug_rule_header: bool,
    /// How many resources have series of their own in the gateway's per-resource request metrics
    /// (switchyard_resource_requests_total, …; docs/operations.md): the first N in name order
    /// (Kind/namespace/name); the rest are counted together as `folded`, and
    /// switchyard_resources_folded says how many.
    #[arg(long, default_value_t = switchyard_compiler::model::DEFAULT_METRICS_MAX_RESOURCES, value_name = "N")]
    metrics_max_resources: usize,
    /// Serve the Ingresses of ingress-nginx's class NAME as ingress-nginx v1.15 routed them:
    /// its annotations, regex mode, redirects (ROUTING.md §7, docs/routing.md). Off when absent.
    #[arg(long, value_name = "NAME", help_heading = "ingress-nginx (ROUTING.md §7)")]
    ingress_nginx_class: Option<String>,
    /// The spec.controller of ingress-nginx's IngressClasses.
    #[arg(long, default_value = INGRESS_NGINX_CONTROLLER, value_name = "NAME", help_heading = "ingress-nginx (ROUTING.md §7)")]
    ingress_nginx_controller: String,
    /// Also take an IngressClass named like --ingress-nginx-class as ingress-nginx's, whatever its controller.
    #[arg(
        long,
        requires = "ingress_nginx_class",
        help_heading = "ingress-nginx (ROUTING.md §7)"
    )]
    ingress_nginx_class_by_name: bool,
    /// Serve an Ingress with no class at all (no ingressClassName, no class annotation) as ingress-nginx's.
    #[arg(
        long,
        requires = "ingress_nginx_class",
        conflicts_with = "empty_ingress_class",
        help_heading = "ingress-nginx (ROUTING.md §7)"
    )]
    ingress_nginx_without_class: bool,
    /// The prefix of ingress-nginx's annotations (its --annotations-prefix).
    #[arg(long, default_value = INGRESS_NGINX_PREFIX, value_name = "PREFIX", help_heading = "ingress-nginx (ROUTING.md §7)")]
    ingress_nginx_annotations_prefix: String,
    /// ingress-nginx's ConfigMap (its --configmap): ssl-redirect, force-ssl-redirect, http-redirect-code,
    /// preserve-trailing-slash, no-tls-redirect-locations, ssl-protocols and hsts* are read from it; watched in Kubernetes
    /// mode, read from the manifests otherwise.
    #[arg(long, value_name = "NAMESPACE/NAME", value_parser = namespaced_name, requires = "ingress_nginx_class", help_heading = "ingress-nginx (ROUTING.md §7)")]
    ingress_nginx_configmap: Option<(String, String)>,
    /// Honour ingress-nginx's ssl-passthrough annotation (its --enable-ssl-passthrough, ROUTING.md
    /// §8.4): TLS whose SNI is the host goes undecrypted to the Service of the server's `/` path, on
    /// the HTTPS listener (--lds-file). Without it the annotation is reported as not honoured.
    #[arg(
        long,
        requires = "ingress_nginx_class",
        help_heading = "ingress-nginx (ROUTING.md §7)"
    )]
    ingress_nginx_enable_ssl_passthrough: bool,
    /// HTTPS (ROUTING.md §8.1.2): the Secret served to a handshake without SNI or naming no host
    /// with its own certificate, and to the hosts that have none. Unset, or unusable (warned): a
    /// self-signed certificate made at start (CN "Kubernetes Ingress Controller Fake Certificate",
    /// as ingress-nginx). An HTTPProxy's enableFallbackCertificate needs it.
    #[arg(long, value_name = "NAMESPACE/NAME", value_parser = namespaced_name, help_heading = "HTTPS (ROUTING.md §8)")]
    default_certificate: Option<(String, String)>,
}

/// ROUTING.md §7.8: reads the ConfigMap `--ingress-nginx-configmap` names from `config_maps` (the
/// manifests' ConfigMaps by namespace and name) into `options`, with the warning that lists its
/// keys not honoured (§7.8); an error naming it when it is not there. Nothing to do without the flag.
pub fn read_ingress_nginx_config(
    options: &mut Options,
    config_maps: &std::collections::BTreeMap<(String, String), std::collections::BTreeMap<String, String>>,
) -> Result<Option<String>, String> {
    let Some((namespace, name)) = options.ingress_nginx.configmap.clone() else {
        return Ok(None);
    };
    let data = config_maps.get(&(namespace.clone(), name.clone())).ok_or_else(|| {
        format!("--ingress-nginx-configmap {namespace}/{name}: no ConfigMap {namespace}/{name} in the manifests")
    })?;
    options.ingress_nginx_config = ControllerConfig::from_data(data);
    Ok(options.ingress_nginx_config.not_honored_warning(&namespace, &name))
}

/// `NAMESPACE/NAME`.
fn namespaced_name(value: &str) -> Result<(String, String), String> {
    match value.split_once('/') {
        Some((namespace, name)) if !namespace.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok((namespace.to_owned(), name.to_owned()))
        }
        _ => Err(format!("{value:?} is not NAMESPACE/NAME")),
    }
}

impl TableArgs {
    /// The compiler options, with the TLS passthrough port of `l4` (no GlobalConfiguration listener
    /// may take it); an error for a cluster template without `{service}`.
    pub fn options(&self, l4: &L4Args) -> Result<Options, String> {
        if !self.cluster_template.contains("{service}") {
            return Err(format!(
                "--cluster-template {:?} must contain {{service}}",
                self.cluster_template
            ));
        }
        Ok(Options {
            ingress_class: self.ingress_class.clone(),
            empty_ingress_class: self.empty_ingress_class,
            controller_name: self.controller_name.clone(),
            host_collision: match self.host_collision {
                CollisionArg::Merge => HostCollision::Merge,
                CollisionArg::Winner => HostCollision::Winner,
            },
            root_namespaces: self
                .root_namespaces
                .iter()
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect(),
            cluster_template: self.cluster_template.clone(),
            cluster_header: self.cluster_header.clone(),
            no_route: match self.no_route {
                NoRouteArg::NotFound => NoRoute::NotFound,
                NoRouteArg::Pass => NoRoute::Pass,
            },
            debug_rule_header: self.debug_rule_header,
            metrics_max_resources: self.metrics_max_resources,
            tls_passthrough_port: l4.tls_passthrough_port,
            ingress_nginx: self.ingress_nginx_flags()?,
            ingress_nginx_config: ControllerConfig::default(),
            default_certificate: (self.default_certificate.as_ref()).map(|(ns, name)| format!("{ns}/{name}")),
            upstream_variants: self.variant_clusters,
            gateway_routes: self.gateway_routes,
            external_auth_timeout_ms: self.external_auth_timeout_ms,
        })
    }

    /// The `--ingress-nginx-*` flags; an error for a combination §7.1 forbids (clap refuses it
    /// first, as it refuses the refining flags without `--ingress-nginx-class`).
    fn ingress_nginx_flags(&self) -> Result<IngressNginxFlags, String> {
        let flags = IngressNginxFlags {
            class: self.ingress_nginx_class.clone().filter(|c| !c.is_empty()),
            controller: self.ingress_nginx_controller.clone(),
            class_by_name: self.ingress_nginx_class_by_name,
            without_class: self.ingress_nginx_without_class,
            annotations_prefix: self.ingress_nginx_annotations_prefix.trim_end_matches('/').to_owned(),
            configmap: self.ingress_nginx_configmap.clone(),
            enable_ssl_passthrough: self.ingress_nginx_enable_ssl_passthrough,
        };
        flags.check(self.empty_ingress_class)?;
        Ok(flags)
    }
}

/// Where Envoy's L4 listeners (TransportServers, ROUTING.md §6) listen, shared by `compile --l4`
/// and `watch --lds-file`.
#[derive(Debug, clap::Args)]
pub struct L4Args {
    /// The address the L4 listeners bind.
    #[arg(long, default_value = "0.0.0.0", value_name = "ADDRESS")]
    l4_address: String,
    /// The port of the TLS passthrough listener (NGINX's tls-passthrough listener is its HTTPS port).
    #[arg(long, default_value_t = DEFAULT_TLS_PASSTHROUGH_PORT, value_name = "PORT")]
    tls_passthrough_port: u16,
}

impl L4Args {
    /// The options of the LDS document.
    pub fn options(&self) -> switchyard_compiler::lds::LdsOptions {
        switchyard_compiler::lds::LdsOptions {
            address: self.l4_address.clone(),
            passthrough_port: self.tls_passthrough_port,
            https: None,
        }
    }
}
