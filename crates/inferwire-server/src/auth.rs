//! Bearer-token auth for REST and gRPC. Tokens are either long-lived ones listed, hashed,
//! in a token file, or short-lived ones signed here and handed out by `POST /login` in
//! exchange for a username and password (stored as argon2 hashes). Each token carries
//! scopes: `predict` (predictions, metadata), `publish` (publishing and the repository
//! API). Comparisons are constant-time; no secret is ever logged.
use std::fmt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// What a route needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Predict,
    Publish,
}

impl Scope {
    pub fn name(self) -> &'static str {
        match self {
            Scope::Predict => "predict",
            Scope::Publish => "publish",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "predict" => Some(Scope::Predict),
            "publish" => Some(Scope::Publish),
            _ => None,
        }
    }
}

/// Why a request was refused: `Missing`/`Invalid` are 401 / UNAUTHENTICATED,
/// `Forbidden` 403 / PERMISSION_DENIED.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Missing,
    Invalid(&'static str),
    Forbidden { who: String, need: Scope },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Missing => f.write_str(
                "authentication required: send Authorization: Bearer <token> (POST /login \
                 exchanges a username and password for one)",
            ),
            Refusal::Invalid(why) => write!(f, "invalid bearer token: {why}"),
            Refusal::Forbidden { who, need } => write!(
                f,
                "{who}'s token does not have the {} scope this route needs",
                need.name()
            ),
        }
    }
}

struct Entry {
    name: String,
    scopes: Vec<Scope>,
    /// Token files: SHA-256 of the token. User files: the argon2 PHC string.
    secret: String,
    digest: [u8; 32],
}

pub struct Auth {
    tokens: Vec<Entry>,
    users: Vec<Entry>,
    key: Vec<u8>,
    pub ttl: Duration,
    /// A hash of a random password, verified for unknown users so that a login takes as
    /// long whether or not the user exists.
    dummy: String,
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Names and counts only: never a hash or the key.
        f.debug_struct("Auth")
            .field("tokens", &self.tokens.len())
            .field("users", &self.users.len())
            .field("ttl", &self.ttl)
            .finish()
    }
}

type HmacSha256 = Hmac<Sha256>;
const SIGNED_PREFIX: &str = "iw1.";

fn sha256(b: &[u8]) -> [u8; 32] {
    Sha256::digest(b).into()
}

