//! Platform-admin API keys: the bearer credential of `/api/v1/platform/*`
//! (publishing community builds, exporting and deleting tenants).
//!
//! A key is `rpa_` + 24 random bytes as hex — a prefix no tenant key
//! (`rpk_live_`, `rpk_dev_`, legacy `rpk_`) starts with, so the two kinds
//! are told apart before any lookup. Only the SHA-256 hex is stored
//! (`platform_api_keys`), with a display prefix, a name and the
//! `platform_admins` email the key acts for; a key whose email has left
//! `platform_admins` stops working at the next request.

use rand::RngCore;
use storage::{PlatformAdmin, PlatformApiKey, RedbStore, Scan, StorageError, Store, Ts, key};

use uuid::Uuid;

use super::api_keys::{KEY_RANDOM_BYTES, hash_token};

/// Prefix of platform-admin keys.
pub const PLATFORM_PREFIX: &str = "rpa_";

/// A fresh raw platform key.
pub fn generate_token() -> String {
    let mut bytes = [0u8; KEY_RANDOM_BYTES];
    rand::rng().fill_bytes(&mut bytes);
    format!("{PLATFORM_PREFIX}{}", hex::encode(bytes))
}

/// Is `raw` shaped like a platform key (`rpa_` + 48 lower-case hex)?
pub fn is_platform_token(raw: &str) -> bool {
    raw.strip_prefix(PLATFORM_PREFIX).is_some_and(|rest| {
        rest.len() == KEY_RANDOM_BYTES * 2
            && rest
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Display prefix: `rpa_` and the first 8 random characters.
pub fn display_prefix(raw: &str) -> String {
    raw.chars().take(PLATFORM_PREFIX.len() + 8).collect()
}

/// Why a platform-key operation failed.
#[derive(Debug, thiserror::Error)]
pub enum PlatformKeyError {
    /// The email is not in `platform_admins`.
    #[error("{0} is not a platform admin")]
    NotPlatformAdmin(String),
    /// The name is blank or too long.
    #[error("the key name must be 1–100 characters")]
    BadName,
    /// No key with that id or prefix (or more than one with the prefix).
    #[error("{0}")]
    NotFound(String),
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// A newly minted key: the raw value is shown once and never stored.
#[derive(Debug)]
pub struct MintedPlatformKey {
    /// The raw key (print once).
    pub raw: String,
    /// The stored row (hash only).
    pub row: PlatformApiKey,
}

/// Is `email` (any case) in `platform_admins`?
pub async fn is_platform_admin(store: &RedbStore, email: &str) -> Result<bool, StorageError> {
    let found: Option<PlatformAdmin> = store
        .find_unique(
            None,
            PlatformAdmin::EMAIL_KEY,
            key().str(&email.trim().to_lowercase()),
        )
        .await?;
    Ok(found.is_some())
}

/// Mint a key for the platform admin `email`.
pub async fn mint(
    store: &RedbStore,
    email: &str,
    name: &str,
    now: Ts,
) -> Result<MintedPlatformKey, PlatformKeyError> {
    let email = email.trim().to_lowercase();
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(PlatformKeyError::BadName);
    }
    if !is_platform_admin(store, &email).await? {
        return Err(PlatformKeyError::NotPlatformAdmin(email));
    }
    let raw = generate_token();
    let row = PlatformApiKey {
        id: Uuid::new_v4(),
        email,
        name: name.to_string(),
        token_prefix: display_prefix(&raw),
        token_hash: hash_token(&raw),
        revoked_at: None,
        created_at: now,
    };
    let row = store.insert(row).await?;
    Ok(MintedPlatformKey { raw, row })
}

/// Every platform key (revoked ones included), oldest first.
pub async fn list(store: &RedbStore) -> Result<Vec<PlatformApiKey>, StorageError> {
    let mut rows: Vec<PlatformApiKey> = store.scan(None, Scan::all()).await?;
    rows.sort_by_key(|r| r.created_at);
    Ok(rows)
}

/// Revoke the key named by its id or its display prefix (idempotent).
pub async fn revoke(
    store: &RedbStore,
    reference: &str,
    now: Ts,
) -> Result<PlatformApiKey, PlatformKeyError> {
    let reference = reference.trim();
    let mut matches: Vec<PlatformApiKey> = list(store)
        .await?
        .into_iter()
        .filter(|k| k.id.to_string() == reference || k.token_prefix == reference)
        .collect();
    let mut row = match (matches.pop(), matches.is_empty()) {
        (Some(row), true) => row,
        (Some(_), false) => {
            return Err(PlatformKeyError::NotFound(format!(
                "more than one platform key has the prefix {reference:?}; name it by id"
            )));
        }
        (None, _) => {
            return Err(PlatformKeyError::NotFound(format!(
                "no platform key with id or prefix {reference:?}"
            )));
        }
    };
    if row.revoked_at.is_none() {
        row.revoked_at = Some(now);
        row = store.update(row).await?;
    }
    Ok(row)
}

/// Why a platform key was refused. The HTTP layer answers every variant but
/// `Storage` with one opaque 401; the reason is only logged.
#[derive(Debug, thiserror::Error)]
pub enum PlatformAuthError {
    /// Not an `rpa_` key of the right shape.
    #[error("malformed platform key")]
    Malformed,
    /// No key with this hash.
    #[error("unknown platform key")]
    Unknown,
    /// The key was revoked.
    #[error("revoked platform key")]
    Revoked,
    /// Its email is no longer in `platform_admins`.
    #[error("the key's email is no longer a platform admin")]
    NoLongerAdmin,
    /// Storage failed (500).
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// Authenticate a raw platform key: known, not revoked, and its email
/// still a platform admin.
pub async fn authenticate(
    store: &RedbStore,
    raw: &str,
) -> Result<PlatformApiKey, PlatformAuthError> {
    if !is_platform_token(raw) {
        return Err(PlatformAuthError::Malformed);
    }
    let row: PlatformApiKey = store
        .find_unique(
            None,
            PlatformApiKey::TOKEN_HASH_KEY,
            key().str(&hash_token(raw)),
        )
        .await?
        .ok_or(PlatformAuthError::Unknown)?;
    if row.revoked_at.is_some() {
        return Err(PlatformAuthError::Revoked);
    }
    if !is_platform_admin(store, &row.email).await? {
        return Err(PlatformAuthError::NoLongerAdmin);
    }
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::api_keys::{KeyKind, parse_token};

    #[test]
    fn platform_and_tenant_keys_cannot_be_confused() {
        let raw = generate_token();
        assert!(is_platform_token(&raw));
        assert_eq!(raw.len(), PLATFORM_PREFIX.len() + 48);
        assert_eq!(parse_token(&raw), None, "not a tenant key");
        assert!(raw.starts_with(&display_prefix(&raw)));
        for kind in [KeyKind::Live, KeyKind::Dev, KeyKind::Legacy] {
            let tenant = crate::platform::api_keys::generate_token(kind);
            assert!(!is_platform_token(&tenant), "{tenant}");
        }
        for bad in ["", "rpa_", "rpa_XYZ", &format!("rpa_{}", "a".repeat(47))] {
            assert!(!is_platform_token(bad), "{bad}");
        }
    }
}
