//! The knowledge tools: search, page links (public, private, tier-scoped)
//! and saving a knowledge entry.

use super::*;

#[tokio::test]
async fn tools_knowledge_search_finds_a_page_and_guides_when_empty() {
    let app = TestApp::spawn().await;
    let key = key_for(&app, "acme").await;
    put_page(
        &app,
        &key,
        json!({"slug": "parking", "title": "Parking", "content_html":
            "<p>Members park in lot B behind the main building after 6pm.</p>"}),
    )
    .await;
    let ctx = tenant_ctx(&app, "acme").await;
    let tools = turn_tools(&app, ctx.id(), TurnPrincipal::default(), Some("member"));
    let hit = tenancy::scope(
        ctx.clone(),
        tools.execute(
            "search_knowledge_base",
            json!({"query": "where do members park"}),
            &ToolCaller::default(),
        ),
    )
    .await;
    assert!(hit.success, "{hit:?}");
    let data = hit.data.unwrap();
    assert_eq!(data["results"][0]["slug"], "parking");
    let miss = tenancy::scope(
        ctx.clone(),
        tools.execute(
            "search_knowledge_base",
            json!({"query": "zebra husbandry regulations"}),
            &ToolCaller::default(),
        ),
    )
    .await;
    let data = miss.data.unwrap();
    assert_eq!(data["count"], json!(0), "{data}");
    assert!(data["guidance"].as_str().is_some_and(|g| !g.is_empty()));
    // Invalid arguments: a clear failed result, no panic.
    let bad = tenancy::scope(
        ctx,
        tools.execute(
            "search_knowledge_base",
            json!({"q": 1}),
            &ToolCaller::default(),
        ),
    )
    .await;
    assert!(!bad.success);
    assert!(
        bad.error
            .unwrap()
            .starts_with("Invalid arguments for search_knowledge_base")
    );
}

