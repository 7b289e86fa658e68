//! API keys (§12.1): minting, hashing and bearer authentication.
//!
//! A key is `prefix + 24 random bytes as hex`, prefix `rpk_live_` (live),
//! `rpk_dev_` (dev) or bare `rpk_` (legacy, treated as live). Only the
//! SHA-256 hex of the key is stored; `token_prefix` (first `len(prefix)+8`
//! chars) is kept for display. Lookup is by hash, so the raw key is never
//! compared byte by byte.

use std::sync::Arc;

use rand::RngCore;
use sha2::{Digest, Sha256};
use storage::{
    ApiKeyStore, Environment, RedbStore, StorageError, Store, Tenant, TenantApiKey, TenantStatus,
    TenantStore, Ts,
};
use uuid::Uuid;

use super::clock::{Clock, SystemClock};
use super::tenancy::TenantCache;

/// Prefix of live keys.
pub const LIVE_PREFIX: &str = "rpk_live_";
/// Prefix of dev keys.
pub const DEV_PREFIX: &str = "rpk_dev_";
/// Prefix of legacy keys (live).
pub const LEGACY_PREFIX: &str = "rpk_";
/// Random bytes per key.
pub const KEY_RANDOM_BYTES: usize = 24;

/// Which kind of key to mint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// `rpk_live_…`, bound to the live tenant row.
    Live,
    /// `rpk_dev_…`, bound to the `--dev` shadow row.
    Dev,
    /// bare `rpk_…` (legacy), live.
    Legacy,
}

impl KeyKind {
    /// The key prefix.
    pub fn prefix(self) -> &'static str {
        match self {
            KeyKind::Live => LIVE_PREFIX,
            KeyKind::Dev => DEV_PREFIX,
            KeyKind::Legacy => LEGACY_PREFIX,
        }
    }
    /// The environment stored on the key row.
    pub fn environment(self) -> Environment {
        match self {
            KeyKind::Dev => Environment::Dev,
            KeyKind::Live | KeyKind::Legacy => Environment::Live,
        }
    }
}

/// SHA-256 hex of a raw key.
pub fn hash_token(raw: &str) -> String {
    hex::encode(Sha256::digest(raw.as_bytes()))
}

/// A fresh raw key of `kind`.
pub fn generate_token(kind: KeyKind) -> String {
    let mut bytes = [0u8; KEY_RANDOM_BYTES];
    rand::rng().fill_bytes(&mut bytes);
    format!("{}{}", kind.prefix(), hex::encode(bytes))
}

/// Display prefix: the first `len(prefix) + 8` characters.
pub fn display_prefix(raw: &str, kind: KeyKind) -> String {
    raw.chars().take(kind.prefix().len() + 8).collect()
}

/// The kind of a well-formed key, or `None` for anything else.
pub fn parse_token(raw: &str) -> Option<KeyKind> {
    let (kind, rest) = if let Some(r) = raw.strip_prefix(LIVE_PREFIX) {
        (KeyKind::Live, r)
    } else if let Some(r) = raw.strip_prefix(DEV_PREFIX) {
        (KeyKind::Dev, r)
    } else if let Some(r) = raw.strip_prefix(LEGACY_PREFIX) {
        (KeyKind::Legacy, r)
    } else {
        return None;
    };
    let well_formed = rest.len() == KEY_RANDOM_BYTES * 2
        && rest
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    well_formed.then_some(kind)
}

/// A newly minted key: the raw value is shown once and never stored.
#[derive(Debug)]
pub struct MintedKey {
    /// The raw key (print once).
    pub raw: String,
    /// The stored row (hash only).
    pub row: TenantApiKey,
}

/// Mint a key bound to `tenant` (the live row for live/legacy keys, the
/// shadow row for dev keys — see [`mint_for_slug`] for the pairing).
pub async fn mint(
    store: &RedbStore,
    tenant: &Tenant,
    name: &str,
    kind: KeyKind,
    now: Ts,
) -> Result<MintedKey, StorageError> {
    let raw = generate_token(kind);
    let row = TenantApiKey {
        id: Uuid::new_v4(),
        tenant_id: tenant.id,
        name: name.to_string(),
        token_prefix: display_prefix(&raw, kind),
        token_hash: hash_token(&raw),
        environment: kind.environment(),
        revoked_at: None,
        created_at: now,
    };
    let row = store.insert(row).await?;
    Ok(MintedKey { raw, row })
}

