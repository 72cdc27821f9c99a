//! The web configuration file of Prometheus' own exporters
//! (`--web.config.file`), so an operator reuses the file they have for
//! node_exporter: TLS for the endpoint (`tls_server_config`) and basic
//! authentication (`basic_auth_users`, bcrypt hashes).
//!
//! What is supported:
//!
//! ```yaml
//! tls_server_config:
//!   cert_file: server.crt        # PEM: the certificate, then its chain
//!   key_file: server.key         # PEM: PKCS#8, PKCS#1 or SEC1
//!   client_ca_file: clients.crt  # optional: CA certificates for clients
//!   client_auth_type: RequireAndVerifyClientCert  # or VerifyClientCertIfGiven, NoClientCert
//!   min_version: TLS12           # TLS10..TLS13; TLS 1.2 is the floor whatever is asked
//!   max_version: TLS13
//! basic_auth_users:
//!   prometheus: $2y$10$...       # bcrypt hash
//! ```
//!
//! Any other key (`cipher_suites`, `curve_preferences`,
//! `client_allowed_sans`, `http_server_config`, ...) is refused with its
//! name: a security setting is never silently ignored. As the exporters
//! do, relative file names are taken from the configuration's directory,
//! and a `tls_server_config` without a certificate or a key (or an empty
//! file) means plain HTTP.
//!
//! The certificate, key and CA files are read when the configuration is,
//! so a SIGHUP after a certificate's renewal applies it. [`WebConfig`]'s
//! `Debug` shows neither the key nor the hashes.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, SupportedProtocolVersion};
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde::Deserialize;

/// The file as written: unknown keys are refused by name.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDoc {
    tls_server_config: Option<TlsDoc>,
    basic_auth_users: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TlsDoc {
    cert_file: Option<String>,
    key_file: Option<String>,
    client_ca_file: Option<String>,
    client_auth_type: Option<String>,
    min_version: Option<String>,
    max_version: Option<String>,
}

/// Why a web configuration cannot be used, as one line naming the file
/// and the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebConfigError {
    #[error("cannot read the web configuration {}: {reason}", .path.display())]
    Read { path: PathBuf, reason: String },
    /// Not YAML, a value of the wrong type, or a key latscope does not support.
    #[error("web configuration {}: {reason}", .path.display())]
    Parse { path: PathBuf, reason: String },
    #[error("web configuration {}: {key}: {reason}", .path.display())]
    Invalid {
        path: PathBuf,
        key: String,
        reason: String,
    },
    #[error("web configuration {}: {key}: cannot read {}: {reason}", .path.display(), .file.display())]
    File {
        path: PathBuf,
        key: String,
        file: PathBuf,
        reason: String,
    },
    /// The certificates and key do not make a TLS configuration (a key
    /// that is not the certificate's, say).
    #[error("web configuration {}: tls_server_config: {reason}", .path.display())]
    Tls { path: PathBuf, reason: String },
}

/// Which client certificates the server asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// `NoClientCert` (the default).
    None,
    /// `VerifyClientCertIfGiven`: a certificate is optional, but one given
    /// must verify against `client_ca_file`.
    VerifyIfGiven,
    /// `RequireAndVerifyClientCert`.
    RequireAndVerify,
}

/// A PEM file's name and content.
#[derive(Clone, PartialEq, Eq)]
pub struct PemFile {
    pub path: PathBuf,
    pem: Vec<u8>,
}

impl fmt::Debug for PemFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} bytes)", self.path.display(), self.pem.len())
    }
}

/// `tls_server_config`, its files read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    pub cert: PemFile,
    pub key: PemFile,
    pub client_ca: Option<PemFile>,
    pub client_auth: ClientAuth,
    /// Whether TLS 1.2 and TLS 1.3 are offered.
    pub tls12: bool,
    pub tls13: bool,
}

/// A bcrypt hash, kept out of `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct Hash(pub String);

impl fmt::Debug for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<bcrypt hash>")
    }
}

