//! `GET /api/v1/openapi.json` (§12.2): an OpenAPI 3.1 document of every
//! `/api/v1` route, generated from the same schemars types the handlers
//! deserialise and answer with (request bodies, query strings and every
//! success body; a unit test fails on an answer without one). [`OPERATIONS`]
//! is the route table;
//! `tests/it/openapi.rs` fails when a route mounted in `api::router` has no
//! entry here, or an entry names a route that is not mounted.
//!
//! Hand-assembled rather than through a router-wrapping crate (utoipa,
//! aide): the handlers keep plain axum signatures and the custom
//! extractors (`ApiJson`, `ApiQuery`, `Caller`, `Admitted`) need no trait
//! glue; the table is checked against the router instead (docs/decisions.md).

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::Value;

use super::{
    agent, branding, channels, community_builds, contributions, conversations, email_channel,
    identity, integrations, interventions, kb, kb_sources, me, mentions, platform, principals,
    tools, web_channel,
};
use crate::builds::catalog::{InstallBody, InstallPatch, InstallView, ListingView};
use crate::channels::outbound_message::{OutboundMessage, SentMessage};
use crate::identity::sync::SyncReport;
use crate::insights::analytics::Analytics;
use crate::insights::interventions::InterventionView;
use crate::knowledge::push::PushBody;
use crate::knowledge::sources::SourceInput;
use crate::knowledge::views::SourceView;
use crate::memory::reset::MemoryReset;
use crate::platform::openapi::{DocOperation, openapi_document};
use crate::retrieval::contributions::{ContributionList, Reindexed, Removed};
use crate::retrieval::knowledge::KnowledgeSearch;
use crate::slack::manifest::AppManifest;
use crate::web::error::FieldError;
use crate::web::turn_response::TurnResponse;

/// A schema of a type, registered in the generator's definitions.
type Schema = fn(&mut SchemaGenerator) -> Value;

/// One documented operation.
pub struct Operation {
    /// `get`, `post`, `put`, `patch` or `delete`.
    pub method: &'static str,
    /// Path under `/api/v1`, axum syntax (`/kb/pages/{slug}`).
    pub path: &'static str,
    /// One line for humans.
    pub summary: &'static str,
    /// The query string's type.
    query: Option<Schema>,
    /// The JSON body's type.
    body: Option<Schema>,
    /// The success status.
    status: u16,
    /// The success body's type (`None`: no body, this document, or `media`).
    response: Option<Schema>,
    /// A success body that is not JSON: its media type (an archive).
    media: Option<&'static str>,
}

fn sub<T: JsonSchema>(g: &mut SchemaGenerator) -> Value {
    g.subschema_for::<T>().to_value()
}

fn root<T: JsonSchema>(g: &mut SchemaGenerator) -> Value {
    g.root_schema_for::<T>().to_value()
}

macro_rules! op {
    ($m:literal $p:literal, $s:literal $(, query = $q:ty)? $(, body = $b:ty)? , $status:literal $(=> $r:ty)?) => {
        Operation {
            method: $m,
            path: $p,
            summary: $s,
            query: op!(@root $($q)?),
            body: op!(@sub $($b)?),
            status: $status,
            response: op!(@sub $($r)?),
            media: None,
        }
    };
    ($m:literal $p:literal, $s:literal, $status:literal as $media:literal) => {
        Operation {
            method: $m,
            path: $p,
            summary: $s,
            query: None,
            body: None,
            status: $status,
            response: None,
            media: Some($media),
        }
    };
    (@sub) => { None };
    (@sub $t:ty) => { Some(sub::<$t> as Schema) };
    (@root) => { None };
    (@root $t:ty) => { Some(root::<$t> as Schema) };
}

