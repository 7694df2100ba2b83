//! TLS for `https://` and `grpcs://` targets (rustls with ring). The command line sets the
//! options once per process (`configure`): every target a run or a suite builds then
//! trusts the same CA and presents the same client certificate, as with curl's and ghz's
//! flags. Without `--cacert` the system's bundle is trusted (`SSL_CERT_FILE`, else
//! Debian's `/etc/ssl/certs/ca-certificates.crt`).
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

const SYSTEM_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// PEM file of the CA certificates to trust instead of the system's.
    pub cacert: Option<PathBuf>,
    /// Client certificate chain and key (PEM), for servers that require mutual TLS.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// Accept any server certificate (still encrypted; for self-signed test servers).
    pub insecure: bool,
}

static OPTIONS: OnceLock<TlsOptions> = OnceLock::new();

/// Sets the process's TLS options (the first call wins) after checking that they load.
pub fn configure(o: TlsOptions) -> Result<(), String> {
    build(&o, false)?;
    let _ = OPTIONS.set(o);
    Ok(())
}

/// A secure target's client settings: ALPN `h2` for HTTP/2 and gRPC, `http/1.1` else.
#[derive(Clone)]
pub struct Tls {
    pub config: Arc<ClientConfig>,
    pub server_name: ServerName<'static>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tls({:?})", self.server_name)
    }
}

impl Tls {
    pub fn new(host: &str, h2: bool) -> Result<Self, String> {
        let o = OPTIONS.get().cloned().unwrap_or_default();
        let server_name = ServerName::try_from(host.trim_matches(['[', ']']).to_string())
            .map_err(|e| format!("TLS server name {host:?}: {e}"))?;
        Ok(Self {
            config: build(&o, h2)?,
            server_name,
        })
    }
}

fn build(o: &TlsOptions, h2: bool) -> Result<Arc<ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = if o.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
    } else {
        builder.with_root_certificates(roots(o.cacert.as_deref())?)
    };
    let mut config = match (&o.cert, &o.key) {
        (Some(cert), Some(key)) => {
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| format!("{}: no private key in PEM form ({e})", key.display()))?;
            builder
                .with_client_auth_cert(read_certs(cert)?, key)
                .map_err(|e| format!("client certificate {}: {e}", cert.display()))?
        }
        (None, None) => builder.with_no_client_auth(),
        _ => return Err("--cert and --key go together".into()),
    };
    config.alpn_protocols = vec![if h2 {
        b"h2".to_vec()
    } else {
        b"http/1.1".to_vec()
    }];
    Ok(Arc::new(config))
}

fn roots(cacert: Option<&Path>) -> Result<RootCertStore, String> {
    let system =
        std::env::var_os("SSL_CERT_FILE").map_or(PathBuf::from(SYSTEM_BUNDLE), PathBuf::from);
    let path = cacert.unwrap_or(&system);
    let mut store = RootCertStore::empty();
    let (added, _) = store.add_parsable_certificates(read_certs(path)?);
    if added == 0 {
        return Err(format!("{}: no usable CA certificate", path.display()));
    }
    Ok(store)
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let certs: Vec<_> = CertificateDer::pem_reader_iter(BufReader::new(file))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: not PEM certificates ({e})", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no certificate in it", path.display()));
    }
    Ok(certs)
}

/// `--insecure`: any certificate is accepted, but the handshake's signatures are still
/// checked, so the connection is encrypted with the key the server holds.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
