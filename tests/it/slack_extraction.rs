//! `slack-knowledge-extraction` (§13, §2.5): the hourly tick fans out per
//! tenant; a tenant's job reads the settled, un-extracted public messages
//! past its watermark (threads together, withdrawn ones never), stores the
//! model's proposals `pending` in the transaction that stamps the messages
//! and moves the watermark, then reviews them: low confidence → rejected,
//! an existing page → duplicate, else an author-owned `slack_extraction`
//! page linked by `extracted_knowledge_id`. A failed model answer writes
//! nothing; a rerun repeats nothing.

use std::sync::Arc;

use serde_json::{Value, json};
use storage::{
    ExtractionStatus, KnowledgePage, LlmTokenUsage, Principal, ProcessedSlackMessage, Scan,
    SlackExtractionState, SlackKnowledgeExtraction, Store, Ts, key,
};
use uuid::Uuid;

use root::ai::chat::CHAT_JSON_MAX_REPAIRS;
use root::knowledge::slack_extraction::{EXTRACTION_BATCH_MESSAGES, EXTRACTION_PURPOSE};
use root::platform::clock::{Clock, ManualClock};
use root::platform::tenancy::{self, TenantContext};
use root::queue::Outcome;
use root::queue::registry::{self, SLACK_KNOWLEDGE_EXTRACTION};
use root::retrieval::PageUpsert;
use root::retrieval::knowledge::KnowledgeQuery;

use crate::support::fake_llm::{FakeLlm, Reply, completion};
use crate::support::tenants::T0_SECS;
use crate::support::{TestApp, create_tenant, drain_jobs};

const HOUR: i64 = 3_600;

const QUESTION: &str = "How do I rotate the API key for the member portal?";
const ANSWER: &str = "Open Settings, then Keys, and press Rotate; the old key stops working \
                      after ten minutes, so update your scripts first.";
const OFFICE_HOURS: &str = "Office hours run every Thursday at 16:00 UTC in the #help-live \
                            channel, and anyone in the community can join with questions.";

struct World {
    app: TestApp,
    llm: FakeLlm,
    clock: ManualClock,
    acme: TenantContext,
    other: TenantContext,
    ada: Principal,
}

fn at(secs_from_t0: i64) -> Ts {
    Ts::from_secs(T0_SECS + secs_from_t0)
}

async fn world() -> World {
    let llm = FakeLlm::start().await;
    llm.serve_embeddings();
    let clock = ManualClock::new(at(0));
    let app = TestApp::spawn_with_clock(
        &[
            ("ROOT_RUN_WORKERS", "false"),
            ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
            ("OPENROUTER_API_KEY", "sk-or-test"),
            ("SEARCH_LLM_RERANK", "false"),
        ],
        Arc::new(clock.clone()),
    )
    .await;
    let acme = create_tenant(&app.state.store, "acme", "Acme").await;
    let other = create_tenant(&app.state.store, "other", "Other").await;
    let mut ada = Principal::new(acme.id(), "member-ada");
    ada.slack_user_id = Some("U-ADA".into());
    ada.display_name = Some("Ada L.".into());
    ada.tier = "member".into();
    let ada = app.state.store.insert(ada).await.unwrap();
    World {
        app,
        llm,
        clock,
        acme,
        other,
        ada,
    }
}

struct Msg<'a> {
    channel: &'a str,
    ts: &'a str,
    thread: Option<&'a str>,
    user: &'a str,
    text: &'a str,
    date: Ts,
    withdrawn: bool,
}

fn msg<'a>(channel: &'a str, ts: &'a str, user: &'a str, text: &'a str, date: Ts) -> Msg<'a> {
    Msg {
        channel,
        ts,
        thread: None,
        user,
        text,
        date,
        withdrawn: false,
    }
}

impl World {
    async fn seed(&self, ctx: &TenantContext, m: Msg<'_>) -> ProcessedSlackMessage {
        let row = ProcessedSlackMessage {
            id: Uuid::new_v4(),
            tenant_id: ctx.id(),
            channel_id: m.channel.into(),
            channel_name: Some(format!("{}-name", m.channel.to_lowercase())),
            user_id: Some(m.user.into()),
            user_name: Some(format!("{}-name", m.user)),
            message_ts: m.ts.into(),
            thread_ts: m.thread.map(str::to_string),
            message_text: m.text.into(),
            message_date: m.date,
            permalink: Some(format!(
                "https://acme.slack.com/archives/{}/p{}",
                m.channel, m.ts
            )),
            withdrawn_at: m.withdrawn.then_some(m.date),
            created_at: m.date,
            ..ProcessedSlackMessage::default()
        };
        self.app.state.store.insert(row).await.unwrap()
    }

