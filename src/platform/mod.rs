//! Platform concerns shared by every channel and job: tenancy (§1) and
//! API-key authentication (§12.1). Later: access policy, integration client,
//! limits.

pub mod api_keys;
pub mod tenancy;
