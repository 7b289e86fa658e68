//! Setting Slack credentials: `PUT /api/v1/channels/slack` and
//! `root tenant channel slack`.

use std::process::Command;

use root::slack::credentials::CredentialSource;
use serde_json::json;

use super::*;
use crate::support::fake_llm::completion;
use crate::support::test_config;

#[tokio::test]
async fn slack_admin_put_checks_the_token_with_slack_and_never_echoes_secrets() {
    let w = world().await;
    // A token Slack refuses: 400 naming Slack's code, nothing stored.
    let (s, v, text) = w
        .put_slack(
            &w.live_key,
            &json!({"bot_token": "xoxb-revoked-token", "signing_secret": SECRET_1}),
        )
        .await;
    assert_eq!(s, 400, "{text}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("invalid_auth"),
        "{text}"
    );
    assert!(
        !text.contains("xoxb-revoked-token") && !text.contains(SECRET_1),
        "{text}"
    );
    assert!(w.creds("acme").await.is_none());
    // Malformed input is refused before Slack is asked.
    let asked = w.slack.requests_to("/api/auth.test").len();
    let (s, _, text) = w
        .put_slack(
            &w.live_key,
            &json!({"bot_token": "xoxp-user", "signing_secret": "s"}),
        )
        .await;
    assert_eq!(s, 400, "{text}");
    assert!(!text.contains("xoxp-user"), "{text}");
    assert_eq!(w.slack.requests_to("/api/auth.test").len(), asked);
    // Unauthenticated: 401.
    let (s, _, _) = w
        .put_slack(
            "rpk_live_nope",
            &json!({"bot_token": TOKEN_1, "signing_secret": SECRET_1}),
        )
        .await;
    assert_eq!(s, 401);
    // A good token: stored, answered with the workspace and the bot only.
    let (s, v, text) = w
        .put_slack(
            &w.live_key,
            &json!({"bot_token": TOKEN_1, "signing_secret": SECRET_1}),
        )
        .await;
    assert_eq!(s, 200, "{text}");
    assert_eq!(
        v,
        json!({"team_id": TEAM, "bot_user_id": BOT, "status": "active"})
    );
    let last = w.slack.requests_to("/api/auth.test").pop().unwrap();
    assert_eq!(
        last.header("authorization"),
        Some(format!("Bearer {TOKEN_1}").as_str())
    );
    let c = w.creds("acme").await.expect("stored");
    assert_eq!(c.bot_token.expose(), TOKEN_1);
    assert_eq!(c.signing_secret.expose(), SECRET_1);
    assert_eq!(c.team_id.as_deref(), Some(TEAM));
    assert_eq!(c.source, CredentialSource::Channel);
    // A dev key sets the dev shadow's own row; a given team id wins.
    let (s, v, _) = w
        .put_slack(
            &w.dev_key,
            &json!({"bot_token": TOKEN_2, "signing_secret": SECRET_2, "team_id": "TOTHER1"}),
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(v["team_id"], "TOTHER1");
    assert_eq!(
        w.creds("acme--dev").await.unwrap().bot_token.expose(),
        TOKEN_2
    );
    assert_eq!(w.creds("acme").await.unwrap().bot_token.expose(), TOKEN_1);
    // Unknown fields are refused (a typo must not silently drop a value).
    let (s, _, _) = w
        .put_slack(
            &w.live_key,
            &json!({"bot_token": TOKEN_1, "signing_secret": "s", "x": 1}),
        )
        .await;
    assert_eq!(s, 400);
}

#[tokio::test]
async fn slack_admin_the_next_event_uses_the_new_credentials() {
    let w = world().await;
    w.llm
        .json(completion("First answer."))
        .json(completion("Second answer."));
    let (s, _, _) = w
        .put_slack(
            &w.live_key,
            &json!({"bot_token": TOKEN_1, "signing_secret": SECRET_1}),
        )
        .await;
    assert_eq!(s, 200);
    let (s, _) = w
        .deliver(
            "/slack/events/acme",
            &dm("1700000100.000100", "hello"),
            SECRET_1,
        )
        .await;
    assert_eq!(s, 200);
    w.settle().await;
    // Rotate both the token and the signing secret.
    let (s, _, _) = w
        .put_slack(
            &w.live_key,
            &json!({"bot_token": TOKEN_2, "signing_secret": SECRET_2}),
        )
        .await;
    assert_eq!(s, 200);
    let (s, _) = w
        .deliver(
            "/slack/events/acme",
            &dm("1700000100.000200", "again"),
            SECRET_1,
        )
        .await;
    assert_eq!(s, 401, "the old signing secret no longer verifies");
    let (s, _) = w
        .deliver(
            "/slack/events/acme",
            &dm("1700000100.000300", "again"),
            SECRET_2,
        )
        .await;
    assert_eq!(s, 200);
    w.settle().await;
    let bearers: Vec<String> = w
        .slack
        .requests_to("/api/chat.postMessage")
        .iter()
        .map(|r| r.header("authorization").unwrap_or("").to_string())
        .collect();
    assert_eq!(
        bearers,
        vec![format!("Bearer {TOKEN_1}"), format!("Bearer {TOKEN_2}")]
    );
}

fn root_cmd(data_dir: &std::path::Path, slack_api: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_root"));
    c.env_clear()
        .env("ROOT_DATA_DIR", data_dir)
        .env("SLACK_API_BASE_URL", slack_api)
        .env("RUST_LOG", "warn")
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    c
}

/// (exit code, stdout, stderr) of `root args…`, off the async runtime
/// (the fake Slack answers on it meanwhile).
async fn run(data_dir: &std::path::Path, slack_api: &str, args: &[&str]) -> (i32, String, String) {
    let mut cmd = root_cmd(data_dir, slack_api);
    cmd.args(args);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[tokio::test]
async fn slack_admin_cli_sets_credentials_with_the_server_stopped() {
    let slack = FakeHttp::start().await;
    fake_slack_auth(&slack);
    let api = slack.url("/api");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (code, _, err) = run(&data, &api, &["tenant", "create", "acme"]).await;
    assert_eq!(code, 0, "{err}");
    let slack_args = |token: &'static str| {
        vec![
            "tenant",
            "channel",
            "slack",
            "acme",
            "--bot-token",
            token,
            "--signing-secret",
            SECRET_1,
        ]
    };
    // Refused by Slack: exit 1, a clear message with Slack's code, no secret.
    let (code, out, err) = run(&data, &api, &slack_args("xoxb-revoked-token")).await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("invalid_auth") && err.contains("acme"),
        "{err}"
    );
    for text in [&out, &err] {
        assert!(
            !text.contains("xoxb-revoked-token") && !text.contains(SECRET_1),
            "{text}"
        );
    }
    // Unknown tenant: exit 1.
    let (code, _, err) = run(
        &data,
        &api,
        &[
            "tenant",
            "channel",
            "slack",
            "nobody",
            "--bot-token",
            TOKEN_1,
            "--signing-secret",
            "s",
        ],
    )
    .await;
    assert_eq!(code, 1);
    assert!(err.contains("nobody"), "{err}");
    // Accepted: prints the workspace and the bot, never the secrets.
    let (code, out, err) = run(&data, &api, &slack_args(TOKEN_1)).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(TEAM) && out.contains(BOT), "{out}");
    for text in [&out, &err] {
        assert!(
            !text.contains(TOKEN_1) && !text.contains(SECRET_1),
            "{text}"
        );
    }
    // Stored where the server will read it.
    let config = test_config(&data, &[]);
    let store = root::app::open_store(&config).await.unwrap();
    let tenant = storage::TenantStore::tenant_by_slug(&store, "acme")
        .await
        .unwrap()
        .unwrap();
    let c = root::slack::resolve_credentials(&store, &config, &tenant)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c.bot_token.expose(), TOKEN_1);
    assert_eq!(c.team_id.as_deref(), Some(TEAM));
    store.close().await;
}
