//! Configuring a tenant's email channel without the dashboard (§8.3):
//! `root tenant channel email <slug> --mode …` and `PUT
//! /api/v1/channels/email`. Upserts the `tenant_channels` email row:
//!
//! - `platform_alias`: the alias (the tenant's slug unless given; lowercase
//!   letters, digits, `.`, `-`, `_`) → the address
//!   `<alias>@PLATFORM_EMAIL_DOMAIN`. Refused: a [`RESERVED_ALIASES`] name,
//!   another tenant's alias, and another tenant's slug or `<slug>--dev`
//!   (their default alias, even before they configure email). The check
//!   runs inside the write transaction that saves the row, so two tenants
//!   cannot claim one alias at once.
//! - `byo_webhook`: the outbound webhook URL (required), the inbound token
//!   (generated once, kept on later changes) → the inbound URL
//!   `$PLATFORM_BASE_URL/channels/email/inbound/<token>`, and the outbound
//!   signing secret (given, kept, or generated).
//!
//! Generated secrets are answered once, when they are made; later calls say
//! they are unchanged.

use rand::RngCore;
use serde_json::json;
use storage::{
    ChannelStatus, ChannelType, Json, ROOT_TENANT_ID, Redacted, RedbStore, Scan, StorageResult,
    Store, Tenant, TenantChannel, Tx, key,
};
use uuid::Uuid;

use super::directory::{EmailDirectory, EmailMode, EmailSetup};
use crate::config::{Config, Secret};
use crate::platform::clock::Clock;

/// What to configure.
#[derive(Clone, Debug)]
pub struct EmailChannelInput {
    /// The mode.
    pub mode: EmailMode,
    /// Platform alias (default: the tenant's slug).
    pub alias: Option<String>,
    /// BYO: where replies are posted.
    pub outbound_webhook_url: Option<String>,
    /// BYO: the reply signing key (default: kept, or generated).
    pub outbound_signing_secret: Option<Secret>,
}

/// What is configured now.
#[derive(Clone, Debug)]
pub struct EmailConfigured {
    /// The mode.
    pub mode: EmailMode,
    /// Platform alias mode: the address members write to.
    pub address: Option<String>,
    /// BYO: the forwarding URL — only when its token was generated now.
    pub inbound_url: Option<Secret>,
    /// BYO: the signing secret — only when it was generated now.
    pub generated_signing_secret: Option<Secret>,
    /// `false` when an existing row was replaced.
    pub created: bool,
}

/// Why the channel was not configured.
#[derive(Debug, thiserror::Error)]
pub enum EmailSetupError {
    /// Bad input (the message says what).
    #[error("{0}")]
    Invalid(String),
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] storage::StorageError),
}

fn random_hex(bytes: usize) -> String {
    let mut b = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut b);
    hex::encode(b)
}

/// Local parts no tenant may take on the platform domain: the platform's own
/// senders (`login`, the magic-link sender of `auth::links`; `noreply`),
/// the RFC 2142 / RFC 5321 role mailboxes, and bounce / DMARC receivers.
/// Mail to them is the operator's, never a community's. (`root` is not
/// here: it is the root tenant's slug, refused to others by the slug rule.)
pub const RESERVED_ALIASES: &[&str] = &[
    "abuse",
    "admin",
    "administrator",
    "bounce",
    "bounces",
    "dmarc",
    "ftp",
    "hostmaster",
    "info",
    "login",
    "mailer-daemon",
    "marketing",
    "news",
    "no-reply",
    "noc",
    "noreply",
    "postmaster",
    "sales",
    "security",
    "support",
    "usenet",
    "uucp",
    "webmaster",
    "www",
];

/// Is `alias` (lowercase) one of [`RESERVED_ALIASES`]?
pub fn is_reserved_alias(alias: &str) -> bool {
    RESERVED_ALIASES.contains(&alias)
}

fn valid_alias(a: &str) -> bool {
    !a.is_empty()
        && a.len() <= 64
        && a.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || ".-_".contains(c))
        && !a.starts_with('.')
        && !a.ends_with('.')
}

