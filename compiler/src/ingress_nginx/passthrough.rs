//! ROUTING.md §8.4: `ssl-passthrough: "true"` on any Ingress of a server, with
//! `--ingress-nginx-enable-ssl-passthrough` (ingress-nginx's `--enable-ssl-passthrough`): TLS whose
//! SNI equals the host goes undecrypted to the Service port of the server's `/` path
//! (`pkg/tcpproxy/tcp.go` `Get`). A server without a `/` path passes nothing through, warned; port 80
//! still routes. Without the flag the annotation is `AnnotationNotHonored`.

use crate::ingress::{backend_port, NoCluster};
use crate::ingress_nginx::server::{Member, Server, Target};
use crate::l4::{L4Backend, L4Route};
use crate::processor::Inputs;
use crate::status::{About, ConditionKind, Reason, Status};

/// The annotation's name without its prefix.
const ANNOTATION: &str = "ssl-passthrough";

/// The passthrough route `server` asks for, if any (recording why it asks in vain).
pub fn route(server: &Server<'_>, members: &[Member<'_>], inputs: &mut Inputs<'_>) -> Option<L4Route> {
    let host = server.host.as_deref()?;
    let asking: Vec<&Member<'_>> = (server.members.iter().map(|&m| &members[m]))
        .filter(|m| m.annotations.ssl_passthrough == Some(true))
        .collect();
    let first = asking.first()?;
    let about = About::Field(format!(
        "{}/{ANNOTATION}",
        inputs.options.ingress_nginx.annotations_prefix
    ));
    let not_honored = |inputs: &mut Inputs<'_>, member: &Member<'_>, message: String| {
        let why = (ConditionKind::Warning, Reason::AnnotationNotHonored);
        inputs
            .book
            .add_about(&member.key, Status::Accepted, why, about.clone(), message);
    };
    if !inputs.options.ingress_nginx.enable_ssl_passthrough {
        for member in &asking {
            let message = format!("{ANNOTATION}: TLS for {host} is terminated, not passed through: start with --ingress-nginx-enable-ssl-passthrough (ingress-nginx's --enable-ssl-passthrough)");
            not_honored(inputs, member, message);
        }
        return None;
    }
    let root = server.locations.iter().find(|l| l.path == "/");
    let backend = match root.map(|l| (l.target, &members[l.member])) {
        Some((Target::Backend(backend), owner)) => (backend, owner),
        _ => {
            let message = format!("{ANNOTATION}: server {host} has no / path, so no TLS is passed through (ingress-nginx passes it to the / path's Service)");
            not_honored(inputs, first, message);
            return None;
        }
    };
    let (backend, owner) = backend;
    // The port resolved as every backend's (ROUTING.md §5).
    let (service, port) = match backend_port(backend, &owner.key, inputs.services) {
        Ok((service, number)) => (service, u16::try_from(number).unwrap_or_default()),
        Err(NoCluster::PortNotFound(why) | NoCluster::Unusable(_, why)) => {
            not_honored(
                inputs,
                first,
                format!("{ANNOTATION}: {why}; no TLS is passed through for {host}"),
            );
            return None;
        }
    };
    let backend = L4Backend {
        namespace: owner.key.namespace.clone(),
        service: service.to_owned(),
        port,
    };
    Some(L4Route::new(
        Some(host.to_owned()),
        backend,
        inputs.options,
        owner.key.display(),
    ))
}