/// Every `/api/v1` operation.
pub static OPERATIONS: &[Operation] = &[
    op!("get" "/openapi.json", "This document.", 200),
    op!("get" "/me", "The tenant, key and environment the API key selects.", 200 => me::MeResponse),
    op!("get" "/kb/pages", "List knowledge pages (summaries).", query = kb::ListQuery, 200 => kb::PageList),
    op!("post" "/kb/pages", "Create or replace a page by slug.", body = kb::PageBody, 201 => kb::PageWritten),
    op!("get" "/kb/pages/{slug}", "One page with its content.", 200 => kb::PageDetail),
    op!("delete" "/kb/pages/{slug}", "Delete a page.", 204),
    op!("post" "/kb/search", "Hybrid knowledge search (optionally as a principal).", body = kb::SearchBody, 200 => KnowledgeSearch),
    op!("post" "/kb/link", "A link to a page (bare, or bound to a principal).", body = kb::LinkBody, 200 => kb::LinkAnswer),
    op!("get" "/kb/sources", "List knowledge sources.", 200 => kb_sources::SourceList),
    op!("post" "/kb/sources", "Register a knowledge source.", body = SourceInput, 201 => SourceView),
    op!("get" "/kb/sources/{id}", "One knowledge source.", 200 => SourceView),
    op!("patch" "/kb/sources/{id}", "Change a knowledge source.", body = SourceInput, 200 => SourceView),
    op!("delete" "/kb/sources/{id}", "Delete a knowledge source.", 204),
    op!("get" "/kb/sources/{id}/runs", "A source's sync runs.", query = kb_sources::RunsQuery, 200 => kb_sources::RunList),
    op!("post" "/kb/sources/{id}/sync", "Queue a sync run (202 once durable).", body = kb_sources::SyncBody, 202 => kb_sources::RunStarted),
    op!("post" "/kb/sync", "Push documents into an api_push source.", body = PushBody, 202 => kb_sources::RunStarted),
    op!("get" "/integrations", "List integrations.", 200 => integrations::IntegrationList),
    op!("post" "/integrations", "Register an integration (secret shown once).", body = integrations::RegisterBody, 201 => integrations::IntegrationView),
    op!("delete" "/integrations/{name}", "Disable an integration.", 200 => integrations::IntegrationView),
    op!("post" "/integrations/{name}/refresh", "Re-read an integration's manifest.", 200 => integrations::IntegrationView),
    op!("post" "/integrations/{name}/rotate-secret", "Rotate an integration's signing secret.", 200 => integrations::IntegrationView),
    op!("put" "/integrations/{name}/tool-overrides", "Set or clear tool overrides of an integration.", body = integrations::ToolOverridesBody, 200 => integrations::IntegrationView),
    op!("get" "/community-builds/listings", "The community-build catalog.", 200 => community_builds::ListingList),
    op!("get" "/community-builds/installs", "This community's installed builds (secrets omitted).", 200 => community_builds::InstallList),
    op!("post" "/community-builds/installs", "Install a build with its config (validated against its schema).", body = InstallBody, 201 => InstallView),
    op!("get" "/community-builds/installs/{id}", "One installed build (secrets omitted).", 200 => InstallView),
    op!("patch" "/community-builds/installs/{id}", "Change an install's config (merge), enable or disable it, or upgrade it.", body = InstallPatch, 200 => InstallView),
    op!("delete" "/community-builds/installs/{id}", "Uninstall a build (its run history goes with it).", 204),
    op!("put" "/channels/slack", "Set the Slack credentials.", body = channels::SlackCredentialsBody, 200 => channels::SlackChannelView),
    op!("put" "/channels/email", "Set up the email channel.", body = email_channel::EmailChannelBody, 200 => email_channel::EmailChannelView),
    op!("put" "/channels/web", "Rotate the web chat token.", 200 => web_channel::WebChannelAnswer),
    op!("get" "/channels/slack/manifest", "The Slack app manifest for this community.", query = channels::ManifestQuery, 200 => AppManifest),
    op!("put" "/branding/logo", "Upload the community logo (raw PNG/JPEG/GIF/WebP).", 200 => branding::LogoAnswer),
    op!("delete" "/branding/logo", "Back to the default logo.", 200 => branding::LogoAnswer),
    op!("post" "/identity/resolve", "Resolve a person through the integrations.", body = identity::ResolveBody, 200 => identity::IdentityAnswer),
    op!("post" "/messages", "Send a Slack or email message.", body = OutboundMessage, 200 => SentMessage),
    op!("post" "/principals/sync", "Bulk upsert up to 500 members (all or nothing).", body = principals::SyncBody, 200 => SyncReport),
    op!("post" "/principals/memory/reset", "Reset a member's conversation memory.", body = principals::ResetBody, 200 => MemoryReset),
    op!("post" "/principals/preferences/{id}/deactivate", "Deactivate a learned preference.", 200 => principals::Deactivated),
    op!("get" "/principals/state", "A member's identity, memory and preferences.", query = principals::PrincipalQuery, 200 => principals::PrincipalState),
    op!("post" "/agent/turns", "A full agent turn as a principal.", body = agent::TurnBody, 200 => TurnResponse<'static>),
    op!("get" "/tools", "The tool catalog with gating metadata.", 200 => tools::ToolCatalogResponse),
    op!("post" "/tools/{name}/execute", "Run one tool as a principal.", body = tools::ExecuteBody, 200 => tools::ExecuteResponse),
    op!("get" "/conversations", "Conversation log entries with channel counts and mention labels.", query = conversations::ConversationsQuery, 200 => conversations::ConversationList),
    op!("get" "/conversations/analytics", "Counts, work saved and token cost per day, week or month.", query = conversations::AnalyticsParams, 200 => Analytics),
    op!("get" "/interventions", "List interventions.", query = interventions::InterventionsQuery, 200 => interventions::InterventionList),
    op!("post" "/interventions", "Open an intervention (admins are notified).", body = interventions::InterventionBody, 201 => InterventionView),
    op!("post" "/interventions/{id}/status", "Move an intervention to another status.", body = interventions::StatusBody, 200 => InterventionView),
    op!("get" "/mentions/leaderboard", "Members most mentioned in replies.", query = mentions::LeaderboardQuery, 200 => mentions::Leaderboard),
    op!("get" "/mentions/counts", "One member's mention counts.", query = mentions::PrincipalMentionsQuery, 200 => mentions::PrincipalMentionCounts),
    op!("get" "/mentions/details", "One member's mentions, newest first.", query = mentions::PrincipalMentionsQuery, 200 => mentions::MentionDetails),
    op!("get" "/slack/contributions", "A member's Slack messages in search, newest first (50).", query = principals::PrincipalQuery, 200 => ContributionList),
    op!("post" "/slack/contributions", "Put a member's own public Slack message into search.", body = contributions::AddContributionBody, 200 => Reindexed),
    op!("delete" "/slack/contributions/{id}", "Take a member's contribution out of search (never out of Slack).", query = principals::PrincipalQuery, 200 => Removed),
    op!("post" "/slack/contributions/{id}/refresh", "Re-index a member's contribution from its stored copy.", body = principals::PrincipalQuery, 200 => Reindexed),
    op!("post" "/platform/community-builds/listings", "Platform admins (rpa_ key): publish a community build — 201 new listing, 200 new version, 422 naming the field.", body = platform::PublishBody, 201 => ListingView),
    op!("get" "/platform/tenants/{slug}/export", "Platform admins (rpa_ key): the tenant and its dev shadow as the `root tenant export` layout in one tar (secrets omitted).", 200 as "application/x-tar"),
    op!("delete" "/platform/tenants/{slug}", "Platform admins (rpa_ key): delete the tenant and its dev shadow (`confirm` repeats the slug).", query = platform::DeleteQuery, 200 => platform::TenantDeleted),
];

/// The error body every failure answers with.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct ErrorDetail {
    /// `bad_request`, `invalid_field`, `invalid_fields`, `unauthorized`, `forbidden`,
    /// `not_found`, `conflict`, `rate_limited`, …
    code: String,
    message: String,
    field: Option<String>,
    fields: Option<Vec<FieldError>>,
    constraint: Option<String>,
    retry_after_secs: Option<u64>,
}

