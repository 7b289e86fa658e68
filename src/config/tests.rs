//! Unit tests of `config.rs`.

use super::*;

fn cfg(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
    Config::from_vars(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())))
}

#[test]
fn no_variables_gives_the_spec_defaults() {
    let c = cfg(&[]).unwrap();
    assert_eq!(c.port, 4000);
    assert_eq!(c.data_dir, PathBuf::from("./data"));
    assert!(c.run_workers);
    assert_eq!(c.llm.base_url, "https://openrouter.ai/api/v1");
    assert_eq!(c.llm.models.default, "google/gemini-3.5-flash");
    assert_eq!(c.llm.models.planner, "google/gemini-3.5-flash");
    assert_eq!(c.llm.models.search, "google/gemini-3.5-flash");
    assert_eq!(c.llm.models.writing, "anthropic/claude-sonnet-5");
    assert_eq!(c.llm.models.reasoning, "anthropic/claude-opus-4.8");
    assert_eq!(c.llm.models.vision, "google/gemini-3.5-flash");
    assert_eq!(c.llm.models.web_research, "perplexity/sonar-pro-search");
    assert_eq!(c.llm.models.image_generation, None);
    assert_eq!(c.llm.agent_reasoning_effort.as_deref(), Some("medium"));
    assert!(c.llm.api_key.is_none());
    assert_eq!(c.embedding.model, "openai/text-embedding-3-large");
    assert_eq!(c.embedding.base_url, None);
    assert!(c.embedding.api_key.is_none());
    assert!(c.search_llm_rerank && c.slack_thread_artifacts);
    assert_eq!(
        c.limits,
        Limits {
            max_knowledge_sources_per_tenant: 100,
            min_knowledge_sync_interval_minutes: 5,
            knowledge_sync_per_tenant_cap: 2,
            slack_ingest_per_tenant_per_minute: 30,
            slack_ingest_global_per_minute: 60,
        }
    );
    assert_eq!(c.platform_base_url, "http://localhost:4000");
    assert_eq!(c.mode, RunMode::Development);
    assert!(c.tracing_enabled);
    assert_eq!(c.trace_retention_days, 14);
    assert_eq!(c.opik_base_url, "https://www.comet.com/opik/api");
    assert!(c.opik_api_key.is_none() && c.opik_workspace.is_none());
}

#[test]
fn private_fetches_are_refused_unless_the_operator_allows_them() {
    assert!(!cfg(&[]).unwrap().allow_private_fetch);
    assert!(
        cfg(&[("ROOT_ALLOW_PRIVATE_FETCH", "true")])
            .unwrap()
            .allow_private_fetch
    );
    assert_eq!(
        cfg(&[("ROOT_ALLOW_PRIVATE_FETCH", "maybe")])
            .unwrap_err()
            .var,
        "ROOT_ALLOW_PRIVATE_FETCH"
    );
}

#[test]
fn request_limits_default_and_parse() {
    let c = cfg(&[]).unwrap().request_limits;
    assert_eq!(c, RequestLimits::default());
    assert_eq!(
        (
            c.agent_turns_per_tenant_per_minute,
            c.agent_turns_burst,
            c.agent_turns_per_tenant_concurrent,
            c.agent_turns_global_concurrent,
            c.tool_execute_per_tenant_per_minute,
            c.kb_search_per_tenant_per_minute,
            c.kb_writes_per_tenant_per_minute,
        ),
        (30, 10, 8, 32, 120, 300, 120)
    );
    assert_eq!(c.daily_llm_budget_usd, 25.0);
    assert_eq!(c.daily_llm_token_budget, 50_000_000);
    let c = cfg(&[
        ("ROOT_DAILY_LLM_BUDGET_USD", "2.5"),
        ("ROOT_AGENT_TURNS_GLOBAL_CONCURRENT", "4"),
    ])
    .unwrap()
    .request_limits;
    assert_eq!(
        (c.daily_llm_budget_usd, c.agent_turns_global_concurrent),
        (2.5, 4)
    );
    for (var, bad) in [
        ("ROOT_DAILY_LLM_BUDGET_USD", "0"),
        ("ROOT_DAILY_LLM_BUDGET_USD", "NaN"),
        ("ROOT_KB_SEARCH_PER_KEY_PER_MINUTE", "0"),
        ("ROOT_DAILY_LLM_TOKEN_BUDGET", "-5"),
    ] {
        assert_eq!(cfg(&[(var, bad)]).unwrap_err().var, var, "{bad}");
    }
}

