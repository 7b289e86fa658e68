//! `/conversations` and `/interventions` (§14.2): what members said and what
//! needs a human. Both read through the same `insights` functions as `GET
//! /api/v1/conversations` and `/api/v1/interventions` (filters, newest
//! first, cursor pages); an intervention's status moves through the same
//! transition table as `POST /api/v1/interventions/{id}/status`.

use askama::Template;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use storage::{Channel, InterventionCategory, InterventionStatus};
use uuid::Uuid;

use super::{Chrome, Dashboard, PageForm, failed, harden, page_notice};
use crate::insights::InsightError;
use crate::insights::conversations::{self, ChannelCounts, ConversationFilter, ConversationItem};
use crate::insights::interventions::{
    self, InterventionFilter, InterventionView, transition_allowed,
};
use crate::insights::{PageKey, principal_by_ref, trace_of};
use crate::state::AppState;
use crate::web::api::conventions::{decode_cursor, encode_cursor};
use crate::web::pages::render_page;

/// Rows per page.
pub const PAGE_SIZE: usize = 50;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/conversations", get(conversations_page))
        .route("/interventions", get(interventions_page))
        .route("/interventions/{id}/status", post(set_status))
}

/// A filter value that did not parse: the page says which, and shows
/// everything unfiltered by it.
fn parsed<T: std::str::FromStr>(
    raw: &str,
    field: &'static str,
    errors: &mut Vec<String>,
) -> Option<T> {
    let raw = raw.trim();
    if raw.is_empty() {
        return None;
    }
    match raw.parse() {
        Ok(v) => Some(v),
        Err(_) => {
            errors.push(format!("Unknown {field} {raw:?}: not applied."));
            None
        }
    }
}

/// Query of `/conversations`.
#[derive(Debug, Default, Deserialize)]
pub struct ConversationsQuery {
    #[serde(default)]
    channel: String,
    #[serde(default)]
    q: String,
    #[serde(default)]
    member: String,
    #[serde(default)]
    cursor: String,
}

#[derive(Template)]
#[template(path = "dashboard/conversations.html")]
struct ConversationsPage {
    chrome: Chrome,
    filter: ConversationsQuery,
    channels: &'static [Channel],
    items: Vec<ConversationItem>,
    counts: ChannelCounts,
    next: Option<String>,
    errors: Vec<String>,
}

async fn conversations_page(
    State(state): State<AppState>,
    d: Dashboard,
    Query(q): Query<ConversationsQuery>,
) -> Response {
    let tenant = d.user.tenant.id;
    let mut errors = Vec::new();
    let channel = parsed::<Channel>(&q.channel, "channel", &mut errors);
    let after = cursor(&q.cursor, &mut errors);
    let member = q.member.trim();
    let principal_id = if member.is_empty() {
        None
    } else {
        match principal_by_ref(&state.store, tenant, member).await {
            Ok(p) => Some(p.id),
            Err(InsightError::NotFound(_)) => {
                errors.push(format!("No member with the ref {member:?}."));
                // Nobody's messages rather than everybody's.
                Some(Uuid::nil())
            }
            Err(e) => {
                tracing::error!(%tenant, error = %e, "conversation member lookup failed");
                return failed("The conversations could not be loaded.");
            }
        }
    };
    let filter = ConversationFilter {
        principal_id,
        channel,
        q: Some(q.q.trim().to_string()).filter(|s| !s.is_empty()),
        from: None,
        to: None,
    };
    let page = match conversations::list(&state.store, tenant, filter, after, PAGE_SIZE).await {
        Ok(p) => p,
        Err(InsightError::Invalid { message, .. }) => {
            errors.push(message);
            conversations::ConversationPage {
                items: Vec::new(),
                next: None,
                counts: ChannelCounts::default(),
            }
        }
        Err(e) => {
            tracing::error!(%tenant, error = %e, "dashboard conversations failed");
            return failed("The conversations could not be loaded.");
        }
    };
    let view = ConversationsPage {
        chrome: Chrome::of(&d, "/conversations"),
        filter: q,
        channels: Channel::ALL,
        items: page.items,
        counts: page.counts,
        next: page.next.as_ref().map(encode_cursor),
        errors,
    };
    harden(render_page(&view, "conversations", ()))
}

