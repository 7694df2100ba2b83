//! TLS for REST and gRPC (rustls): a certificate chain and key from PEM files, and
//! optionally a CA whose client certificates are required (mutual TLS). Plaintext stays
//! the default. ALPN offers h2 and http/1.1, so REST clients of either kind connect.
use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::sync::Arc;

use rustls::server::WebPkiClientVerifier;
use rustls::RootCertStore;
/// rustls' server settings, named apart from this crate's `ServerConfig`.
pub use rustls::ServerConfig as TlsConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// How long a client has to finish its TLS handshake.
pub const HANDSHAKE: std::time::Duration = std::time::Duration::from_secs(10);

/// Builds the TLS settings; every error names the file and what is wrong with it.
pub fn server_config(
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
) -> Result<Arc<TlsConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certs = read_certs(cert)?;
    let key = PrivateKeyDer::from_pem_reader(BufReader::new(open(key)?))
        .map_err(|e| format!("{}: no private key in PEM form ({e})", key.display()))?;
    let builder = TlsConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            for c in read_certs(ca)? {
                roots
                    .add(c)
                    .map_err(|e| format!("{}: not a CA certificate ({e})", ca.display()))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| format!("{}: {e}", ca.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(certs, key).map_err(|e| {
        format!(
            "{}: the key does not match the certificate ({e})",
            cert.display()
        )
    })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn open(path: &Path) -> Result<File, String> {
    File::open(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<_> = CertificateDer::pem_reader_iter(BufReader::new(open(path)?))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: not PEM certificates ({e})", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no certificate in it", path.display()));
    }
    Ok(certs)
}
