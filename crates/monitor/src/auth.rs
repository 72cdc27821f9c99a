//! Basic authentication of the endpoint against the bcrypt hashes of the
//! web configuration (`basic_auth_users`).
//!
//! A bcrypt verification costs tens of milliseconds by design, and a
//! scraper sends the same header every scrape: a verification's outcome
//! is therefore cached, keyed by a SHA-256 of the user, the hash and the
//! password (so the cache holds no password), at most [`CACHE`] entries.
//! An unknown user is verified against a hash of the same cost all the
//! same, so the time of an answer does not tell which users exist.
//! Nothing here logs or prints a password.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, OnceLock};

use base64::Engine as _;

use crate::web_config::Hash;

/// Outcomes kept at most; beyond, an arbitrary one is forgotten.
pub const CACHE: usize = 256;

/// The users and their hashes, with the cache of outcomes.
#[derive(Debug)]
pub struct BasicAuth {
    users: BTreeMap<String, Hash>,
    cache: Mutex<HashMap<[u8; 32], bool>>,
    /// What unknown users are verified against: a hash of a random
    /// password at the users' cost, made on first need.
    decoy: OnceLock<Option<String>>,
}

/// What a request's `Authorization` header needs.
#[derive(Debug)]
pub enum Check {
    /// Known already (cached), or no credentials at all.
    Done(bool),
    /// A bcrypt verification, for [`BasicAuth::verify`] (off the server's
    /// thread: it is slow on purpose).
    Verify(Credentials),
}

/// Credentials to verify. Its `Debug` shows only the user.
pub struct Credentials {
    user: String,
    password: Vec<u8>,
    key: [u8; 32],
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Credentials {{ user: {:?}, password: <hidden> }}",
            self.user
        )
    }
}

impl BasicAuth {
    pub fn new(users: BTreeMap<String, Hash>) -> BasicAuth {
        BasicAuth {
            users,
            cache: Mutex::new(HashMap::new()),
            decoy: OnceLock::new(),
        }
    }

    /// Checks an `Authorization` header value (None: absent).
    pub fn check(&self, header: Option<&[u8]>) -> Check {
        let Some((user, password)) = header.and_then(decode) else {
            return Check::Done(false);
        };
        let hash = self.users.get(&user).map_or("", |h| h.0.as_str());
        let mut hasher = ring::digest::Context::new(&ring::digest::SHA256);
        for part in [user.as_bytes(), hash.as_bytes(), &password] {
            hasher.update(&(part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
        let mut key = [0u8; 32];
        key.copy_from_slice(hasher.finish().as_ref());
        if let Some(ok) = self.lock().get(&key) {
            return Check::Done(*ok);
        }
        Check::Verify(Credentials {
            user,
            password,
            key,
        })
    }

    /// Verifies with bcrypt (slow), and remembers the outcome.
    pub fn verify(&self, c: Credentials) -> bool {
        let ok = match self.users.get(&c.user) {
            // Passwords beyond bcrypt's 72 bytes are refused rather than
            // cut, so no longer password matches a shorter one.
            Some(hash) => bcrypt::non_truncating_verify(&c.password, &hash.0).unwrap_or(false),
            None => {
                if let Some(decoy) = self.decoy() {
                    let _ = bcrypt::verify(&c.password, decoy);
                }
                false
            }
        };
        let mut cache = self.lock();
        if cache.len() >= CACHE {
            if let Some(k) = cache.keys().next().copied() {
                cache.remove(&k);
            }
        }
        cache.insert(c.key, ok);
        ok
    }

    fn decoy(&self) -> Option<&str> {
        self.decoy
            .get_or_init(|| {
                let cost = self
                    .users
                    .values()
                    .find_map(|h| h.0.parse::<bcrypt::HashParts>().ok())
                    .map_or(bcrypt::DEFAULT_COST, |p| p.get_cost());
                let mut random = [0u8; 16];
                ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut random)
                    .ok()?;
                bcrypt::hash(random, cost).ok()
            })
            .as_deref()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], bool>> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `Basic base64(user:password)` as (user, password); None when it is not.
fn decode(header: &[u8]) -> Option<(String, Vec<u8>)> {
    let text = std::str::from_utf8(header).ok()?.trim();
    let (scheme, encoded) = text.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let colon = decoded.iter().position(|b| *b == b':')?;
    let user = String::from_utf8(decoded[..colon].to_vec()).ok()?;
    Some((user, decoded[colon + 1..].to_vec()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn header(user: &str, password: &str) -> Vec<u8> {
        let encoded =
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        format!("Basic {encoded}").into_bytes()
    }

    fn verdict(auth: &BasicAuth, h: Option<&[u8]>) -> (bool, bool) {
        match auth.check(h) {
            Check::Done(ok) => (ok, true),
            Check::Verify(c) => (auth.verify(c), false),
        }
    }

    #[test]
    fn only_the_right_password_passes_and_outcomes_are_cached() {
        let users = BTreeMap::from([(
            "prometheus".to_string(),
            Hash(bcrypt::hash("s3cret:x", 4).unwrap()),
        )]);
        let auth = BasicAuth::new(users);
        let good = header("prometheus", "s3cret:x");
        assert_eq!(verdict(&auth, Some(&good)), (true, false));
        // The second time comes from the cache.
        assert_eq!(verdict(&auth, Some(&good)), (true, true));
        let lower = String::from_utf8(good.clone())
            .unwrap()
            .replace("Basic", "basic");
        assert_eq!(verdict(&auth, Some(lower.as_bytes())), (true, true));
        for bad in [
            header("prometheus", "s3cret"),
            header("prometheus", "s3cret:x "),
            header("Prometheus", "s3cret:x"),
            header("nobody", "s3cret:x"),
        ] {
            assert_eq!(verdict(&auth, Some(&bad)), (false, false));
            assert_eq!(verdict(&auth, Some(&bad)), (false, true));
        }
        for junk in [&b"Bearer abc"[..], b"Basic !!!", b"Basic", b"\xff\xfe"] {
            assert_eq!(verdict(&auth, Some(junk)), (false, true));
        }
        assert_eq!(verdict(&auth, None), (false, true));
        // No password in the Debug of what is verified.
        let Check::Verify(c) = auth.check(Some(&header("x", "hunter2"))) else {
            panic!("an unknown password must be verified");
        };
        assert!(!format!("{c:?}").contains("hunter2"));
    }

    #[test]
    fn the_cache_is_bounded() {
        let users = BTreeMap::from([("u".to_string(), Hash(bcrypt::hash("p", 4).unwrap()))]);
        let auth = BasicAuth::new(users);
        for i in 0..CACHE + 10 {
            let h = header("u", &format!("wrong{i}"));
            if let Check::Verify(c) = auth.check(Some(&h)) {
                assert!(!auth.verify(c));
            }
        }
        assert_eq!(auth.lock().len(), CACHE);
    }
}
