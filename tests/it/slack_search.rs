//! Slack search (§10.3) and who_knows through the retrieval service, with
//! the offline embedder: permalink prepend, withdrawn exclusion, 2 per
//! thread, parent text on replies, artifacts, recency, expertise ranking.

use std::sync::Arc;

use storage::{ArtifactKind, IndexCorpus, ProcessedSlackMessage, SlackThreadArtifact, Ts};
use uuid::Uuid;

use root::app::{AppState, open_store};
use root::platform::clock::SystemClock;
use root::platform::tenancy::{self, TenantContext};
use root::retrieval::slack::{
    NoPermalinks, SLACK_PERMALINK_SCORE, SlackMatchKind, SlackQuery, StoredPermalinks,
};

use crate::support::{create_tenant, test_config};

struct Fixture {
    state: AppState,
    ctx: TenantContext,
    _dir: tempfile::TempDir,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(&dir.path().join("data"), &[]);
    let store = open_store(&config).await.unwrap();
    let state = AppState::new(config, store.clone(), Arc::new(SystemClock)).unwrap();
    Fixture {
        state,
        ctx: create_tenant(&store, "acme", "Acme").await,
        _dir: dir,
    }
}

fn msg(
    channel: &str,
    ts: &str,
    thread: Option<&str>,
    user: &str,
    text: &str,
    age_secs: i64,
) -> ProcessedSlackMessage {
    ProcessedSlackMessage {
        id: Uuid::new_v4(),
        channel_id: channel.into(),
        channel_name: Some(format!("chan-{channel}")),
        user_id: Some(user.into()),
        user_name: Some(format!("name-{user}")),
        message_ts: ts.into(),
        thread_ts: thread.map(str::to_string),
        message_text: text.into(),
        message_date: Ts::from_secs(1_750_000_000 - age_secs),
        permalink: Some(format!(
            "https://acme.slack.com/archives/{channel}/p{}",
            ts.replace('.', "")
        )),
        created_at: Ts::now(),
        ..Default::default()
    }
}

impl Fixture {
    async fn index(&self, messages: Vec<ProcessedSlackMessage>) {
        crate::support::index_slack_messages(&self.state.retrieval, &self.ctx, messages).await;
    }

    async fn search(&self, query: &str) -> Vec<root::retrieval::slack::SlackMatch> {
        let r = &self.state.retrieval;
        let resolver = StoredPermalinks(self.state.store.clone());
        tenancy::scope(self.ctx.clone(), async {
            r.search_slack(
                SlackQuery {
                    query: query.into(),
                    limit: None,
                    rerank: false,
                },
                &resolver,
            )
            .await
            .unwrap()
            .matches
        })
        .await
    }
}

#[tokio::test]
async fn a_permalink_in_the_query_is_prepended_with_the_top_score() {
    let f = fixture().await;
    f.index(vec![
        msg(
            "C1",
            "1700000000.000100",
            None,
            "U1",
            "lunch menu for friday",
            10,
        ),
        msg(
            "C1",
            "1700000000.000200",
            None,
            "U2",
            "the database migration failed",
            5,
        ),
    ])
    .await;
    let hits = f
        .search(
            "what did https://acme.slack.com/archives/C1/p1700000000000100 say about the database",
        )
        .await;
    assert_eq!(hits[0].message_ts, "1700000000.000100");
    assert_eq!(hits[0].relevance_score, SLACK_PERMALINK_SCORE);
    assert_eq!(
        hits.iter()
            .filter(|h| h.message_ts == "1700000000.000100")
            .count(),
        1,
        "not listed twice"
    );
    // Without a resolver the link is just text.
    let r = &f.state.retrieval;
    let plain = tenancy::scope(f.ctx.clone(), async {
        r.search_slack(
            SlackQuery {
                query: "https://acme.slack.com/archives/C1/p1700000000000100 database".into(),
                limit: None,
                rerank: false,
            },
            &NoPermalinks,
        )
        .await
        .unwrap()
    })
    .await;
    assert!(
        plain
            .matches
            .iter()
            .all(|m| m.relevance_score < SLACK_PERMALINK_SCORE)
    );
}

