//! `/agent` (§14.2, §4.5): who the agent is — its name, the persona that
//! opens the system prompt, the custom character that replaces the chat
//! tone, the community's time zone — and the prompt overrides with their
//! version history (`prompts.rs` in this folder). Identity (name, persona)
//! is mirrored across the live community and its dev shadow when saved
//! (§1: the pair shares one identity).

use askama::Template;
use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use serde::Deserialize;
use serde_json::Value;
use storage::{Scan, Tenant, key};

use super::{Chrome, Dashboard, Done, PageForm, failed, harden};
use crate::prompts::system::TenantVoice;
use crate::state::AppState;
use crate::web::pages::render_page;

/// Longest agent name.
pub const AGENT_NAME_MAX_CHARS: usize = 80;
/// Longest persona or character text.
pub const VOICE_MAX_CHARS: usize = 4_000;

pub(super) fn router() -> Router<AppState> {
    Router::new().route("/agent", get(page).post(save))
}

/// The identity form (and what the page shows).
#[derive(Debug, Default, Deserialize)]
pub struct IdentityForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    agent_name: String,
    #[serde(default)]
    timezone: String,
    #[serde(default)]
    persona: String,
    #[serde(default)]
    agent_character: String,
}

/// A prompt in the list.
struct PromptRow {
    key: &'static str,
    group: &'static str,
    description: &'static str,
    has_addition: bool,
}

#[derive(Template)]
#[template(path = "dashboard/agent.html")]
struct AgentPage {
    chrome: Chrome,
    form: IdentityForm,
    errors: Vec<(&'static str, String)>,
    prompts: Vec<PromptRow>,
}

impl AgentPage {
    fn error(&self, field: &str) -> Option<&str> {
        self.errors
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, m)| m.as_str())
    }
}

fn form_of(t: &Tenant) -> IdentityForm {
    let voice = TenantVoice::of(t);
    IdentityForm {
        csrf: String::new(),
        agent_name: t.agent_name.clone(),
        timezone: t.timezone.clone(),
        persona: voice.persona.unwrap_or_default(),
        agent_character: voice.custom_character.unwrap_or_default(),
    }
}

async fn render(
    state: &AppState,
    d: &Dashboard,
    chrome: Chrome,
    form: IdentityForm,
    errors: Vec<(&'static str, String)>,
) -> Response {
    let listed = d.scoped(state.prompts.list()).await;
    let prompts = match listed {
        Ok(p) => p,
        Err(e) => {
            tracing::error!(tenant = %d.user.tenant.id, error = %e, "agent page: prompts failed");
            return failed("The prompts could not be loaded.");
        }
    };
    let prompts = prompts
        .into_iter()
        .map(|p| PromptRow {
            key: p.template.key,
            group: p.template.group.as_str(),
            description: p.template.description,
            has_addition: p.addition.is_some_and(|a| !a.content.trim().is_empty()),
        })
        .collect();
    let status = if errors.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    };
    let view = AgentPage {
        chrome,
        form,
        errors,
        prompts,
    };
    harden((status, render_page(&view, "agent", ())).into_response())
}

async fn page(State(state): State<AppState>, d: Dashboard, Query(done): Query<Done>) -> Response {
    let chrome = Chrome::of(&d, "/agent").with_flash(done.done.as_deref());
    let form = form_of(&d.user.tenant);
    render(&state, &d, chrome, form, Vec::new()).await
}

/// The field errors of an identity form.
fn check(form: &IdentityForm) -> Vec<(&'static str, String)> {
    let mut errors = Vec::new();
    let name = form.agent_name.trim();
    if name.is_empty() {
        errors.push(("agent_name", "The agent needs a name.".to_string()));
    } else if name.chars().count() > AGENT_NAME_MAX_CHARS {
        errors.push((
            "agent_name",
            format!("At most {AGENT_NAME_MAX_CHARS} characters."),
        ));
    }
    if jiff::tz::TimeZone::get(form.timezone.trim()).is_err() {
        errors.push((
            "timezone",
            "Use an IANA time zone name, such as Europe/Berlin or America/Los_Angeles.".to_string(),
        ));
    }
    for (field, text) in [
        ("persona", &form.persona),
        ("agent_character", &form.agent_character),
    ] {
        if text.chars().count() > VOICE_MAX_CHARS {
            errors.push((field, format!("At most {VOICE_MAX_CHARS} characters.")));
        }
    }
    errors
}

/// Set (or clear, when blank) a string setting.
fn set_text(settings: &mut Value, field: &str, text: &str) {
    if !settings.is_object() {
        *settings = Value::Object(Default::default());
    }
    let Some(obj) = settings.as_object_mut() else {
        return;
    };
    let text = text.trim();
    if text.is_empty() {
        obj.remove(field);
    } else {
        obj.insert(field.to_string(), Value::String(text.to_string()));
    }
}

async fn save(
    State(state): State<AppState>,
    d: Dashboard,
    PageForm(form): PageForm<IdentityForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    let errors = check(&form);
    if !errors.is_empty() {
        return render(&state, &d, Chrome::of(&d, "/agent"), form, errors).await;
    }
    let shown = d.user.tenant.id;
    let live_id = d.user.tenant.live_tenant_id.unwrap_or(shown);
    let now = state.clock.now();
    let name = form.agent_name.trim().to_string();
    let timezone = form.timezone.trim().to_string();
    let persona = form.persona.clone();
    let character = form.agent_character.clone();
    // One transaction: the shown tenant gets everything; its pair gets the
    // shared identity (name, persona).
    let saved = state
        .store
        .transact(move |tx| {
            let mut pair: Vec<Tenant> = Vec::new();
            if let Some(live) = tx.get::<Tenant>(None, key().uuid(live_id))? {
                pair.push(live);
            }
            pair.extend(tx.scan::<Tenant>(
                None,
                Scan::index(Tenant::LIVE_TENANT_KEY, key().uuid(live_id)).limit(1),
            )?);
            for t in &mut pair {
                t.agent_name = name.clone();
                set_text(&mut t.settings.0, "persona", &persona);
                if t.id == shown {
                    t.timezone = timezone.clone();
                    set_text(&mut t.settings.0, "agent_character", &character);
                }
                t.updated_at = now;
                tx.update(t)?;
            }
            Ok(pair)
        })
        .await;
    match saved {
        Ok((pair, _)) => {
            for t in &pair {
                state.tenants.invalidate(t);
            }
            tracing::info!(tenant = %shown, by = %d.user.email, "agent identity saved from the dashboard");
            Redirect::to("/agent?done=agent-saved").into_response()
        }
        Err(e) => {
            tracing::error!(tenant = %shown, error = %e, "agent identity save failed");
            failed("The agent's identity could not be saved.")
        }
    }
}
