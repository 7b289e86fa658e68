//! Platform-admin pages (§14.2): `/platform/queues` — every §13 queue's
//! depth, lag, oldest waiting job and last events, from
//! `queue::metrics::queue_overview`. Anyone else gets a 403.

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;

use super::{Chrome, Dashboard, forbidden, harden, page_notice};
use crate::queue::metrics::queue_overview;
use crate::state::AppState;
use crate::web::pages::render_page;

/// Events shown per queue (the overview keeps 50).
pub const EVENTS_SHOWN: usize = 10;

pub(super) fn router() -> Router<AppState> {
    Router::new().route("/platform/queues", get(queues))
}

/// One queue's row.
struct QueueRow {
    name: String,
    waiting: u64,
    delayed: u64,
    active: u64,
    completed: u64,
    failed: u64,
    oldest_due_at: String,
    lag: String,
    /// Whether a worker of this process handles the queue.
    handler: &'static str,
    events: Vec<EventRow>,
}

/// One finished job.
struct EventRow {
    at: String,
    job_id: String,
    status: String,
    duration_ms: i64,
    error: String,
}

#[derive(Template)]
#[template(path = "dashboard/queues.html")]
struct QueuesPage {
    chrome: Chrome,
    queues: Vec<QueueRow>,
}

/// `1.2 s`, `3 min`, `2.5 h` — a lag a person reads at a glance.
fn human_ms(ms: i64) -> String {
    match ms {
        ms if ms < 1_000 => format!("{ms} ms"),
        ms if ms < 60_000 => format!("{:.1} s", ms as f64 / 1_000.0),
        ms if ms < 3_600_000 => format!("{} min", ms / 60_000),
        ms => format!("{:.1} h", ms as f64 / 3_600_000.0),
    }
}

async fn queues(State(state): State<AppState>, d: Dashboard) -> Response {
    if !d.user.platform_admin {
        return forbidden("The queue overview is for platform admins.");
    }
    let overview = match queue_overview(&state.store, state.clock.now()).await {
        Ok(o) => o,
        Err(e) => {
            tracing::error!(error = %e, "queue overview failed");
            return page_notice(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The queues could not be read",
                "Reload the page in a moment.",
            );
        }
    };
    let queues = overview
        .into_iter()
        .map(|q| QueueRow {
            handler: handler_state(&state.worker_handlers, &q.stats.queue),
            name: q.stats.queue,
            waiting: q.stats.waiting,
            delayed: q.stats.delayed,
            active: q.stats.active,
            completed: q.stats.completed,
            failed: q.stats.failed,
            oldest_due_at: q
                .stats
                .oldest_due_at
                .map(|t| t.to_string())
                .unwrap_or_else(|| "—".into()),
            lag: human_ms(q.stats.lag_ms),
            events: q
                .events
                .into_iter()
                .take(EVENTS_SHOWN)
                .map(|e| EventRow {
                    at: e.created_at.to_string(),
                    job_id: e.job_id,
                    status: e.status.to_string(),
                    duration_ms: e.duration_ms,
                    error: e.error.unwrap_or_default(),
                })
                .collect(),
        })
        .collect();
    let page = QueuesPage {
        chrome: Chrome::of(&d, "/platform/queues"),
        queues,
    };
    harden(render_page(&page, "platform queues", ()))
}

/// The overview's handler cell: a server that runs no workers in-process
/// cannot see the worker process's handlers, so it says so instead of
/// claiming "none".
fn handler_state(registered: &[&'static str], queue: &str) -> &'static str {
    if registered.is_empty() {
        "no workers in this process"
    } else if registered.contains(&queue) {
        "registered"
    } else {
        "none"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lags_read_at_a_glance() {
        assert_eq!(human_ms(0), "0 ms");
        assert_eq!(human_ms(1_250), "1.2 s");
        assert_eq!(human_ms(180_000), "3 min");
        assert_eq!(human_ms(9_000_000), "2.5 h");
    }

    #[test]
    fn the_handler_cell_never_claims_what_the_process_cannot_see() {
        assert_eq!(
            handler_state(&[], "email-inbound"),
            "no workers in this process"
        );
        assert_eq!(
            handler_state(&["email-inbound"], "email-inbound"),
            "registered"
        );
        assert_eq!(handler_state(&["email-inbound"], "queue-metrics"), "none");
    }
}
