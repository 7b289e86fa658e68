//! Who may read a knowledge page in a browser (§10.5, §14.2): public
//! pages are open; a private page opens only through a `web_link_tokens`
//! link Root issued, and only in the browser that opened the link first.
//!
//! First open: a `web_browser_sessions` row (its cookie's SHA-256 stored,
//! ~90 days) is created and the token bound to it; the browser is sent on
//! to a token-free address naming the link by its row id (useless without
//! the cookie), so the secret does not linger in history. Later opens
//! from that browser (the cookie's session is the bound one) read the
//! page; any other browser is refused, and an expired link is gone.

use rand::RngCore;
use sha2::{Digest, Sha256};
use storage::{
    KnowledgePage, RedbStore, StorageError, Store, Ts, WebBrowserSession, WebLinkToken, key,
};
use uuid::Uuid;

use crate::platform::clock::Clock;

/// How long a browser session lasts (§10.5: ~90 days).
pub const SESSION_DAYS: i64 = 90;
/// The session cookie's name.
pub const SESSION_COOKIE: &str = "root_kb_session";

/// The outcome of opening a page.
#[derive(Debug)]
pub enum Access {
    /// Show it.
    Page(Box<KnowledgePage>),
    /// First open of a link: set this cookie value and go to the
    /// token-free address for link `link_id`.
    Bound {
        /// The new session's cookie value.
        cookie: String,
        /// The link row id for the token-free address.
        link_id: Uuid,
    },
    /// A bound link opened with its token again from its own browser: go
    /// to the token-free address (no new cookie).
    Redirect {
        /// The link row id.
        link_id: Uuid,
    },
    /// No such page (or private without a link): 404.
    NotFound,
    /// The link belongs to another browser: 403.
    OtherBrowser,
    /// The link expired: 410.
    Expired,
}

fn sha256_hex(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

/// The page `page_ref` (public id, else slug) of `tenant`.
async fn find_page(
    store: &RedbStore,
    tenant: Uuid,
    page_ref: &str,
) -> Result<Option<KnowledgePage>, StorageError> {
    if let Some(p) = store
        .find_unique(
            Some(tenant),
            KnowledgePage::PUBLIC_ID_KEY,
            key().str(page_ref),
        )
        .await?
    {
        return Ok(Some(p));
    }
    store
        .find_unique(Some(tenant), KnowledgePage::SLUG_KEY, key().str(page_ref))
        .await
}

/// The session a cookie value names, if live.
async fn session_of(
    store: &RedbStore,
    tenant: Uuid,
    cookie: Option<&str>,
    now: Ts,
) -> Result<Option<WebBrowserSession>, StorageError> {
    let Some(c) = cookie.filter(|c| !c.is_empty()) else {
        return Ok(None);
    };
    let s: Option<WebBrowserSession> = store
        .find_unique(
            Some(tenant),
            WebBrowserSession::SESSION_KEY,
            key().str(&sha256_hex(c)),
        )
        .await?;
    Ok(s.filter(|s| s.expires_at > now))
}

/// Open `page_ref` with an optional link `token` (from `?token=`) or link
/// id (`?link=`, after binding), and the browser's session cookie.
pub async fn open_page(
    store: &RedbStore,
    clock: &dyn Clock,
    tenant: Uuid,
    page_ref: &str,
    token: Option<&str>,
    link: Option<Uuid>,
    cookie: Option<&str>,
) -> Result<Access, StorageError> {
    let now = clock.now();
    let Some(page) = find_page(store, tenant, page_ref).await? else {
        return Ok(Access::NotFound);
    };
    let link_row: Option<WebLinkToken> = match (token, link) {
        (Some(t), _) if !t.is_empty() => {
            store
                .find_unique(
                    Some(tenant),
                    WebLinkToken::TOKEN_KEY,
                    key().str(&sha256_hex(t)),
                )
                .await?
        }
        (_, Some(id)) => store.get(Some(tenant), key().uuid(id)).await?,
        _ => None,
    };
    let Some(mut link_row) = link_row.filter(|l| l.knowledge_page_id == page.id) else {
        // No (valid) link: only a public page opens.
        return Ok(if page.is_public {
            Access::Page(Box::new(page))
        } else {
            Access::NotFound
        });
    };
    if link_row.expires_at <= now {
        return Ok(Access::Expired);
    }
    let session = session_of(store, tenant, cookie, now).await?;
    match link_row.browser_session_id {
        None if token.is_some() => {
            // First open: a session for this browser, the link bound to it.
            let mut raw = [0u8; 32];
            rand::rng().fill_bytes(&mut raw);
            let value = hex::encode(raw);
            let session = WebBrowserSession {
                id: Uuid::new_v4(),
                tenant_id: tenant,
                session_hash: sha256_hex(&value),
                principal_id: Some(link_row.principal_id),
                expires_at: now.plus_micros(SESSION_DAYS * 86_400 * 1_000_000),
                created_at: now,
            };
            link_row.browser_session_id = Some(session.id);
            link_row.last_used_at = Some(now);
            let link_id = link_row.id;
            store
                .transact(move |tx| {
                    tx.insert(&session)?;
                    tx.update(&link_row)?;
                    Ok(())
                })
                .await?;
            Ok(Access::Bound {
                cookie: value,
                link_id,
            })
        }
        None => Ok(Access::OtherBrowser),
        Some(bound) if session.as_ref().is_some_and(|s| s.id == bound) => {
            if token.is_some() {
                return Ok(Access::Redirect {
                    link_id: link_row.id,
                });
            }
            link_row.last_used_at = Some(now);
            store.update(link_row).await?;
            Ok(Access::Page(Box::new(page)))
        }
        Some(_) => Ok(Access::OtherBrowser),
    }
}
