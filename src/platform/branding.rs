//! The community's logo on public pages (§2.3 `tenant_assets`, §2.1
//! `settings.logo_url`, §14.2): an uploaded image stored as the tenant's
//! `logo` asset and served from `/assets/{tenant}/logo`, an external
//! `settings.logo_url` when the admin set one, and Root's own mark
//! (embedded in the binary) when neither is there.
//!
//! Uploads are sniffed by their magic bytes, never by a declared type, and
//! only raster formats are taken: an uploaded SVG could carry script that
//! would run on the server's origin when opened directly.

use sha2::{Digest, Sha256};
use storage::{RedbStore, StorageError, Store, TenantAsset, key};
use uuid::Uuid;

use crate::platform::clock::Clock;

/// `tenant_assets.kind` of the logo.
pub const LOGO_KIND: &str = "logo";
/// Largest accepted logo upload.
pub const MAX_LOGO_BYTES: usize = 512 * 1024;
/// Root's own mark, shown when the community has not set a logo.
pub const DEFAULT_LOGO_SVG: &[u8] = include_bytes!("../../assets/root-logo.svg");
/// `settings.logo_url`: an external logo the admin chose.
pub const SETTING_LOGO_URL: &str = "logo_url";

/// A logo ready to serve.
#[derive(Clone, Debug)]
pub struct Logo {
    pub content_type: &'static str,
    pub bytes: Vec<u8>,
    /// Quoted strong validator: a digest of the bytes.
    pub etag: String,
    /// `false` for Root's embedded mark.
    pub uploaded: bool,
}

/// Why an upload was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LogoError {
    #[error("the logo is empty")]
    Empty,
    #[error("the logo is {0} bytes; the limit is {MAX_LOGO_BYTES}")]
    TooLarge(usize),
    #[error("the logo must be a PNG, JPEG, GIF or WebP image")]
    NotAnImage,
}

/// The image type of `bytes`, read off their magic numbers.
pub fn sniff_image(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Check an upload: its type (sniffed) or why it is refused.
pub fn check_logo(bytes: &[u8]) -> Result<&'static str, LogoError> {
    if bytes.is_empty() {
        return Err(LogoError::Empty);
    }
    if bytes.len() > MAX_LOGO_BYTES {
        return Err(LogoError::TooLarge(bytes.len()));
    }
    sniff_image(bytes).ok_or(LogoError::NotAnImage)
}

fn etag_of(bytes: &[u8]) -> String {
    format!("\"{}\"", &hex::encode(Sha256::digest(bytes))[..32])
}

/// The tenant's logo, or Root's mark.
pub async fn logo(store: &RedbStore, tenant: Uuid) -> Result<Logo, StorageError> {
    let row: Option<TenantAsset> = store
        .find_unique(Some(tenant), TenantAsset::KIND_KEY, key().str(LOGO_KIND))
        .await?;
    // A stored row is served only as the type its bytes sniff as.
    Ok(
        match row.and_then(|r| sniff_image(&r.bytes).map(|t| (t, r.bytes))) {
            Some((content_type, bytes)) => Logo {
                content_type,
                etag: etag_of(&bytes),
                bytes,
                uploaded: true,
            },
            None => default_logo(),
        },
    )
}

/// Root's embedded mark.
pub fn default_logo() -> Logo {
    Logo {
        content_type: "image/svg+xml",
        etag: etag_of(DEFAULT_LOGO_SVG),
        bytes: DEFAULT_LOGO_SVG.to_vec(),
        uploaded: false,
    }
}

/// Store `bytes` as the tenant's logo (replacing any earlier one); returns
/// the sniffed type.
pub async fn set_logo(
    store: &RedbStore,
    clock: &dyn Clock,
    tenant: Uuid,
    bytes: Vec<u8>,
) -> Result<Result<&'static str, LogoError>, StorageError> {
    let content_type = match check_logo(&bytes) {
        Ok(t) => t,
        Err(e) => return Ok(Err(e)),
    };
    let existing: Option<TenantAsset> = store
        .find_unique(Some(tenant), TenantAsset::KIND_KEY, key().str(LOGO_KIND))
        .await?;
    let now = clock.now();
    match existing {
        Some(mut row) => {
            row.content_type = content_type.into();
            row.bytes = bytes;
            row.updated_at = now;
            store.update(row).await?;
        }
        None => {
            store
                .insert(TenantAsset {
                    id: Uuid::new_v4(),
                    tenant_id: tenant,
                    kind: LOGO_KIND.into(),
                    content_type: content_type.into(),
                    bytes,
                    updated_at: now,
                })
                .await?;
        }
    }
    Ok(Ok(content_type))
}

/// Remove the tenant's uploaded logo (back to Root's mark); `false` when
/// there was none.
pub async fn clear_logo(store: &RedbStore, tenant: Uuid) -> Result<bool, StorageError> {
    let existing: Option<TenantAsset> = store
        .find_unique(Some(tenant), TenantAsset::KIND_KEY, key().str(LOGO_KIND))
        .await?;
    match existing {
        Some(row) => {
            store
                .delete::<TenantAsset>(Some(tenant), key().uuid(row.id))
                .await
        }
        None => Ok(false),
    }
}

/// Where public pages load the logo from: `settings.logo_url` when the
/// admin set one, else the tenant's asset route (which falls back to
/// Root's mark).
pub fn logo_src(settings: &serde_json::Value, tenant_slug: &str) -> String {
    settings[SETTING_LOGO_URL]
        .as_str()
        .filter(|u| u.starts_with("https://"))
        .map(str::to_string)
        .unwrap_or_else(|| format!("/assets/{tenant_slug}/logo"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uploads_are_typed_by_their_bytes_and_bounded() {
        assert_eq!(check_logo(b"\x89PNG\r\n\x1a\nrest"), Ok("image/png"));
        assert_eq!(check_logo(&[0xFF, 0xD8, 0xFF, 0xE0]), Ok("image/jpeg"));
        assert_eq!(check_logo(b"GIF89a..."), Ok("image/gif"));
        assert_eq!(check_logo(b"RIFF\0\0\0\0WEBPVP8 "), Ok("image/webp"));
        assert_eq!(check_logo(b""), Err(LogoError::Empty));
        assert_eq!(
            check_logo(b"<svg onload=alert(1)>"),
            Err(LogoError::NotAnImage)
        );
        let mut big = b"\x89PNG\r\n\x1a\n".to_vec();
        big.resize(MAX_LOGO_BYTES + 1, 0);
        assert_eq!(
            check_logo(&big),
            Err(LogoError::TooLarge(MAX_LOGO_BYTES + 1))
        );
        assert_eq!(MAX_LOGO_BYTES, 524_288);
    }

    #[test]
    fn logo_src_prefers_an_https_setting() {
        let set = serde_json::json!({"logo_url": "https://cdn.example.org/l.png"});
        assert_eq!(logo_src(&set, "acme"), "https://cdn.example.org/l.png");
        let insecure = serde_json::json!({"logo_url": "javascript:alert(1)"});
        assert_eq!(logo_src(&insecure, "acme"), "/assets/acme/logo");
        assert_eq!(
            logo_src(&serde_json::json!({}), "acme"),
            "/assets/acme/logo"
        );
    }
}
