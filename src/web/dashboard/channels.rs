//! `/channels` (§14.2, §8): where members reach the agent. Slack: the app
//! manifest to paste into Slack (`slack::manifest::tenant_app_manifest`,
//! the function behind `GET /api/v1/channels/slack/manifest`) and the app
//! credentials (`SlackSetup::set_credentials`, behind `PUT
//! /api/v1/channels/slack`; write-only). Email: the mode, alias or webhook
//! (`email::setup::configure`, behind `PUT /api/v1/channels/email`; a
//! generated inbound URL or signing secret is shown once). Web chat: the
//! test-chat link with its token (owners and admins only: the token is
//! meant to be shared) and its rotation (`rotate_web_token`, behind `PUT
//! /api/v1/channels/web`).

use askama::Template;
use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use storage::{ChannelType, Store, TenantChannel, key};

use super::forms::TokenForm;
use super::{Chrome, Dashboard, Done, PageForm, failed, harden, page_notice};
use crate::channels::email::directory::{EmailMode, email_setup};
use crate::channels::email::setup::{EmailChannelInput, EmailSetupError, configure};
use crate::channels::slack_setup::{SetupError, SlackAppInput};
use crate::channels::web::{chat_url, rotate_web_token, web_token};
use crate::config::Secret;
use crate::slack::manifest::tenant_app_manifest;
use crate::state::AppState;
use crate::web::pages::render_page;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/channels", get(show))
        .route("/channels/slack", post(save_slack))
        .route("/channels/email", post(save_email))
        .route("/channels/web", post(rotate_web))
}

/// The Slack credentials form (secrets never re-shown).
#[derive(Debug, Default, Deserialize)]
pub struct SlackForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    bot_token: String,
    #[serde(default)]
    signing_secret: String,
    #[serde(default)]
    team_id: String,
}

/// The email form.
#[derive(Debug, Default, Deserialize)]
pub struct EmailForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    mode: String,
    #[serde(default)]
    alias: String,
    #[serde(default)]
    outbound_webhook_url: String,
    /// Write-only; empty = kept, or generated.
    #[serde(default)]
    outbound_signing_secret: String,
}

/// The Slack channel as stored (no secret values).
struct SlackState {
    status: String,
    team_id: String,
    secrets_set: Vec<String>,
}

/// The email channel as stored (no secret values).
struct EmailState {
    mode: &'static str,
    alias: String,
    address: Option<String>,
    webhook: Option<String>,
    inbound_token_set: bool,
    signing_secret_set: bool,
}

/// Values made by the last change, shown once.
#[derive(Default)]
struct Once {
    inbound_url: Option<String>,
    signing_secret: Option<String>,
}

