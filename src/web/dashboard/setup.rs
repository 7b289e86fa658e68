//! `/setup` and `/welcome` (§14.2): the first-run checklist — what this
//! community has configured and what is still missing, each with the page
//! that fixes it. Read from one storage snapshot plus the server's own
//! configuration (the model key and the sign-in mail are the operator's,
//! so those items say so instead of linking a form).

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use storage::{
    ChannelStatus, ChannelType, Integration, KnowledgePage, KnowledgePageSummary, KnowledgeSource,
    Scan, TenantApiKey, TenantChannel, TenantRole, TenantUser, key,
};

use super::{Chrome, Dashboard, failed, harden};
use crate::platform::settings::{AccessPolicy, EmailAccess};
use crate::prompts::system::TenantVoice;
use crate::state::AppState;
use crate::web::pages::render_page;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/setup", get(setup))
        .route("/welcome", get(welcome))
}

/// One checklist item.
pub struct Item {
    /// What it is.
    pub title: &'static str,
    /// Whether it is done.
    pub done: bool,
    /// What is there, or what to do.
    pub detail: String,
    /// The page that changes it (`None`: the server's operator does).
    pub link: Option<&'static str>,
}

#[derive(Template)]
#[template(path = "dashboard/setup.html")]
struct SetupPage {
    chrome: Chrome,
    welcome: bool,
    items: Vec<Item>,
    done: usize,
}

/// What the snapshot read.
struct Facts {
    channels: Vec<TenantChannel>,
    has_page: bool,
    sources: usize,
    admins: usize,
    keys: usize,
    integrations: usize,
}

async fn facts(state: &AppState, d: &Dashboard) -> storage::StorageResult<Facts> {
    let tenant = d.user.tenant.id;
    // Team members belong to the live community.
    let live = d.user.tenant.live_tenant_id.unwrap_or(tenant);
    state
        .store
        .snapshot(move |s| {
            let pages: Vec<KnowledgePageSummary> = s.scan_projected(
                Some(tenant),
                &Scan::index(KnowledgePage::SLUG_KEY, key()).limit(1),
                |_| true,
            )?;
            let users: Vec<TenantUser> =
                s.scan_filtered(Some(live), &Scan::all(), |_: &TenantUser| true)?;
            let keys: Vec<TenantApiKey> =
                s.scan_filtered(Some(tenant), &Scan::all(), |k: &TenantApiKey| {
                    k.revoked_at.is_none()
                })?;
            Ok(Facts {
                channels: s.scan_filtered(Some(tenant), &Scan::all(), |_: &TenantChannel| true)?,
                has_page: !pages.is_empty(),
                sources: s
                    .scan_filtered(Some(tenant), &Scan::all(), |_: &KnowledgeSource| true)?
                    .len(),
                admins: users
                    .iter()
                    .filter(|u| matches!(u.role, TenantRole::Owner | TenantRole::Admin))
                    .count(),
                keys: keys.len(),
                integrations: s
                    .scan_filtered(Some(tenant), &Scan::all(), |_: &Integration| true)?
                    .len(),
            })
        })
        .await
}

/// The checklist of `f` for `state`'s server and `d`'s community.
fn checklist(state: &AppState, d: &Dashboard, f: &Facts) -> Vec<Item> {
    let channel = |t: ChannelType| {
        f.channels
            .iter()
            .any(|c| c.channel_type == t && c.status == ChannelStatus::Active)
    };
    let policy = AccessPolicy::from_settings(&d.user.tenant.settings.0);
    let voice = TenantVoice::of(&d.user.tenant);
    let email_trust = match policy.email {
        EmailAccess::Integration => (true, "Email senders get a tier from your integration.".to_string()),
        EmailAccess::Domains if policy.email_domains.is_empty() && policy.email_addresses.is_empty() => (
            false,
            "No trusted email domain or address yet: every email sender is answered as the public.".to_string(),
        ),
        EmailAccess::Domains => (
            true,
            format!(
                "{} trusted domains, {} trusted addresses.",
                policy.email_domains.len(),
                policy.email_addresses.len()
            ),
        ),
    };
    let yes_no = |done: bool, yes: &str, no: &str| {
        if done {
            yes.to_string()
        } else {
            no.to_string()
        }
    };
    vec![
        Item {
            title: "A language model",
            done: state.config.llm.api_key.is_some(),
            detail: yes_no(
                state.config.llm.api_key.is_some(),
                "The server has a model key.",
                "The server has no OPENROUTER_API_KEY: the agent cannot answer. The server's operator sets it.",
            ),
            link: None,
        },
        Item {
            title: "Sign-in mail",
            done: state.auth.mail_configured(),
            detail: yes_no(
                state.auth.mail_configured(),
                "Magic links are emailed.",
                "No outgoing mail: the operator prints sign-in links with `root auth link`.",
            ),
            link: None,
        },
        Item {
            title: "Slack",
            done: channel(ChannelType::Slack),
            detail: yes_no(
                channel(ChannelType::Slack),
                "Connected.",
                "Not connected: create the Slack app from the manifest.",
            ),
            link: Some("/channels"),
        },
        Item {
            title: "Email",
            done: channel(ChannelType::Email),
            detail: yes_no(
                channel(ChannelType::Email),
                "Receiving mail.",
                "No inbound address yet.",
            ),
            link: Some("/channels"),
        },
        Item {
            title: "Web chat",
            done: channel(ChannelType::Web),
            detail: yes_no(
                channel(ChannelType::Web),
                "The test chat link works.",
                "No web chat link yet.",
            ),
            link: Some("/channels"),
        },
        Item {
            title: "Knowledge",
            done: f.has_page || f.sources > 0,
            detail: if f.has_page || f.sources > 0 {
                format!(
                    "Pages written{}.",
                    if f.sources > 0 {
                        format!(", {} sources", f.sources)
                    } else {
                        String::new()
                    }
                )
            } else {
                "No pages and no sources: the agent has nothing of yours to search.".into()
            },
            link: Some("/knowledge"),
        },
        Item {
            title: "Who is trusted",
            done: email_trust.0,
            detail: email_trust.1,
            link: Some("/access"),
        },
        Item {
            title: "The agent's persona",
            done: voice.persona.is_some(),
            detail: yes_no(
                voice.persona.is_some(),
                "Set.",
                "Not set: the agent introduces itself as an AI assistant for this community.",
            ),
            link: Some("/agent"),
        },
        Item {
            title: "A second admin",
            done: f.admins >= 2,
            detail: format!("{} owners and admins.", f.admins),
            link: Some("/team"),
        },
        Item {
            title: "API keys and integrations (optional)",
            done: f.keys > 0 || f.integrations > 0,
            detail: format!("{} active keys, {} integrations.", f.keys, f.integrations),
            link: Some("/api-keys"),
        },
    ]
}

async fn render(state: &AppState, d: &Dashboard, welcome: bool) -> Response {
    let facts = match facts(state, d).await {
        Ok(f) => f,
        Err(e) => {
            tracing::error!(tenant = %d.user.tenant.id, error = %e, "setup checklist failed");
            return failed("The checklist could not be loaded.");
        }
    };
    let items = checklist(state, d, &facts);
    let view = SetupPage {
        chrome: Chrome::of(d, "/setup"),
        welcome,
        done: items.iter().filter(|i| i.done).count(),
        items,
    };
    harden(render_page(&view, "setup", ()))
}

async fn setup(State(state): State<AppState>, d: Dashboard) -> Response {
    render(&state, &d, false).await
}

async fn welcome(State(state): State<AppState>, d: Dashboard) -> Response {
    render(&state, &d, true).await
}
