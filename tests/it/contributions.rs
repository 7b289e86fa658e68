//! Contributions & extracted knowledge (§5.1) through `TurnTools`: a
//! member manages only their own indexed Slack messages and knowledge
//! entries, and every change shows in search at once.

use serde_json::{Value, json};
use storage::{KnowledgePage, ProcessedSlackMessage, Store, Ts, key};
use uuid::Uuid;

use root::platform::tenancy::{self, TenantContext};
use root::retrieval::PageUpsert;
use root::tools::TurnPrincipal;

use crate::support::TestApp;
use crate::tools::{exec, principal, tenant_ctx, turn_tools};

fn message(user: &str, ts: &str, text: &str, age_secs: i64) -> ProcessedSlackMessage {
    ProcessedSlackMessage {
        id: Uuid::new_v4(),
        channel_id: "C0GENERAL".into(),
        channel_name: Some("general".into()),
        user_id: Some(user.into()),
        user_name: Some(format!("Member {user}")),
        message_ts: ts.into(),
        message_text: text.into(),
        message_date: Ts::from_secs(1_750_000_000 - age_secs),
        permalink: Some(link(ts)),
        created_at: Ts::now(),
        ..Default::default()
    }
}

fn link(ts: &str) -> String {
    format!(
        "https://acme.slack.com/archives/C0GENERAL/p{}",
        ts.replace('.', "")
    )
}

async fn index(app: &TestApp, ctx: &TenantContext, messages: Vec<ProcessedSlackMessage>) {
    crate::support::index_slack_messages(&app.state.retrieval, ctx, messages).await;
}

/// The `message_ts` of every message match for `query`.
async fn slack_hits(
    ctx: &TenantContext,
    tools: &root::tools::TurnTools,
    query: &str,
) -> Vec<String> {
    let r = exec(ctx, tools, "search_slack_messages", json!({"query": query})).await;
    r.data.unwrap()["matches"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["kind"] == "message")
        .map(|m| m["message_ts"].as_str().unwrap().to_string())
        .collect()
}