    /// The hourly tick of the slot `now` falls in, and every job it fans out.
    async fn tick(&self) -> Vec<Outcome> {
        let spec = registry::spec(SLACK_KNOWLEDGE_EXTRACTION).unwrap();
        let now = self.clock.now().micros();
        let slot = Ts(now - now.rem_euclid(HOUR * 1_000_000));
        root::queue::scheduler::enqueue_tick(&self.app.state.queues, spec, slot)
            .await
            .unwrap();
        drain_jobs(&self.app.state, SLACK_KNOWLEDGE_EXTRACTION).await
    }

    async fn rows(&self, ctx: &TenantContext) -> Vec<SlackKnowledgeExtraction> {
        let mut rows: Vec<SlackKnowledgeExtraction> = self
            .app
            .state
            .store
            .scan(Some(ctx.id()), Scan::all())
            .await
            .unwrap();
        rows.sort_by(|a, b| a.title.cmp(&b.title));
        rows
    }

    async fn message(&self, m: &ProcessedSlackMessage) -> ProcessedSlackMessage {
        self.app
            .state
            .store
            .get(Some(m.tenant_id), key().uuid(m.id))
            .await
            .unwrap()
            .unwrap()
    }

    async fn watermark(&self, ctx: &TenantContext) -> Option<Ts> {
        let s: Option<SlackExtractionState> = self
            .app
            .state
            .store
            .get(Some(ctx.id()), key())
            .await
            .unwrap();
        s.and_then(|s| s.watermark)
    }

