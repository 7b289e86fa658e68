//! `/dashboard` (§14.2): the community at a glance — the last 30 days of
//! conversations per day (an SVG drawn on the server), work saved and token
//! cost from `insights::analytics` — and the environment switch between the
//! live community and its `--dev` shadow.

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use super::{Chrome, Dashboard, PageForm, failed, harden, page_notice};
use crate::insights::analytics::{AnalyticsQuery, Bucket, GroupBy, report};
use crate::state::AppState;
use crate::web::pages::render_page;

/// Days the overview covers.
pub const OVERVIEW_DAYS: i64 = 30;
/// Recent runs scanned for the degraded-identity card.
pub const DEGRADED_SCAN: usize = 500;
/// Degraded runs the card lists.
pub const DEGRADED_SHOWN: usize = 10;
/// Chart size (SVG user units).
const CHART_W: f64 = 600.0;
const CHART_H: f64 = 160.0;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/dashboard", get(overview))
        .route("/dashboard/environment", post(switch_environment))
}

/// One bar of the chart.
pub struct Bar {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
    label: String,
    messages: u64,
}

/// A run that fell back to a reserved tier (`identity.degraded`).
pub struct Degraded {
    at: String,
    who: String,
    tier: String,
    channel: String,
    reason: String,
    trace_id: String,
}

/// The degraded runs among `traces` (newest first), from the reason the
/// turn stored in its trace's metadata.
fn degraded(traces: Vec<storage::AgentTrace>) -> Vec<Degraded> {
    traces
        .into_iter()
        .filter_map(|t| {
            let m = &t.metadata.0;
            let reason = m["degraded"].as_str()?.to_string();
            let text = |v: &serde_json::Value| v.as_str().unwrap_or("—").to_string();
            Some(Degraded {
                at: t.started_at.to_string(),
                who: text(&m["principal_ref"]),
                tier: text(&m["tier"]),
                channel: text(&t.input.0["channel"]),
                reason,
                trace_id: t.id.to_string(),
            })
        })
        .take(DEGRADED_SHOWN)
        .collect()
}

#[derive(Template)]
#[template(path = "dashboard/overview.html")]
struct Overview {
    degraded: Vec<Degraded>,
    chrome: Chrome,
    days: i64,
    messages: u64,
    exchanges: u64,
    work_saved_minutes: i64,
    total_tokens: i64,
    cost_usd: String,
    bars: Vec<Bar>,
    chart_w: f64,
    chart_h: f64,
    peak: u64,
}

/// Bars scaled to the busiest day.
fn bars(buckets: &[Bucket]) -> (Vec<Bar>, u64) {
    let peak = buckets
        .iter()
        .map(|b| b.figures.messages)
        .max()
        .unwrap_or(0);
    let n = buckets.len().max(1) as f64;
    let slot = CHART_W / n;
    let bars = buckets
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let h = if peak == 0 {
                0.0
            } else {
                (b.figures.messages as f64 / peak as f64) * (CHART_H - 4.0)
            };
            // One decimal is finer than a pixel at any width the page has.
            let r = |v: f64| (v * 10.0).round() / 10.0;
            Bar {
                x: r(i as f64 * slot + slot * 0.1),
                y: r(CHART_H - h),
                w: r(slot * 0.8),
                h: r(h),
                label: b.label.clone(),
                messages: b.figures.messages,
            }
        })
        .collect();
    (bars, peak)
}

async fn overview(State(state): State<AppState>, d: Dashboard) -> Response {
    let now = state.clock.now();
    let query = AnalyticsQuery {
        from: now.plus_micros(-OVERVIEW_DAYS * 86_400_000_000),
        to: now,
        group_by: GroupBy::Day,
        principal: None,
    };
    let analytics = match report(&state.store, &d.user.tenant, query).await {
        Ok(a) => a,
        Err(e) => {
            tracing::error!(tenant = %d.user.tenant.id, error = %e, "dashboard overview failed");
            return failed("The overview could not be loaded.");
        }
    };
    let recent = match d.scoped(state.tracer.recent(DEGRADED_SCAN)).await {
        Ok(t) => t,
        Err(e) => {
            tracing::error!(tenant = %d.user.tenant.id, error = %e, "dashboard overview: traces failed");
            return failed("The overview could not be loaded.");
        }
    };
    let (bars, peak) = bars(&analytics.buckets);
    let t = &analytics.totals;
    let page = Overview {
        chrome: Chrome::of(&d, "/dashboard"),
        degraded: degraded(recent),
        days: OVERVIEW_DAYS,
        messages: t.messages,
        exchanges: t.exchanges,
        work_saved_minutes: t.work_saved_minutes,
        total_tokens: t.total_tokens.unwrap_or(0),
        cost_usd: format!("{:.2}", t.cost_usd.unwrap_or(0.0)),
        bars,
        chart_w: CHART_W,
        chart_h: CHART_H,
        peak,
    };
    harden(render_page(&page, "dashboard overview", ()))
}

/// The environment switch.
#[derive(Debug, Deserialize)]
pub struct EnvironmentForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    environment: String,
}

async fn switch_environment(
    State(state): State<AppState>,
    d: Dashboard,
    PageForm(form): PageForm<EnvironmentForm>,
) -> Response {
    if let Some(refused) = d.csrf_refusal(&form.csrf) {
        return refused;
    }
    let live = match d.user.tenant.live_tenant_id {
        Some(live_id) => d
            .user
            .memberships
            .iter()
            .find(|m| m.tenant.id == live_id)
            .map(|m| m.tenant.clone()),
        None => Some(d.user.tenant.clone()),
    };
    let Some(live) = live else {
        return Redirect::to("/dashboard").into_response();
    };
    let target = match form.environment.as_str() {
        "live" => Some(live.id),
        "dev" => match state.auth.dev_environment(&d.user, &live).await {
            Ok(shadow) => shadow.map(|t| t.id),
            Err(e) => {
                tracing::error!(error = %e, "dev shadow lookup failed");
                None
            }
        },
        _ => None,
    };
    let Some(target) = target else {
        return page_notice(
            StatusCode::BAD_REQUEST,
            "No such environment",
            "This community has no such environment yet; an owner or admin opens the dev environment with the same switch.",
        );
    };
    match state.auth.switch_tenant(&d.user, target).await {
        Ok(true) => Redirect::to("/dashboard").into_response(),
        Ok(false) => super::forbidden("That community is not yours."),
        Err(e) => {
            tracing::error!(error = %e, "environment switch failed");
            page_notice(
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again",
                "The environment could not be switched right now.",
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::insights::analytics::Figures;

    fn day(label: &str, messages: u64) -> Bucket {
        Bucket {
            label: label.into(),
            start: String::new(),
            end: String::new(),
            figures: Figures {
                messages,
                ..Figures::default()
            },
        }
    }

    #[test]
    fn bars_scale_to_the_busiest_day() {
        let (drawn, peak) = bars(&[day("a", 0), day("b", 5), day("c", 10)]);
        assert_eq!(peak, 10);
        assert_eq!(drawn[2].h, CHART_H - 4.0, "the busiest day fills the chart");
        assert_eq!(drawn[1].h, 78.0, "half the busiest day, half the height");
        assert_eq!((drawn[0].h, drawn[0].y), (0.0, CHART_H));
        assert_eq!(drawn[1].x, 220.0, "slot 200 wide, 10 % margin");
        let (empty, peak) = bars(&[day("a", 0)]);
        assert_eq!((empty[0].h, peak), (0.0, 0));
    }
}
