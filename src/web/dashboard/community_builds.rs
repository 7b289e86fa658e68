//! `/community-builds` (§14.2, §15.1): the community's installed builds —
//! each with its listing's name, version and description, whether it is
//! enabled, its declared tools, the KEYS of its config (never the values:
//! a config may hold secrets) and its last tool runs — and the catalog's
//! listings not installed here. Read-only: installing and running builds
//! arrive with the community-builds runtime, so the page offers no buttons.
//! One read snapshot: the installs, the catalog, then each install's newest
//! runs through the runs' install index (bounded, no full-table scan).

use std::collections::{HashMap, HashSet};

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use serde::Deserialize;
use storage::{
    CommunityBuildInstall, CommunityBuildListing, CommunityBuildToolRun, Json, Scan, key,
};
use uuid::Uuid;

use super::{Chrome, Dashboard, failed, harden};
use crate::state::AppState;
use crate::web::pages::render_page;

/// Tool runs shown per install, newest first.
pub const RUNS_SHOWN: usize = 10;

pub(super) fn router() -> Router<AppState> {
    Router::new().route("/community-builds", get(page))
}

/// A tool a build declares.
#[derive(Debug, Deserialize)]
struct ToolDecl {
    name: String,
    #[serde(default)]
    description: String,
}

/// The tool declarations of a `tools` JSON array, and how many entries were
/// not a `{name, description}` object (shown as a count, not hidden).
fn declared_tools(tools: &Json) -> (Vec<ToolDecl>, usize) {
    let Some(items) = tools.0.as_array() else {
        return (Vec::new(), usize::from(!tools.0.is_null()));
    };
    let mut good = Vec::new();
    let mut bad = 0;
    for item in items {
        match ToolDecl::deserialize(item) {
            Ok(t) if !t.name.trim().is_empty() => good.push(t),
            _ => bad += 1,
        }
    }
    (good, bad)
}

/// The top-level keys of a config object, sorted (values are never read).
fn config_keys(config: &Json) -> Vec<String> {
    let mut keys: Vec<String> = config
        .0
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    keys.sort();
    keys
}

/// One run as the page lists it.
struct RunRow {
    tool: String,
    at: String,
    duration_ms: i64,
    success: bool,
    error: Option<String>,
}

/// One install as the page lists it.
struct InstallRow {
    id: Uuid,
    /// The listing's name, or `None` when the listing is gone.
    name: Option<String>,
    slug: String,
    version: String,
    description: String,
    enabled: bool,
    installed_at: String,
    tools: Vec<ToolDecl>,
    unreadable_tools: usize,
    config_keys: Vec<String>,
    runs: Vec<RunRow>,
}

/// A catalog listing this community has not installed.
struct ListingRow {
    name: String,
    slug: String,
    version: String,
    author: String,
    description: String,
    tools: Vec<ToolDecl>,
    unreadable_tools: usize,
}

#[derive(Template)]
#[template(path = "dashboard/community_builds.html")]
struct BuildsPage {
    chrome: Chrome,
    installs: Vec<InstallRow>,
    available: Vec<ListingRow>,
    runs_shown: usize,
}

/// What one snapshot reads.
struct Rows {
    installs: Vec<CommunityBuildInstall>,
    listings: Vec<CommunityBuildListing>,
    runs: Vec<Vec<CommunityBuildToolRun>>,
}

async fn rows(state: &AppState, tenant: Uuid) -> storage::StorageResult<Rows> {
    state
        .store
        .snapshot(move |s| {
            let installs: Vec<CommunityBuildInstall> =
                s.scan_filtered(Some(tenant), &Scan::all(), |_| true)?;
            let listings: Vec<CommunityBuildListing> =
                s.scan_filtered(None, &Scan::all(), |_| true)?;
            let runs = installs
                .iter()
                .map(|i| {
                    s.scan_filtered(
                        Some(tenant),
                        &Scan::index(CommunityBuildToolRun::INSTALL_IDX, key().uuid(i.id))
                            .desc()
                            .limit(RUNS_SHOWN),
                        |_: &CommunityBuildToolRun| true,
                    )
                })
                .collect::<storage::StorageResult<Vec<_>>>()?;
            Ok(Rows {
                installs,
                listings,
                runs,
            })
        })
        .await
}

