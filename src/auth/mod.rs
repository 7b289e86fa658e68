//! Dashboard sign-in (§14.1), built in: single-use magic links (15 min,
//! only their SHA-256 stored), revocable server-side sessions behind the
//! `root_session` cookie (30 days), and CSRF tokens derived from the session
//! cookie. The database is the allowlist: `tenant_users` and
//! `platform_admins` decide who may sign in; a link only proves the address.
//! The signup gate's invite cookie and code check are in `invite`.

mod invite;
mod links;
mod retention;
mod session;
pub mod team;

pub use invite::{GATE_CSRF_COOKIE, INVITE_COOKIE, INVITE_DAYS, InviteRefusal, SignupGate};
pub use links::{LinkDelivery, LinkRequest, LoginError};
pub use retention::{EXPIRED_LINK_KEPT_HOURS, PRUNE_BATCH};
pub use session::{Membership, SignedIn};

use std::net::IpAddr;
use std::sync::Arc;

use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::{Digest, Sha256};
use storage::RedbStore;

use crate::config::Config;
use crate::config::client_ip::client_key;
use crate::email::send::PlatformSender;
use crate::platform::clock::Clock;
use crate::platform::rate::{KeyedRateLimiter, Rate};

/// A magic link expires this many minutes after it was issued (§14.1).
pub const LOGIN_LINK_TTL_MINUTES: i64 = 15;
/// A dashboard session lasts this many days (§14.1).
pub const SESSION_DAYS: i64 = 30;
/// The session cookie (§14.1).
pub const SESSION_COOKIE: &str = "root_session";
/// Bytes of randomness in a link token and a session cookie.
const TOKEN_BYTES: usize = 32;
/// Sign-in links requested per target address per hour (a mailbox is not
/// flooded).
pub const LOGIN_REQUESTS_PER_EMAIL_PER_HOUR: u32 = 10;
/// Sign-in links requested per client (IPv4 address or IPv6 /64) per
/// minute: one client cannot spend the server-wide budget (finding M-4).
pub const LOGIN_REQUESTS_PER_IP_PER_MINUTE: u32 = 20;
/// Sign-in links requested per minute, server-wide: a high backstop on the
/// mail a crowd of clients can make the server send.
pub const LOGIN_REQUESTS_PER_MINUTE: u32 = 300;
/// Magic-link callbacks (well-formed tokens) per client per minute. No
/// server-wide cap: a 256-bit token cannot be guessed, and a shared bucket
/// would let one client lock every sign-in.
pub const LINK_CALLBACKS_PER_IP_PER_MINUTE: u32 = 30;
/// Signup-gate code attempts per client per minute.
pub const SIGNUP_CODE_ATTEMPTS_PER_IP_PER_MINUTE: u32 = 10;
/// Signup-gate code attempts per minute, server-wide: the code is chosen by
/// a person, so its guess rate is bounded across clients too; the bucket
/// is the gate's own and cannot lock sign-in.
pub const SIGNUP_CODE_ATTEMPTS_PER_MINUTE: u32 = 60;

/// A sign-in attempt the limits count. Each kind has its own buckets, so a
/// flood of one kind cannot lock the others (security finding M-4).
#[derive(Clone, Copy, Debug)]
pub enum Attempt<'a> {
    /// A magic link requested for this address (the login form, signup).
    LinkRequest(&'a str),
    /// A magic-link callback carrying a [well-formed](well_formed_token) token.
    Callback,
    /// A signup-gate invite code.
    SignupCode,
}

/// Sign-in, sessions and CSRF for the dashboard.
#[derive(Clone)]
pub struct DashboardAuth {
    store: RedbStore,
    clock: Arc<dyn Clock>,
    config: Arc<Config>,
    mail: PlatformSender,
    attempts: Arc<KeyedRateLimiter<String>>,
}

impl DashboardAuth {
    /// Over `store`, sending links through the platform's mail providers.
    pub fn new(
        store: RedbStore,
        clock: Arc<dyn Clock>,
        config: Arc<Config>,
        mail: PlatformSender,
    ) -> Self {
        DashboardAuth {
            store,
            clock,
            config,
            mail,
            attempts: Arc::new(KeyedRateLimiter::default()),
        }
    }