/// Mint a key for the tenant `slug`: dev keys go to `<slug>--dev` (created
/// when missing), live and legacy keys to the live row. For the CLI and
/// tests: stamped by the [`SystemClock`].
pub async fn mint_for_slug(
    store: &RedbStore,
    slug: &str,
    name: &str,
    kind: KeyKind,
) -> Result<(Tenant, MintedKey), MintError> {
    let tenant = store
        .tenant_by_slug(slug)
        .await?
        .ok_or_else(|| MintError::UnknownTenant(slug.to_string()))?;
    let live = match tenant.live_tenant_id {
        Some(live_id) => store
            .tenant_by_id(live_id)
            .await?
            .ok_or_else(|| MintError::UnknownTenant(slug.to_string()))?,
        None => tenant,
    };
    let target = match kind {
        KeyKind::Dev => store.ensure_dev_shadow(live.id).await?,
        KeyKind::Live | KeyKind::Legacy => live,
    };
    let minted = mint(store, &target, name, kind, SystemClock.now()).await?;
    Ok((target, minted))
}

/// Minting failed.
#[derive(Debug, thiserror::Error)]
pub enum MintError {
    /// No tenant has that slug.
    #[error("no tenant with slug {0:?}")]
    UnknownTenant(String),
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// An authenticated API caller.
#[derive(Clone, Debug)]
pub struct AuthedKey {
    /// The key row.
    pub key: TenantApiKey,
    /// The tenant row the key's environment selects.
    pub tenant: Arc<Tenant>,
}

/// Why authentication failed. The HTTP layer maps every `Invalid*` to one
/// opaque 401 (no hint which check failed); the reason is only logged.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization: Bearer …` header.
    #[error("missing bearer token")]
    Missing,
    /// Not an `rpk_` key of the right shape.
    #[error("malformed API key")]
    Malformed,
    /// No key with this hash.
    #[error("unknown API key")]
    Unknown,
    /// The key was revoked.
    #[error("revoked API key")]
    Revoked,
    /// The tenant is suspended or provisioning (403).
    #[error("tenant {0} is not active")]
    InactiveTenant(String),
    /// Storage failed (500).
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// Authenticate a raw bearer token and select the tenant row by the key's environment.
pub async fn authenticate(
    store: &RedbStore,
    tenants: &TenantCache,
    raw: &str,
) -> Result<AuthedKey, AuthError> {
    parse_token(raw).ok_or(AuthError::Malformed)?;
    let key = store
        .api_key_by_hash(&hash_token(raw))
        .await?
        .ok_or(AuthError::Unknown)?;
    if key.revoked_at.is_some() {
        return Err(AuthError::Revoked);
    }
    let bound = tenants
        .by_id(key.tenant_id)
        .await?
        .ok_or(AuthError::Unknown)?;
    // The key's environment selects the row of the pair; a key minted before
    // its tenant gained/lost a shadow still lands on the right row.
    let tenant = match (key.environment, bound.environment) {
        (Environment::Dev, Environment::Live) => store
            .dev_shadow_of(bound.id)
            .await?
            .map(Arc::new)
            .ok_or(AuthError::Unknown)?,
        (Environment::Live, Environment::Dev) => match bound.live_tenant_id {
            Some(live) => tenants.by_id(live).await?.ok_or(AuthError::Unknown)?,
            None => return Err(AuthError::Unknown),
        },
        _ => bound,
    };
    let mut active = tenant.status == TenantStatus::Active;
    if let Some(live) = tenant.live_tenant_id {
        // A suspended community suspends its dev shadow too.
        active &= tenants
            .by_id(live)
            .await?
            .is_some_and(|l| l.status == TenantStatus::Active);
    }
    if !active {
        return Err(AuthError::InactiveTenant(tenant.slug.clone()));
    }
    Ok(AuthedKey { key, tenant })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_keys_have_the_spec_shape() {
        for kind in [KeyKind::Live, KeyKind::Dev, KeyKind::Legacy] {
            let raw = generate_token(kind);
            assert!(raw.starts_with(kind.prefix()));
            assert_eq!(
                raw.len(),
                kind.prefix().len() + 48,
                "24 random bytes as hex"
            );
            assert_eq!(parse_token(&raw), Some(kind));
            let shown = display_prefix(&raw, kind);
            assert_eq!(shown.len(), kind.prefix().len() + 8);
            assert!(raw.starts_with(&shown));
        }
        assert_ne!(generate_token(KeyKind::Live), generate_token(KeyKind::Live));
    }

    #[test]
    fn the_stored_hash_is_sha256_hex() {
        assert_eq!(
            hash_token("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn malformed_tokens_are_rejected_by_shape() {
        for bad in [
            "",
            "rpk_live_",
            "sk_live_0123",
            "rpk_live_XYZ",
            &format!("rpk_live_{}", "A".repeat(48)),
            &format!("rpk_live_{}", "a".repeat(47)),
            &format!("rpk_dev_{}", "0".repeat(49)),
        ] {
            assert_eq!(parse_token(bad), None, "{bad}");
        }
    }
}
