//! AI layer (§3): the OpenAI-compatible HTTP client shared by every provider
//! call ([`http`]), usage metering into `llm_token_usage` and the
//! request-scoped collector ([`usage`]), the chat-completions client and
//! its helpers ([`chat`]), and
//! embeddings ([`embeddings`]: the provider client, or a deterministic
//! offline embedder when no provider is configured).
//!
//! Only this module (with `platform` and the channel clients) knows reqwest.

pub mod chat;
pub mod embeddings;
pub mod http;
pub mod usage;

pub use http::AiError;