/// A web configuration, checked: its TLS files read and usable, its
/// hashes bcrypt hashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebConfig {
    pub path: PathBuf,
    pub tls: Option<Tls>,
    /// User name to bcrypt hash; empty: no authentication.
    pub users: BTreeMap<String, Hash>,
}

impl WebConfig {
    /// Reads and checks the file at `path`, and the files it names.
    pub fn load(path: &Path) -> Result<WebConfig, WebConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| WebConfigError::Read {
            path: path.to_path_buf(),
            reason: crate::os_reason::os_reason(&e),
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        WebConfig::parse(path, &text, dir)
    }

    /// Checks the text of the file at `path`; relative names are taken
    /// from `dir`.
    pub fn parse(path: &Path, text: &str, dir: &Path) -> Result<WebConfig, WebConfigError> {
        let parse_err = |reason: String| WebConfigError::Parse {
            path: path.to_path_buf(),
            reason,
        };
        // An empty file (or one of comments) is an empty configuration.
        let doc: FileDoc = if text.lines().all(|l| {
            let l = l.trim();
            l.is_empty() || l.starts_with('#') || l == "---"
        }) {
            FileDoc::default()
        } else {
            serde_norway::from_str(text).map_err(|e| parse_err(yaml_reason(&e)))?
        };
        let invalid = |key: &str, reason: String| WebConfigError::Invalid {
            path: path.to_path_buf(),
            key: key.to_owned(),
            reason,
        };
        let tls = match doc.tls_server_config {
            Some(t) => tls(path, dir, t)?,
            None => None,
        };
        let mut users = BTreeMap::new();
        for (user, hash) in doc.basic_auth_users.unwrap_or_default() {
            let key = format!("basic_auth_users: {user}");
            if user.is_empty() || user.contains(':') {
                return Err(invalid(
                    "basic_auth_users",
                    format!("'{user}' cannot be a user name (empty or with a ':')"),
                ));
            }
            // The hash itself is not quoted: it is a secret of sorts.
            if hash.parse::<bcrypt::HashParts>().is_err() {
                return Err(invalid(
                    &key,
                    "not a bcrypt hash ($2y$, $2b$ or $2a$ and a cost); make one with `htpasswd -nbBC 10 USER PASSWORD`".into(),
                ));
            }
            users.insert(user, Hash(hash));
        }
        let config = WebConfig {
            path: path.to_path_buf(),
            tls,
            users,
        };
        // Build it once, so that a key that is not the certificate's or an
        // unusable CA is an error of the configuration, not of a handshake.
        config.server_config()?;
        Ok(config)
    }

    /// Whether clients must prove who they are (a password or a verified
    /// certificate): such an endpoint may be bound to a network.
    pub fn authenticates(&self) -> bool {
        !self.users.is_empty()
            || self
                .tls
                .as_ref()
                .is_some_and(|t| t.client_auth == ClientAuth::RequireAndVerify)
    }

