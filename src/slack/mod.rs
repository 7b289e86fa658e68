//! Slack as a transport (§8.2): request signatures, the Web API client
//! (and shared-file downloads),
//! where a tenant's Slack credentials come from, the Events API payloads,
//! and Markdown → mrkdwn delivery formatting. What Root *does* with an
//! event (reply policy, the turn, ingest) is `channels::slack`; the HTTP
//! route is `web::slack`.

pub mod api;
pub mod credentials;
pub mod download;
pub mod events;
pub mod files;
pub mod manifest;
pub mod mrkdwn;
pub mod signature;
pub mod sink;
pub mod teams;
pub mod workspaces;

pub use api::{
    Joined, OutgoingMessage, Params, SlackApi, SlackConversation, SlackError, SlackUser,
};
pub use credentials::{SlackCredentials, resolve as resolve_credentials};
pub use teams::TeamDirectory;
pub use workspaces::Workspaces;
