//! The root-int/1 integration protocol (§7): signed calls from the platform
//! to a tenant's own backend, which contributes tools, prompt sections,
//! link destinations, identity resolution and an escalation webhook.
//!
//! - [`signing`] — HMAC-SHA256 request signing and verification (§7.1).
//! - [`endpoints`] — the six endpoints, default paths/timeouts, overrides (§7.2).
//! - [`manifest`] — manifest types and validation, `tool_overrides`, and the
//!   pure materialization functions (§7.3–§7.5).
//! - [`client`] — [`IntegrationClient`]: manifest, tool invoke (retries,
//!   NDJSON streams, audit rows), identity, roster, links, escalations.
//! - [`overrides`] — validating and storing per-tool overrides (§7.4).
//! - [`registry`] — [`Integrations`]: per-tenant registration, the 60 s
//!   manifest cache and `prime` (turn start).
//! - [`escalations`] — [`EscalationWebhook`]: the escalations webhook as an
//!   intervention sink (§15.2).
//! - The stub tenant backend for tests and the example lives in the
//!   `testkit` crate (`testkit/`), out of the production library.

pub mod client;
pub mod endpoints;
pub mod escalations;
pub mod manifest;
pub mod overrides;
pub mod registry;
pub mod signing;
pub mod tool_answer;
pub mod wire;

pub use client::{
    ActsFor, CallError, EmailDelegation, Escalation, IdentityQuery, IdentityResolution,
    IntegrationClient, InvokePrincipal, InvokeRequest, ResolvedPrincipal,
};
pub use endpoints::{EndpointKey, EndpointPaths};
pub use escalations::{EscalationWebhook, escalation_body};
pub use manifest::{
    AccessTier, LinkDestinations, Manifest, ManifestError, ManifestTool, ToolOverride,
    effective_tools, link_destinations_for, materialize_tools, prompt_sections_for,
};
pub use registry::{
    IntegrationError, Integrations, MANIFEST_CACHE_TTL, NewIntegration, PrimedIntegration,
    WithSecret,
};
