//! `/agent/prompts/{key}` (§4.5): one Appendix A prompt — its built-in text
//! (never replaced), the community's addition appended after it, the text
//! the agent ends up with, and every saved version with a line diff against
//! the version before it. Saving and resetting go through
//! `prompts::Prompts::save` (one transaction: the row and a
//! `root_prompt_versions` entry); a reset saves an empty addition, so the
//! history keeps it too.

use askama::Template;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use serde::Deserialize;
use similar::{ChangeTag, TextDiff};
use storage::RootPromptVersion;
use uuid::Uuid;

use super::{Chrome, Dashboard, PageForm, failed, harden, page_notice};
use crate::prompts::registry::{PromptTemplate, template};
use crate::state::AppState;
use crate::web::pages::render_page;

/// Longest addition, in characters.
pub const ADDITION_MAX_CHARS: usize = 20_000;

pub(super) fn router() -> Router<AppState> {
    Router::new().route("/agent/prompts/{key}", get(page).post(save))
}

/// One line of a diff.
struct DiffLine {
    /// `+`, `-` or ` `.
    sign: &'static str,
    text: String,
}

/// A saved version in the history.
struct VersionRow {
    id: Uuid,
    saved_at: String,
    saved_by: String,
    cleared: bool,
}

#[derive(Template)]
#[template(path = "dashboard/prompt.html")]
struct PromptPage {
    chrome: Chrome,
    template: &'static PromptTemplate,
    content: String,
    effective: String,
    versions: Vec<VersionRow>,
    /// The compared version and its diff against the one before it.
    compared: Option<(String, Vec<DiffLine>)>,
    error: Option<String>,
}

/// Query of the page.
#[derive(Debug, Default, Deserialize)]
pub struct PageQuery {
    #[serde(default)]
    compare: Option<Uuid>,
    #[serde(default)]
    done: Option<String>,
}

/// The line diff from `old` to `new`.
fn diff(old: &str, new: &str) -> Vec<DiffLine> {
    TextDiff::from_lines(old, new)
        .iter_all_changes()
        .map(|c| DiffLine {
            sign: match c.tag() {
                ChangeTag::Delete => "-",
                ChangeTag::Insert => "+",
                ChangeTag::Equal => " ",
            },
            text: c.value().trim_end_matches('\n').to_string(),
        })
        .collect()
}

async fn render(
    state: &AppState,
    d: &Dashboard,
    t: &'static PromptTemplate,
    chrome: Chrome,
    typed: Option<String>,
    compare: Option<Uuid>,
    error: Option<String>,
) -> Response {
    let loaded = d
        .scoped(async {
            let set = state.prompts.load().await?;
            let versions = state.prompts.versions(t.key).await?;
            Ok::<_, crate::prompts::PromptError>((set, versions))
        })
        .await;
    let (set, versions) = match loaded {
        Ok(v) => v,
        Err(e) => {
            tracing::error!(tenant = %d.user.tenant.id, key = t.key, error = %e, "prompt page failed");
            return failed("The prompt could not be loaded.");
        }
    };
    let stored = set.addition(t.key).unwrap_or("").to_string();
    let content = typed.unwrap_or_else(|| stored.clone());
    let compared = compare.and_then(|id| {
        let i = versions.iter().position(|v| v.id == id)?;
        let before = versions
            .get(i + 1)
            .map_or("", |v: &RootPromptVersion| v.content.as_str());
        Some((
            versions[i].saved_at.to_string(),
            diff(before, &versions[i].content),
        ))
    });
    let rows = versions
        .iter()
        .map(|v| VersionRow {
            id: v.id,
            saved_at: v.saved_at.to_string(),
            saved_by: v.saved_by.clone().unwrap_or_else(|| "—".into()),
            cleared: v.content.trim().is_empty(),
        })
        .collect();
    let status = if error.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    let view = PromptPage {
        chrome,
        template: t,
        // The set's own assembly: the built-in text (or the custom
        // character for the tone keys), then the addition.
        effective: set.template_text(t.key).unwrap_or_default(),
        content,
        versions: rows,
        compared,
        error,
    };
    harden((status, render_page(&view, "prompt", ())).into_response())
}

fn unknown() -> Response {
    page_notice(
        StatusCode::NOT_FOUND,
        "No such prompt",
        "Root has no prompt with that key.",
    )
}

async fn page(
    State(state): State<AppState>,
    d: Dashboard,
    Path(key): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    let Ok(t) = template(&key) else {
        return unknown();
    };
    let chrome = Chrome::of(&d, "/agent").with_flash(q.done.as_deref());
    render(&state, &d, t, chrome, None, q.compare, None).await
}

/// The addition form.
#[derive(Debug, Deserialize)]
pub struct AdditionForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    content: String,
    /// `save` or `reset`.
    #[serde(default)]
    action: String,
}

async fn save(
    State(state): State<AppState>,
    d: Dashboard,
    Path(key): Path<String>,
    PageForm(form): PageForm<AdditionForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    let Ok(t) = template(&key) else {
        return unknown();
    };
    let content = if form.action == "reset" {
        String::new()
    } else {
        form.content.trim_end().to_string()
    };
    if content.chars().count() > ADDITION_MAX_CHARS {
        let error = Some(format!("At most {ADDITION_MAX_CHARS} characters."));
        return render(
            &state,
            &d,
            t,
            Chrome::of(&d, "/agent"),
            Some(form.content),
            None,
            error,
        )
        .await;
    }
    let saved = d
        .scoped(state.prompts.save(t.key, &content, Some(&d.user.email)))
        .await;
    match saved {
        Ok(_) => {
            tracing::info!(tenant = %d.user.tenant.id, key = t.key, by = %d.user.email, reset = content.is_empty(), "prompt addition saved from the dashboard");
            let done = if content.is_empty() {
                "prompt-reset"
            } else {
                "prompt-saved"
            };
            Redirect::to(&format!("/agent/prompts/{}?done={done}", t.key)).into_response()
        }
        Err(e) => {
            tracing::error!(tenant = %d.user.tenant.id, key = t.key, error = %e, "prompt save failed");
            failed("The prompt could not be saved.")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_diff_marks_removed_and_added_lines() {
        let d = diff("keep\nold\n", "keep\nnew\n");
        let signs: Vec<(&str, &str)> = d.iter().map(|l| (l.sign, l.text.as_str())).collect();
        assert_eq!(signs, [(" ", "keep"), ("-", "old"), ("+", "new")]);
    }
}
