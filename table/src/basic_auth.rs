//! A rule's basic authentication ([`BasicAuth`], issue "Policies beyond the route"), checked as
//! nginx's `auth_basic` with an `auth_basic_user_file` checks it (ingress-nginx's `auth-type:
//! basic`):
//!
//! - The credential is the `Authorization` header's `Basic` one: base64 of `user:password`, the
//!   user ending at the first `:`. A request without one, or with one that does not decode, or
//!   whose user is not listed, or whose password does not match the user's hash, is answered
//!   `401` with `WWW-Authenticate: Basic realm="…"`.
//! - The hashes are those nginx reads on ingress-nginx's image: bcrypt (`$2a$`, `$2b$`, `$2y$`,
//!   `htpasswd -B`), Apache's MD5 (`$apr1$`, `htpasswd`'s default) and MD5-crypt (`$1$`),
//!   SHA-256- and SHA-512-crypt (`$5$`, `$6$`), `{SHA}` and `{SSHA}` (base64 SHA-1, salted or
//!   not), and `{PLAIN}`. A hash of another scheme (DES crypt) never matches: the compiler says
//!   so ([`Scheme::of`]).
//! - A credential that matched is remembered, per thread, as a SHA-256 digest of the user's hash
//!   and the credential (never the password itself): the next request with it costs a digest,
//!   not a bcrypt. A changed hash (a new Secret) matches nothing remembered.

use std::cell::RefCell;

use base64::Engine;
use md5::{Digest, Md5};
use sha1::Sha1;
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::request::RequestView;

/// The status a request without a valid credential is answered with.
pub const UNAUTHORIZED: u16 = 401;

/// A rule's users and the realm its challenge names.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct BasicAuth {
    /// The realm of `WWW-Authenticate` (ingress-nginx's `auth-realm`).
    pub realm: String,
    /// Where the users come from, for people (`Secret shop/basic-auth`); never a credential.
    pub source: String,
    /// The users, each with its password's hash, in the file's order (the first line of a user
    /// is the one nginx reads).
    pub users: Vec<Credential>,
}

/// One user and its password's hash.
#[derive(Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Credential {
    /// The user name.
    pub user: String,
    /// The password's hash, as the htpasswd line writes it.
    pub hash: String,
}

impl std::fmt::Debug for Credential {
    // A hash is never printed: `{:?}` of a table in a log names the user only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// What stands for a hash where people read a table.
pub const HIDDEN: &str = "(hidden)";

impl BasicAuth {
    /// The users whose hash is of no scheme ([`Scheme::of`]): they never get in.
    pub fn unusable_users(&self) -> Vec<&str> {
        (self.users.iter())
            .filter(|c| Scheme::of(&c.hash).is_none())
            .map(|c| c.user.as_str())
            .collect()
    }

    /// The same users, each hash replaced by [`HIDDEN`].
    pub fn without_hashes(&self) -> BasicAuth {
        let users = (self.users.iter())
            .map(|c| Credential {
                user: c.user.clone(),
                hash: HIDDEN.to_owned(),
            })
            .collect();
        BasicAuth { users, ..self.clone() }
    }
}

/// A password hash's scheme, from its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `$2a$`, `$2b$`, `$2y$`, `$2x$`.
    Bcrypt,
    /// `$apr1$`: Apache's MD5.
    Apr1,
    /// `$1$`: MD5-crypt.
    Md5Crypt,
    /// `$5$`.
    Sha256Crypt,
    /// `$6$`.
    Sha512Crypt,
    /// `{SHA}`: base64 of the password's SHA-1.
    Sha1,
    /// `{SSHA}`: base64 of the SHA-1 of the password and a salt, then the salt.
    SaltedSha1,
    /// `{PLAIN}`: the password itself.
    Plain,
}

impl Scheme {
    /// The scheme of `hash`, or `None` for one nginx's image cannot check either (or checks
    /// with a scheme Switchyard lacks: DES crypt, whose passwords are cut at 8 bytes).
    pub fn of(hash: &str) -> Option<Scheme> {
        const PREFIXES: [(&str, Scheme); 11] = [
            ("$2a$", Scheme::Bcrypt),
            ("$2b$", Scheme::Bcrypt),
            ("$2x$", Scheme::Bcrypt),
            ("$2y$", Scheme::Bcrypt),
            ("$apr1$", Scheme::Apr1),
            ("$1$", Scheme::Md5Crypt),
            ("$5$", Scheme::Sha256Crypt),
            ("$6$", Scheme::Sha512Crypt),
            ("{SHA}", Scheme::Sha1),
            ("{SSHA}", Scheme::SaltedSha1),
            ("{PLAIN}", Scheme::Plain),
        ];
        PREFIXES
            .iter()
            .find(|(prefix, _)| hash.starts_with(prefix))
            .map(|&(_, scheme)| scheme)
    }
}

