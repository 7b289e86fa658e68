//! The Slack app manifest a tenant pastes into api.slack.com (§14.2, the
//! `/channels` page's generator): the bot scopes and bot events Root needs,
//! the agent's name, and the Events API request URL of the tenant's live
//! slug. Typed structs in Slack's manifest shape (`_metadata` 1.1); a pure
//! function of the name and URL.

use serde::Serialize;

/// Bot scopes Root uses: mentions, history of public / private channels and
/// DMs (replies, ingest), joining public channels (the join sweep), posting,
/// files, and user profiles with email (identity, §6).
pub const BOT_SCOPES: &[&str] = &[
    "app_mentions:read",
    "channels:history",
    "channels:join",
    "channels:read",
    "chat:write",
    "files:read",
    "files:write",
    "groups:history",
    "im:history",
    "im:read",
    "im:write",
    "mpim:history",
    "users:read",
    "users:read.email",
];

/// Bot events Root subscribes to.
pub const BOT_EVENTS: &[&str] = &[
    "app_mention",
    "message.channels",
    "message.groups",
    "message.im",
    "message.mpim",
];

/// Slack's limit on `display_information.name`.
pub const MAX_APP_NAME_CHARS: usize = 35;
/// Slack's limit on `features.bot_user.display_name`.
pub const MAX_BOT_NAME_CHARS: usize = 80;
/// The name when a tenant's agent name is blank.
pub const DEFAULT_AGENT_NAME: &str = "Root";

/// A Slack app manifest.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct AppManifest {
    /// Manifest schema version.
    #[serde(rename = "_metadata")]
    pub metadata: ManifestMetadata,
    /// Name and description.
    pub display_information: DisplayInformation,
    /// App home and bot user.
    pub features: Features,
    /// Scopes.
    pub oauth_config: OauthConfig,
    /// Events, socket mode, org deploy.
    pub settings: Settings,
}

/// `_metadata`.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ManifestMetadata {
    /// 1.
    pub major_version: u32,
    /// 1.
    pub minor_version: u32,
}

/// `display_information`.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct DisplayInformation {
    /// The app's name (≤ 35 chars).
    pub name: String,
    /// One line about it.
    pub description: String,
}

/// `features`.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Features {
    /// The Messages tab is where members DM the agent.
    pub app_home: AppHome,
    /// The bot user.
    pub bot_user: BotUser,
}

/// `features.app_home`.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct AppHome {
    /// No Home tab.
    pub home_tab_enabled: bool,
    /// DMs on.
    pub messages_tab_enabled: bool,
    /// Members may write there.
    pub messages_tab_read_only_enabled: bool,
}

/// `features.bot_user`.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct BotUser {
    /// The bot's name (≤ 80 chars).
    pub display_name: String,
    /// Shown online.
    pub always_online: bool,
}

/// `oauth_config`.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct OauthConfig {
    /// Bot scopes.
    pub scopes: Scopes,
}

/// `oauth_config.scopes`.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Scopes {
    /// [`BOT_SCOPES`].
    pub bot: Vec<String>,
}

/// `settings`.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Settings {
    /// Events API.
    pub event_subscriptions: EventSubscriptions,
    /// Not an org-wide app.
    pub org_deploy_enabled: bool,
    /// Off: Root receives events over HTTP.
    pub socket_mode_enabled: bool,
    /// Off: the bot token is long-lived.
    pub token_rotation_enabled: bool,
}

/// `settings.event_subscriptions`.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct EventSubscriptions {
    /// `PLATFORM_BASE_URL/slack/events/<live slug>`.
    pub request_url: String,
    /// [`BOT_EVENTS`].
    pub bot_events: Vec<String>,
}

fn cut(s: &str, max: usize) -> String {
    s.chars()
        .take(max)
        .collect::<String>()
        .trim_end()
        .to_string()
}

/// The manifest of `tenant` as `GET /api/v1/channels/slack/manifest` and
/// the dashboard's `/channels` show it, with the live slug it names: the
/// request URL is always the live slug's (a dev shadow shares its live
/// tenant's events route). `None` when a shadow's live row is missing.
pub async fn tenant_app_manifest(
    tenants: &crate::platform::tenancy::TenantCache,
    platform_base_url: &str,
    tenant: &storage::Tenant,
) -> Result<Option<(AppManifest, String)>, storage::StorageError> {
    let live_slug = match tenant.live_tenant_id {
        None => tenant.slug.clone(),
        Some(id) => match tenants.by_id(id).await? {
            Some(live) => live.slug.clone(),
            None => return Ok(None),
        },
    };
    let url = request_url(platform_base_url, &live_slug);
    Ok(Some((app_manifest(&tenant.agent_name, url), live_slug)))
}

/// The Events API URL of a tenant: `base` + `/slack/events/<live_slug>`.
pub fn request_url(platform_base_url: &str, live_slug: &str) -> String {
    format!(
        "{}/slack/events/{live_slug}",
        platform_base_url.trim_end_matches('/')
    )
}

/// The manifest for an agent called `agent_name` receiving events at
/// `request_url`.
pub fn app_manifest(agent_name: &str, request_url: String) -> AppManifest {
    let name = match agent_name.trim() {
        "" => DEFAULT_AGENT_NAME,
        n => n,
    };
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    AppManifest {
        metadata: ManifestMetadata {
            major_version: 1,
            minor_version: 1,
        },
        display_information: DisplayInformation {
            name: cut(name, MAX_APP_NAME_CHARS),
            description: "The community's AI assistant (Root).".into(),
        },
        features: Features {
            app_home: AppHome {
                home_tab_enabled: false,
                messages_tab_enabled: true,
                messages_tab_read_only_enabled: false,
            },
            bot_user: BotUser {
                display_name: cut(name, MAX_BOT_NAME_CHARS),
                always_online: true,
            },
        },
        oauth_config: OauthConfig {
            scopes: Scopes {
                bot: strings(BOT_SCOPES),
            },
        },
        settings: Settings {
            event_subscriptions: EventSubscriptions {
                request_url,
                bot_events: strings(BOT_EVENTS),
            },
            org_deploy_enabled: false,
            socket_mode_enabled: false,
            token_rotation_enabled: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cut_to_slacks_limits_and_blank_is_root() {
        let m = app_manifest(&"N".repeat(100), request_url("https://r.example/", "acme"));
        assert_eq!(m.display_information.name.chars().count(), 35);
        assert_eq!(m.features.bot_user.display_name.chars().count(), 80);
        assert_eq!(
            m.settings.event_subscriptions.request_url,
            "https://r.example/slack/events/acme"
        );
        assert_eq!(
            app_manifest("  ", String::new()).display_information.name,
            "Root"
        );
    }
}
