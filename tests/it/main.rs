//! Integration tests: the real server on 127.0.0.1 and the real binary.
//! One test binary (one link step) with a module per feature.

mod ai_embeddings;
mod cli;
mod health;
mod me;
mod queue;
mod queue_crash;
mod support;