    /// The TLS server configuration, or None for plain HTTP.
    pub fn server_config(&self) -> Result<Option<Arc<ServerConfig>>, WebConfigError> {
        let Some(tls) = &self.tls else {
            return Ok(None);
        };
        let tls_err = |reason: String| WebConfigError::Tls {
            path: self.path.clone(),
            reason,
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut versions: Vec<&'static SupportedProtocolVersion> = Vec::new();
        if tls.tls13 {
            versions.push(&rustls::version::TLS13);
        }
        if tls.tls12 {
            versions.push(&rustls::version::TLS12);
        }
        let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(&versions)
            .map_err(|e| tls_err(e.to_string()))?;
        let builder = match (&tls.client_ca, tls.client_auth) {
            (Some(ca), auth) if auth != ClientAuth::None => {
                let mut roots = RootCertStore::empty();
                for cert in certificates(&self.path, "tls_server_config: client_ca_file", ca)? {
                    roots.add(cert).map_err(|e| WebConfigError::Invalid {
                        path: self.path.clone(),
                        key: "tls_server_config: client_ca_file".into(),
                        reason: format!("{}: {e}", ca.path.display()),
                    })?;
                }
                let verifier = WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots),
                    Arc::clone(&provider),
                );
                let verifier = if auth == ClientAuth::VerifyIfGiven {
                    verifier.allow_unauthenticated()
                } else {
                    verifier
                };
                let verifier = verifier.build().map_err(|e| tls_err(e.to_string()))?;
                builder.with_client_cert_verifier(verifier)
            }
            _ => builder.with_no_client_auth(),
        };
        let certs = certificates(&self.path, "tls_server_config: cert_file", &tls.cert)?;
        let key =
            PrivateKeyDer::from_pem_slice(&tls.key.pem).map_err(|e| WebConfigError::Invalid {
                path: self.path.clone(),
                key: "tls_server_config: key_file".into(),
                reason: format!("{}: no private key: {e}", tls.key.path.display()),
            })?;
        let mut config = builder.with_single_cert(certs, key).map_err(|e| match e {
            rustls::Error::InconsistentKeys(_) => {
                tls_err("the key in key_file is not the key of cert_file's certificate".into())
            }
            e => tls_err(format!("cert_file and key_file: {e}")),
        })?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Some(Arc::new(config)))
    }
}

/// The certificates of a PEM file; none is an error.
fn certificates(
    path: &Path,
    key: &str,
    file: &PemFile,
) -> Result<Vec<CertificateDer<'static>>, WebConfigError> {
    let invalid = |reason: String| WebConfigError::Invalid {
        path: path.to_path_buf(),
        key: key.to_owned(),
        reason: format!("{}: {reason}", file.path.display()),
    };
    let certs = CertificateDer::pem_slice_iter(&file.pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(e.to_string()))?;
    if certs.is_empty() {
        return Err(invalid("no PEM certificate in it".into()));
    }
    Ok(certs)
}

/// `tls_server_config` checked and its files read; None when it names
/// neither a certificate nor a key (plain HTTP, as the exporters have it).
fn tls(path: &Path, dir: &Path, t: TlsDoc) -> Result<Option<Tls>, WebConfigError> {
    let invalid = |key: &str, reason: &str| WebConfigError::Invalid {
        path: path.to_path_buf(),
        key: format!("tls_server_config: {key}"),
        reason: reason.to_owned(),
    };
    let client_auth = match t.client_auth_type.as_deref() {
        None | Some("") | Some("NoClientCert") => ClientAuth::None,
        Some("VerifyClientCertIfGiven") => ClientAuth::VerifyIfGiven,
        Some("RequireAndVerifyClientCert") => ClientAuth::RequireAndVerify,
        Some("RequestClientCert" | "RequireAnyClientCert" | "RequireClientCert") => {
            return Err(invalid(
                "client_auth_type",
                "a client certificate taken without verifying it is not supported; use RequireAndVerifyClientCert or VerifyClientCertIfGiven with client_ca_file",
            ))
        }
        Some(other) => {
            return Err(invalid(
                "client_auth_type",
                &format!("'{other}' is not one of NoClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert"),
            ))
        }
    };
    if t.client_ca_file.is_some() && client_auth == ClientAuth::None {
        return Err(invalid(
            "client_ca_file",
            "given without a client_auth_type that verifies client certificates (RequireAndVerifyClientCert or VerifyClientCertIfGiven)",
        ));
    }
    if t.client_ca_file.is_none() && client_auth != ClientAuth::None {
        return Err(invalid(
            "client_auth_type",
            "verifying client certificates needs client_ca_file",
        ));
    }
    let min = version(t.min_version.as_deref(), 12).map_err(|r| invalid("min_version", &r))?;
    let max = version(t.max_version.as_deref(), 13).map_err(|r| invalid("max_version", &r))?;
    if max < 12 {
        return Err(invalid(
            "max_version",
            "latscope offers TLS 1.2 and 1.3 only; a maximum below TLS12 leaves no version",
        ));
    }
    if min > max {
        return Err(invalid("min_version", "is above max_version"));
    }
    let (cert_file, key_file) = match (t.cert_file, t.key_file) {
        (None, None) if client_auth == ClientAuth::None => return Ok(None),
        (Some(c), Some(k)) => (c, k),
        (None, _) => return Err(invalid("cert_file", "missing (key_file needs it)")),
        (_, None) => return Err(invalid("key_file", "missing (cert_file needs it)")),
    };
    let read = |key: &'static str, name: &str| -> Result<PemFile, WebConfigError> {
        let file = dir.join(name);
        let pem = std::fs::read(&file).map_err(|e| WebConfigError::File {
            path: path.to_path_buf(),
            key: format!("tls_server_config: {key}"),
            file: file.clone(),
            reason: crate::os_reason::os_reason(&e),
        })?;
        Ok(PemFile { path: file, pem })
    };
    Ok(Some(Tls {
        cert: read("cert_file", &cert_file)?,
        key: read("key_file", &key_file)?,
        client_ca: t
            .client_ca_file
            .as_deref()
            .map(|c| read("client_ca_file", c))
            .transpose()?,
        client_auth,
        tls12: min <= 12,
        tls13: max >= 13,
    }))
}

