//! Platform concerns shared by every channel and job: tenancy (§1),
//! API-key authentication (§12.1) and the platform-admin keys of
//! `/api/v1/platform/*`, time, and admin notification sinks
//! (§15.2), access policy, replay protection for signed webhooks, and the
//! platform's own tier names.

pub mod access_policy;
pub mod api_keys;
pub mod branding;
pub mod clock;
pub mod notify;
pub mod openapi;
pub mod platform_keys;
pub mod rate;
pub mod replay;
pub mod settings;
pub mod tenancy;
pub mod tiers;
pub mod tool_names;
pub mod tool_result;