/// Configure `tenant`'s email channel.
pub async fn configure(
    store: &RedbStore,
    config: &Config,
    clock: &dyn Clock,
    directory: Option<&EmailDirectory>,
    tenant: &Tenant,
    input: EmailChannelInput,
) -> Result<EmailConfigured, EmailSetupError> {
    let existing: Option<TenantChannel> = store
        .find_unique(
            Some(tenant.id),
            TenantChannel::TYPE_KEY,
            key().str(ChannelType::Email.as_str()),
        )
        .await?;
    let old = existing
        .as_ref()
        .and_then(|r| EmailSetup::from_row(tenant, r));
    let mut out = EmailConfigured {
        mode: input.mode,
        address: None,
        inbound_url: None,
        generated_signing_secret: None,
        created: existing.is_none(),
    };
    let (cfg, secrets) = match input.mode {
        EmailMode::PlatformAlias => {
            let alias = input
                .alias
                .as_deref()
                .map(|a| a.trim().to_lowercase())
                .unwrap_or_else(|| tenant.slug.to_lowercase());
            if !valid_alias(&alias) {
                return Err(EmailSetupError::Invalid(format!(
                    "alias {alias:?}: use lowercase letters, digits, '.', '-' or '_' (at most 64)"
                )));
            }
            if is_reserved_alias(&alias) {
                tracing::info!(tenant = %tenant.id, %alias, "email alias refused: reserved");
                return Err(EmailSetupError::Invalid(format!(
                    "alias {alias:?} is reserved for the platform's own mail; choose another"
                )));
            }
            out.address = config
                .platform_email_domain
                .as_deref()
                .map(|d| format!("{alias}@{}", d.trim().to_lowercase()));
            (json!({"mode": "platform_alias", "alias": alias}), json!({}))
        }
        EmailMode::ByoWebhook => {
            let url = input
                .outbound_webhook_url
                .as_deref()
                .map(str::trim)
                .filter(|u| !u.is_empty())
                .ok_or_else(|| {
                    EmailSetupError::Invalid("byo_webhook needs --outbound-webhook-url".into())
                })?;
            let parsed = reqwest::Url::parse(url)
                .map_err(|e| EmailSetupError::Invalid(format!("outbound webhook URL: {e}")))?;
            if !matches!(parsed.scheme(), "https" | "http") {
                return Err(EmailSetupError::Invalid(
                    "the outbound webhook URL must be http(s)".into(),
                ));
            }
            let token = match old.as_ref().and_then(|o| o.inbound_token.clone()) {
                Some(t) => t,
                None => {
                    let t = Secret::new(random_hex(24));
                    out.inbound_url = Some(Secret::new(format!(
                        "{}/channels/email/inbound/{}",
                        config.platform_base_url.trim_end_matches('/'),
                        t.expose()
                    )));
                    t
                }
            };
            let signing = match (
                input.outbound_signing_secret,
                old.as_ref().and_then(|o| o.outbound_signing_secret.clone()),
            ) {
                (Some(given), _) if !given.expose().trim().is_empty() => given,
                (_, Some(kept)) => kept,
                _ => {
                    let s = Secret::new(random_hex(32));
                    out.generated_signing_secret = Some(s.clone());
                    s
                }
            };
            (
                json!({"mode": "byo_webhook", "outbound_webhook_url": parsed.as_str()}),
                json!({"inbound_token": token.expose(),
                       "outbound_signing_secret": signing.expose()}),
            )
        }
    };
    let now = clock.now();
    let claim = (input.mode == EmailMode::PlatformAlias)
        .then(|| cfg["alias"].as_str().map(str::to_string))
        .flatten();
    let me = tenant.clone();
    let (taken, _) = store
        .transact(move |tx| {
            // Checked in the transaction that writes the row: the writer
            // runs one transaction at a time, so a concurrent claim of the
            // same alias either committed before (and is seen here) or
            // runs after (and sees this row).
            if let Some(alias) = &claim
                && let Some(why) = alias_taken(tx, alias, &me)?
            {
                return Ok(Some(why));
            }
            match existing {
                Some(mut row) => {
                    row.config = Json(cfg);
                    row.secrets = Redacted::new(Json(secrets));
                    row.status = ChannelStatus::Active;
                    row.updated_at = now;
                    tx.update(&row)?;
                }
                None => tx.insert(&TenantChannel {
                    id: Uuid::new_v4(),
                    tenant_id: me.id,
                    channel_type: ChannelType::Email,
                    config: Json(cfg),
                    secrets: Redacted::new(Json(secrets)),
                    status: ChannelStatus::Active,
                    created_at: now,
                    updated_at: now,
                })?,
            }
            Ok(None)
        })
        .await?;
    if let Some(why) = taken {
        tracing::info!(tenant = %tenant.id, reason = %why, "email alias refused: taken");
        return Err(EmailSetupError::Invalid(why));
    }
    if let Some(d) = directory {
        d.invalidate();
    }
    Ok(out)
}