#[tokio::test]
async fn tools_page_links_public_bare_private_principal_bound() {
    let app = TestApp::spawn().await;
    let key = key_for(&app, "acme").await;
    put_page(
        &app,
        &key,
        json!({"slug": "open-hours", "title": "Open hours", "is_public": true, "public_id": "kb_hours",
               "content_html": "<p>We open at 10am every day of the week.</p>"}),
    )
    .await;
    put_page(
        &app,
        &key,
        json!({"slug": "door-codes", "title": "Door codes",
               "content_html": "<p>Members get the door code from the front desk.</p>"}),
    )
    .await;
    let ctx = tenant_ctx(&app, "acme").await;
    let ann = principal(&app, ctx.id(), "U0ANN").await;
    let tools = turn_tools(&app, ctx.id(), ann.clone(), Some("member"));
    let base = app
        .state
        .config
        .platform_base_url
        .trim_end_matches('/')
        .to_string();

    let public = exec(
        &ctx,
        &tools,
        "get_knowledge_page_link",
        json!({"slug_or_url": "open-hours"}),
    )
    .await;
    assert_eq!(
        public.data.unwrap()["url"],
        format!("{base}/kb/acme/kb_hours")
    );

    let private = exec(
        &ctx,
        &tools,
        "get_knowledge_page_link",
        json!({"slug_or_url": "door-codes"}),
    )
    .await;
    let data = private.data.unwrap();
    let url = data["url"].as_str().unwrap();
    let page: storage::KnowledgePage = app
        .state
        .store
        .find_unique(
            Some(ctx.id()),
            storage::KnowledgePage::SLUG_KEY,
            storage::key().str("door-codes"),
        )
        .await
        .unwrap()
        .unwrap();
    let public_id = page.public_id.unwrap();
    assert!(
        url.starts_with(&format!("{base}/kb/acme/{public_id}?token=")),
        "{url}"
    );
    let token = url.rsplit('=').next().unwrap();
    let rows: Vec<storage::WebLinkToken> = app
        .state
        .store
        .scan(Some(ctx.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        rows[0].principal_id,
        ann.id.unwrap(),
        "bound to the requester"
    );
    assert_ne!(rows[0].token_hash, token, "only the hash is stored");
    let days = (rows[0].expires_at.0 - rows[0].created_at.0) / 86_400_000_000;
    assert_eq!(days, 30);

    // An unresolved caller gets no private link.
    let anon = turn_tools(&app, ctx.id(), TurnPrincipal::default(), Some("member"));
    let r = exec(
        &ctx,
        &anon,
        "get_knowledge_page_link",
        json!({"slug_or_url": "door-codes"}),
    )
    .await;
    assert_eq!(
        r.error.as_deref(),
        Some("This page is private; a personal link can only be issued to a recognized member.")
    );
    let rows: Vec<storage::WebLinkToken> = app
        .state
        .store
        .scan(Some(ctx.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(rows.len(), 1, "no token issued to the unresolved caller");
}

#[tokio::test]
async fn tools_save_knowledge_entry_is_dm_only_author_owned_and_searchable() {
    let app = TestApp::spawn().await;
    let ctx = tenant_ctx(&app, "acme").await;
    let ann = principal(&app, ctx.id(), "U0ANN").await;
    let bob = principal(&app, ctx.id(), "U0BOB").await;
    let ann_dm = turn_tools(&app, ctx.id(), ann.clone(), Some("member"));
    let saved = exec(
        &ctx,
        &ann_dm,
        "save_knowledge_entry",
        json!({"title": "Kiln schedule", "content": "The ceramics kiln fires every Thursday night.", "category": "studio"}),
    )
    .await;
    assert!(saved.success, "{saved:?}");
    let slug = saved.data.unwrap()["slug"].as_str().unwrap().to_string();
    let page: storage::KnowledgePage = app
        .state
        .store
        .find_unique(
            Some(ctx.id()),
            storage::KnowledgePage::SLUG_KEY,
            storage::key().str(&slug),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(page.author_member_id, Some(ann.id.unwrap().to_string()));
    let found = exec(
        &ctx,
        &ann_dm,
        "search_knowledge_base",
        json!({"query": "when does the kiln fire"}),
    )
    .await;
    assert_eq!(found.data.unwrap()["results"][0]["slug"], json!(slug));

    // Bob cannot update Ann's entry.
    let bob_dm = turn_tools(&app, ctx.id(), bob, Some("member"));
    let r = exec(
        &ctx,
        &bob_dm,
        "save_knowledge_entry",
        json!({"title": "x", "content": "y", "update_slug": slug}),
    )
    .await;
    assert_eq!(
        r.error.as_deref(),
        Some(format!("No entry {slug:?} of yours was found to update.").as_str())
    );
    // Outside a DM: refused.
    let s = surface(Some("member"), &[]);
    let in_channel = turn_tools_on(&app, ctx.id(), ann, s, Some("C0GENERAL"), None);
    let r = exec(
        &ctx,
        &in_channel,
        "save_knowledge_entry",
        json!({"title": "x", "content": "y"}),
    )
    .await;
    assert_eq!(
        r.error.as_deref(),
        Some("Knowledge entries can only be saved from a direct message.")
    );
}

/// L3: a tier scoped to `faq` pages gets no link to a `policy` page — by
/// slug or public id, public or private — the answer is the missing-page
/// one; an in-scope page still links.
#[tokio::test]
async fn tools_page_links_follow_the_tiers_knowledge_scoping() {
    let app = TestApp::spawn().await;
    let key = key_for(&app, "acme").await;
    put_page(
        &app,
        &key,
        json!({"slug": "fees", "title": "Fees", "is_public": true, "public_id": "kb_fees",
               "source_type": "policy", "content_html": "<p>Fees are due in January.</p>"}),
    )
    .await;
    put_page(
        &app,
        &key,
        json!({"slug": "board-minutes", "title": "Board minutes", "source_type": "policy",
               "content_html": "<p>The board met on Monday.</p>"}),
    )
    .await;
    put_page(
        &app,
        &key,
        json!({"slug": "hours", "title": "Hours", "is_public": true, "source_type": "faq",
               "content_html": "<p>We open at ten.</p>"}),
    )
    .await;
    let ctx = tenant_ctx(&app, "acme").await;
    let ann = principal(&app, ctx.id(), "U0ANN").await;
    let decls = [TierDeclaration {
        name: "member".into(),
        core_tools: Some(vec![
            "search_knowledge_base".into(),
            "get_knowledge_page_link".into(),
        ]),
        knowledge_source_types: Some(vec!["faq".into()]),
        object_form: true,
    }];
    let s = surface(Some("member"), &decls);
    assert_eq!(s.knowledge_source_types, Some(vec!["faq".to_string()]));
    let tools = turn_tools_on(&app, ctx.id(), ann, s, Some("D0123"), None);
    for r in ["fees", "kb_fees", "board-minutes"] {
        let out = exec(
            &ctx,
            &tools,
            "get_knowledge_page_link",
            json!({"slug_or_url": r}),
        )
        .await;
        assert!(!out.success, "{r}");
        assert_eq!(
            out.error.unwrap(),
            format!(
                "No knowledge page {r:?} was found. Search the knowledge base for the right slug."
            )
        );
    }
    let tokens: Vec<storage::WebLinkToken> = app
        .state
        .store
        .scan(Some(ctx.id()), Scan::all())
        .await
        .unwrap();
    assert!(tokens.is_empty(), "no link was issued");
    let ok = exec(
        &ctx,
        &tools,
        "get_knowledge_page_link",
        json!({"slug_or_url": "hours"}),
    )
    .await;
    assert!(ok.success, "{ok:?}");
}