fn shape(rows: Rows) -> (Vec<InstallRow>, Vec<ListingRow>) {
    let installed: HashSet<Uuid> = rows.installs.iter().map(|i| i.listing_id).collect();
    let by_id: HashMap<Uuid, &CommunityBuildListing> =
        rows.listings.iter().map(|l| (l.id, l)).collect();
    let mut installs: Vec<InstallRow> = rows
        .installs
        .iter()
        .zip(rows.runs)
        .map(|(i, runs)| {
            let listing = by_id.get(&i.listing_id);
            let (tools, unreadable_tools) = declared_tools(&i.tools);
            InstallRow {
                id: i.id,
                name: listing.map(|l| l.name.clone()),
                slug: listing.map(|l| l.slug.clone()).unwrap_or_default(),
                version: listing.map(|l| l.version.clone()).unwrap_or_default(),
                description: listing
                    .and_then(|l| l.description.clone())
                    .unwrap_or_default(),
                enabled: i.enabled,
                installed_at: i.created_at.to_string(),
                tools,
                unreadable_tools,
                config_keys: config_keys(i.config.expose()),
                runs: runs
                    .into_iter()
                    .map(|r| RunRow {
                        tool: r.tool_name,
                        at: r.created_at.to_string(),
                        duration_ms: r.duration_ms,
                        success: r.success,
                        error: r.error,
                    })
                    .collect(),
            }
        })
        .collect();
    installs.sort_by(|a, b| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));
    let mut available: Vec<ListingRow> = rows
        .listings
        .into_iter()
        .filter(|l| !installed.contains(&l.id))
        .map(|l| {
            let (tools, unreadable_tools) = declared_tools(&l.tools);
            ListingRow {
                name: l.name,
                slug: l.slug,
                version: l.version,
                author: l.author.unwrap_or_default(),
                description: l.description.unwrap_or_default(),
                tools,
                unreadable_tools,
            }
        })
        .collect();
    available.sort_by(|a, b| a.name.cmp(&b.name).then(a.slug.cmp(&b.slug)));
    (installs, available)
}

async fn page(State(state): State<AppState>, d: Dashboard) -> Response {
    let tenant = d.user.tenant.id;
    let rows = match rows(&state, tenant).await {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(tenant = %tenant, error = %e, "community builds page failed");
            return failed("The community builds could not be loaded.");
        }
    };
    let (installs, available) = shape(rows);
    let body = BuildsPage {
        chrome: Chrome::of(&d, "/community-builds"),
        installs,
        available,
        runs_shown: RUNS_SHOWN,
    };
    harden(render_page(&body, "community builds", ()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_declarations_are_read_leniently_and_bad_ones_counted() {
        let tools = Json(serde_json::from_str(
            r#"[{"name":"weather","description":"Forecast"},{"name":"bare"},{"description":"no name"},7,{"name":"  "}]"#,
        ).unwrap());
        let (good, bad) = declared_tools(&tools);
        let names: Vec<_> = good.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["weather", "bare"]);
        assert_eq!(good[0].description, "Forecast");
        assert_eq!(bad, 3);
        assert_eq!(declared_tools(&Json::empty_object()).1, 1);
        assert_eq!(declared_tools(&Json::default()).1, 0);
    }

    #[test]
    fn config_keys_never_carry_values() {
        let config = Json(serde_json::from_str(r#"{"zip":"94107","api_token":"s3cret"}"#).unwrap());
        assert_eq!(config_keys(&config), ["api_token", "zip"]);
        assert!(config_keys(&Json::empty_array()).is_empty());
    }
}