#[tokio::test]
async fn withdrawn_messages_are_never_returned() {
    let f = fixture().await;
    f.index(vec![
        msg(
            "C1",
            "1.000001",
            None,
            "U1",
            "the kraken deploy key rotates monthly",
            10,
        ),
        msg(
            "C1",
            "1.000002",
            None,
            "U2",
            "kraken deploy notes for the team",
            5,
        ),
    ])
    .await;
    assert_eq!(f.search("kraken deploy").await.len(), 2);
    let r = &f.state.retrieval;
    tenancy::scope(f.ctx.clone(), async {
        let seq = r.withdraw_slack_message("C1", "1.000001").await.unwrap();
        r.wait_searchable(IndexCorpus::SlackMessages, seq)
            .await
            .unwrap();
    })
    .await;
    let hits = f.search("kraken deploy key").await;
    assert!(hits.iter().all(|h| h.message_ts != "1.000001"), "{hits:?}");
    let by_link = f
        .search("https://acme.slack.com/archives/C1/p1000001 kraken")
        .await;
    assert!(by_link.iter().all(|h| h.message_ts != "1.000001"));
    // Re-indexing a withdrawn message keeps it out.
    let mut again = msg(
        "C1",
        "1.000001",
        None,
        "U1",
        "the kraken deploy key rotates monthly",
        10,
    );
    again.withdrawn_at = Some(Ts::now());
    f.index(vec![again]).await;
    assert!(
        f.search("kraken deploy key")
            .await
            .iter()
            .all(|h| h.message_ts != "1.000001")
    );
}

#[tokio::test]
async fn at_most_two_results_per_thread_and_replies_carry_their_parent() {
    two_per_thread_with_parent_text().await;
}

/// Same rules when the lanes run in place on a runtime worker
/// (`block_in_place`, as in the server) rather than on the blocking pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_rules_hold_when_the_search_runs_in_place_on_a_worker() {
    two_per_thread_with_parent_text().await;
}

async fn two_per_thread_with_parent_text() {
    let f = fixture().await;
    let parent_text = format!(
        "How do we rotate the gryphon certificates? {}",
        "x".repeat(700)
    );
    let mut msgs = vec![msg(
        "C9",
        "5.000000",
        Some("5.000000"),
        "U0",
        &parent_text,
        100,
    )];
    for i in 1..=5 {
        msgs.push(msg(
            "C9",
            &format!("5.00000{i}"),
            Some("5.000000"),
            &format!("U{i}"),
            &format!("rotate gryphon certificates with the script, step {i}"),
            100 - i,
        ));
    }
    msgs.push(msg(
        "C2",
        "6.000000",
        None,
        "U7",
        "gryphon certificates expire in june",
        1,
    ));
    f.index(msgs).await;
    let hits = f.search("rotate gryphon certificates").await;
    let in_thread = hits
        .iter()
        .filter(|h| h.channel_id == "C9" && h.kind == SlackMatchKind::Message)
        .count();
    assert_eq!(in_thread, 2, "{hits:#?}");
    assert!(hits.iter().any(|h| h.channel_id == "C2"));
    let reply = hits
        .iter()
        .find(|h| h.channel_id == "C9" && h.message_ts != "5.000000")
        .expect("a reply matched");
    let parent = reply.parent_text.as_deref().expect("parent attached");
    assert!(parent.starts_with("How do we rotate the gryphon certificates?"));
    assert_eq!(parent.chars().count(), 500);
    assert!(
        hits.iter()
            .filter(|h| h.thread_ts.is_none())
            .all(|h| h.parent_text.is_none())
    );
}

