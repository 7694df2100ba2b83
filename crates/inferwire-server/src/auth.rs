//! Bearer-token auth for REST and gRPC. Tokens are either long-lived ones listed, hashed,
//! in a token file, or short-lived ones signed here and handed out by `POST /login` in
//! exchange for a username and password (stored as argon2 hashes). Each token carries
//! scopes: `predict` (predictions, metadata), `publish` (publishing and the repository
//! API). Comparisons are constant-time; no secret is ever logged. Which scope a route
//! needs is its row's `Access` in the route tables (`rest/routes.rs`, `grpc/methods.rs`).
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
    /// No token; `login`: the server has a user file, so `POST /login` can give one.
    Missing {
        login: bool,
    },
    Invalid(&'static str),
    Forbidden {
        who: String,
        need: Scope,
    },
    /// A repository route on a server without auth and without the opt-in.
    RepositoryOff,
}

/// Answer to a repository route on a server without auth: says both ways to enable it.
pub const REPOSITORY_OFF: &str = "the repository API (publish, delete, load, unload, index) \
    is off because this server runs without auth: anyone who can reach it could make it \
    run code (the same holds for changing the trace and logging settings). Configure auth (--auth-tokens or --auth-users; the route then needs the \
    publish scope) or, on a trusted network only, --allow-unauthenticated-repository";

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Missing { login: true } => f.write_str(
                "authentication required: send Authorization: Bearer <token> (POST /login \
                 exchanges a username and password for one)",
            ),
            Refusal::Missing { login: false } => f.write_str(
                "authentication required: send Authorization: Bearer <token> (a token from \
                 this server's token file)",
            ),
            Refusal::Invalid(why) => write!(f, "invalid bearer token: {why}"),
            Refusal::Forbidden { who, need } => write!(
                f,
                "{who}'s token does not have the {} scope this route needs",
                need.name()
            ),
            Refusal::RepositoryOff => f.write_str(REPOSITORY_OFF),
        }
    }
}

/// What a route needs: a token with `scope` (`None`: open to all), and whether it is part
/// of the repository API (refused on a server without auth unless explicitly allowed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    pub scope: Option<Scope>,
    pub repository: bool,
}

impl Access {
    pub const OPEN: Access = Access {
        scope: None,
        repository: false,
    };
    pub const PREDICT: Access = Access {
        scope: Some(Scope::Predict),
        repository: false,
    };
    pub const REPOSITORY_READ: Access = Access {
        scope: Some(Scope::Predict),
        repository: true,
    };
    pub const REPOSITORY_WRITE: Access = Access {
        scope: Some(Scope::Publish),
        repository: true,
    };

    /// How the route tables' tests and docs name it.
    pub fn name(self) -> &'static str {
        match (self.scope, self.repository) {
            (None, _) => "open",
            (Some(Scope::Predict), false) => "predict",
            (Some(Scope::Predict), true) => "repository-read",
            (Some(Scope::Publish), true) => "repository-write",
            (Some(Scope::Publish), false) => "publish",
        }
    }
}

/// Whether a request for a route with `access` may go on. With auth, the token decides;
/// without, everything but the repository API is open, and that only with the opt-in
/// `allow_unauthenticated_repository`.
pub fn admit(
    auth: Option<&Auth>,
    allow_unauthenticated_repository: bool,
    access: Access,
    header: Option<&str>,
) -> Result<(), Refusal> {
    match (auth, access.scope) {
        (Some(auth), Some(need)) => auth.check(header, need).map(|_| ()),
        (None, _) if access.repository && !allow_unauthenticated_repository => {
            Err(Refusal::RepositoryOff)
        }
        _ => Ok(()),
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
    /// Failure limits and the bounded hashing of `POST /login`.
    pub guard: crate::login_guard::LoginGuard,
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
/// How far a token's issue time may lie ahead of this server's clock (servers sharing
/// `auth_secret` on different machines).
const CLOCK_SKEW: u64 = 60;

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
            guard: crate::login_guard::LoginGuard::new(crate::login_guard::LoginLimits::default()),
        })
    }

    /// The same, with `POST /login` limited by `limits` instead of the defaults.
    pub fn with_login_limits(mut self, limits: crate::login_guard::LoginLimits) -> Self {
        self.guard = crate::login_guard::LoginGuard::new(limits);
        self
    }

    /// Checks an `Authorization` header value for `need`; returns who it is.
    pub fn check(&self, header: Option<&str>, need: Scope) -> Result<String, Refusal> {
        let header = header.ok_or(Refusal::Missing {
            login: !self.users.is_empty(),
        })?;
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
        // The signature only says the key signed it: the user must still exist, with at
        // least the token's scopes, and the lifetime must be one this server hands out.
        let iat = v["iat"]
            .as_u64()
            .ok_or(Refusal::Invalid("no issue time (iat): log in again"))?;
        if exp.saturating_sub(iat) > self.ttl.as_secs() || iat > now() + CLOCK_SKEW {
            return Err(Refusal::Invalid(
                "its lifetime is longer than auth_token_ttl allows",
            ));
        }
        let sub = v["sub"].as_str().unwrap_or("");
        let user = self
            .users
            .iter()
            .find(|u| u.name == sub)
            .ok_or(Refusal::Invalid("its user is not in the users file"))?;
        let mut scopes = Vec::new();
        for s in v["scp"].as_str().unwrap_or("").split(',') {
            let scope = Scope::parse(s).ok_or(Refusal::Invalid("malformed signed token"))?;
            if !user.scopes.contains(&scope) {
                return Err(Refusal::Invalid(
                    "its scopes are wider than its user's in the users file",
                ));
            }
            scopes.push(scope);
        }
        Ok((user.name.clone(), scopes))
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
        let iat = now();
        let exp = iat + self.ttl.as_secs();
        let scopes: Vec<&str> = user.scopes.iter().map(|s| s.name()).collect();
        let payload =
            serde_json::json!({"sub": user.name, "scp": scopes.join(","), "iat": iat, "exp": exp});
        Ok((self.sign(&payload), exp))
    }

    /// `iw1.<payload>.<mac>`, both base64url.
    fn sign(&self, payload: &serde_json::Value) -> String {
        let payload = base64_simd::URL_SAFE_NO_PAD.encode_to_string(payload.to_string().as_bytes());
        let mut m = HmacSha256::new_from_slice(&self.key).expect("HMAC takes any key length");
        m.update(payload.as_bytes());
        let mac = base64_simd::URL_SAFE_NO_PAD.encode_to_string(m.finalize().into_bytes());
        format!("{SIGNED_PREFIX}{payload}.{mac}")
    }
}