/// Whether `password` matches `hash` (a hash of no known scheme matches nothing).
pub fn verify(hash: &str, password: &[u8]) -> bool {
    let Some(scheme) = Scheme::of(hash) else {
        return false;
    };
    let after = |prefix: &str| hash.strip_prefix(prefix).unwrap_or_default();
    match scheme {
        Scheme::Bcrypt => bcrypt::verify(password, hash).unwrap_or(false),
        Scheme::Apr1 => md5_crypt(password, hash, "$apr1$").is_some_and(|made| same(&made, hash)),
        Scheme::Md5Crypt => md5_crypt(password, hash, "$1$").is_some_and(|made| same(&made, hash)),
        Scheme::Sha256Crypt | Scheme::Sha512Crypt => sha_crypt_matches(password, hash, scheme),
        Scheme::Sha1 => same(&BASE64.encode(Sha1::digest(password)), after("{SHA}")),
        Scheme::SaltedSha1 => {
            let Ok(decoded) = BASE64.decode(after("{SSHA}")) else {
                return false;
            };
            let Some((digest, salt)) = decoded.split_at_checked(20) else {
                return false;
            };
            let mut sha = Sha1::new();
            sha.update(password);
            sha.update(salt);
            bool::from(sha.finalize().as_slice().ct_eq(digest))
        }
        Scheme::Plain => bool::from(after("{PLAIN}").as_bytes().ct_eq(password)),
    }
}

/// Whether `request` carries a credential of one of `auth`'s users.
pub fn admits(auth: &BasicAuth, request: &impl RequestView) -> bool {
    let mut admitted = false;
    request.any_header_value("authorization", &mut |value| {
        admitted = credential(value).is_some_and(|decoded| matches(auth, &decoded));
        true
    });
    admitted
}

/// The `WWW-Authenticate` value of `auth`'s challenge.
pub fn challenge(auth: &BasicAuth) -> String {
    format!("Basic realm=\"{}\"", auth.realm)
}

/// The decoded `user:password` of a `Basic` `Authorization` value.
fn credential(value: &str) -> Option<Vec<u8>> {
    let value = value.trim_start();
    let (scheme, rest) = value.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case("basic ") {
        return None;
    }
    BASE64.decode(rest.trim()).ok()
}

/// Whether the decoded credential `user:password` is one of `auth`'s users with its password.
fn matches(auth: &BasicAuth, decoded: &[u8]) -> bool {
    let colon = decoded.iter().position(|&b| b == b':');
    let Some((user, password)) = colon.map(|at| (&decoded[..at], &decoded[at + 1..])) else {
        return false;
    };
    let Some(entry) = auth.users.iter().find(|c| c.user.as_bytes() == user) else {
        return false;
    };
    let key = remembered_key(&entry.hash, decoded);
    if REMEMBERED.with(|r| r.borrow().contains(&key)) {
        return true;
    }
    let matched = verify(&entry.hash, password);
    if matched {
        REMEMBERED.with(|r| r.borrow_mut().insert(key));
    }
    matched
}

/// The standard base64 alphabet with padding (htpasswd's and `Authorization`'s).
const BASE64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// How many matched credentials a thread remembers.
const REMEMBERED_SLOTS: usize = 256;

thread_local! {
    /// The matched credentials of this thread (a VM, a worker), by digest.
    static REMEMBERED: RefCell<Remembered> = const { RefCell::new(Remembered { slots: Vec::new() }) };
}

/// Digests of matched credentials, one per slot, the slot chosen by the digest's first byte: a
/// newer credential takes an older one's slot.
struct Remembered {
    slots: Vec<[u8; 32]>,
}

impl Remembered {
    fn slot(key: &[u8; 32]) -> usize {
        usize::from(key[0]) % REMEMBERED_SLOTS
    }

    fn contains(&self, key: &[u8; 32]) -> bool {
        self.slots
            .get(Self::slot(key))
            .is_some_and(|held| bool::from(held.ct_eq(key)))
    }

    fn insert(&mut self, key: [u8; 32]) {
        if self.slots.is_empty() {
            self.slots = vec![[0; 32]; REMEMBERED_SLOTS];
        }
        if let Some(slot) = self.slots.get_mut(Self::slot(&key)) {
            *slot = key;
        }
    }
}

/// The digest a matched credential is remembered by: of the user's hash and the credential.
fn remembered_key(hash: &str, decoded: &[u8]) -> [u8; 32] {
    let mut sha = Sha256::new();
    sha.update(hash.as_bytes());
    sha.update([0]);
    sha.update(decoded);
    sha.finalize().into()
}

