//! Limits on `POST /login`, whose argon2 check is slow on purpose: failed logins are
//! counted per user and per client address, and past the limit a login is refused (429
//! with Retry-After) before any hashing, so a flood costs next to nothing; the hashing
//! itself runs off the I/O threads, a bounded number at a time. The tables are bounded:
//! when one is full of live entries, a new user or client is refused until the oldest
//! lockout window ends (many addresses buy no more guesses, only a wait).
use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

#[derive(Debug, Clone, Copy)]
pub struct LoginLimits {
    /// Failed logins for one username within `window` before it is locked out.
    pub user_failures: u32,
    /// Failed logins from one client address within `window`.
    pub client_failures: u32,
    /// How long failures count, from the first one.
    pub window: Duration,
    /// Password checks running at once.
    pub hashing: usize,
    /// How long a login may wait for a turn before it gets 503.
    pub hashing_wait: Duration,
    /// Users and client addresses each table holds at most.
    pub table_entries: usize,
}

impl Default for LoginLimits {
    fn default() -> Self {
        Self {
            user_failures: 5,
            client_failures: 20,
            window: Duration::from_secs(60),
            hashing: 1,
            hashing_wait: Duration::from_secs(5),
            table_entries: 10_000,
        }
    }
}

struct Count {
    failures: u32,
    since: Instant,
}

struct Table<K> {
    map: HashMap<K, Count>,
}

impl<K: Hash + Eq + Clone> Table<K> {
    /// `Err(wait)` when `key` has used up `limit` within `window`, or is new and the
    /// table has no room.
    fn check(
        &mut self,
        key: &K,
        limit: u32,
        l: &LoginLimits,
        now: Instant,
    ) -> Result<(), Duration> {
        if let Some(c) = self.map.get_mut(key) {
            if now.duration_since(c.since) >= l.window {
                *c = Count {
                    failures: 0,
                    since: now,
                };
            }
            if c.failures >= limit {
                return Err(l.window.saturating_sub(now.duration_since(c.since)));
            }
            return Ok(());
        }
        if self.map.len() >= l.table_entries {
            self.map
                .retain(|_, c| now.duration_since(c.since) < l.window);
        }
        if self.map.len() >= l.table_entries {
            let oldest = self.map.values().map(|c| c.since).min().unwrap_or(now);
            return Err(l.window.saturating_sub(now.duration_since(oldest)));
        }
        Ok(())
    }

    fn fail(&mut self, key: K, now: Instant) {
        self.map
            .entry(key)
            .or_insert(Count {
                failures: 0,
                since: now,
            })
            .failures += 1;
    }

    fn forgive(&mut self, key: &K) {
        if let Some(c) = self.map.get_mut(key) {
            c.failures = c.failures.saturating_sub(1);
        }
    }
}

pub struct LoginGuard {
    pub limits: LoginLimits,
    users: Mutex<Table<[u8; 32]>>,
    clients: Mutex<Table<IpAddr>>,
    pub hashing: tokio::sync::Semaphore,
}

/// Usernames are keyed by hash: an attacker's long names cost the table 32 bytes each.
fn user_key(user: &str) -> [u8; 32] {
    Sha256::digest(user.as_bytes()).into()
}

/// IPv6 clients by their /64: one host usually holds a whole /64, and must not get a
/// fresh count per address in it.
fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !u128::from(u64::MAX)).into()),
        },
        v4 => v4,
    }
}

impl LoginGuard {
    pub fn new(limits: LoginLimits) -> Self {
        Self {
            limits,
            users: Mutex::new(Table {
                map: HashMap::new(),
            }),
            clients: Mutex::new(Table {
                map: HashMap::new(),
            }),
            hashing: tokio::sync::Semaphore::new(limits.hashing.max(1)),
        }
    }

    /// Before a password check: `Err(retry_after)` if `user` or `client` is locked out.
    /// Otherwise the attempt is counted as a failure now, so that concurrent attempts
    /// cannot slip past the limit; `succeeded` or `not_tried` take it back.
    pub fn admit(&self, user: &str, client: IpAddr) -> Result<(), Duration> {
        let now = Instant::now();
        let l = &self.limits;
        let key = user_key(user);
        let client = client_key(client);
        // Always users, then clients: one lock order.
        let mut users = self.users.lock().unwrap_or_else(|e| e.into_inner());
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        users.check(&key, l.user_failures, l, now)?;
        clients.check(&client, l.client_failures, l, now)?;
        users.fail(key, now);
        clients.fail(client, now);
        Ok(())
    }

    /// The password was right: the user's failures are forgotten (the client's other
    /// failures stand, so one valid account does not reset guesses at others).
    pub fn succeeded(&self, user: &str, client: IpAddr) {
        self.users
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map
            .remove(&user_key(user));
        self.clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .forgive(&client_key(client));
    }

    /// The attempt never reached a password check (no turn to hash in time).
    pub fn not_tried(&self, user: &str, client: IpAddr) {
        self.users
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .forgive(&user_key(user));
        self.clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .forgive(&client_key(client));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(entries: usize) -> LoginGuard {
        LoginGuard::new(LoginLimits {
            user_failures: 3,
            client_failures: 5,
            table_entries: entries,
            ..LoginLimits::default()
        })
    }

    #[test]
    fn user_and_client_limits() {
        let g = guard(100);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        for _ in 0..3 {
            g.admit("alice", a).unwrap();
        }
        let wait = g.admit("alice", b).unwrap_err();
        assert!(wait > Duration::from_secs(50), "{wait:?}");
        // Another user from the same client still gets its tries, up to the client's.
        g.admit("bob", a).unwrap();
        g.admit("bob", a).unwrap();
        assert!(g.admit("carol", a).is_err());
        assert!(g.admit("carol", b).is_ok());
        // A success forgets the user's failures.
        g.succeeded("carol", b);
        for _ in 0..3 {
            g.admit("carol", b).unwrap();
        }
        assert!(g.admit("carol", b).is_err());
    }

    #[test]
    fn tables_stay_bounded() {
        let g = guard(10);
        for i in 0..10u8 {
            g.admit(&format!("u{i}"), IpAddr::from([10, 0, 1, i]))
                .unwrap();
        }
        // Full of live entries: a new name or address waits, memory does not grow.
        assert!(g.admit("new", IpAddr::from([10, 0, 1, 0])).is_err());
        assert!(g.admit("u0", IpAddr::from([10, 0, 2, 0])).is_err());
        assert_eq!(g.users.lock().unwrap().map.len(), 10);
        assert_eq!(g.clients.lock().unwrap().map.len(), 10);
        // Known ones go on until their own limit.
        g.admit("u1", IpAddr::from([10, 0, 1, 1])).unwrap();
    }

    #[test]
    fn ipv6_clients_count_by_their_64() {
        let g = guard(100);
        for i in 0..5u16 {
            let ip: IpAddr = format!("2001:db8::{i:x}").parse().unwrap();
            g.admit(&format!("u{i}"), ip).unwrap();
        }
        let same_64: IpAddr = "2001:db8::ffff:1".parse().unwrap();
        assert!(g.admit("other", same_64).is_err());
        let mapped: IpAddr = "::ffff:10.0.0.9".parse().unwrap();
        assert_eq!(client_key(mapped), IpAddr::from([10, 0, 0, 9]));
    }
}
