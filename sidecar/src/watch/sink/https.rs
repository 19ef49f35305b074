//! The HTTPS listener's certificates as Envoy's SDS files (ROUTING.md §8), beside the LDS file
//! ([`crate::watch::sink::l4::LdsFile`] writes them before the listeners that name them).
//!
//! - `--sds-dir DIR`: one file per certificate served (`namespace_name.json`, an SDS
//!   `DiscoveryResponse`, [`switchyard_compiler::https::listener::sds_document`]), mode 0600 in a
//!   folder of mode 0700: they hold private keys. A file is written only when its certificate
//!   changed, replaced atomically (a renewed Secret reaches new handshakes without the listener
//!   changing); a file no host uses any more is removed.
//! - The default certificate (§8.1.2): `--default-certificate`'s Secret, or one made at start,
//!   self-signed, as ingress-nginx makes it: CN `Kubernetes Ingress Controller Fake Certificate`,
//!   O `Acme Co`, SAN `ingress.local`.
//!
//! Only the Secrets the plan serves are handed on; their keys are never logged (the Secret type
//! prints no key, [`switchyard_compiler::objects::secret`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use switchyard_compiler::https::listener::{sds_document, sds_file_name, HttpsOptions, DEFAULT_CERTIFICATE};
use switchyard_compiler::https::{Https, LastServed, SecretRef};
use switchyard_compiler::objects::secret::{Secret, CERTIFICATE, PRIVATE_KEY};
use switchyard_compiler::order::fnv1a;
use switchyard_compiler::route_config::GatewayRoutes;

use crate::watch::sink::ecds::write_file;

/// What the HTTPS listener is given: the plan and the Secrets it serves.
#[derive(Debug, Clone, Default)]
pub struct HttpsOutput {
    /// Each host's certificate, and the findings.
    pub plan: Https,
    /// The Secrets the plan serves (only those), by name: their current objects, or the ones
    /// served before for the Secrets the plan keeps ([`Https::kept`]).
    pub certificates: LastServed,
}

impl PartialEq for HttpsOutput {
    /// The plan names every certificate by its fingerprint: the same plan serves the same bytes.
    fn eq(&self, other: &Self) -> bool {
        self.plan == other.plan
    }
}

impl HttpsOutput {
    /// The plan and, from `secrets` (or `previous`, for the ones it keeps), the ones it serves.
    pub fn new(plan: Https, secrets: &[Arc<Secret>], previous: &LastServed) -> HttpsOutput {
        let served = plan.secrets();
        let certificates = (secrets.iter())
            .filter_map(|secret| {
                let name = SecretRef {
                    namespace: secret
                        .metadata
                        .namespace
                        .clone()
                        .unwrap_or_else(|| "default".to_owned()),
                    name: secret.metadata.name.clone().unwrap_or_default(),
                };
                served.contains(&name).then(|| (name, secret.clone()))
            })
            .map(
                |(name, secret)| match (plan.kept.contains(&name), previous.get(&name)) {
                    (true, Some(kept)) => (name, kept.clone()),
                    _ => (name, secret),
                },
            )
            .collect();
        HttpsOutput { plan, certificates }
    }
}

/// `--sds-dir`: the certificate files.
#[derive(Debug)]
pub struct SdsFolder {
    /// The folder.
    pub path: PathBuf,
    /// What the listener's chains need to know (the ECDS source, the SDS folder).
    pub options: HttpsOptions,
    /// The certificate made at start: (chain PEM, key PEM).
    made: (String, String),
    /// What each file holds now (a hash of its content), by file name.
    written: Mutex<BTreeMap<String, u64>>,
}

impl SdsFolder {
    /// A folder `path` whose chains take the filter `filter` (its name and its type URL) from
    /// `ecds_path`, with the certificate made now as the default.
    pub fn new(
        path: PathBuf,
        ecds_path: &Path,
        (filter_name, filter_type_url): (&str, &str),
        (cluster_header, reject_unknown_sni): (&str, bool),
    ) -> Result<SdsFolder, String> {
        let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        Ok(SdsFolder {
            options: HttpsOptions {
                filter_name: filter_name.to_owned(),
                ecds_path: absolute(ecds_path).display().to_string(),
                filter_type_url: filter_type_url.to_owned(),
                routes: GatewayRoutes {
                    cluster_header: cluster_header.to_owned(),
                    ..GatewayRoutes::default()
                },
                sds_folder: absolute(&path).display().to_string(),
                reject_unknown_sni,
            },
            path,
            made: fake_certificate()?,
            written: Mutex::default(),
        })
    }