#[test]
fn tracing_switch_and_retention_parse() {
    assert!(!cfg(&[("ROOT_TRACING", "off")]).unwrap().tracing_enabled);
    assert!(cfg(&[("ROOT_TRACING", "ON")]).unwrap().tracing_enabled);
    let e = cfg(&[("ROOT_TRACING", "sometimes")]).unwrap_err();
    assert_eq!((e.var, e.expected), ("ROOT_TRACING", "on or off"));
    assert_eq!(
        cfg(&[("TRACE_RETENTION_DAYS", "3")])
            .unwrap()
            .trace_retention_days,
        3
    );
    for bad in ["0", "-1", "two"] {
        assert_eq!(
            cfg(&[("TRACE_RETENTION_DAYS", bad)]).unwrap_err().var,
            "TRACE_RETENTION_DAYS"
        );
    }
}

#[test]
fn vector_floors_parse_per_model() {
    let c = cfg(&[("SEARCH_VECTOR_FLOORS", "minilm=0.2, root/hashing-v1=0.05")]).unwrap();
    assert_eq!(
        c.search_vector_floors,
        vec![
            ("minilm".to_string(), 0.2),
            ("root/hashing-v1".to_string(), 0.05)
        ]
    );
    assert!(cfg(&[]).unwrap().search_vector_floors.is_empty());
    for bad in ["minilm", "=0.2", "m=high", "m=2"] {
        assert_eq!(
            cfg(&[("SEARCH_VECTOR_FLOORS", bad)]).unwrap_err().var,
            "SEARCH_VECTOR_FLOORS",
            "{bad}"
        );
    }
}

#[test]
fn invalid_values_name_the_variable_and_the_expectation() {
    let e = cfg(&[("PORT", "forty")]).unwrap_err();
    assert_eq!(e.var, "PORT");
    assert!(e.to_string().contains("PORT=\"forty\"") && e.to_string().contains("TCP port"));
    assert_eq!(
        cfg(&[("ROOT_RUN_WORKERS", "maybe")]).unwrap_err().var,
        "ROOT_RUN_WORKERS"
    );
    assert_eq!(
        cfg(&[("OPENROUTER_BASE_URL", "ftp://x")]).unwrap_err().var,
        "OPENROUTER_BASE_URL"
    );
    assert_eq!(
        cfg(&[("LLM_TEMPERATURE", "7")]).unwrap_err().var,
        "LLM_TEMPERATURE"
    );
    assert_eq!(
        cfg(&[("OPENROUTER_PROVIDER_PREFERENCES", "[1]")])
            .unwrap_err()
            .var,
        "OPENROUTER_PROVIDER_PREFERENCES"
    );
    assert_eq!(
        cfg(&[("ROOT_MIN_KNOWLEDGE_SYNC_INTERVAL_MINUTES", "4")])
            .unwrap_err()
            .var,
        "ROOT_MIN_KNOWLEDGE_SYNC_INTERVAL_MINUTES"
    );
    assert_eq!(cfg(&[("NODE_ENV", "staging")]).unwrap_err().var, "NODE_ENV");
    assert_eq!(
        cfg(&[("EMBEDDING_BASE_URL", "localhost:8089")])
            .unwrap_err()
            .var,
        "EMBEDDING_BASE_URL"
    );
}

#[test]
fn production_starts_without_secrets_nothing_uses_yet() {
    let c = cfg(&[
        ("NODE_ENV", "production"),
        ("PLATFORM_BASE_URL", "https://root.example.org"),
    ])
    .unwrap();
    assert_eq!(c.mode, RunMode::Production);
    assert!(c.session_cookie_secret.is_none());
}