    /// Admit one `attempt` from `client` (the socket's peer, or the client
    /// a trusted proxy names), or the wait in whole seconds. All or
    /// nothing: a refused attempt spends no bucket.
    pub fn admit(&self, attempt: Attempt<'_>, client: Option<IpAddr>) -> Result<(), u64> {
        let ip = client_key(client);
        let keys = match attempt {
            Attempt::LinkRequest(email) => vec![
                (
                    format!("request:ip:{ip}"),
                    Rate::per_minute(LOGIN_REQUESTS_PER_IP_PER_MINUTE),
                ),
                (
                    format!("request:email:{}", email.trim().to_lowercase()),
                    Rate::per_hour(LOGIN_REQUESTS_PER_EMAIL_PER_HOUR),
                ),
                (
                    "request:*".to_string(),
                    Rate::per_minute(LOGIN_REQUESTS_PER_MINUTE),
                ),
            ],
            Attempt::Callback => vec![(
                format!("callback:ip:{ip}"),
                Rate::per_minute(LINK_CALLBACKS_PER_IP_PER_MINUTE),
            )],
            Attempt::SignupCode => vec![
                (
                    format!("code:ip:{ip}"),
                    Rate::per_minute(SIGNUP_CODE_ATTEMPTS_PER_IP_PER_MINUTE),
                ),
                (
                    "code:*".to_string(),
                    Rate::per_minute(SIGNUP_CODE_ATTEMPTS_PER_MINUTE),
                ),
            ],
        };
        self.attempts
            .try_acquire_all(&keys, self.clock.now())
            .map_err(|ms| ms.div_ceil(1000).max(1))
    }

    /// Whether `AUTH_DEV_BYPASS` is honoured (never in production).
    pub fn dev_bypass(&self) -> bool {
        self.config.dev_bypass_enabled()
    }

    /// Whether cookies must be `Secure` (the public address is https).
    pub fn secure_cookies(&self) -> bool {
        self.config.platform_base_url.starts_with("https://")
    }

    /// The CSRF token of the session whose cookie is `raw_session`: an HMAC
    /// keyed by the cookie, so only its holder can compute it and nothing
    /// needs storing.
    pub fn csrf_token(raw_session: &str) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(raw_session.as_bytes())
            .expect("HMAC takes keys of any length");
        mac.update(b"root-dashboard-csrf");
        hex::encode(mac.finalize().into_bytes())
    }

    /// Whether `token` is the CSRF token of `raw_session` (constant time).
    pub fn csrf_ok(raw_session: &str, token: &str) -> bool {
        let Ok(given) = hex::decode(token.trim()) else {
            return false;
        };
        let mut mac = Hmac::<Sha256>::new_from_slice(raw_session.as_bytes())
            .expect("HMAC takes keys of any length");
        mac.update(b"root-dashboard-csrf");
        mac.verify_slice(&given).is_ok()
    }
}

/// A fresh random token (hex).
fn new_token() -> String {
    let mut bytes = [0u8; TOKEN_BYTES];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// Whether `raw` has the shape of a link token (64 hex digits): anything
/// else is refused without a lookup and without spending a bucket.
pub fn well_formed_token(raw: &str) -> bool {
    raw.len() == 2 * TOKEN_BYTES && raw.bytes().all(|b| b.is_ascii_hexdigit())
}

/// SHA-256 hex of a token: what the tables store.
fn token_hash(raw: &str) -> String {
    hex::encode(Sha256::digest(raw.trim().as_bytes()))
}

/// `email` trimmed and lower-cased, or `None` when it is not an address.
pub fn normalize_email(email: &str) -> Option<String> {
    let e = email.trim().to_lowercase();
    let (local, domain) = e.split_once('@')?;
    let ok = !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !e.contains(char::is_whitespace)
        && e.len() <= 254;
    ok.then_some(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csrf_tokens_belong_to_their_session() {
        let a = new_token();
        let b = new_token();
        let t = DashboardAuth::csrf_token(&a);
        assert!(DashboardAuth::csrf_ok(&a, &t));
        assert!(!DashboardAuth::csrf_ok(&b, &t), "another session's token");
        assert!(!DashboardAuth::csrf_ok(&a, ""));
        assert!(!DashboardAuth::csrf_ok(&a, "zz"));
        assert_ne!(a, b);
        assert_eq!(a.len(), 2 * TOKEN_BYTES);
        assert!(well_formed_token(&a));
        for bad in [
            "",
            "deadbeef",
            &a[1..],
            &format!("{a}0"),
            &a.replace(&a[..1], "g"),
        ] {
            assert!(!well_formed_token(bad), "{bad}");
        }
    }

    #[test]
    fn emails_are_normalised_or_refused() {
        assert_eq!(
            normalize_email("  Ada@Example.ORG "),
            Some("ada@example.org".into())
        );
        for bad in [
            "",
            "ada",
            "ada@",
            "@example.org",
            "a b@example.org",
            "ada@localhost",
        ] {
            assert_eq!(normalize_email(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_spec_constants() {
        assert_eq!(LOGIN_LINK_TTL_MINUTES, 15);
        assert_eq!(SESSION_DAYS, 30);
        assert_eq!(SESSION_COOKIE, "root_session");
    }
}
