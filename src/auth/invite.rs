//! The signup gate's secrets (§14.1): the invite code check, the
//! `root_invite` cookie (HMAC-SHA256 keyed by `SESSION_COOKIE_SECRET` over
//! its issue time and a random nonce, 30 days) and the gate forms' CSRF
//! tokens (a random per-browser cookie the form must echo signed). The gate
//! is open only when both `PLATFORM_SIGNUP_CODE` and `SESSION_COOKIE_SECRET`
//! are set.

use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::{Digest, Sha256};
use storage::Ts;
use subtle::ConstantTimeEq;

use super::{DashboardAuth, new_token};

/// The invite cookie (§14.1).
pub const INVITE_COOKIE: &str = "root_invite";
/// An invite lasts this many days (§14.1).
pub const INVITE_DAYS: i64 = 30;
/// The gate forms' CSRF cookie (random; the forms carry it signed).
pub const GATE_CSRF_COOKIE: &str = "root_signup_csrf";
/// Bytes of randomness in an invite's nonce.
const NONCE_BYTES: usize = 16;
/// An invite issued this far in the future (a clock stepped back) is
/// still honoured; beyond it the cookie is not one of ours.
const CLOCK_SKEW_SECS: i64 = 300;
/// Domain separation of the two MACs keyed by the same secret.
const INVITE_CONTEXT: &[u8] = b"root-invite:v1:";
const CSRF_CONTEXT: &[u8] = b"root-signup-csrf:v1:";

/// Why an invite cookie was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InviteRefusal {
    /// Not of the cookie's shape.
    #[error("this invite is not one this server issued")]
    Malformed,
    /// The signature does not match (forged, tampered, or signed with a
    /// previous `SESSION_COOKIE_SECRET`).
    #[error("this invite's signature does not match")]
    Forged,
    /// Older than 30 days.
    #[error("this invite has expired")]
    Expired,
}

/// The open signup gate: the invite code and the cookie secret.
pub struct SignupGate<'a> {
    code: &'a str,
    secret: &'a [u8],
}

impl DashboardAuth {
    /// The signup gate, when open: `PLATFORM_SIGNUP_CODE` and
    /// `SESSION_COOKIE_SECRET` both set.
    pub fn signup_gate(&self) -> Option<SignupGate<'_>> {
        let code = self.config.platform_signup_code.as_ref()?.expose();
        let secret = self.config.session_cookie_secret.as_ref()?.expose();
        Some(SignupGate {
            code,
            secret: secret.as_bytes(),
        })
    }
}