fn read_entries(path: &Path, what: &str) -> Result<Vec<Entry>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{what} file {}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [name, scopes, secret] = parts[..] else {
            return Err(format!(
                "{} line {}: expected NAME SCOPES HASH (e.g. `ci predict,publish <hash>`)",
                path.display(),
                i + 1
            ));
        };
        let scopes = scopes
            .split(',')
            .map(|s| {
                Scope::parse(s).ok_or_else(|| {
                    format!(
                        "{} line {}: unknown scope {s:?} (predict, publish)",
                        path.display(),
                        i + 1
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut digest = [0u8; 32];
        if what == "token" {
            let bytes = hex_decode(secret)
                .filter(|b| b.len() == 32)
                .ok_or_else(|| {
                    format!(
                        "{} line {}: the hash must be 64 hex digits (SHA-256 of the token)",
                        path.display(),
                        i + 1
                    )
                })?;
            digest.copy_from_slice(&bytes);
        } else if PasswordHash::new(secret).is_err() {
            return Err(format!(
                "{} line {}: the hash is not an argon2 PHC string ($argon2id$...)",
                path.display(),
                i + 1
            ));
        }
        out.push(Entry {
            name: name.to_owned(),
            scopes,
            secret: secret.to_owned(),
            digest,
        });
    }
    Ok(out)
}

fn hex_decode(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The token file line's hash of `token`.
pub fn token_digest(token: &str) -> String {
    hex(&sha256(token.as_bytes()))
}

/// An argon2id PHC string for `password`, with a fresh random salt.
pub fn hash_password(password: &str) -> Result<String, String> {
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| format!("no randomness: {e}"))?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| e.to_string())?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Auth {
    /// Reads the token and user files. `key` signs login tokens: every worker must share
    /// it (it is made once, before they fork).
    pub fn load(
        tokens: Option<&Path>,
        users: Option<&Path>,
        key: Vec<u8>,
        ttl: Duration,
    ) -> Result<Self, String> {
        if key.len() < 16 {
            return Err("the auth signing key must be at least 16 bytes".into());
        }
        Ok(Self {
            tokens: tokens
                .map(|p| read_entries(p, "token"))
                .transpose()?
                .unwrap_or_default(),
            users: users
                .map(|p| read_entries(p, "user"))
                .transpose()?
                .unwrap_or_default(),
            key,
            ttl,
            dummy: hash_password(&hex(&sha256(&now().to_le_bytes())))?,
        })
    }

    /// Checks an `Authorization` header value for `need`; returns who it is.
    pub fn check(&self, header: Option<&str>, need: Scope) -> Result<String, Refusal> {
        let header = header.ok_or(Refusal::Missing)?;
        let token = header
            .strip_prefix("Bearer ")
            .or_else(|| header.strip_prefix("bearer "))
            .map(str::trim)
            .ok_or(Refusal::Invalid(
                "the Authorization header must be `Bearer <token>`",
            ))?;
        let (who, scopes) = if let Some(signed) = token.strip_prefix(SIGNED_PREFIX) {
            self.verify_signed(signed)?
        } else {
            let digest = sha256(token.as_bytes());
            // Every entry is compared, so the time taken says nothing about which matched.
            let mut found: Option<&Entry> = None;
            for e in &self.tokens {
                if bool::from(e.digest.ct_eq(&digest)) {
                    found = Some(e);
                }
            }
            let e = found.ok_or(Refusal::Invalid("unknown token"))?;
            (e.name.clone(), e.scopes.clone())
        };
        if !scopes.contains(&need) {
            return Err(Refusal::Forbidden { who, need });
        }
        Ok(who)
    }

    fn verify_signed(&self, signed: &str) -> Result<(String, Vec<Scope>), Refusal> {
        let (payload, mac) = signed
            .split_once('.')
            .ok_or(Refusal::Invalid("malformed signed token"))?;
        let mac = base64_simd::URL_SAFE_NO_PAD
            .decode_to_vec(mac)
            .map_err(|_| Refusal::Invalid("malformed signed token"))?;
        let mut m = HmacSha256::new_from_slice(&self.key).expect("HMAC takes any key length");
        m.update(payload.as_bytes());
        m.verify_slice(&mac).map_err(|_| {
            Refusal::Invalid("bad signature (issued by another server, or altered)")
        })?;
        let payload = base64_simd::URL_SAFE_NO_PAD
            .decode_to_vec(payload)
            .map_err(|_| Refusal::Invalid("malformed signed token"))?;
        let v: serde_json::Value = serde_json::from_slice(&payload)
            .map_err(|_| Refusal::Invalid("malformed signed token"))?;
        let exp = v["exp"].as_u64().unwrap_or(0);
        if exp <= now() {
            return Err(Refusal::Invalid("expired: log in again"));
        }
        let scopes = v["scp"]
            .as_str()
            .unwrap_or("")
            .split(',')
            .filter_map(Scope::parse)
            .collect();
        Ok((v["sub"].as_str().unwrap_or("").to_owned(), scopes))
    }

    /// `POST /login`: a signed token for a user whose password matches, valid for `ttl`.
    /// The same answer for an unknown user and a wrong password.
    pub fn login(&self, username: &str, password: &str) -> Result<(String, u64), Refusal> {
        const WRONG: Refusal = Refusal::Invalid("wrong username or password");
        let user = self.users.iter().find(|u| u.name == username);
        let hash = user.map_or(self.dummy.as_str(), |u| u.secret.as_str());
        let parsed = PasswordHash::new(hash).map_err(|_| WRONG)?;
        // Verified even for an unknown user, so timing does not tell users apart.
        let ok = Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok();
        let user = user.filter(|_| ok).ok_or(WRONG)?;
        let exp = now() + self.ttl.as_secs();
        let scopes: Vec<&str> = user.scopes.iter().map(|s| s.name()).collect();
        let payload = serde_json::json!({"sub": user.name, "scp": scopes.join(","), "exp": exp});
        let payload = base64_simd::URL_SAFE_NO_PAD.encode_to_string(payload.to_string().as_bytes());
        let mut m = HmacSha256::new_from_slice(&self.key).expect("HMAC takes any key length");
        m.update(payload.as_bytes());
        let mac = base64_simd::URL_SAFE_NO_PAD.encode_to_string(m.finalize().into_bytes());
        Ok((format!("{SIGNED_PREFIX}{payload}.{mac}"), exp))
    }
}

impl Refusal {
    pub fn to_error(&self) -> crate::error::ServeError {
        use crate::error::{Kind, ServeError};
        let kind = match self {
            Refusal::Forbidden { .. } => Kind::Forbidden,
            _ => Kind::Unauthenticated,
        };
        ServeError::new(kind, self.to_string())
    }
}

/// The scope a REST route needs; `None` for the open ones (health, metrics, login).
pub fn rest_scope(path: &str) -> Option<Scope> {
    const OPEN: [&str; 11] = [
        "/live",
        "/ready",
        "/health/ping",
        "/health/status",
        "/api/v1.0/health/ping",
        "/api/v1.0/health/status",
        "/metrics",
        "/prometheus",
        "/login",
        "/v2/health/live",
        "/v2/health/ready",
    ];
    if OPEN.contains(&path)
        || path == "/v2"
        || (path.starts_with("/v2/models/") && path.ends_with("/ready"))
    {
        return None;
    }
    if path.starts_with("/v2/repository/models/") || path.starts_with("/api/v1.0/publish") {
        return Some(Scope::Publish);
    }
    Some(Scope::Predict)
}

/// The scope a gRPC method (`/package.Service/Method`) needs; `None` for health,
/// reflection and the V2 liveness and readiness calls.
pub fn grpc_scope(path: &str) -> Option<Scope> {
    const V2: &str = "/inference.GRPCInferenceService/";
    if path.starts_with("/grpc.health.") || path.starts_with("/grpc.reflection.") {
        return None;
    }
    match path.strip_prefix(V2) {
        Some("ServerLive" | "ServerReady" | "ModelReady") => None,
        Some("RepositoryModelLoad" | "RepositoryModelUnload") => Some(Scope::Publish),
        _ => Some(Scope::Predict),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(dir: &Path) -> Auth {
        let tokens = dir.join("tokens");
        std::fs::write(
            &tokens,
            format!(
                "# comment\nbot predict {}\nops predict,publish {}\n",
                token_digest("s3cret-bot"),
                token_digest("s3cret-ops")
            ),
        )
        .unwrap();
        let users = dir.join("users");
        std::fs::write(
            &users,
            format!("alice predict {}\n", hash_password("pw").unwrap()),
        )
        .unwrap();
        Auth::load(
            Some(&tokens),
            Some(&users),
            vec![7; 32],
            Duration::from_secs(60),
        )
        .unwrap()
    }

    #[test]
    fn tokens_scopes_and_logins() {
        let dir = std::env::temp_dir().join(format!("iw-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = auth(&dir);
        assert_eq!(
            a.check(Some("Bearer s3cret-bot"), Scope::Predict),
            Ok("bot".into())
        );
        assert!(matches!(
            a.check(Some("Bearer s3cret-bot"), Scope::Publish),
            Err(Refusal::Forbidden { .. })
        ));
        assert_eq!(
            a.check(Some("Bearer s3cret-ops"), Scope::Publish),
            Ok("ops".into())
        );
        assert_eq!(a.check(None, Scope::Predict), Err(Refusal::Missing));
        assert!(matches!(
            a.check(Some("Bearer nope"), Scope::Predict),
            Err(Refusal::Invalid(_))
        ));
        assert!(matches!(
            a.check(Some("Basic x"), Scope::Predict),
            Err(Refusal::Invalid(_))
        ));
        let (token, _) = a.login("alice", "pw").unwrap();
        assert_eq!(
            a.check(Some(&format!("Bearer {token}")), Scope::Predict),
            Ok("alice".into())
        );
        assert!(a.login("alice", "wrong").is_err());
        assert_eq!(
            a.login("bob", "pw").unwrap_err(),
            a.login("alice", "x").unwrap_err()
        );
        let tampered = token.replace("iw1.e", "iw1.f");
        assert!(a
            .check(Some(&format!("Bearer {tampered}")), Scope::Predict)
            .is_err());
        let other = Auth::load(None, None, vec![8; 32], Duration::from_secs(60)).unwrap();
        assert!(other
            .check(Some(&format!("Bearer {token}")), Scope::Predict)
            .is_err());
        assert!(format!("{a:?}").contains("tokens: 2"));
    }

    #[test]
    fn route_scopes() {
        assert_eq!(rest_scope("/health/ping"), None);
        assert_eq!(rest_scope("/v2/models/m/versions/1/ready"), None);
        assert_eq!(rest_scope("/api/v1.0/predictions"), Some(Scope::Predict));
        assert_eq!(rest_scope("/v2/models/m/infer"), Some(Scope::Predict));
        assert_eq!(
            rest_scope("/v2/repository/models/m/load"),
            Some(Scope::Publish)
        );
        assert_eq!(grpc_scope("/grpc.health.v1.Health/Check"), None);
        assert_eq!(
            grpc_scope("/inference.GRPCInferenceService/ModelInfer"),
            Some(Scope::Predict)
        );
        assert_eq!(
            grpc_scope("/seldon.protos.Seldon/Predict"),
            Some(Scope::Predict)
        );
        assert_eq!(
            grpc_scope("/inference.GRPCInferenceService/RepositoryModelLoad"),
            Some(Scope::Publish)
        );
    }

    #[test]
    fn bad_files_say_where() {
        let dir = std::env::temp_dir().join(format!("iw-auth-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("tokens");
        std::fs::write(&f, "bot predict\n").unwrap();
        let e = Auth::load(Some(&f), None, vec![0; 32], Duration::ZERO).unwrap_err();
        assert!(e.contains("line 1: expected NAME SCOPES HASH"), "{e}");
        std::fs::write(&f, "bot admin abcd\n").unwrap();
        let e = Auth::load(Some(&f), None, vec![0; 32], Duration::ZERO).unwrap_err();
        assert!(e.contains("unknown scope \"admin\""), "{e}");
    }
}
