//! Community builds (§15.1): shareable JavaScript tools from a platform-wide
//! catalog, installed per tenant with the tenant's own config, run
//! out-of-process in a QuickJS sandbox.
//!
//! - [`sandbox`] — the re-exec'd `root sandbox-run` child (QuickJS, no fs /
//!   env / process APIs, a memory limit, a wall clock, `fetch` only through
//!   the SSRF-guarded client) and the parent that drives it over NDJSON.
//! - [`format`](mod@format) — `build.json` + `index.js`, checked.
//! - [`catalog`] — listings (publish), installs (config validated against
//!   the listing's JSON Schema, secrets write-only).

pub mod catalog;
pub mod format;
pub mod sandbox;