#[tokio::test]
async fn artifacts_surface_as_thread_summaries_and_author_bursts() {
    let f = fixture().await;
    f.index(vec![msg(
        "C1",
        "7.000000",
        None,
        "U1",
        "unrelated chatter",
        3,
    )])
    .await;
    let r = &f.state.retrieval;
    tenancy::scope(f.ctx.clone(), async {
        let (_, s1) = r
            .upsert_artifact(SlackThreadArtifact {
                id: Uuid::new_v4(),
                channel_id: "C1".into(),
                channel_name: Some("general".into()),
                thread_ts: "8.000000".into(),
                kind: ArtifactKind::Thread,
                question: Some("How to reset the basilisk router?".into()),
                document_text: "general How to reset the basilisk router? Hold the button 30s."
                    .into(),
                created_at: Ts::now(),
                updated_at: Ts::now(),
                ..Default::default()
            })
            .await
            .unwrap();
        let (_, s2) = r
            .upsert_artifact(SlackThreadArtifact {
                id: Uuid::new_v4(),
                channel_id: "C1".into(),
                thread_ts: "8.000000".into(),
                kind: ArtifactKind::Burst,
                burst_ts: Some("8.000300".into()),
                author_user_id: Some("U5".into()),
                document_text: "basilisk router firmware must be flashed before reset".into(),
                created_at: Ts::now(),
                updated_at: Ts::now(),
                ..Default::default()
            })
            .await
            .unwrap();
        r.wait_searchable(IndexCorpus::SlackArtifacts, s1.max(s2))
            .await
            .unwrap();
    })
    .await;
    let hits = f.search("basilisk router reset").await;
    let kinds: Vec<_> = hits.iter().map(|h| (h.kind, h.id.clone())).collect();
    assert!(
        kinds.contains(&(
            SlackMatchKind::ThreadSummary,
            "thread_summary:C1:8.000000".into()
        )),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&(
            SlackMatchKind::AuthorBurst,
            "author_burst:C1:8.000300".into()
        )),
        "{kinds:?}"
    );
}

#[tokio::test]
async fn the_newer_of_two_equal_messages_ranks_first() {
    let f = fixture().await;
    f.index(vec![
        msg(
            "C1",
            "9.000001",
            None,
            "U1",
            "the hydra build is green again",
            5000,
        ),
        msg(
            "C3",
            "9.000002",
            None,
            "U1",
            "the hydra build is green again",
            10,
        ),
    ])
    .await;
    let hits = f.search("hydra build green").await;
    assert_eq!(hits[0].message_ts, "9.000002", "{hits:#?}");
    assert_eq!(hits[1].message_ts, "9.000001");
}

#[tokio::test]
async fn who_knows_ranks_people_by_their_relevant_messages_with_evidence() {
    let f = fixture().await;
    f.index(vec![
        msg(
            "C1",
            "1.1",
            None,
            "UA",
            "terraform state locking uses dynamodb",
            50,
        ),
        msg(
            "C1",
            "1.2",
            None,
            "UA",
            "terraform modules should pin provider versions",
            40,
        ),
        msg(
            "C2",
            "1.3",
            None,
            "UA",
            "I fixed the terraform drift in staging",
            30,
        ),
        msg("C1", "1.4", None, "UB", "terraform is fine I guess", 20),
        msg("C1", "1.5", None, "UC", "lunch anyone?", 10),
    ])
    .await;
    let r = &f.state.retrieval;
    let experts = tenancy::scope(f.ctx.clone(), r.who_knows("terraform state", None))
        .await
        .unwrap();
    assert_eq!(experts[0].user_id, "UA", "{experts:#?}");
    assert_eq!(experts[0].message_count, 3);
    assert_eq!(experts[0].evidence.len(), 3);
    assert!(experts[0].evidence.iter().all(|e| {
        e.permalink
            .as_deref()
            .unwrap()
            .contains("slack.com/archives")
    }));
    assert!(experts.iter().any(|e| e.user_id == "UB"));
    assert!(experts.len() <= 5);
    let empty = tenancy::scope(f.ctx.clone(), r.who_knows("  ", None)).await;
    assert!(empty.is_err());
}