    /// The extraction requests' user messages so far.
    fn inputs(&self) -> Vec<String> {
        self.llm
            .bodies()
            .iter()
            .filter(|b| b["response_format"]["json_schema"]["name"] == "slack_knowledge_extraction")
            .map(|b| {
                b["messages"][1]["content"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            })
            .collect()
    }

    /// A searchable Acme page.
    async fn add_page(&self, slug: &str, title: &str, text: &str, kind: &str) -> KnowledgePage {
        let retrieval = self.app.state.retrieval.clone();
        let input = PageUpsert {
            slug: slug.into(),
            title: title.into(),
            content_html: format!("<p>{text}</p>"),
            source_type: kind.into(),
            ..PageUpsert::default()
        };
        tenancy::scope(self.acme.clone(), async move {
            let w = retrieval.upsert_page(input).await.unwrap();
            retrieval
                .wait_searchable(storage::IndexCorpus::Knowledge, w.index_seq)
                .await
                .unwrap();
            w.page
        })
        .await
    }
}

fn proposals(entries: Value) -> Vec<u8> {
    completion(&json!({ "entries": entries }).to_string())
}

fn completed(outcomes: &[Outcome]) -> usize {
    outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Completed { .. }))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settled_messages_become_reviewed_proposals_and_an_author_owned_page() {
    let w = world().await;
    w.add_page("office-hours", "Office hours", OFFICE_HOURS, "manual")
        .await;
    let question = w
        .seed(
            &w.acme,
            msg("C1", "100.0", "U-BOB", QUESTION, at(-3 * HOUR)),
        )
        .await;
    let answer = w
        .seed(
            &w.acme,
            Msg {
                thread: Some("100.0"),
                ..msg("C1", "160.0", "U-ADA", ANSWER, at(-3 * HOUR + 300))
            },
        )
        .await;
    let chat = w
        .seed(
            &w.acme,
            msg(
                "C2",
                "200.0",
                "U-BOB",
                "thanks all, see you",
                at(-2 * HOUR - 1800),
            ),
        )
        .await;
    let withdrawn = w
        .seed(
            &w.acme,
            Msg {
                withdrawn: true,
                ..msg("C1", "300.0", "U-BOB", "WITHDRAWN-TEXT", at(-2 * HOUR))
            },
        )
        .await;
    let fresh = w
        .seed(&w.acme, msg("C1", "400.0", "U-BOB", "FRESH-TEXT", at(-600)))
        .await;
    let ancient = w
        .seed(
            &w.acme,
            msg("C1", "50.0", "U-BOB", "ANCIENT-TEXT", at(-40 * 24 * HOUR)),
        )
        .await;
    w.llm.json(proposals(json!([
        {"title": "Rotate the member-portal API key", "content": ANSWER,
         "source_refs": ["m2", "m1"], "confidence": 0.92},
        {"title": "Office hours", "content": OFFICE_HOURS,
         "source_refs": ["m2"], "confidence": 0.95},
        {"title": "Saying thanks", "content": "People thank each other in the channel.",
         "source_refs": ["m3"], "confidence": 0.4},
    ])));

    let outcomes = w.tick().await;
    assert_eq!(completed(&outcomes), outcomes.len(), "{outcomes:?}");

    // One model call, purpose-tagged, with the settled messages only, the
    // reply after its question.
    let inputs = w.inputs();
    assert_eq!(inputs.len(), 1, "{inputs:?}");
    let lines: Vec<&str> = inputs[0].lines().collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[0].starts_with("[m1] #c1-name ") && lines[0].ends_with(QUESTION));
    assert!(lines[1].contains("U-ADA-name (reply to m1): Open Settings"));
    assert!(lines[2].starts_with("[m3] #c2-name "));
    for hidden in ["WITHDRAWN-TEXT", "FRESH-TEXT", "ANCIENT-TEXT"] {
        assert!(!inputs[0].contains(hidden), "{hidden} reached the model");
    }
    let usage: Vec<LlmTokenUsage> = w
        .app
        .state
        .store
        .scan(Some(w.acme.id()), Scan::all())
        .await
        .unwrap();
    assert!(
        usage.iter().any(|u| u.purpose == EXTRACTION_PURPOSE),
        "metered under its purpose: {usage:?}"
    );

    // Three reviewed rows.
    let rows = w.rows(&w.acme).await;
    let by_title = |t: &str| rows.iter().find(|r| r.title == t).unwrap();
    let office = by_title("Office hours");
    assert_eq!(office.status, ExtractionStatus::Duplicate);
    let note = office.review_notes.as_deref().unwrap();
    assert!(
        note.starts_with("duplicates page office-hours (similarity"),
        "{note}"
    );
    let thanks = by_title("Saying thanks");
    assert_eq!(thanks.status, ExtractionStatus::Rejected);
    assert_eq!(
        thanks.review_notes.as_deref(),
        Some("confidence 0.40 is below 0.7")
    );
    let rotate = by_title("Rotate the member-portal API key");
    assert_eq!(rotate.status, ExtractionStatus::Approved);
    assert_eq!(rotate.source_refs, ["C1:160.0", "C1:100.0"]);
    assert_eq!(rotate.author_user_id.as_deref(), Some("U-ADA"));
    assert!((rotate.confidence_score - 0.92).abs() < 1e-6);
    for r in &rows {
        assert_eq!(r.auto_reviewed_at, Some(w.clock.now()), "{}", r.title);
    }
    assert!(office.knowledge_page_id.is_none() && thanks.knowledge_page_id.is_none());

    // The approved one is Ada's private page, linked both ways and searchable.
    let page: KnowledgePage = w
        .app
        .state
        .store
        .get(
            Some(w.acme.id()),
            key().uuid(rotate.knowledge_page_id.unwrap()),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(page.source_type, "slack_extraction");
    assert_eq!(page.extracted_knowledge_id, Some(rotate.id));
    assert_eq!(page.author_member_id, Some(w.ada.id.to_string()));
    assert_eq!(page.author_name.as_deref(), Some("U-ADA-name"));
    assert_eq!(
        page.source_url.as_deref(),
        Some("https://acme.slack.com/archives/C1/p160.0")
    );
    assert_eq!(page.source_message_text.as_deref(), Some(ANSWER));
    assert!(!page.is_public);
    assert!(page.title == "Rotate the member-portal API key");
    let retrieval = w.app.state.retrieval.clone();
    let found = tenancy::scope(w.acme.clone(), async move {
        retrieval
            .search_knowledge(KnowledgeQuery {
                query: "rotate API key member portal".into(),
                ..KnowledgeQuery::default()
            })
            .await
            .unwrap()
    })
    .await;
    assert_eq!(found.results[0].slug, page.slug);

    // Stamped: what the model read and the withdrawn message; not the fresh
    // one nor the one before the first run's lookback. The watermark sits
    // past the last message read.
    for m in [&question, &answer, &chat, &withdrawn] {
        assert_eq!(
            w.message(m).await.extraction_processed_at,
            Some(w.clock.now())
        );
    }
    for m in [&fresh, &ancient] {
        assert_eq!(w.message(m).await.extraction_processed_at, None);
    }
    assert_eq!(w.watermark(&w.acme).await, Some(at(-2 * HOUR)));

    // The same tick again, and the next hour's: nothing is proposed twice.
    w.tick().await;
    assert_eq!(w.rows(&w.acme).await.len(), 3);
    w.clock.set(at(HOUR));
    w.llm.json(proposals(json!([])));
    let outcomes = w.tick().await;
    assert_eq!(completed(&outcomes), outcomes.len(), "{outcomes:?}");
    let inputs = w.inputs();
    assert_eq!(inputs.len(), 2, "only the now-settled message is read");
    assert!(inputs[1].contains("FRESH-TEXT") && inputs[1].lines().count() == 1);
    assert_eq!(w.rows(&w.acme).await.len(), 3);
    assert!(w.message(&fresh).await.extraction_processed_at.is_some());
    assert_eq!(w.watermark(&w.acme).await, Some(at(-600)));
    assert_eq!(w.message(&ancient).await.extraction_processed_at, None);

    // The other tenant's job read nothing of Acme's and wrote nothing.
    assert!(w.rows(&w.other).await.is_empty());
    assert_eq!(w.watermark(&w.other).await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_model_answer_writes_nothing_and_the_retry_proposes_once() {
    let w = world().await;
    let answer = w
        .seed(&w.acme, msg("C1", "100.0", "U-ADA", ANSWER, at(-2 * HOUR)))
        .await;
    let other = w
        .seed(
            &w.other,
            msg("C9", "100.0", "U-ZED", "OTHER-TENANT-TEXT", at(-2 * HOUR)),
        )
        .await;
    // Each tenant's batch gets its own answer, whatever order the jobs run
    // in: Acme's is malformed until the script says otherwise.
    let acme_answers = Arc::new(std::sync::Mutex::new(Vec::<Vec<u8>>::new()));
    for _ in 0..=CHAT_JSON_MAX_REPAIRS {
        acme_answers
            .lock()
            .unwrap()
            .push(completion("Here are the entries you asked for"));
    }
    let script = acme_answers.clone();
    w.llm
        .http
        .route("POST", "/api/v1/chat/completions", move |req| {
            let body = req.body.to_string();
            if body.contains("OTHER-TENANT-TEXT") {
                return Reply::raw_json(200, proposals(json!([])));
            }
            let next = script.lock().unwrap().pop();
            Reply::raw_json(200, next.unwrap_or_else(|| proposals(json!([]))))
        });

    let outcomes = w.tick().await;
    assert!(
        outcomes
            .iter()
            .any(|o| matches!(o, Outcome::Retrying { .. })),
        "{outcomes:?}"
    );
    assert!(w.rows(&w.acme).await.is_empty());
    assert_eq!(w.message(&answer).await.extraction_processed_at, None);
    assert_eq!(w.watermark(&w.acme).await, None);
    // The other tenant's run was not held back by Acme's failure, and no
    // request mixed the tenants' messages.
    assert!(w.message(&other).await.extraction_processed_at.is_some());
    for b in w.llm.bodies() {
        let s = b.to_string();
        assert!(!(s.contains("OTHER-TENANT-TEXT") && s.contains("Open Settings")));
    }

    // The retry (exp 60 s) proposes once.
    acme_answers.lock().unwrap().push(proposals(json!([
        {"title": "Rotate the member-portal API key", "content": ANSWER,
         "source_refs": ["m1"], "confidence": 0.9},
    ])));
    w.clock.advance_ms(60_000);
    let outcomes = drain_jobs(&w.app.state, SLACK_KNOWLEDGE_EXTRACTION).await;
    assert_eq!(completed(&outcomes), 1, "{outcomes:?}");
    let rows = w.rows(&w.acme).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].status, ExtractionStatus::Approved);
    assert_eq!(rows[0].author_user_id.as_deref(), Some("U-ADA"));
    assert!(w.message(&answer).await.extraction_processed_at.is_some());
    assert_eq!(w.watermark(&w.acme).await, Some(at(-2 * HOUR)));

    // Run again: the message is done, the row reviewed — no new call, no new row.
    let calls = w.llm.bodies().len();
    w.clock.advance_ms(HOUR * 1_000);
    w.tick().await;
    assert_eq!(w.llm.bodies().len(), calls);
    assert_eq!(w.rows(&w.acme).await, rows);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_row_left_by_an_interrupted_run_is_reviewed_into_the_same_page() {
    let w = world().await;
    let now = w.clock.now();
    let row = SlackKnowledgeExtraction {
        id: Uuid::new_v4(),
        tenant_id: w.acme.id(),
        status: ExtractionStatus::Pending,
        title: "Rotate the member-portal API key".into(),
        content: ANSWER.into(),
        source_refs: vec!["C1:160.0".into()],
        author_user_id: Some("U-ADA".into()),
        author_name: Some("Ada".into()),
        confidence_score: 0.9,
        created_at: now,
        updated_at: now,
        ..SlackKnowledgeExtraction::default()
    };
    let row = w.app.state.store.insert(row).await.unwrap();
    // The interrupted run had written the page already.
    let slug = root::knowledge::slack_extraction::page_slug(&row);
    let title = "Rotate the member-portal API key";
    let written = w.add_page(&slug, title, ANSWER, "slack_extraction").await;

    let outcomes = w.tick().await;
    assert_eq!(completed(&outcomes), outcomes.len(), "{outcomes:?}");
    assert!(w.inputs().is_empty(), "no message to read");
    let rows = w.rows(&w.acme).await;
    assert_eq!(rows[0].status, ExtractionStatus::Approved, "{:?}", rows[0]);
    assert_eq!(rows[0].knowledge_page_id, Some(written.id));
    let pages: Vec<KnowledgePage> = w
        .app
        .state
        .store
        .scan(Some(w.acme.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(pages.len(), 1, "its own page is not a duplicate of itself");
    assert_eq!(pages[0].slug, slug);
    assert_eq!(pages[0].extracted_knowledge_id, Some(row.id));
    assert_eq!(pages[0].author_member_id, Some(w.ada.id.to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watermark_stops_at_the_first_message_a_failed_batch_left() {
    let w = world().await;
    let n = EXTRACTION_BATCH_MESSAGES + 10;
    let mut seeded = Vec::new();
    for i in 0..n {
        let ts = format!("{}.0", 1000 + i);
        let text = format!("note number {i} about the community garden");
        seeded.push(
            w.seed(
                &w.acme,
                msg("C1", &ts, "U-BOB", &text, at(-3 * HOUR + i as i64)),
            )
            .await,
        );
    }
    // The first batch's answer is fine, the second's malformed every time.
    w.llm.json(proposals(json!([])));
    for _ in 0..=CHAT_JSON_MAX_REPAIRS {
        w.llm.json(completion("not json"));
    }
    let outcomes = w.tick().await;
    assert!(
        outcomes
            .iter()
            .any(|o| matches!(o, Outcome::Retrying { .. })),
        "{outcomes:?}"
    );
    for (i, m) in seeded.iter().enumerate() {
        let stamped = w.message(m).await.extraction_processed_at.is_some();
        assert_eq!(stamped, i < EXTRACTION_BATCH_MESSAGES, "message {i}");
    }
    assert_eq!(
        w.watermark(&w.acme).await,
        Some(seeded[EXTRACTION_BATCH_MESSAGES].message_date),
        "the first message not processed"
    );

    // The retry reads only what the failed batch left.
    w.llm.json(proposals(json!([])));
    w.clock.advance_ms(60_000);
    let outcomes = drain_jobs(&w.app.state, SLACK_KNOWLEDGE_EXTRACTION).await;
    assert_eq!(completed(&outcomes), 1, "{outcomes:?}");
    let inputs = w.inputs();
    let last = inputs.last().unwrap();
    assert_eq!(last.lines().count(), 10);
    assert!(last.starts_with("[m1] #c1-name "));
    assert!(last.contains(&format!("note number {} ", EXTRACTION_BATCH_MESSAGES)));
    assert_eq!(w.watermark(&w.acme).await, Some(seeded[n - 1].message_date));
}