#[test]
fn the_server_binds_loopback_unless_told_otherwise() {
    assert_eq!(DEFAULT_BIND, "127.0.0.1");
    assert_eq!(cfg(&[]).unwrap().bind, "127.0.0.1");
    assert_eq!(cfg(&[("ROOT_BIND", "0.0.0.0")]).unwrap().bind, "0.0.0.0");
    for lo in [
        "127.0.0.1",
        "127.1.2.3",
        "::1",
        "[::1]",
        "localhost",
        "LOCALHOST",
    ] {
        assert!(is_loopback_bind(lo), "{lo}");
    }
    for open in [
        "0.0.0.0",
        "::",
        "10.0.0.5",
        "192.168.1.2",
        "example.org",
        "",
    ] {
        assert!(!is_loopback_bind(open), "{open}");
    }
}

#[test]
fn the_dev_harness_is_off_by_default_and_only_on_loopback_outside_production() {
    assert!(!cfg(&[]).unwrap().dev_harness);
    assert!(cfg(&[("ROOT_DEV_HARNESS", "true")]).unwrap().dev_harness);
    let e = cfg(&[("ROOT_DEV_HARNESS", "true"), ("ROOT_BIND", "0.0.0.0")]).unwrap_err();
    assert_eq!(e.var, "ROOT_BIND");
    assert!(e.expected.contains("loopback"), "{e}");
    let e = cfg(&[("ROOT_DEV_HARNESS", "true"), ("ROOT_BIND", "10.1.2.3")]).unwrap_err();
    assert_eq!(e.var, "ROOT_BIND");
    let e = cfg(&[("ROOT_DEV_HARNESS", "true"), ("NODE_ENV", "production")]).unwrap_err();
    assert_eq!(e.var, "ROOT_DEV_HARNESS");
    // Without the harness any bind is the operator's choice.
    assert!(cfg(&[("ROOT_BIND", "0.0.0.0")]).is_ok());
}

#[test]
fn reasoning_effort_none_or_empty_disables() {
    assert_eq!(
        cfg(&[("LLM_AGENT_REASONING_EFFORT", "none")])
            .unwrap()
            .llm
            .agent_reasoning_effort,
        None
    );
    assert_eq!(
        cfg(&[("LLM_AGENT_REASONING_EFFORT", "")])
            .unwrap()
            .llm
            .agent_reasoning_effort,
        None
    );
    assert_eq!(
        cfg(&[("LLM_AGENT_REASONING_EFFORT", "High")])
            .unwrap()
            .llm
            .agent_reasoning_effort
            .as_deref(),
        Some("high")
    );
}

#[test]
fn secrets_never_appear_in_debug_output() {
    let c = cfg(&[
        ("OPENROUTER_API_KEY", "sk-or-topsecret"),
        ("SLACK_SIGNING_SECRET", "slack-topsecret"),
        ("SESSION_COOKIE_SECRET", "cookie-topsecret"),
        ("POSTMARK_SERVER_TOKEN", "pm-topsecret"),
        ("EMBEDDING_API_KEY", "emb-topsecret"),
        ("OPIK_API_KEY", "opik-topsecret"),
    ])
    .unwrap();
    let dbg = format!("{c:?}");
    assert!(!dbg.contains("topsecret"), "{dbg}");
    assert!(dbg.contains("[redacted]"));
    assert_eq!(c.llm.api_key.unwrap().expose(), "sk-or-topsecret");
}

