//! The email wire layer (§8.3): inbound parsing of every shared fixture
//! and the outbound senders against fakes on 127.0.0.1.

mod delegation;
mod flow;
mod log_redaction;
mod parse;
mod security;
mod send;
