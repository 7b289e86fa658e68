//! Email as a transport (§8.3), the wire only: the hosted provider's signed
//! webhook (`primitive`), one normalized inbound message from Primitive
//! events, Postmark inbound JSON or raw MIME (`inbound`), reply threading
//! and recipients per RFC 5322 §3.6.4 (`threading`), Markdown → text + HTML
//! (`render`) and the outbound senders — Primitive, Postmark, a tenant's
//! signed BYO webhook and the platform's provider-with-fallback (`send`).
//!
//! What Root *does* with a mail (routes, the durable `email-inbound` job,
//! the email turn) lives above this layer.

pub mod automatic;
pub mod inbound;
mod mime;
pub mod primitive;
mod quote;
pub mod render;
pub mod send;
pub mod sender_auth;
pub mod threading;

pub use inbound::{
    InboundEmail, InboundError, Mailbox, content_identity, job_id, strip_quoted_reply,
};
pub use render::render_reply;
pub use send::{
    Accepted, ByoWebhookSender, EmailSender, OutgoingEmail, PlatformSender, PostmarkSender,
    PrimitiveSender, SendError,
};
pub use sender_auth::SenderAuth;
pub use threading::{RecipientRules, ReplyThreading, reply_headers, reply_recipients};