/// Constant-time equality of two texts.
fn same(a: &str, b: &str) -> bool {
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// The MD5-crypt hash (`$1$`, or Apache's `$apr1$`, the same algorithm under another `magic`) of
/// `password` with the salt of `hash` (up to 8 characters after the magic, to the next `$`).
fn md5_crypt(password: &[u8], hash: &str, magic: &str) -> Option<String> {
    let rest = hash.strip_prefix(magic)?;
    let salt = rest.split('$').next()?;
    let salt = salt.get(..salt.len().min(8))?.as_bytes();
    let alternate = Md5::new()
        .chain_update(password)
        .chain_update(salt)
        .chain_update(password)
        .finalize();
    let mut md5 = Md5::new().chain_update(password).chain_update(magic).chain_update(salt);
    for chunk in password.chunks(16) {
        md5.update(&alternate[..chunk.len()]);
    }
    let mut length = password.len();
    while length > 0 {
        match length & 1 {
            1 => md5.update([0]),
            _ => md5.update(&password[..1]),
        }
        length >>= 1;
    }
    let mut digest = md5.finalize();
    for round in 0..1000 {
        let mut md5 = Md5::new();
        match round & 1 {
            1 => md5.update(password),
            _ => md5.update(digest),
        }
        if round % 3 != 0 {
            md5.update(salt);
        }
        if round % 7 != 0 {
            md5.update(password);
        }
        match round & 1 {
            1 => md5.update(digest),
            _ => md5.update(password),
        }
        digest = md5.finalize();
    }
    let mut text = format!("{magic}{}$", String::from_utf8_lossy(salt));
    let groups = [(0, 6, 12), (1, 7, 13), (2, 8, 14), (3, 9, 15), (4, 10, 5)];
    for (a, b, c) in groups {
        crypt64(
            &mut text,
            u32::from(digest[a]) << 16 | u32::from(digest[b]) << 8 | u32::from(digest[c]),
            4,
        );
    }
    crypt64(&mut text, u32::from(digest[11]), 2);
    Some(text)
}

/// Whether `password` has `hash`, a SHA-crypt one (`$5$` or `$6$`, as `scheme` says), with its
/// rounds (`rounds=N$`, 5,000 without; outside 1,000 – 999,999,999 it matches nothing) and its
/// salt (up to 16 characters).
fn sha_crypt_matches(password: &[u8], hash: &str, scheme: Scheme) -> bool {
    use sha_crypt::{Sha256Params, Sha512Params, ROUNDS_DEFAULT, ROUNDS_MAX, ROUNDS_MIN};
    let magic = if scheme == Scheme::Sha256Crypt { "$5$" } else { "$6$" };
    let Some(rest) = hash.strip_prefix(magic) else {
        return false;
    };
    let (rounds, rest) = match rest.strip_prefix("rounds=").and_then(|r| r.split_once('$')) {
        Some((rounds, rest)) => match rounds.parse::<usize>() {
            Ok(rounds) if (ROUNDS_MIN..=ROUNDS_MAX).contains(&rounds) => (rounds, rest),
            _ => return false,
        },
        None => (ROUNDS_DEFAULT, rest),
    };
    let Some((salt, expected)) = rest.split_once('$') else {
        return false;
    };
    let salt = salt.as_bytes().get(..salt.len().min(16)).unwrap_or_default();
    let made = match scheme {
        Scheme::Sha256Crypt => (Sha256Params::new(rounds).ok())
            .and_then(|params| sha_crypt::sha256_crypt_b64(password, salt, &params).ok()),
        _ => (Sha512Params::new(rounds).ok())
            .and_then(|params| sha_crypt::sha512_crypt_b64(password, salt, &params).ok()),
    };
    made.is_some_and(|made| same(&made, expected))
}

/// Appends the low `count` sextets of `value` in crypt's base64 alphabet, lowest first.
fn crypt64(text: &mut String, mut value: u32, count: usize) {
    const ALPHABET: &[u8; 64] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    for _ in 0..count {
        text.push(char::from(ALPHABET[(value & 0x3f) as usize]));
        value >>= 6;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::SimpleRequest;

    /// Hashes of `secret` made by `openssl passwd` (`-apr1`, `-1`, `-5`, `-6`) and by libxcrypt
    /// (`$5$rounds=1000$`).
    const SECRET: [&str; 5] = [
        "$apr1$lZL6V/ci$PR6QJXkRFUzdUuaYcwrI//",
        "$1$abcdefgh$cHJi5PXp/ki/ktXzqlk6I1",
        "$5$saltsalt$0IyaXrmV7.sGNS6tirgqHLqX/G.FBvgkYA.lpPdS5sA",
        "$6$saltsalt$TVLlQcbpFVof5W3Yz4DTP6gRstiNuHwwTt6GLc1E5n0U0aDehy0S5knV8wiOQSpT0Y77vwPZN.Pq.H91p5hVO1",
        "$5$rounds=1000$saltsalt$eKLZU9t9OoPWrqOQsoTIKG0aYkZ5rGOoOQhiIvoSWX2",
    ];

    fn basic(user: &str, hash: &str) -> BasicAuth {
        BasicAuth {
            realm: "Shop staff".to_owned(),
            source: "Secret shop/basic-auth".to_owned(),
            users: vec![Credential {
                user: user.to_owned(),
                hash: hash.to_owned(),
            }],
        }
    }

    fn with_credential(credential: &str) -> SimpleRequest {
        let value = format!("Basic {}", BASE64.encode(credential));
        SimpleRequest::get("h", "/").header("authorization", &value)
    }

    #[test]
    fn every_htpasswd_scheme_nginx_reads_verifies_its_password_and_no_other() {
        let bcrypt = bcrypt::hash_with_salt("secret", 4, [7; 16]).map(|h| h.format_for_version(bcrypt::Version::TwoY));
        let bcrypt = bcrypt.unwrap();
        let sha = format!("{{SHA}}{}", BASE64.encode(Sha1::digest(b"secret")));
        let mut salted = Sha1::digest(b"secretNaCl").to_vec();
        salted.extend_from_slice(b"NaCl");
        let ssha = format!("{{SSHA}}{}", BASE64.encode(salted));
        let hashes: Vec<String> = (SECRET.iter().map(|h| h.to_string()))
            .chain([bcrypt, sha, ssha, "{PLAIN}secret".to_owned()])
            .collect();
        for hash in &hashes {
            assert!(Scheme::of(hash).is_some(), "{hash}");
            assert!(verify(hash, b"secret"), "{hash} verifies secret");
            assert!(!verify(hash, b"Secret"), "{hash} refuses Secret");
            assert!(!verify(hash, b""), "{hash} refuses nothing");
        }
    }

    #[test]
    fn apache_md5_is_what_htpasswd_and_openssl_write() {
        // htpasswd-verify's documented example, and `openssl passwd -apr1 -salt lZL6V/ci password`.
        assert_eq!(
            md5_crypt(b"password", "$apr1$lZL6V/ci$", "$apr1$").as_deref(),
            Some("$apr1$lZL6V/ci$eIMz/iKDkbtys/uU7LEK00")
        );
    }

    #[test]
    fn a_des_crypt_hash_or_text_without_scheme_never_matches() {
        assert_eq!(Scheme::of("abJnggxhB/yWI"), None);
        assert!(!verify("abJnggxhB/yWI", b"secret"));
        assert!(!verify("secret", b"secret"), "no scheme is not plain text");
    }

    #[test]
    fn a_listed_user_with_its_password_is_admitted_and_anything_else_is_not() {
        let auth = basic("alice", SECRET[0]);
        assert!(admits(&auth, &with_credential("alice:secret")));
        assert!(!admits(&auth, &with_credential("alice:wrong")));
        assert!(!admits(&auth, &with_credential("bob:secret")));
        assert!(!admits(&auth, &with_credential("alicesecret")), "no colon");
        assert!(!admits(&auth, &SimpleRequest::get("h", "/")), "no credential");
        let bearer = SimpleRequest::get("h", "/").header("authorization", "Bearer YWxpY2U6c2VjcmV0");
        assert!(!admits(&auth, &bearer), "another scheme");
        let garbled = SimpleRequest::get("h", "/").header("authorization", "Basic !!!");
        assert!(!admits(&auth, &garbled));
        let lower = SimpleRequest::get("h", "/").header("authorization", "basic YWxpY2U6c2VjcmV0");
        assert!(admits(&auth, &lower), "the scheme's case does not matter");
    }

    #[test]
    fn a_password_may_hold_colons_and_the_first_line_of_a_user_is_read() {
        let mut auth = basic("carol", "{PLAIN}a:b");
        auth.users.push(Credential {
            user: "carol".to_owned(),
            hash: "{PLAIN}other".to_owned(),
        });
        assert!(admits(&auth, &with_credential("carol:a:b")));
        assert!(!admits(&auth, &with_credential("carol:other")));
    }

    #[test]
    fn a_remembered_credential_stops_matching_when_the_users_hash_changes() {
        let auth = basic("dave", SECRET[3]);
        assert!(admits(&auth, &with_credential("dave:secret")));
        assert!(admits(&auth, &with_credential("dave:secret")), "remembered");
        let changed = basic("dave", "$6$saltsalt$changed");
        assert!(!admits(&changed, &with_credential("dave:secret")));
    }

    #[test]
    fn a_credential_prints_its_user_never_its_hash() {
        let printed = format!("{:?}", basic("erin", SECRET[1]));
        assert!(printed.contains("erin") && !printed.contains("cHJi5PXp"), "{printed}");
    }

    #[test]
    fn the_challenge_names_the_realm() {
        assert_eq!(challenge(&basic("a", SECRET[0])), "Basic realm=\"Shop staff\"");
    }
}