#[derive(Template)]
#[template(path = "dashboard/channels.html")]
struct ChannelsPage {
    chrome: Chrome,
    manifest: Option<String>,
    request_url_slug: String,
    slack: Option<SlackState>,
    slack_form: SlackForm,
    slack_error: Option<(&'static str, String)>,
    email: Option<EmailState>,
    email_form: EmailForm,
    email_error: Option<(&'static str, String)>,
    once: Once,
    web_url: Option<String>,
    web_set: bool,
}

/// What a refused form re-renders with.
#[derive(Default)]
struct Typed {
    slack: Option<(SlackForm, (&'static str, String))>,
    email: Option<(EmailForm, (&'static str, String))>,
    once: Once,
}

/// A URL without userinfo, query or fragment (they can hold credentials).
fn shown_url(raw: &str) -> Option<String> {
    let mut url = reqwest::Url::parse(raw).ok()?;
    url.set_username("").ok()?;
    url.set_password(None).ok()?;
    url.set_query(None);
    url.set_fragment(None);
    Some(url.to_string())
}

async fn page(state: &AppState, d: &Dashboard, chrome: Chrome, typed: Typed) -> Response {
    let tenant = &d.user.tenant;
    let loaded = async {
        let manifest =
            tenant_app_manifest(&state.tenants, &state.config.platform_base_url, tenant).await?;
        let slack: Option<TenantChannel> = state
            .store
            .find_unique(
                Some(tenant.id),
                TenantChannel::TYPE_KEY,
                key().str(ChannelType::Slack.as_str()),
            )
            .await?;
        let email = email_setup(&state.store, tenant).await?;
        let web = web_token(&state.store, tenant.id).await?;
        Ok::<_, storage::StorageError>((manifest, slack, email, web))
    };
    let (manifest, slack, email, web) = match loaded.await {
        Ok(v) => v,
        Err(e) => {
            tracing::error!(tenant = %tenant.id, error = %e, "channels page failed");
            return failed("The channels could not be loaded.");
        }
    };
    let (manifest, request_url_slug) = match manifest {
        Some((m, slug)) => (serde_json::to_string_pretty(&m).ok(), slug),
        None => (None, String::new()),
    };
    let slack = slack.map(|row| {
        let mut secrets_set: Vec<String> = row
            .secrets
            .expose()
            .0
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        secrets_set.sort();
        SlackState {
            status: row.status.to_string(),
            team_id: row.config.0["team_id"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            secrets_set,
        }
    });
    let email_form = EmailForm {
        mode: email
            .as_ref()
            .map_or("platform_alias", |e| mode_name(e.mode))
            .into(),
        alias: email.as_ref().map(|e| e.alias.clone()).unwrap_or_default(),
        outbound_webhook_url: String::new(),
        ..EmailForm::default()
    };
    let email = email.map(|e| EmailState {
        mode: mode_name(e.mode),
        address: (e.mode == EmailMode::PlatformAlias)
            .then(|| e.platform_address(&state.config))
            .flatten(),
        webhook: e.outbound_webhook_url.as_deref().and_then(shown_url),
        inbound_token_set: e.inbound_token.is_some(),
        signing_secret_set: e.outbound_signing_secret.is_some(),
        alias: e.alias,
    });
    let status = if typed.slack.is_some() || typed.email.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    let (slack_form, slack_error) = match typed.slack {
        Some((f, e)) => (f, Some(e)),
        None => (SlackForm::default(), None),
    };
    let (email_form, email_error) = match typed.email {
        Some((f, e)) => (f, Some(e)),
        None => (email_form, None),
    };
    let view = ChannelsPage {
        web_url: web
            .as_deref()
            .filter(|_| chrome.can_change)
            .map(|t| chat_url(&state.config.platform_base_url, &tenant.slug, t)),
        web_set: web.is_some(),
        chrome,
        manifest,
        request_url_slug,
        slack,
        slack_form,
        slack_error,
        email,
        email_form,
        email_error,
        once: typed.once,
    };
    harden((status, render_page(&view, "channels", ())).into_response())
}

fn mode_name(m: EmailMode) -> &'static str {
    match m {
        EmailMode::PlatformAlias => "platform_alias",
        EmailMode::ByoWebhook => "byo_webhook",
    }
}

async fn show(State(state): State<AppState>, d: Dashboard, Query(done): Query<Done>) -> Response {
    let chrome = Chrome::of(&d, "/channels").with_flash(done.done.as_deref());
    page(&state, &d, chrome, Typed::default()).await
}

/// The field a refusal names (its message starts with it), else `form`.
fn field_of(message: &str, fields: &[&'static str]) -> &'static str {
    fields
        .iter()
        .find(|f| message.starts_with(**f))
        .copied()
        .unwrap_or("form")
}

async fn save_slack(
    State(state): State<AppState>,
    d: Dashboard,
    PageForm(form): PageForm<SlackForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    let chrome = Chrome::of(&d, "/channels");
    let input = SlackAppInput {
        bot_token: Secret::new(form.bot_token.clone()),
        signing_secret: Secret::new(form.signing_secret.clone()),
        team_id: Some(form.team_id.clone()),
    };
    let error = match d.scoped(state.slack_setup.set_credentials(input)).await {
        Ok(done) => {
            tracing::info!(tenant = %d.user.tenant.id, team = %done.team_id, by = %d.user.email, "slack credentials set from the dashboard");
            return Redirect::to("/channels?done=slack-saved").into_response();
        }
        Err(SetupError::Invalid(m)) => {
            (field_of(&m, &["bot_token", "signing_secret", "team_id"]), m)
        }
        Err(e @ SetupError::Rejected { .. }) => ("bot_token", e.to_string()),
        Err(e @ SetupError::Unavailable(_)) => {
            tracing::warn!(tenant = %d.user.tenant.id, error = %e, "slack credentials not checked");
            return page_notice(
                StatusCode::BAD_GATEWAY,
                "Slack could not be asked",
                "The bot token could not be checked with Slack right now; nothing was saved. Try again in a moment.",
            );
        }
        Err(e) => {
            tracing::error!(tenant = %d.user.tenant.id, error = %e, "slack credentials not saved");
            return failed("The Slack credentials could not be saved.");
        }
    };
    // Secrets are never sent back into the page, not even as typed.
    let typed = SlackForm {
        team_id: form.team_id,
        ..SlackForm::default()
    };
    page(
        &state,
        &d,
        chrome,
        Typed {
            slack: Some((typed, error)),
            ..Typed::default()
        },
    )
    .await
}

async fn save_email(
    State(state): State<AppState>,
    d: Dashboard,
    PageForm(form): PageForm<EmailForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    let chrome = Chrome::of(&d, "/channels");
    let refuse = |form: EmailForm, e: (&'static str, String)| Typed {
        email: Some((
            EmailForm {
                outbound_signing_secret: String::new(),
                ..form
            },
            e,
        )),
        ..Typed::default()
    };
    let mode = match form.mode.trim() {
        "platform_alias" => EmailMode::PlatformAlias,
        "byo_webhook" => EmailMode::ByoWebhook,
        _ => {
            let e = ("mode", "Choose platform_alias or byo_webhook.".to_string());
            return page(&state, &d, chrome, refuse(form, e)).await;
        }
    };
    let text = |v: &str| Some(v.trim().to_string()).filter(|v| !v.is_empty());
    let input = EmailChannelInput {
        mode,
        alias: text(&form.alias),
        outbound_webhook_url: text(&form.outbound_webhook_url),
        outbound_signing_secret: text(&form.outbound_signing_secret).map(Secret::new),
    };
    let done = configure(
        &state.store,
        &state.config,
        state.clock.as_ref(),
        Some(state.email.directory()),
        &d.user.tenant,
        input,
    )
    .await;
    match done {
        Ok(done) => {
            tracing::info!(tenant = %d.user.tenant.id, mode = mode_name(done.mode), by = %d.user.email, "email channel set from the dashboard");
            if done.inbound_url.is_none() && done.generated_signing_secret.is_none() {
                return Redirect::to("/channels?done=email-saved").into_response();
            }
            let once = Once {
                inbound_url: done.inbound_url.map(|s| s.expose().to_string()),
                signing_secret: done
                    .generated_signing_secret
                    .map(|s| s.expose().to_string()),
            };
            let chrome = chrome.with_flash(Some("email-saved"));
            page(
                &state,
                &d,
                chrome,
                Typed {
                    once,
                    ..Typed::default()
                },
            )
            .await
        }
        Err(EmailSetupError::Invalid(m)) => {
            let lower = m.to_lowercase();
            let field = if lower.starts_with("alias") {
                "alias"
            } else if lower.contains("webhook") {
                "outbound_webhook_url"
            } else {
                "form"
            };
            page(&state, &d, chrome, refuse(form, (field, m))).await
        }
        Err(e) => {
            tracing::error!(tenant = %d.user.tenant.id, error = %e, "email channel not saved");
            failed("The email channel could not be saved.")
        }
    }
}

async fn rotate_web(
    State(state): State<AppState>,
    d: Dashboard,
    PageForm(form): PageForm<TokenForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    match rotate_web_token(&state.store, state.clock.as_ref(), d.user.tenant.id).await {
        Ok(_) => {
            tracing::info!(tenant = %d.user.tenant.id, by = %d.user.email, "web chat token rotated from the dashboard");
            Redirect::to("/channels?done=web-rotated").into_response()
        }
        Err(e) => {
            tracing::error!(tenant = %d.user.tenant.id, error = %e, "web chat token not rotated");
            failed("The web chat link could not be made.")
        }
    }
}
