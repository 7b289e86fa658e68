//! The web test chat channel (§8.4): a tenant's `tenant_channels` row of
//! type `web` holds `secrets.access_token`; the chat page and its two POST
//! routes admit a request only when the token it carries matches, compared
//! in constant time. The token is created or rotated by `root tenant
//! channel web <slug>` / `PUT /api/v1/channels/web` and shown once.

use rand::RngCore;
use storage::{
    ChannelStatus, ChannelType, Json, Redacted, RedbStore, StorageError, Store, TenantChannel, key,
};
use subtle::ConstantTimeEq;
use uuid::Uuid;

use crate::platform::clock::Clock;

/// Random bytes of a web chat token (hex-encoded: 48 characters).
pub const WEB_TOKEN_BYTES: usize = 24;

/// The tenant's web chat token, if the channel is set up and active.
pub async fn web_token(store: &RedbStore, tenant: Uuid) -> Result<Option<String>, StorageError> {
    let row: Option<TenantChannel> = store
        .find_unique(
            Some(tenant),
            TenantChannel::TYPE_KEY,
            key().str(ChannelType::Web.as_str()),
        )
        .await?;
    Ok(row
        .filter(|r| r.status == ChannelStatus::Active)
        .and_then(|r| {
            r.secrets
                .expose()
                .0
                .get("access_token")
                .and_then(|t| t.as_str())
                .filter(|t| !t.is_empty())
                .map(str::to_string)
        }))
}

/// Does `given` match `expected`? Constant time in the content (lengths
/// are not secret: every token has the same length).
pub fn token_matches(expected: &str, given: &str) -> bool {
    expected.len() == given.len() && bool::from(expected.as_bytes().ct_eq(given.as_bytes()))
}

/// Create or rotate the tenant's web chat token; returns the new token.
pub async fn rotate_web_token(
    store: &RedbStore,
    clock: &dyn Clock,
    tenant: Uuid,
) -> Result<String, StorageError> {
    let mut bytes = [0u8; WEB_TOKEN_BYTES];
    rand::rng().fill_bytes(&mut bytes);
    let token = hex::encode(bytes);
    let now = clock.now();
    let existing: Option<TenantChannel> = store
        .find_unique(
            Some(tenant),
            TenantChannel::TYPE_KEY,
            key().str(ChannelType::Web.as_str()),
        )
        .await?;
    match existing {
        Some(mut ch) => {
            let mut secrets = std::mem::take(&mut ch.secrets).into_inner();
            if !secrets.0.is_object() {
                secrets = Json::empty_object();
            }
            secrets.0["access_token"] = serde_json::json!(token);
            ch.secrets = Redacted::new(secrets);
            ch.status = ChannelStatus::Active;
            ch.updated_at = now;
            store.update(ch).await?;
        }
        None => {
            store
                .insert(TenantChannel {
                    id: Uuid::new_v4(),
                    tenant_id: tenant,
                    channel_type: ChannelType::Web,
                    config: Json::empty_object(),
                    secrets: Redacted::new(Json(serde_json::json!({ "access_token": token }))),
                    status: ChannelStatus::Active,
                    created_at: now,
                    updated_at: now,
                })
                .await?;
        }
    }
    Ok(token)
}

/// The chat page's address for `slug` with `token`.
pub fn chat_url(platform_base_url: &str, slug: &str, token: &str) -> String {
    format!(
        "{}/web/{slug}/test?token={token}",
        platform_base_url.trim_end_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole_and_urls_carry_them() {
        assert!(token_matches("abc123", "abc123"));
        assert!(!token_matches("abc123", "abc124"));
        assert!(!token_matches("abc123", "abc12"));
        assert!(!token_matches("abc123", ""));
        assert_eq!(
            chat_url("http://localhost:4000/", "acme", "t0k"),
            "http://localhost:4000/web/acme/test?token=t0k"
        );
        assert_eq!(WEB_TOKEN_BYTES, 24);
    }
}