fn ids(v: &Value) -> Vec<String> {
    v["contributions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["contribution_id"].as_str().unwrap().to_string())
        .collect()
}

const KILN_TS: &str = "1750000000.000100";
const GLAZE_TS: &str = "1750000000.000300";
const BREAD_TS: &str = "1750000000.000200";

#[tokio::test]
async fn contributions_add_remove_refresh_are_author_scoped_and_follow_search() {
    let app = TestApp::spawn().await;
    let ctx = tenant_ctx(&app, "acme").await;
    let kiln = message(
        "U0ANN",
        KILN_TS,
        "The kiln in studio B fires every Thursday night",
        300,
    );
    let glaze = message(
        "U0ANN",
        GLAZE_TS,
        "Clear glaze buckets live on the bottom shelf",
        100,
    );
    let bread = message(
        "U0BOB",
        BREAD_TS,
        "My sourdough starter recipe uses rye flour",
        200,
    );
    let (kiln_id, glaze_id, bread_id) = (kiln.id, glaze.id, bread.id);
    index(&app, &ctx, vec![kiln, glaze, bread]).await;
    let ann = principal(&app, ctx.id(), "U0ANN").await;
    let bob = principal(&app, ctx.id(), "U0BOB").await;
    let ann_t = turn_tools(&app, ctx.id(), ann, Some("member"));
    let bob_t = turn_tools(&app, ctx.id(), bob, Some("member"));

    let listed = exec(&ctx, &ann_t, "list_my_slack_contributions", json!({})).await;
    let listed = listed.data.unwrap();
    assert_eq!(
        ids(&listed),
        vec![glaze_id.to_string(), kiln_id.to_string()],
        "own messages only, newest first"
    );
    assert_eq!(
        listed["contributions"][1]["permalink"],
        json!(link(KILN_TS))
    );
    let bob_list = exec(&ctx, &bob_t, "list_my_slack_contributions", json!({})).await;
    assert_eq!(ids(&bob_list.data.unwrap()), vec![bread_id.to_string()]);
    assert!(
        slack_hits(&ctx, &ann_t, "kiln studio thursday")
            .await
            .contains(&KILN_TS.to_string())
    );

    // Someone else's contribution id answers like a missing one.
    for tool in [
        "remove_my_slack_contribution",
        "refresh_my_slack_contribution",
    ] {
        let r = exec(&ctx, &bob_t, tool, json!({"contribution_id": kiln_id})).await;
        assert_eq!(
            r.error.as_deref(),
            Some("No such contribution of yours was found."),
            "{tool}"
        );
    }

    let removed = exec(
        &ctx,
        &ann_t,
        "remove_my_slack_contribution",
        json!({"contribution_id": kiln_id}),
    )
    .await;
    assert!(removed.success, "{removed:?}");
    assert_eq!(removed.data.unwrap()["removed_from_search"], json!(true));
    let row: ProcessedSlackMessage = app
        .state
        .store
        .get(Some(ctx.id()), key().uuid(kiln_id))
        .await
        .unwrap()
        .unwrap();
    assert!(row.withdrawn_at.is_some(), "withdrawn, not deleted");
    assert!(
        !slack_hits(&ctx, &ann_t, "kiln studio thursday")
            .await
            .contains(&KILN_TS.to_string()),
        "a removed contribution is not searchable"
    );
    let listed = exec(&ctx, &ann_t, "list_my_slack_contributions", json!({})).await;
    assert_eq!(ids(&listed.data.unwrap()), vec![glaze_id.to_string()]);
    let again = exec(
        &ctx,
        &ann_t,
        "remove_my_slack_contribution",
        json!({"contribution_id": kiln_id}),
    )
    .await;
    assert_eq!(
        again.error.as_deref(),
        Some("That contribution is already removed from search.")
    );
    let refresh = exec(
        &ctx,
        &ann_t,
        "refresh_my_slack_contribution",
        json!({"contribution_id": kiln_id}),
    )
    .await;
    assert!(
        refresh
            .error
            .unwrap()
            .contains("add it back with add_my_slack_contribution")
    );

    // Adding back by permalink: only one's own, only indexed messages.
    let theirs = exec(
        &ctx,
        &bob_t,
        "add_my_slack_contribution",
        json!({"permalink": link(KILN_TS)}),
    )
    .await;
    assert_eq!(
        theirs.error.as_deref(),
        Some("That message was posted by someone else; members can only add their own messages.")
    );
    let unknown = exec(
        &ctx,
        &ann_t,
        "add_my_slack_contribution",
        json!({"permalink": link("1750000000.999999")}),
    )
    .await;
    assert!(
        unknown
            .error
            .unwrap()
            .starts_with("That message could not be found in a public channel the assistant reads")
    );
    let not_a_link = exec(
        &ctx,
        &ann_t,
        "add_my_slack_contribution",
        json!({"permalink": "my kiln message"}),
    )
    .await;
    assert!(
        not_a_link
            .error
            .unwrap()
            .starts_with("That is not a Slack message link")
    );
    let added = exec(
        &ctx,
        &ann_t,
        "add_my_slack_contribution",
        json!({"permalink": format!("<{}|this one>", link(KILN_TS))}),
    )
    .await;
    assert!(added.success, "{added:?}");
    let added = added.data.unwrap();
    assert_eq!(added["contribution_id"], json!(kiln_id));
    assert_eq!(added["restored"], json!(true));
    assert_eq!(added["in_search"], json!(true));
    assert!(
        slack_hits(&ctx, &ann_t, "kiln studio thursday")
            .await
            .contains(&KILN_TS.to_string())
    );

    let refreshed = exec(
        &ctx,
        &ann_t,
        "refresh_my_slack_contribution",
        json!({"contribution_id": glaze_id}),
    )
    .await;
    assert!(refreshed.success, "{refreshed:?}");
    assert_eq!(refreshed.data.unwrap()["restored"], json!(false));

    // Without a known Slack id there is nothing to manage.
    let anon = turn_tools(&app, ctx.id(), TurnPrincipal::default(), Some("member"));
    let r = exec(&ctx, &anon, "list_my_slack_contributions", json!({})).await;
    assert_eq!(
        r.error.as_deref(),
        Some(
            "Your Slack account is not known, so your Slack contributions cannot be managed here."
        )
    );
}

async fn page(app: &TestApp, ctx: &TenantContext, slug: &str) -> Option<KnowledgePage> {
    app.state
        .store
        .find_unique(Some(ctx.id()), KnowledgePage::SLUG_KEY, key().str(slug))
        .await
        .unwrap()
}

/// Slugs of the knowledge search results for `query`.
async fn kb_hits(ctx: &TenantContext, tools: &root::tools::TurnTools, query: &str) -> Vec<String> {
    let r = exec(ctx, tools, "search_knowledge_base", json!({"query": query})).await;
    r.data.unwrap()["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["slug"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn contributions_extracted_knowledge_update_is_searchable_and_delete_removes_it() {
    let app = TestApp::spawn().await;
    let ctx = tenant_ctx(&app, "acme").await;
    let ann = principal(&app, ctx.id(), "U0ANN").await;
    let bob = principal(&app, ctx.id(), "U0BOB").await;
    let ann_id = ann.id.unwrap().to_string();
    let ann_t = turn_tools(&app, ctx.id(), ann, Some("member"));
    let bob_t = turn_tools(&app, ctx.id(), bob.clone(), Some("member"));

    let saved = exec(
        &ctx,
        &ann_t,
        "save_knowledge_entry",
        json!({"title": "Kiln schedule", "content": "The ceramics kiln fires every Thursday night."}),
    )
    .await;
    let entry = saved.data.unwrap()["slug"].as_str().unwrap().to_string();
    // An extracted entry, a synced page Ann is named on, and Bob's entry.
    let r = app.state.retrieval.clone();
    let (ann_ref, bob_ref) = (ann_id.clone(), bob.id.unwrap().to_string());
    tenancy::scope(ctx.clone(), async move {
        for (slug, source_type, author, text) in [
            (
                "wifi-extracted",
                "slack_extraction",
                ann_ref.clone(),
                "The studio wifi password rotates monthly.",
            ),
            (
                "studio-policy",
                "url",
                ann_ref,
                "Studio members must clean their wheels.",
            ),
            (
                "bobs-bread",
                "member_entry",
                bob_ref,
                "Bob bakes rye bread on Fridays.",
            ),
        ] {
            r.upsert_page(PageUpsert {
                slug: slug.into(),
                title: slug.into(),
                content_html: format!("<p>{text}</p>"),
                source_type: source_type.into(),
                author_member_id: Some(author),
                ..PageUpsert::default()
            })
            .await
            .unwrap();
        }
    })
    .await;

    let listed = exec(&ctx, &ann_t, "list_my_extracted_knowledge", json!({})).await;
    let listed = listed.data.unwrap();
    let mut slugs: Vec<&str> = listed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["slug"].as_str().unwrap())
        .collect();
    slugs.sort();
    let mut want = vec![entry.as_str(), "wifi-extracted"];
    want.sort();
    assert_eq!(slugs, want, "own entries only, no synced pages");

    // Not Ann's, or not an entry: not found.
    for (tools, slug) in [
        (&bob_t, entry.as_str()),
        (&ann_t, "studio-policy"),
        (&ann_t, "bobs-bread"),
    ] {
        let r = exec(
            &ctx,
            tools,
            "update_my_extracted_knowledge_entry",
            json!({"slug": slug, "title": "mine", "content": "mine"}),
        )
        .await;
        assert_eq!(
            r.error,
            Some(format!(
                "No knowledge entry {slug:?} of yours was found. List them with list_my_extracted_knowledge."
            ))
        );
        let d = exec(
            &ctx,
            tools,
            "delete_my_extracted_knowledge_entry",
            json!({"slug": slug}),
        )
        .await;
        assert!(!d.success, "{slug}");
    }
    assert!(page(&app, &ctx, "bobs-bread").await.is_some());

    let updated = exec(
        &ctx,
        &ann_t,
        "update_my_extracted_knowledge_entry",
        json!({"slug": entry, "title": "Glaze firing schedule",
               "content": "Glaze firings happen on Sunday mornings.\n\nBring your pieces by Saturday."}),
    )
    .await;
    assert!(updated.success, "{updated:?}");
    assert_eq!(updated.data.unwrap()["searchable"], json!(true));
    let stored = page(&app, &ctx, &entry).await.unwrap();
    assert_eq!(stored.title, "Glaze firing schedule");
    assert_eq!(stored.source_type, "member_entry");
    assert_eq!(stored.author_member_id, Some(ann_id));
    assert_eq!(
        stored.content_html,
        "<p>Glaze firings happen on Sunday mornings.</p><p>Bring your pieces by Saturday.</p>"
    );
    assert_eq!(
        kb_hits(&ctx, &ann_t, "when are glaze firings")
            .await
            .first(),
        Some(&entry)
    );
    assert!(
        !kb_hits(&ctx, &ann_t, "ceramics Thursday night")
            .await
            .contains(&entry)
    );

    let deleted = exec(
        &ctx,
        &ann_t,
        "delete_my_extracted_knowledge_entry",
        json!({"slug": entry}),
    )
    .await;
    assert!(deleted.success, "{deleted:?}");
    assert!(page(&app, &ctx, &entry).await.is_none());
    assert!(
        !kb_hits(&ctx, &ann_t, "when are glaze firings")
            .await
            .contains(&entry)
    );
    let listed = exec(&ctx, &ann_t, "list_my_extracted_knowledge", json!({})).await;
    assert_eq!(listed.data.unwrap()["count"], json!(1));
}
