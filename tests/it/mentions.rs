//! Reply mentions (§6, §2.4): a turn's reply is scanned off the turn's path
//! for members named by Slack id and by display name, with
//! `content_sourced` when the named member authored a source the run
//! consulted; the hourly `reply-mention-sweep` re-scans the last 48 h per
//! tenant, idempotently, upgrading `content_sourced` and ignoring older
//! replies and inbound messages.

use std::sync::Arc;

use serde_json::json;
use storage::{
    Channel, ConversationLog, Direction, IndexCorpus, MatchedVia, Principal, ProcessedSlackMessage,
    ReplyMention, ReplySourceUsage, Scan, SourceUsageType, Store, Tenant, TenantStore, Ts,
};
use uuid::Uuid;

use root::platform::api_keys::{self, KeyKind};
use root::platform::clock::{Clock, ManualClock};
use root::platform::tenancy::{self, TenantContext};
use root::queue::Outcome;
use root::queue::registry::{self, REPLY_MENTION_SWEEP};
use root::retrieval::PageUpsert;
use testkit::stub::StubBackend;

use crate::support::fake_llm::{FakeLlm, completion, tool_calls};
use crate::support::tenants::T0_SECS;
use crate::support::{TestApp, create_tenant, ctx, drain_jobs};

const SECRET: &str = "stub-secret-0123456789";

fn member(tenant: Uuid, r: &str, name: &str, slack: Option<&str>) -> Principal {
    let mut p = Principal::new(tenant, r);
    p.tier = "member".into();
    p.display_name = Some(name.into());
    p.slack_user_id = slack.map(String::from);
    p
}

async fn mentions_of(app: &TestApp, tenant: Uuid) -> Vec<ReplyMention> {
    let mut rows: Vec<ReplyMention> = app
        .state
        .store
        .scan(Some(tenant), Scan::all())
        .await
        .unwrap();
    rows.sort_by(|a, b| (a.message_at, &a.mentioned_name).cmp(&(b.message_at, &b.mentioned_name)));
    rows
}

async fn sweep(app: &TestApp, now: Ts) -> Vec<Outcome> {
    let spec = registry::spec(REPLY_MENTION_SWEEP).unwrap();
    root::queue::scheduler::enqueue_tick(&app.state.queues, spec, now)
        .await
        .unwrap();
    drain_jobs(&app.state, REPLY_MENTION_SWEEP).await
}

/// The tick plus one job per tenant (the platform's root tenant included).
async fn fanned_out(app: &TestApp) -> usize {
    1 + app.state.store.list_tenants().await.unwrap().len()
}

fn completed(outcomes: &[Outcome]) -> usize {
    outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Completed { .. }))
        .count()
}

