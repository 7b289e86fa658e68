//! Integration tests: the real server on 127.0.0.1 and the real binary.
//! One test binary (one link step) with a module per feature.

mod agent;
mod ai_chat;
mod ai_embeddings;
mod cli;
mod contributions;
mod email;
mod email_crash;
mod embedding_audit;
mod follow_ups;
mod health;
mod identity;
mod integrations;
mod kb;
mod kb_crash;
mod kb_pages;
mod kb_shapes;
mod knowledge_fetch;
mod knowledge_sync;
mod limits;
mod me;
mod outbound;
mod prompts;
mod queue;
mod queue_crash;
mod relaxed_crash;
mod slack;
mod slack_admin;
mod slack_search;
mod support;
mod tidy;
mod tools;
mod tracing;
mod turns;
mod webchat;
mod webchat_browser;
