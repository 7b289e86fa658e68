//! Root: a self-hosted, multi-tenant community assistant in one binary.
//!
//! Entry points: `main.rs` (CLI) → [`cli::run`] → [`app::App::build`]
//! (storage + migrations + listener) → [`web::serve`]. See
//! `ARCHITECTURE.md` for the code map and invariants.

pub mod agent;
pub mod ai;
pub mod app;
pub mod auth;
pub mod builds;
pub mod channels;
pub mod cli;
pub mod config;
pub mod email;
pub mod follow_ups;
pub mod identity;
pub mod insights;
pub mod integrations;
pub mod knowledge;
pub mod limits;
pub mod memory;
pub mod ops;
pub mod outbound;
pub mod platform;
pub mod prompts;
pub mod queue;
pub mod retrieval;
pub mod slack;
pub mod state;
#[cfg(feature = "tooling")]
pub mod tooling;
pub mod tools;
pub mod trace;
pub mod web;
