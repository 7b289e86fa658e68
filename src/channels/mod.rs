//! Channels (§8): what every channel shares — conversation memory, the
//! shared turn runner (`run_channel_turn`, §8.1) and secure-link delivery.
//! Slack and email get their own handlers on top of these.

pub mod action_alerts;
pub mod admin_config;
mod caller;
pub mod capability_gap;
pub mod conversation;
pub mod email;
pub mod follow_up_sweep;
pub mod kb_access;
pub mod links;
pub mod mentions;
pub mod outbound_message;
pub mod private_dm;
pub mod slack;
pub mod slack_join;
pub mod slack_setup;
pub mod turn;
pub mod web;

pub use turn::{TurnError, TurnOrigin, TurnOutcome, TurnRequest, run_channel_turn};