/// Why `alias` cannot be `me`'s (the message for the caller), read inside
/// the write transaction: it is another tenant's slug or a live tenant's
/// `<slug>--dev` (their default alias, configured or not), or another
/// tenant's configured alias. `me`'s own slug is never refused as a name.
fn alias_taken(tx: &Tx<'_>, alias: &str, me: &Tenant) -> StorageResult<Option<String>> {
    let own_slug = me.slug.to_lowercase() == alias;
    for t in tx.scan::<Tenant>(None, Scan::all())? {
        let other = t.id != me.id;
        let names_it = (other && t.slug.to_lowercase() == alias)
            || (t.live_tenant_id.is_none() && t.dev_slug().to_lowercase() == alias);
        if names_it && !own_slug {
            return Ok(Some(format!(
                "alias {alias:?} is the name of another community; choose another"
            )));
        }
        if other && platform_alias_in(tx, &t)?.as_deref() == Some(alias) {
            return Ok(Some(format!(
                "alias {alias:?} is already the address of tenant {}",
                t.slug
            )));
        }
    }
    Ok(None)
}

/// `t`'s platform alias as stored (its active email row, or the root
/// tenant's default), read in the transaction.
fn platform_alias_in(tx: &Tx<'_>, t: &Tenant) -> StorageResult<Option<String>> {
    let row: Option<TenantChannel> = tx
        .scan(
            Some(t.id),
            Scan::index(
                TenantChannel::TYPE_KEY,
                key().str(ChannelType::Email.as_str()),
            ),
        )?
        .into_iter()
        .next();
    let setup = match row {
        Some(r) => EmailSetup::from_row(t, &r),
        None if t.id == ROOT_TENANT_ID => Some(EmailSetup::root_default(t)),
        None => None,
    };
    Ok(setup
        .filter(|s| s.mode == EmailMode::PlatformAlias)
        .map(|s| s.alias))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_are_plain_lowercase_local_parts() {
        for ok in ["acme", "acme-dev", "a.b_c", "x1"] {
            assert!(valid_alias(ok), "{ok}");
        }
        for bad in ["", "Acme", "a b", "a@b", ".a", "a.", &"a".repeat(65)] {
            assert!(!valid_alias(bad), "{bad}");
        }
    }

    use crate::platform::clock::ManualClock;
    use storage::{MigrationStore, TenantStore, Ts};

    struct World {
        store: RedbStore,
        config: Config,
        clock: ManualClock,
        directory: EmailDirectory,
    }

    async fn world(slugs: &[&str]) -> World {
        let store = RedbStore::open_in_memory().unwrap();
        store.migrate().await.unwrap();
        for slug in slugs {
            store
                .create_tenant(Tenant::new(slug.to_string(), slug.to_string()))
                .await
                .unwrap();
        }
        let config = Config::from_vars(
            [("PLATFORM_EMAIL_DOMAIN", "mail.example.com")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string())),
        )
        .unwrap();
        let clock = ManualClock::new(Ts::from_secs(1_765_000_000));
        let directory = EmailDirectory::new(store.clone(), std::sync::Arc::new(clock.clone()));
        World {
            store,
            config,
            clock,
            directory,
        }
    }

    impl World {
        async fn tenant(&self, slug: &str) -> Tenant {
            self.store.tenant_by_slug(slug).await.unwrap().unwrap()
        }

        async fn alias(&self, slug: &str, alias: Option<&str>) -> Result<String, String> {
            let tenant = self.tenant(slug).await;
            configure(
                &self.store,
                &self.config,
                &self.clock,
                Some(&self.directory),
                &tenant,
                EmailChannelInput {
                    mode: EmailMode::PlatformAlias,
                    alias: alias.map(str::to_string),
                    outbound_webhook_url: None,
                    outbound_signing_secret: None,
                },
            )
            .await
            .map(|c| c.address.unwrap_or_default())
            .map_err(|e| e.to_string())
        }

        async fn email_row(&self, slug: &str) -> Option<TenantChannel> {
            let id = self.tenant(slug).await.id;
            self.store
                .find_unique(
                    Some(id),
                    TenantChannel::TYPE_KEY,
                    key().str(ChannelType::Email.as_str()),
                )
                .await
                .unwrap()
        }
    }

    /// L-10: the platform's own senders and the role mailboxes are no
    /// tenant's alias — `login` receives replies to sign-in mail.
    #[tokio::test]
    async fn security_l10_reserved_service_names_are_refused() {
        let w = world(&["evil"]).await;
        for name in [
            "login",
            "postmaster",
            "abuse",
            "noreply",
            "no-reply",
            "mailer-daemon",
            "admin",
            "support",
            "security",
            "hostmaster",
            "webmaster",
            "bounces",
            " Login ",
        ] {
            let err = w.alias("evil", Some(name)).await.unwrap_err();
            assert!(
                err.starts_with("alias ") && err.contains("reserved"),
                "{name}: {err}"
            );
        }
        assert!(w.email_row("evil").await.is_none(), "nothing written");
        for name in RESERVED_ALIASES {
            assert!(valid_alias(name), "{name} is a well-formed alias");
            assert_eq!(name.to_lowercase(), *name);
        }
        assert!(is_reserved_alias("login"));
        assert!(!is_reserved_alias("root"), "the root tenant's own slug");
    }

    /// L-10: another tenant's slug (its default alias) is refused even
    /// before that tenant configures email; so is `<slug>--dev`. The owner
    /// then gets its own address.
    #[tokio::test]
    async fn security_l10_another_tenants_slug_is_refused_before_it_has_email() {
        let w = world(&["acme", "evil"]).await;
        assert!(w.email_row("acme").await.is_none());
        for squat in ["acme", "acme--dev", "root", "root--dev"] {
            let err = w.alias("evil", Some(squat)).await.unwrap_err();
            assert!(err.starts_with(&format!("alias {squat:?}")), "{err}");
        }
        assert!(w.email_row("evil").await.is_none(), "nothing written");
        assert_eq!(
            w.directory.by_alias("acme").await.unwrap(),
            None,
            "nobody answers acme@ yet"
        );
        assert_eq!(
            w.alias("acme", None).await.unwrap(),
            "acme@mail.example.com"
        );
        let acme = w.tenant("acme").await.id;
        assert_eq!(w.directory.by_alias("acme").await.unwrap(), Some(acme));
        // A configured alias is still taken; the tenant's own slug and a
        // free name are fine.
        assert!(w.alias("evil", Some("acme")).await.is_err());
        assert!(w.alias("acme", Some("acme-club")).await.is_ok());
        let err = w.alias("evil", Some("acme-club")).await.unwrap_err();
        assert!(err.contains("already the address of tenant acme"), "{err}");
        assert_eq!(
            w.alias("evil", None).await.unwrap(),
            "evil@mail.example.com"
        );
        // A dev shadow keeps its own slug, never its live tenant's.
        let shadow = w.store.ensure_dev_shadow(acme).await.unwrap();
        assert_eq!(
            w.alias(&shadow.slug, None).await.unwrap(),
            "acme--dev@mail.example.com"
        );
        assert!(w.alias(&shadow.slug, Some("acme")).await.is_err());
    }

    /// L-10 / review §3 item 6: tenants claiming one free alias at the
    /// same time — exactly one gets it, and the directory names that one.
    #[tokio::test]
    async fn security_l10_concurrent_claims_of_one_alias_admit_one() {
        let slugs = ["t1", "t2", "t3", "t4", "t5", "t6"];
        let w = world(&slugs).await;
        let claims = slugs.iter().map(|s| w.alias(s, Some("shared")));
        let results = futures_util::future::join_all(claims).await;
        let won: Vec<&str> = slugs
            .iter()
            .zip(&results)
            .filter(|(_, r)| r.is_ok())
            .map(|(s, _)| *s)
            .collect();
        assert_eq!(won.len(), 1, "{results:?}");
        let winner = w.tenant(won[0]).await.id;
        assert_eq!(w.directory.by_alias("shared").await.unwrap(), Some(winner));
    }
}