    /// Writes the certificates `https` serves (and the default), each only when it changed, and
    /// removes the files no longer used.
    pub fn write(&self, https: &HttpsOutput) -> Result<(), String> {
        create_private_folder(&self.path)?;
        let mut wanted: BTreeMap<String, String> = BTreeMap::new();
        wanted.insert(
            DEFAULT_CERTIFICATE.to_owned(),
            sds_document(DEFAULT_CERTIFICATE, self.made.0.as_bytes(), self.made.1.as_bytes()),
        );
        for (name, secret) in &https.certificates {
            let sds_name = name.to_string();
            let (Some(chain), Some(key)) = (secret.entry(CERTIFICATE), secret.entry(PRIVATE_KEY)) else {
                continue;
            };
            wanted.insert(sds_name.clone(), sds_document(&sds_name, chain, key));
        }
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        for (sds_name, document) in &wanted {
            let file = sds_file_name(sds_name);
            let hash = fnv1a(document.as_bytes());
            if written.get(&file) == Some(&hash) {
                continue;
            }
            write_file(&self.path.join(&file), document.as_bytes(), 0o600)?;
            written.insert(file, hash);
        }
        let kept: Vec<String> = wanted.keys().map(|n| sds_file_name(n)).collect();
        let gone: Vec<String> = written.keys().filter(|f| !kept.contains(f)).cloned().collect();
        for file in gone {
            match std::fs::remove_file(self.path.join(&file)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("{}: cannot remove: {e}", self.path.join(&file).display())),
            }
            written.remove(&file);
        }
        Ok(())
    }
}

/// Creates `path` (mode 0700) if it is not there.
fn create_private_folder(path: &Path) -> Result<(), String> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(path)
        .map_err(|e| format!("--sds-dir {}: cannot create: {e}", path.display()))
}

/// ingress-nginx's fake certificate (`internal/net/ssl/ssl.go` `GetFakeSSLCert`), made now:
/// (chain PEM, key PEM).
pub fn fake_certificate() -> Result<(String, String), String> {
    let failed = |e: rcgen::Error| format!("cannot make the default certificate: {e}");
    let key = rcgen::KeyPair::generate().map_err(failed)?;
    let mut params = rcgen::CertificateParams::new(vec!["ingress.local".to_owned()]).map_err(failed)?;
    params.distinguished_name.push(
        rcgen::DnType::CommonName,
        "Kubernetes Ingress Controller Fake Certificate",
    );
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "Acme Co");
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2099, 1, 1);
    let cert = params.self_signed(&key).map_err(failed)?;
    Ok((cert.pem(), key.serialize_pem()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_compiler::https::certificate::Certificate;

    #[test]
    fn the_made_default_certificate_is_ingress_nginx_s_fake_one() {
        let (chain, key) = fake_certificate().unwrap();
        let cert = Certificate::read(chain.as_bytes(), key.as_bytes()).unwrap();
        assert_eq!(cert.names, ["ingress.local"]);
        let der = rustls_pki_types::pem::PemObject::from_pem_slice(chain.as_bytes())
            .map(|d: rustls_pki_types::CertificateDer| d.to_vec())
            .unwrap();
        let (_, parsed) = x509_parser::parse_x509_certificate(&der).unwrap();
        let subject = parsed.subject().to_string();
        assert!(
            subject.contains("CN=Kubernetes Ingress Controller Fake Certificate") && subject.contains("O=Acme Co"),
            "{subject}"
        );
    }

    #[test]
    fn certificate_files_are_private_written_when_changed_and_removed_when_unused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let sds = dir.path().join("sds");
        let folder = SdsFolder::new(
            sds.clone(),
            Path::new("ecds.json"),
            ("switchyard", "t"),
            ("x-route-cluster", false),
        )
        .unwrap();
        folder.write(&HttpsOutput::default()).unwrap();
        let default = sds.join(sds_file_name(DEFAULT_CERTIFICATE));
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&default), 0o600);
        assert_eq!(mode(&sds), 0o700);
        let mut secret = Secret::default();
        secret.metadata.namespace = Some("prod".into());
        secret.metadata.name = Some("shop-tls".into());
        secret
            .data
            .insert(CERTIFICATE.into(), k8s_openapi::ByteString(b"CHAIN".to_vec()));
        secret
            .data
            .insert(PRIVATE_KEY.into(), k8s_openapi::ByteString(b"KEY".to_vec()));
        let mut output = HttpsOutput::default();
        output.certificates.insert(
            SecretRef {
                namespace: "prod".into(),
                name: "shop-tls".into(),
            },
            Arc::new(secret),
        );
        folder.write(&output).unwrap();
        let shop = sds.join("prod_shop-tls.json");
        assert!(std::fs::read_to_string(&shop)
            .unwrap()
            .contains("\"name\": \"prod/shop-tls\""));
        assert_eq!(mode(&shop), 0o600);
        folder.write(&HttpsOutput::default()).unwrap();
        assert!(!shop.exists(), "a certificate no host uses is removed");
        assert!(default.exists());
    }
}