/// The OpenAPI 3.1 document, servers at `{base_url}/api/v1`.
pub fn document(base_url: &str) -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.definitions_path = "/components/schemas".into();
    let mut g = SchemaGenerator::new(settings);
    let error = sub::<ErrorBody>(&mut g);
    let ops: Vec<DocOperation> = OPERATIONS
        .iter()
        .map(|op| DocOperation {
            method: op.method,
            path: op.path,
            summary: op.summary,
            query: op.query.map(|q| q(&mut g)),
            body: op.body.map(|b| b(&mut g)),
            status: op.status,
            response: op.response.map(|r| r(&mut g)),
            media: op.media,
        })
        .collect();
    let schemas = g.take_definitions(true);
    openapi_document(
        base_url,
        "Root Platform API",
        env!("CARGO_PKG_VERSION"),
        &ops,
        error,
        schemas,
    )
}

/// `GET /api/v1/openapi.json`
pub async fn openapi(
    axum::extract::State(state): axum::extract::State<crate::state::AppState>,
) -> axum::Json<Value> {
    axum::Json(document(&state.config.platform_base_url))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_queries_and_paths_come_from_the_types() {
        let doc = document("https://root.example.org/");
        assert_eq!(doc["openapi"], "3.1.0");
        assert_eq!(doc["servers"][0]["url"], "https://root.example.org/api/v1");
        let sync = &doc["paths"]["/principals/sync"]["post"];
        let body = &sync["requestBody"]["content"]["application/json"]["schema"];
        assert_eq!(body["$ref"], "#/components/schemas/PrincipalSyncBody");
        let schemas = &doc["components"]["schemas"];
        assert!(schemas["PrincipalSyncBody"]["properties"]["principals"].is_object());
        let names: Vec<&String> = schemas.as_object().unwrap().keys().collect();
        assert!(
            !names.iter().any(|n| n.ends_with(char::is_numeric)),
            "no two types share a schema name: {names:?}"
        );
        let state = &doc["paths"]["/principals/state"]["get"]["parameters"];
        let names: Vec<&str> = state
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["email", "ref", "slack_user_id"]);
        let deact = &doc["paths"]["/principals/preferences/{id}/deactivate"]["post"];
        assert_eq!(deact["parameters"][0]["in"], "path");
        assert!(doc["paths"]["/kb/pages/{slug}"]["delete"]["responses"]["204"].is_object());
        let turn = &doc["paths"]["/agent/turns"]["post"]["responses"]["200"];
        let turn = &turn["content"]["application/json"]["schema"]["$ref"];
        assert_eq!(turn, "#/components/schemas/TurnResponse");
    }

    /// Every answer with a body has its schema (only 204s and this
    /// document itself have none).
    #[test]
    fn every_answer_with_a_body_has_a_schema() {
        let missing: Vec<String> = OPERATIONS
            .iter()
            .filter(|op| {
                op.response.is_none()
                    && op.media.is_none()
                    && op.status != 204
                    && op.path != "/openapi.json"
            })
            .map(|op| format!("{} {}", op.method, op.path))
            .collect();
        assert!(missing.is_empty(), "no response schema: {missing:?}");
    }
}
