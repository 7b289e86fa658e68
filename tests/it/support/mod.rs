//! Test support as a library for the integration tests: the running app
//! (`app`), tenants and keys (`tenants`), seeding (`seed`), draining queued
//! jobs (`jobs`), the fake-HTTP-server kit (`fake_http`) and the fake LLM on
//! it (`fake_llm`, the kit's own tests in `fake_http_tests`), and the
//! crash-test harness (`crash`), and captured log lines (`logs`).

pub mod app;
pub mod browser;
pub mod crash;
pub mod dashboard;
pub mod fake_http;
mod fake_http_tests;
pub mod fake_llm;
pub mod jobs;
pub mod logs;
pub mod seed;
pub mod tenants;

pub use app::{TestApp, test_config};
pub use crash::run_child_until_marker_then_sigkill;
pub use fake_http::{FakeHttp, Reply, closed_port_url};
pub use jobs::drain_jobs;
pub use seed::{index_slack_messages, register_stub};
pub use tenants::{TwoTenants, create_tenant, ctx, mint_key, set_setting};
