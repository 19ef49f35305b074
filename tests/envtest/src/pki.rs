//! The API server's credentials, made fresh for each server: a self-signed serving certificate for
//! 127.0.0.1 and `localhost`, the service-account signing key (ECDSA P-256, which the API server
//! accepts for both `--service-account-key-file` and `--service-account-signing-key-file`), and the
//! static token file with the admin and the switchyard ServiceAccount user (with one more token per
//! replica of it: the same user and groups, each with a uid of its own, which the audit log shows).

use std::path::{Path, PathBuf};

/// The admin user's name (group `system:masters`).
pub const ADMIN: &str = "envtest-admin";
/// The user Switchyard runs as in a cluster (deploy/rbac.yaml's ServiceAccount).
pub const SWITCHYARD_USER: &str = "system:serviceaccount:istio-system:switchyard";
/// The user the gateway of deploy/envoy/ runs as (its ServiceAccount `switchyard/switchyard`).
pub const GATEWAY_USER: &str = "system:serviceaccount:switchyard:switchyard";

/// Files the API server reads, and what a client needs to trust it.
#[derive(Debug, Clone)]
pub struct Pki {
    /// `--tls-cert-file`.
    pub cert: PathBuf,
    /// `--tls-private-key-file`.
    pub key: PathBuf,
    /// The certificate in PEM (a client's certificate authority).
    pub cert_pem: String,
    /// `--service-account-signing-key-file` (PEM private key).
    pub service_account_key: PathBuf,
    /// `--service-account-key-file` (its public key).
    pub service_account_public_key: PathBuf,
    /// `--token-auth-file`.
    pub tokens: PathBuf,
    /// The admin's bearer token.
    pub admin_token: String,
    /// The switchyard ServiceAccount user's bearer token.
    pub switchyard_token: String,
    /// The same user's tokens for replicas 0.. ([`REPLICAS`]); uid `uid-switchyard-replica-N`.
    pub replica_tokens: Vec<String>,
    /// deploy/envoy/'s ServiceAccount user's bearer token.
    pub gateway_token: String,
}

/// How many replica tokens there are.
pub const REPLICAS: u8 = 2;

/// The uid the API server gives replica `n` (in the audit log's `user.uid`).
pub fn replica_uid(n: u8) -> String {
    format!("uid-switchyard-replica-{n}")
}

/// Writes the credentials into `dir`.
pub fn write(dir: &Path) -> Result<Pki, String> {
    let names = vec!["127.0.0.1".to_owned(), "localhost".to_owned()];
    let serving = rcgen::generate_simple_self_signed(names).map_err(|e| format!("certificate: {e}"))?;
    let account = rcgen::KeyPair::generate().map_err(|e| format!("service-account key: {e}"))?;
    let cert_pem = serving.cert.pem();
    let admin_token = token("admin");
    let switchyard_token = token("switchyard");
    let groups = "\"system:serviceaccounts,system:serviceaccounts:istio-system,system:authenticated\"";
    let mut tokens = format!(
        "{admin_token},{ADMIN},uid-admin,\"system:masters\"\n{switchyard_token},{SWITCHYARD_USER},uid-switchyard,{groups}\n"
    );
    let replica_tokens: Vec<String> = (0..REPLICAS).map(|n| token(&format!("replica-{n}"))).collect();
    for (n, token) in (0..REPLICAS).zip(&replica_tokens) {
        tokens += &format!("{token},{SWITCHYARD_USER},{},{groups}\n", replica_uid(n));
    }
    let gateway_token = token("gateway");
    tokens += &format!(
        "{gateway_token},{GATEWAY_USER},uid-gateway,\"system:serviceaccounts,system:serviceaccounts:switchyard,system:authenticated\"\n"
    );
    let pki = Pki {
        cert: dir.join("apiserver.crt"),
        key: dir.join("apiserver.key"),
        cert_pem: cert_pem.clone(),
        service_account_key: dir.join("sa.key"),
        service_account_public_key: dir.join("sa.pub"),
        tokens: dir.join("tokens.csv"),
        admin_token,
        switchyard_token,
        replica_tokens,
        gateway_token,
    };
    for (path, text) in [
        (&pki.cert, cert_pem),
        (&pki.key, serving.signing_key.serialize_pem()),
        (&pki.service_account_key, account.serialize_pem()),
        (&pki.service_account_public_key, account.public_key_pem()),
        (&pki.tokens, tokens),
    ] {
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(pki)
}

/// A token unique to this process and moment (the server is on loopback and lives for one test run).
fn token(who: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{who}-{}-{nanos:x}", std::process::id())
}