/// A turn through the dev harness: the model searches the knowledge base
/// (a page Linus wrote), then names Grace by Slack id, Linus by name and
/// the asker (Ada) by name.
#[tokio::test]
async fn mentions_of_a_turns_reply_by_slack_id_and_name_with_content_sourced() {
    let llm = FakeLlm::start().await;
    let app = TestApp::spawn_with(&[
        ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
        ("OPENROUTER_API_KEY", "sk-or-test"),
        ("ROOT_DEV_HARNESS", "true"),
        ("ROOT_RUN_WORKERS", "false"),
        ("SEARCH_LLM_RERANK", "false"),
    ])
    .await;
    let t = app
        .state
        .store
        .create_tenant(Tenant::new("acme", "Acme"))
        .await
        .unwrap();
    let key = api_keys::mint(
        &app.state.store,
        &t,
        "dev",
        KeyKind::Live,
        app.state.clock.now(),
    )
    .await
    .unwrap()
    .raw;
    let acme: TenantContext = ctx(t);
    let stub = StubBackend::start(SECRET).await.unwrap();
    crate::support::register_stub(&app, &acme, &stub, SECRET).await;
    let store = &app.state.store;
    let grace = store
        .insert(member(acme.id(), "grace", "Grace Hopper", Some("U_GRACE")))
        .await
        .unwrap();
    let linus = store
        .insert(member(acme.id(), "linus", "Linus Torvalds", None))
        .await
        .unwrap();
    let retrieval = app.state.retrieval.clone();
    let author = linus.id.to_string();
    tenancy::scope(acme.clone(), async move {
        let w = retrieval
            .upsert_page(PageUpsert {
                slug: "kiln-guide".into(),
                title: "Kiln firing guide".into(),
                content_html: "<p>Fire the kiln slowly: ramp 100 degrees per hour to cone six.</p>"
                    .into(),
                source_type: "manual".into(),
                author_member_id: Some(author),
                ..PageUpsert::default()
            })
            .await
            .unwrap();
        retrieval
            .wait_searchable(IndexCorpus::Knowledge, w.index_seq)
            .await
            .unwrap();
    })
    .await;

    llm.json(tool_calls(
        None,
        &[("c1", "search_knowledge_base", r#"{"query":"kiln firing"}"#)],
    ))
    .json(completion(
        "Ask <@U_GRACE> about glazes; Linus Torvalds wrote the kiln guide. Happy firing, Ada Lovelace!",
    ));
    let r = app
        .post_json(
            "/dev/simulate-message",
            Some(&key),
            &json!({"tenant": "acme", "message": "How do I fire the kiln?",
                    "slack_user_id": "u_member"}),
        )
        .await;
    assert_eq!(r.status().as_u16(), 200);
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(v["tool_calls"][0]["name"], "search_knowledge_base", "{v}");
    app.state.turns.mentions.idle().await;

    let logs: Vec<ConversationLog> = store.scan(Some(acme.id()), Scan::all()).await.unwrap();
    let out = logs
        .iter()
        .find(|l| l.direction == Direction::Outbound)
        .expect("the reply is logged");
    let rows = mentions_of(&app, acme.id()).await;
    let got: Vec<_> = rows
        .iter()
        .map(|m| {
            (
                m.mentioned_principal_id,
                m.mentioned_slack_user_id.as_deref(),
                m.mentioned_name.as_deref(),
                m.matched_via,
                m.content_sourced,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                Some(grace.id),
                Some("U_GRACE"),
                Some("Grace Hopper"),
                MatchedVia::SlackId,
                false
            ),
            (
                Some(linus.id),
                None,
                Some("Linus Torvalds"),
                MatchedVia::Name,
                true
            ),
        ],
        "the asker (Ada) is not counted; Linus wrote the page the run read"
    );
    for m in &rows {
        assert_eq!(m.conversation_log_id, Some(out.id));
        assert_eq!(m.exchange_key.as_deref(), v["exchange_key"].as_str());
        assert_eq!(m.message_at, out.message_at);
    }

    // The sweep over the same reply adds nothing.
    let outcomes = sweep(&app, app.state.clock.now()).await;
    assert_eq!(completed(&outcomes), fanned_out(&app).await, "{outcomes:?}");
    assert_eq!(mentions_of(&app, acme.id()).await, rows);
}

fn log(
    tenant: Uuid,
    direction: Direction,
    at: Ts,
    text: &str,
    run: Option<Uuid>,
) -> ConversationLog {
    let mut l = ConversationLog::new(tenant, Channel::Slack, direction);
    l.message_at = at;
    l.created_at = at;
    l.message_text = Some(text.into());
    l.exchange_key = Some(Uuid::new_v4().to_string());
    if let Some(run) = run {
        l.metadata = storage::Json(json!({"run_id": run}));
    }
    l
}

#[tokio::test]
async fn mention_sweep_rescans_48_hours_idempotently_per_tenant() {
    let clock = ManualClock::new(Ts::from_secs(T0_SECS));
    let app =
        TestApp::spawn_with_clock(&[("ROOT_RUN_WORKERS", "false")], Arc::new(clock.clone())).await;
    let store = &app.state.store;
    let acme = create_tenant(store, "acme", "Acme").await;
    let other = create_tenant(store, "other", "Other").await;
    let (a, o) = (acme.id(), other.id());
    let ada = store
        .insert(member(a, "ada", "Ada Lovelace", Some("U_ADA")))
        .await
        .unwrap();
    let grace = store
        .insert(member(a, "grace", "Grace Hopper", None))
        .await
        .unwrap();
    let their_grace = store
        .insert(member(o, "grace", "Grace Hopper", None))
        .await
        .unwrap();
    let hours = |h: i64| Ts::from_secs(T0_SECS - h * 3_600);

    // An hour ago: Ada by Slack id (her message was the run's source),
    // Grace by name. Its scan on the turn's path ran before the run's
    // sources were stored: Ada's row says not sourced.
    let run = Uuid::new_v4();
    let recent = store
        .insert(log(
            a,
            Direction::Outbound,
            hours(1),
            "Per <@U_ADA>, and Grace Hopper agrees.",
            Some(run),
        ))
        .await
        .unwrap();
    store
        .insert(ReplySourceUsage {
            id: Uuid::new_v4(),
            tenant_id: a,
            run_id: run,
            source_type: SourceUsageType::SlackMessage,
            source_ref: "C0GENERAL:1700000000.000100".into(),
            created_at: hours(1),
        })
        .await
        .unwrap();
    store
        .insert(ProcessedSlackMessage {
            id: Uuid::new_v4(),
            tenant_id: a,
            channel_id: "C0GENERAL".into(),
            user_id: Some("U_ADA".into()),
            message_ts: "1700000000.000100".into(),
            message_text: "Glaze at cone six.".into(),
            message_date: hours(30),
            created_at: hours(30),
            ..ProcessedSlackMessage::default()
        })
        .await
        .unwrap();
    let early = store
        .insert(ReplyMention {
            id: Uuid::new_v4(),
            tenant_id: a,
            conversation_log_id: Some(recent.id),
            exchange_key: recent.exchange_key.clone(),
            mentioned_principal_id: Some(ada.id),
            mentioned_slack_user_id: Some("U_ADA".into()),
            mentioned_name: Some("Ada Lovelace".into()),
            matched_via: MatchedVia::SlackId,
            content_sourced: false,
            message_at: recent.message_at,
            created_at: hours(1),
        })
        .await
        .unwrap();
    // 46 h ago: Grace by name (inside the window).
    let older = store
        .insert(log(
            a,
            Direction::Outbound,
            hours(46),
            "grace hopper can help.",
            None,
        ))
        .await
        .unwrap();
    // 49 h ago (outside), and an inbound message (never a reply).
    store
        .insert(log(
            a,
            Direction::Outbound,
            hours(49),
            "Ask <@U_ADA>.",
            None,
        ))
        .await
        .unwrap();
    store
        .insert(log(
            a,
            Direction::Inbound,
            hours(2),
            "Is Grace Hopper around?",
            None,
        ))
        .await
        .unwrap();
    // The other tenant's reply counts there only.
    let theirs = store
        .insert(log(
            o,
            Direction::Outbound,
            hours(3),
            "Grace Hopper knows.",
            None,
        ))
        .await
        .unwrap();

    let outcomes = sweep(&app, clock.now()).await;
    assert_eq!(
        completed(&outcomes),
        fanned_out(&app).await,
        "the tick and every tenant: {outcomes:?}"
    );
    let rows = mentions_of(&app, a).await;
    let got: Vec<_> = rows
        .iter()
        .map(|m| {
            (
                m.id == early.id,
                m.conversation_log_id,
                m.mentioned_principal_id,
                m.matched_via,
                m.content_sourced,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                false,
                Some(older.id),
                Some(grace.id),
                MatchedVia::Name,
                false
            ),
            (
                true,
                Some(recent.id),
                Some(ada.id),
                MatchedVia::SlackId,
                true
            ),
            (
                false,
                Some(recent.id),
                Some(grace.id),
                MatchedVia::Name,
                false
            ),
        ],
        "48 h of replies only; Ada's row upgraded in place"
    );
    let their_rows = mentions_of(&app, o).await;
    assert_eq!(their_rows.len(), 1);
    assert_eq!(their_rows[0].conversation_log_id, Some(theirs.id));
    assert_eq!(their_rows[0].mentioned_principal_id, Some(their_grace.id));

    // The next hour's sweep: nothing new anywhere.
    clock.advance_ms(3_600_000);
    let outcomes = sweep(&app, clock.now()).await;
    assert_eq!(completed(&outcomes), fanned_out(&app).await, "{outcomes:?}");
    assert_eq!(mentions_of(&app, a).await, rows);
    assert_eq!(mentions_of(&app, o).await, their_rows);
}