#[test]
fn security_m3_dev_bypass_has_the_dev_harness_guard_rails() {
    assert!(!cfg(&[]).unwrap().auth_dev_bypass);
    assert!(
        cfg(&[("AUTH_DEV_BYPASS", "true")])
            .unwrap()
            .dev_bypass_enabled()
    );
    for open in ["0.0.0.0", "::", "10.1.2.3", "root.example.org"] {
        let e = cfg(&[("AUTH_DEV_BYPASS", "true"), ("ROOT_BIND", open)]).unwrap_err();
        assert_eq!(e.var, "ROOT_BIND", "{open}");
        assert!(e.expected.contains("AUTH_DEV_BYPASS"), "{e}");
    }
    assert!(cfg(&[("AUTH_DEV_BYPASS", "true"), ("ROOT_BIND", "::1")]).is_ok());
    let e = cfg(&[
        ("AUTH_DEV_BYPASS", "true"),
        ("NODE_ENV", "production"),
        ("PLATFORM_BASE_URL", "https://root.example.org"),
    ])
    .unwrap_err();
    assert_eq!(e.var, "AUTH_DEV_BYPASS");
    // `false` is fine anywhere.
    assert!(
        cfg(&[
            ("AUTH_DEV_BYPASS", "false"),
            ("ROOT_BIND", "0.0.0.0"),
            ("NODE_ENV", "production"),
            ("PLATFORM_BASE_URL", "https://root.example.org"),
        ])
        .is_ok()
    );
}

#[test]
fn security_l11_production_refuses_an_http_base_url() {
    let e = cfg(&[
        ("NODE_ENV", "production"),
        ("PLATFORM_BASE_URL", "http://x"),
    ])
    .unwrap_err();
    assert_eq!((e.var, e.value.as_str()), ("PLATFORM_BASE_URL", "http://x"));
    assert!(e.expected.contains("ROOT_ALLOW_INSECURE_BASE_URL"), "{e}");
    // The default (http://localhost:PORT) is http too.
    assert_eq!(
        cfg(&[("NODE_ENV", "production")]).unwrap_err().var,
        "PLATFORM_BASE_URL"
    );
    assert!(!cfg(&[]).unwrap().allow_insecure_base_url);
    let c = cfg(&[
        ("NODE_ENV", "production"),
        ("PLATFORM_BASE_URL", "https://root.example.org"),
    ])
    .unwrap();
    assert!(!c.allow_insecure_base_url);
    // The operator's explicit opt-ins: an insecure base URL, or the LAN
    // self-hosting switch that already allows plain http in production.
    for opt_in in ["ROOT_ALLOW_INSECURE_BASE_URL", "ROOT_ALLOW_PRIVATE_FETCH"] {
        let c = cfg(&[
            ("NODE_ENV", "production"),
            ("PLATFORM_BASE_URL", "http://x"),
            (opt_in, "true"),
        ])
        .unwrap();
        assert_eq!(c.platform_base_url, "http://x", "{opt_in}");
    }
    // Outside production http stays the default.
    assert!(cfg(&[("PLATFORM_BASE_URL", "http://x")]).is_ok());
}

#[test]
fn trusted_proxies_default_to_none_and_parse() {
    assert!(cfg(&[]).unwrap().trusted_proxies.is_empty());
    let c = cfg(&[("ROOT_TRUSTED_PROXIES", "127.0.0.1, ::1, 10.0.0.0/8")]).unwrap();
    assert!(c.trusted_proxies.contains("10.9.8.7".parse().unwrap()));
    assert!(!c.trusted_proxies.contains("192.0.2.1".parse().unwrap()));
    let e = cfg(&[("ROOT_TRUSTED_PROXIES", "127.0.0.1,proxy.lan")]).unwrap_err();
    assert_eq!(e.var, "ROOT_TRUSTED_PROXIES");
}

#[test]
fn redb_cache_defaults_to_128_mib_and_is_bounded() {
    assert_eq!(cfg(&[]).unwrap().redb_cache_mb, 128);
    assert_eq!(storage::DEFAULT_CACHE_BYTES, 128 << 20);
    assert_eq!(
        cfg(&[("ROOT_REDB_CACHE_MB", "1024")])
            .unwrap()
            .redb_cache_mb,
        1024
    );
    for bad in ["0", "7", "65537", "lots"] {
        let e = cfg(&[("ROOT_REDB_CACHE_MB", bad)]).unwrap_err();
        assert_eq!(e.var, "ROOT_REDB_CACHE_MB", "{bad}");
        assert!(e.expected.contains("MiB"), "{bad}: {}", e.expected);
    }
}