/// `TLS10`..`TLS13` as 10..13 (`default` when absent).
fn version(text: Option<&str>, default: u8) -> Result<u8, String> {
    match text {
        None | Some("") => Ok(default),
        Some("TLS10") => Ok(10),
        Some("TLS11") => Ok(11),
        Some("TLS12") => Ok(12),
        Some("TLS13") => Ok(13),
        Some(other) => Err(format!(
            "'{other}' is not one of TLS10, TLS11, TLS12, TLS13"
        )),
    }
}

/// serde's message, with a word on why an unknown key is refused.
fn yaml_reason(e: &serde_norway::Error) -> String {
    let text = e.to_string().replace('\n', " ");
    if text.contains("unknown field") {
        format!(
            "{text}; latscope does not support this setting, and refuses it rather than ignore it"
        )
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A CA, a server certificate it signed, and the server's key, as PEM.
    fn pki() -> (String, String, String) {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        (ca.pem(), cert.pem(), key.serialize_pem())
    }

    struct Dir {
        dir: tempfile::TempDir,
    }

    impl Dir {
        fn new() -> Dir {
            let dir = tempfile::tempdir().unwrap();
            let (ca, cert, key) = pki();
            std::fs::write(dir.path().join("ca.crt"), ca).unwrap();
            std::fs::write(dir.path().join("server.crt"), cert).unwrap();
            std::fs::write(dir.path().join("server.key"), key).unwrap();
            Dir { dir }
        }

        fn parse(&self, text: &str) -> Result<WebConfig, WebConfigError> {
            let path = self.dir.path().join("web.yml");
            std::fs::write(&path, text).unwrap();
            WebConfig::load(&path)
        }
    }

    #[test]
    fn a_node_exporter_file_is_read() {
        let d = Dir::new();
        let hash = bcrypt::hash("pw", 4).unwrap();
        let c = d
            .parse(&format!(
                "# as for node_exporter\ntls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_ca_file: ca.crt\n  client_auth_type: RequireAndVerifyClientCert\n  min_version: TLS12\nbasic_auth_users:\n  prometheus: '{hash}'\n"
            ))
            .unwrap();
        let tls = c.tls.as_ref().unwrap();
        assert_eq!(tls.cert.path, d.dir.path().join("server.crt"));
        assert_eq!(tls.client_auth, ClientAuth::RequireAndVerify);
        assert!(tls.tls12 && tls.tls13);
        assert_eq!(c.users.len(), 1);
        assert!(c.authenticates());
        assert!(c.server_config().unwrap().is_some());
        // Neither the key nor the hash shows in Debug.
        let debug = format!("{c:?}");
        assert!(
            !debug.contains("PRIVATE KEY") && !debug.contains(&hash),
            "{debug}"
        );
    }

    #[test]
    fn empty_files_and_tls_without_a_certificate_mean_plain_http() {
        let d = Dir::new();
        for text in [
            "",
            "# nothing\n",
            "tls_server_config: {}\n",
            "basic_auth_users: {}\n",
        ] {
            let c = d.parse(text).unwrap();
            assert!(c.tls.is_none() && c.users.is_empty(), "{text}");
            assert!(!c.authenticates());
            assert!(c.server_config().unwrap().is_none());
        }
        let c = d
            .parse("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  max_version: TLS12\n")
            .unwrap();
        // TLS alone authenticates nobody.
        assert!(!c.authenticates());
        let tls = c.tls.unwrap();
        assert!(tls.tls12 && !tls.tls13);
    }

    #[test]
    fn each_bad_file_is_one_line_naming_the_key() {
        let d = Dir::new();
        let hash = bcrypt::hash("pw", 4).unwrap();
        let tls = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n";
        for (text, says) in [
            ("tls_server_config: [", "web.yml"),
            ("basic_auth_users: 3\n", "basic_auth_users"),
            ("rate_limit:\n  interval: 1s\n", "`rate_limit`"),
            ("http_server_config:\n  http2: false\n", "`http_server_config`"),
            (&format!("{tls}  cipher_suites: [TLS_AES_128_GCM_SHA256]\n"), "`cipher_suites`"),
            (&format!("{tls}  client_allowed_sans: [a]\n"), "`client_allowed_sans`"),
            (&format!("{tls}  curve_preferences: [X25519]\n"), "`curve_preferences`"),
            ("tls_server_config:\n  cert_file: server.crt\n", "key_file: missing"),
            ("tls_server_config:\n  key_file: server.key\n", "cert_file: missing"),
            ("tls_server_config:\n  cert_file: nope.crt\n  key_file: server.key\n", "cert_file: cannot read"),
            ("tls_server_config:\n  cert_file: server.key\n  key_file: server.key\n", "cert_file"),
            ("tls_server_config:\n  cert_file: server.crt\n  key_file: server.crt\n", "key_file"),
            ("tls_server_config:\n  cert_file: ca.crt\n  key_file: server.key\n", "the key in key_file is not the key of cert_file"),
            (&format!("{tls}  client_auth_type: Sometimes\n"), "client_auth_type: 'Sometimes'"),
            (&format!("{tls}  client_auth_type: RequireAnyClientCert\n  client_ca_file: ca.crt\n"), "without verifying"),
            (&format!("{tls}  client_auth_type: RequireAndVerifyClientCert\n"), "needs client_ca_file"),
            (&format!("{tls}  client_ca_file: ca.crt\n"), "client_ca_file: given without"),
            (&format!("{tls}  client_ca_file: server.key\n  client_auth_type: VerifyClientCertIfGiven\n"), "client_ca_file"),
            (&format!("{tls}  min_version: SSL3\n"), "min_version: 'SSL3'"),
            (&format!("{tls}  max_version: TLS11\n"), "max_version"),
            (&format!("{tls}  min_version: TLS13\n  max_version: TLS12\n"), "min_version: is above"),
            ("basic_auth_users:\n  alice: secret\n", "basic_auth_users: alice: not a bcrypt hash"),
            (&format!("basic_auth_users:\n  'a:b': '{hash}'\n"), "cannot be a user name"),
        ] {
            let e = d.parse(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text:?}: {e}");
            assert!(e.starts_with("web configuration "), "{e}");
            assert_eq!(e.lines().count(), 1, "{e}");
            assert!(!e.contains("secret"), "{e}");
        }
        let e = WebConfig::load(&d.dir.path().join("absent.yml")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot read the web configuration"),
            "{e}"
        );
        assert!(!e.to_string().contains("os error"), "{e}");
    }
}