fn cursor(raw: &str, errors: &mut Vec<String>) -> Option<PageKey> {
    let raw = raw.trim();
    if raw.is_empty() {
        return None;
    }
    decode_cursor::<PageKey>("cursor", Some(raw)).unwrap_or_else(|_| {
        errors.push("That page link is broken; showing the newest.".into());
        None
    })
}

/// Query of `/interventions`.
#[derive(Debug, Default, Deserialize)]
pub struct InterventionsQuery {
    #[serde(default)]
    status: String,
    #[serde(default)]
    category: String,
    #[serde(default)]
    cursor: String,
    #[serde(default)]
    done: Option<String>,
}

/// An intervention with the statuses it may move to.
struct Row {
    item: InterventionView,
    next: Vec<&'static str>,
    /// The run that opened it, when one did.
    trace: Option<Uuid>,
}

#[derive(Template)]
#[template(path = "dashboard/interventions.html")]
struct InterventionsPage {
    chrome: Chrome,
    filter: InterventionsQuery,
    statuses: &'static [InterventionStatus],
    categories: &'static [InterventionCategory],
    rows: Vec<Row>,
    next: Option<String>,
    errors: Vec<String>,
}

async fn interventions_page(
    State(state): State<AppState>,
    d: Dashboard,
    Query(q): Query<InterventionsQuery>,
) -> Response {
    let tenant = d.user.tenant.id;
    let mut errors = Vec::new();
    let status = parsed::<InterventionStatus>(&q.status, "status", &mut errors);
    let category = parsed::<InterventionCategory>(&q.category, "category", &mut errors);
    let after = cursor(&q.cursor, &mut errors);
    let filter = InterventionFilter {
        category,
        statuses: status.into_iter().collect(),
    };
    let (items, next) =
        match interventions::list(&state.store, tenant, filter, after, PAGE_SIZE).await {
            Ok(page) => page,
            Err(e) => {
                tracing::error!(%tenant, error = %e, "dashboard interventions failed");
                return failed("The interventions could not be loaded.");
            }
        };
    let rows = items
        .into_iter()
        .map(|item| {
            let from = item.status.parse::<InterventionStatus>().ok();
            let next = InterventionStatus::ALL
                .iter()
                .filter(|to| from.is_some_and(|f| f != **to && transition_allowed(f, **to)))
                .map(|to| to.as_str())
                .collect();
            let trace = trace_of(&item.metadata);
            Row { item, next, trace }
        })
        .collect();
    let view = InterventionsPage {
        chrome: Chrome::of(&d, "/interventions").with_flash(q.done.as_deref()),
        filter: q,
        statuses: InterventionStatus::ALL,
        categories: InterventionCategory::ALL,
        rows,
        next: next.as_ref().map(encode_cursor),
        errors,
    };
    harden(render_page(&view, "interventions", ()))
}

/// The status form.
#[derive(Debug, Deserialize)]
pub struct StatusForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    status: String,
}

async fn set_status(
    State(state): State<AppState>,
    d: Dashboard,
    Path(id): Path<Uuid>,
    PageForm(form): PageForm<StatusForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    let tenant = d.user.tenant.id;
    let Ok(to) = form.status.parse::<InterventionStatus>() else {
        return page_notice(
            StatusCode::BAD_REQUEST,
            "Unknown status",
            "Pick one of the statuses the form offers.",
        );
    };
    match interventions::set_status(&state.store, tenant, id, to, state.clock.now()).await {
        Ok(_) => {
            tracing::info!(%tenant, intervention = %id, status = to.as_str(), by = %d.user.email, "intervention status set from the dashboard");
            Redirect::to("/interventions?done=intervention-updated").into_response()
        }
        Err(InsightError::NotFound(_)) => page_notice(
            StatusCode::NOT_FOUND,
            "No such intervention",
            "This community has no intervention with that id.",
        ),
        Err(InsightError::Conflict(m)) => {
            page_notice(StatusCode::CONFLICT, "That change is not allowed", &m)
        }
        Err(e) => {
            tracing::error!(%tenant, error = %e, "intervention status change failed");
            failed("The intervention could not be updated.")
        }
    }
}