impl SignupGate<'_> {
    /// Whether `given` (trimmed) is the invite code, in constant time: both
    /// sides are hashed first, so not even the length is compared.
    pub fn code_matches(&self, given: &str) -> bool {
        let given = Sha256::digest(given.trim().as_bytes());
        let code = Sha256::digest(self.code.trim().as_bytes());
        bool::from(given.as_slice().ct_eq(code.as_slice()))
    }

    fn mac(&self, context: &[u8], payload: &str) -> Hmac<Sha256> {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(self.secret).expect("HMAC takes keys of any length");
        mac.update(context);
        mac.update(payload.as_bytes());
        mac
    }

    /// A new invite cookie value issued at `now`:
    /// `<issued-at seconds>.<nonce>.<hmac>` (hex).
    pub fn issue_invite(&self, now: Ts) -> String {
        let mut nonce = [0u8; NONCE_BYTES];
        rand::rng().fill_bytes(&mut nonce);
        let payload = format!(
            "{}.{}",
            now.micros().div_euclid(1_000_000),
            hex::encode(nonce)
        );
        let sig = hex::encode(self.mac(INVITE_CONTEXT, &payload).finalize().into_bytes());
        format!("{payload}.{sig}")
    }

    /// When the invite `value` was issued, if it is ours (constant-time
    /// signature check) and at most 30 days old at `now`.
    pub fn check_invite(&self, value: &str, now: Ts) -> Result<Ts, InviteRefusal> {
        let mut parts = value.trim().split('.');
        let (Some(issued), Some(nonce), Some(sig), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(InviteRefusal::Malformed);
        };
        let issued_secs: i64 = issued.parse().map_err(|_| InviteRefusal::Malformed)?;
        let nonce_ok = nonce.len() == 2 * NONCE_BYTES && hex::decode(nonce).is_ok();
        let Ok(sig) = hex::decode(sig) else {
            return Err(InviteRefusal::Malformed);
        };
        if !nonce_ok || issued.starts_with(['+', '-']) {
            return Err(InviteRefusal::Malformed);
        }
        self.mac(INVITE_CONTEXT, &format!("{issued}.{nonce}"))
            .verify_slice(&sig)
            .map_err(|_| InviteRefusal::Forged)?;
        let now_secs = now.micros().div_euclid(1_000_000);
        if issued_secs > now_secs.saturating_add(CLOCK_SKEW_SECS) {
            return Err(InviteRefusal::Malformed);
        }
        if now_secs.saturating_sub(issued_secs) > INVITE_DAYS * 86_400 {
            return Err(InviteRefusal::Expired);
        }
        Ok(Ts::from_secs(issued_secs))
    }

    /// A fresh value for the gate's CSRF cookie.
    pub fn new_form_key() -> String {
        new_token()
    }

    /// The CSRF token the gate's forms carry for the cookie `form_key`.
    pub fn form_token(&self, form_key: &str) -> String {
        hex::encode(self.mac(CSRF_CONTEXT, form_key).finalize().into_bytes())
    }

    /// Whether `token` is the CSRF token of the cookie `form_key` (constant
    /// time; an empty key never matches).
    pub fn form_token_ok(&self, form_key: &str, token: &str) -> bool {
        let Ok(given) = hex::decode(token.trim()) else {
            return false;
        };
        !form_key.is_empty()
            && self
                .mac(CSRF_CONTEXT, form_key)
                .verify_slice(&given)
                .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate<'a>(code: &'a str, secret: &'a str) -> SignupGate<'a> {
        SignupGate {
            code,
            secret: secret.as_bytes(),
        }
    }

    const DAY: i64 = 86_400;

    #[test]
    fn an_invite_round_trips_for_30_days_and_then_expires() {
        let g = gate("open-sesame", "cookie-secret-0123456789");
        let issued = Ts::from_secs(1_700_000_000);
        let v = g.issue_invite(issued);
        assert!(v.starts_with("1700000000."), "{v}");
        assert!(
            v.chars().all(|c| c.is_ascii_hexdigit() || c == '.'),
            "cookie-safe: {v}"
        );
        assert_eq!(g.check_invite(&v, issued), Ok(issued));
        let last = Ts::from_secs(1_700_000_000 + INVITE_DAYS * DAY);
        assert_eq!(
            g.check_invite(&v, last),
            Ok(issued),
            "30 days to the second"
        );
        let late = Ts::from_secs(1_700_000_000 + INVITE_DAYS * DAY + 1);
        assert_eq!(g.check_invite(&v, late), Err(InviteRefusal::Expired));
        assert_ne!(g.issue_invite(issued), v, "each invite has its own nonce");
    }

    #[test]
    fn forged_tampered_and_malformed_invites_are_refused() {
        let g = gate("open-sesame", "cookie-secret-0123456789");
        let now = Ts::from_secs(1_700_000_000);
        let v = g.issue_invite(now);
        let other = gate("open-sesame", "another-secret").issue_invite(now);
        assert_eq!(g.check_invite(&other, now), Err(InviteRefusal::Forged));
        // A later issue time under the old signature.
        let (_, rest) = v.split_once('.').unwrap();
        let moved = format!("1700000100.{rest}");
        assert_eq!(g.check_invite(&moved, now), Err(InviteRefusal::Forged));
        let mut flipped = v.clone();
        let last = flipped.pop().unwrap();
        flipped.push(if last == '0' { '1' } else { '0' });
        assert_eq!(g.check_invite(&flipped, now), Err(InviteRefusal::Forged));
        for bad in [
            "",
            "garbage",
            "1.2",
            &format!("{v}.extra"),
            &format!("x{v}"),
            &format!("+{v}"),
            &v.replace('.', ":"),
        ] {
            assert_eq!(
                g.check_invite(bad, now),
                Err(InviteRefusal::Malformed),
                "{bad:?}"
            );
        }
        // Issued far in the future of this clock: not ours.
        let future = g.issue_invite(Ts::from_secs(1_700_000_000 + DAY));
        assert_eq!(g.check_invite(&future, now), Err(InviteRefusal::Malformed));
    }

    #[test]
    fn the_code_is_compared_whole_and_trimmed() {
        let g = gate("open-sesame", "s");
        assert!(g.code_matches("open-sesame"));
        assert!(g.code_matches("  open-sesame\n"));
        for bad in ["", "open", "open-sesame2", "OPEN-SESAME"] {
            assert!(!g.code_matches(bad), "{bad:?}");
        }
    }

    #[test]
    fn gate_form_tokens_belong_to_their_cookie_and_secret() {
        let g = gate("c", "secret-a");
        let key = SignupGate::new_form_key();
        let t = g.form_token(&key);
        assert!(g.form_token_ok(&key, &t));
        assert!(!g.form_token_ok(&SignupGate::new_form_key(), &t));
        assert!(!gate("c", "secret-b").form_token_ok(&key, &t));
        assert!(!g.form_token_ok(&key, ""));
        assert!(!g.form_token_ok("", &g.form_token("")));
        assert!(!g.form_token_ok(&key, "zz"));
    }

    #[test]
    fn the_spec_constants() {
        assert_eq!(INVITE_COOKIE, "root_invite");
        assert_eq!(INVITE_DAYS * DAY, 2_592_000);
    }
}
