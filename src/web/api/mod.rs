//! REST `/api/v1` (§12): bearer-key authentication, then routes that run
//! inside the key's tenant context.

mod agent;
mod auth;
mod branding;
mod channels;
mod community_builds;
mod contributions;
pub mod conventions;
mod conversations;
mod email_channel;
mod identity;
mod integrations;
mod interventions;
pub mod json;
mod kb;
mod kb_sources;
mod limited;
mod me;
mod mentions;
mod messages;
pub mod openapi;
mod platform;
mod principals;
mod read_params;
mod tools;
mod web_channel;

use axum::Router;
use axum::middleware;
use axum::routing::{get, post, put};

use crate::state::AppState;

pub use crate::insights::analytics::Analytics;
pub use crate::insights::interventions::InterventionView;
pub use agent::TurnBody;
pub(crate) use agent::run_metered_turn;
pub use auth::{Caller, require_api_key};
pub use conversations::{AnalyticsParams, ConversationList, ConversationsQuery};
pub use identity::ResolveBody;
pub use integrations::RegisterBody;
pub use interventions::{InterventionBody, InterventionList, InterventionsQuery, StatusBody};
pub(crate) use kb::knowledge_search;
pub use kb::{PageBody, SearchBody};
pub use kb_sources::SyncBody;
pub use mentions::{
    Leaderboard, LeaderboardQuery, MentionDetails, PrincipalMentionCounts, PrincipalMentionsQuery,
};
pub use platform::{PlatformCaller, require_platform_key};
pub use principals::{PrincipalQuery, ResetBody, SyncBody as PrincipalSyncBody};
pub use tools::{ExecuteBody, PrincipalArg};
pub(crate) use tools::{RowSource, ToolCatalogResponse, ToolRow, catalog, execute_as};

/// API-key routes outside `/api/v1`: the dashboard's Slack manifest
/// generator (`GET /channels/slack/manifest?tenant=<slug>`, §14.2).
pub fn dashboard_router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/channels/slack/manifest", get(channels::slack_manifest))
        .route_layer(middleware::from_fn_with_state(state, auth::require_api_key))
}

/// `/api/v1` routes (nested by `http::router`): the tenant routes behind
/// tenant API keys, `/platform/*` behind platform-admin keys.
pub fn router(state: AppState) -> Router<AppState> {
    let platform_routes = Router::new()
        .route(
            "/platform/community-builds/listings",
            post(platform::publish),
        )
        .route("/platform/tenants/{slug}/export", get(platform::export))
        .route(
            "/platform/tenants/{slug}",
            axum::routing::delete(platform::delete_tenant),
        )
        .method_not_allowed_fallback(crate::web::method_not_allowed)
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            platform::require_platform_key,
        ));
    Router::new()
        .route("/openapi.json", get(openapi::openapi))
        .route("/me", get(me::me))
        .route("/kb/pages", post(kb::upsert_page).get(kb::list_pages))
        .route(
            "/kb/pages/{slug}",
            get(kb::get_page).delete(kb::delete_page),
        )
        .route("/kb/search", post(kb::search))
        .route("/kb/link", post(kb::link))
        .route(
            "/kb/sources",
            get(kb_sources::list).post(kb_sources::create),
        )
        .route(
            "/kb/sources/{id}",
            get(kb_sources::get)
                .patch(kb_sources::patch)
                .delete(kb_sources::delete),
        )
        .route("/kb/sources/{id}/runs", get(kb_sources::runs))
        .route("/kb/sources/{id}/sync", post(kb_sources::sync))
        .route("/kb/sync", post(kb_sources::push))
        .route(
            "/integrations",
            get(integrations::list).post(integrations::register),
        )
        .route(
            "/integrations/{name}",
            axum::routing::delete(integrations::disable),
        )
        .route("/integrations/{name}/refresh", post(integrations::refresh))
        .route(
            "/integrations/{name}/rotate-secret",
            post(integrations::rotate_secret),
        )
        .route(
            "/integrations/{name}/tool-overrides",
            put(integrations::put_tool_overrides),
        )
        .route(
            "/community-builds/listings",
            get(community_builds::listings),
        )
        .route(
            "/community-builds/installs",
            get(community_builds::installs).post(community_builds::install),
        )
        .route(
            "/community-builds/installs/{id}",
            get(community_builds::get)
                .patch(community_builds::patch)
                .delete(community_builds::delete),
        )
        .route("/channels/slack", put(channels::put_slack))
        .route("/channels/email", put(email_channel::put_email))
        .route("/channels/web", put(web_channel::put_web))
        .route(
            "/branding/logo",
            put(branding::put_logo).delete(branding::delete_logo),
        )
        .route("/channels/slack/manifest", get(channels::slack_manifest))
        .route("/identity/resolve", post(identity::resolve))
        .route("/messages", post(messages::send))
        .route("/principals/sync", post(principals::sync))
        .route("/principals/memory/reset", post(principals::reset))
        .route(
            "/principals/preferences/{id}/deactivate",
            post(principals::deactivate_preference),
        )
        .route("/principals/state", get(principals::state))
        .route("/agent/turns", post(agent::turns))
        .route("/tools", get(tools::list))
        .route("/tools/{name}/execute", post(tools::execute))
        .route("/conversations", get(conversations::list))
        .route("/conversations/analytics", get(conversations::analytics))
        .route(
            "/interventions",
            post(interventions::create).get(interventions::list),
        )
        .route(
            "/interventions/{id}/status",
            post(interventions::set_status),
        )
        .route("/mentions/leaderboard", get(mentions::leaderboard))
        .route("/mentions/counts", get(mentions::counts))
        .route("/mentions/details", get(mentions::details))
        .route(
            "/slack/contributions",
            get(contributions::list).post(contributions::add),
        )
        .route(
            "/slack/contributions/{id}",
            axum::routing::delete(contributions::remove),
        )
        .route(
            "/slack/contributions/{id}/refresh",
            post(contributions::refresh),
        )
        .method_not_allowed_fallback(crate::web::method_not_allowed)
        .route_layer(middleware::from_fn_with_state(state, auth::require_api_key))
        .merge(platform_routes)
        .fallback(crate::web::not_found)
}