impl Refusal {
    pub fn to_error(&self) -> crate::error::ServeError {
        use crate::error::{Kind, ServeError};
        let kind = if self.is_forbidden() {
            Kind::Forbidden
        } else {
            Kind::Unauthenticated
        };
        ServeError::new(kind, self.to_string())
    }

    /// 403 / PERMISSION_DENIED rather than 401 / UNAUTHENTICATED.
    pub fn is_forbidden(&self) -> bool {
        matches!(self, Refusal::Forbidden { .. } | Refusal::RepositoryOff)
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
        assert!(matches!(
            a.check(None, Scope::Predict),
            Err(Refusal::Missing { .. })
        ));
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
    fn repository_needs_auth_or_the_opt_in() {
        let write = Access::REPOSITORY_WRITE;
        assert_eq!(admit(None, false, write, None), Err(Refusal::RepositoryOff));
        assert!(Refusal::RepositoryOff.is_forbidden());
        assert!(Refusal::RepositoryOff
            .to_string()
            .contains("--allow-unauthenticated-repository"));
        assert_eq!(admit(None, true, write, None), Ok(()));
        assert_eq!(admit(None, false, Access::PREDICT, None), Ok(()));
        let dir = std::env::temp_dir().join(format!("iw-auth-repo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = auth(&dir);
        // With auth the token decides, opt-in or not.
        assert!(matches!(
            admit(Some(&a), true, write, None),
            Err(Refusal::Missing { .. })
        ));
        assert_eq!(
            admit(Some(&a), false, write, Some("Bearer s3cret-ops")),
            Ok(())
        );
    }

    #[test]
    fn signed_tokens_need_a_current_user_and_a_bounded_lifetime() {
        let dir = std::env::temp_dir().join(format!("iw-auth-signed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = auth(&dir);
        let t = now();
        let check = |payload: serde_json::Value| {
            a.check(
                Some(&format!("Bearer {}", a.sign(&payload))),
                Scope::Predict,
            )
        };
        let ok = serde_json::json!({"sub": "alice", "scp": "predict", "iat": t, "exp": t + 60});
        assert_eq!(check(ok), Ok("alice".into()));
        let ghost =
            serde_json::json!({"sub": "mallory", "scp": "predict", "iat": t, "exp": t + 60});
        assert_eq!(
            check(ghost),
            Err(Refusal::Invalid("its user is not in the users file"))
        );
        let wider =
            serde_json::json!({"sub": "alice", "scp": "predict,publish", "iat": t, "exp": t + 60});
        assert!(matches!(check(wider), Err(Refusal::Invalid(m)) if m.contains("wider")));
        let long = serde_json::json!({"sub": "alice", "scp": "predict", "iat": t, "exp": t + 61});
        assert!(matches!(check(long), Err(Refusal::Invalid(m)) if m.contains("auth_token_ttl")));
        let ahead =
            serde_json::json!({"sub": "alice", "scp": "predict", "iat": t + 3600, "exp": t + 3630});
        assert!(check(ahead).is_err());
        let no_iat = serde_json::json!({"sub": "alice", "scp": "predict", "exp": t + 60});
        assert!(matches!(check(no_iat), Err(Refusal::Invalid(m)) if m.contains("iat")));
        // A token from the bot's token file name is no user either.
        let bot = serde_json::json!({"sub": "bot", "scp": "predict", "iat": t, "exp": t + 60});
        assert!(check(bot).is_err());
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
