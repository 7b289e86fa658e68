//! Knowledge base over HTTP (§10.2, §12.2): page CRUD, search semantics
//! (per-page cap, neighbours, guidance, source-type filter), bad bodies,
//! tenant isolation across a restart. The offline hashing embedder is in use
//! (no API key), so both lanes run for real.

use serde_json::{Value, json};
use storage::{Tenant, TenantStore};

use root::platform::api_keys::KeyKind;

use crate::support::{TestApp, mint_key};

pub async fn key_for(app: &TestApp, slug: &str) -> String {
    if app
        .state
        .store
        .tenant_by_slug(slug)
        .await
        .unwrap()
        .is_none()
    {
        app.state
            .store
            .create_tenant(Tenant::new(slug, slug))
            .await
            .unwrap();
    }
    mint_key(&app.state.store, slug, KeyKind::Live).await
}

pub async fn put_page(app: &TestApp, key: &str, body: Value) -> Value {
    let resp = app.post_json("/api/v1/kb/pages", Some(key), &body).await;
    let status = resp.status();
    let v: Value = resp.json().await.unwrap();
    assert!(status == 201 || status == 200, "{status}: {v}");
    v
}

pub async fn search(app: &TestApp, key: &str, body: Value) -> Value {
    let resp = app.post_json("/api/v1/kb/search", Some(key), &body).await;
    let status = resp.status();
    let v: Value = resp.json().await.unwrap();
    assert_eq!(status, 200, "{v}");
    v
}

async fn tenant_row(app: &TestApp, slug: &str) -> Tenant {
    app.state
        .store
        .tenant_by_slug(slug)
        .await
        .unwrap()
        .expect("tenant exists")
}

/// `count` one-paragraph pages `<slug>-<i>` titled `<title> <i>`.
async fn put_numbered_pages(
    app: &TestApp,
    key: &str,
    count: usize,
    slug: &str,
    title: &str,
    html: impl Fn(usize) -> String,
) {
    for i in 0..count {
        put_page(
            app,
            key,
            json!({"slug": format!("{slug}-{i}"), "title": format!("{title} {i}"),
                   "content_html": html(i)}),
        )
        .await;
    }
}

fn slugs(v: &Value) -> Vec<String> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["slug"].as_str().unwrap().to_string())
        .collect()
}

fn long_page(topic: &str, sections: usize) -> String {
    (0..sections)
        .map(|i| {
            format!(
                "<h2>Part {i}</h2><p>{}</p>",
                format!("Section {i} explains {topic} in depth with worked examples. ").repeat(30)
            )
        })
        .collect()
}

#[tokio::test]
async fn pages_are_created_replaced_listed_read_and_deleted() {
    let app = TestApp::spawn().await;
    let key = key_for(&app, "acme").await;
    let created = put_page(
        &app,
        &key,
        json!({"slug": "vpn-setup", "title": "VPN setup",
               "content_html": "<p>Install the wireguard client and import the profile.</p>",
               "author_member_id": "U1"}),
    )
    .await;
    assert_eq!(created["chunks"], 1);
    assert_eq!(created["indexed"], true);
    assert_eq!(created["source_type"], "manual");
    let public_id = created["public_id"].as_str().unwrap().to_string();

    // Same slug: replaced (200), same id and public id.
    let resp = app
        .post_json(
            "/api/v1/kb/pages",
            Some(&key),
            &json!({"slug": "vpn-setup", "title": "VPN setup",
                    "content_html": "<p>Install the openvpn client instead.</p>",
                    "source_type": "api"}),
        )
        .await;
    assert_eq!(resp.status(), 200);
    let replaced: Value = resp.json().await.unwrap();
    assert_eq!(replaced["id"], created["id"]);
    assert_eq!(replaced["public_id"], public_id.as_str());

    let found = search(&app, &key, json!({"query": "openvpn"})).await;
    assert_eq!(slugs(&found), vec!["vpn-setup"]);
    let stale = search(&app, &key, json!({"query": "wireguard"})).await;
    assert!(
        stale["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| !r["text"].as_str().unwrap().contains("wireguard")),
        "old chunks left the index: {stale}"
    );

    put_page(
        &app,
        &key,
        json!({"slug": "billing", "title": "Billing", "content_html": "<p>Invoices go out monthly.</p>",
               "author_member_id": "U2"}),
    )
    .await;
    let all: Value = app
        .get("/api/v1/kb/pages", Some(&key))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(all["pages"].as_array().unwrap().len(), 2);
    let api: Value = app
        .get("/api/v1/kb/pages?source_type=api", Some(&key))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(api["pages"][0]["slug"], "vpn-setup");
    assert_eq!(api["pages"].as_array().unwrap().len(), 1);
    let by_author: Value = app
        .get("/api/v1/kb/pages?author_member_id=U2", Some(&key))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(by_author["pages"][0]["slug"], "billing");

    let page: Value = app
        .get("/api/v1/kb/pages/vpn-setup", Some(&key))
        .await
        .json()
        .await
        .unwrap();
    assert!(page["content_html"].as_str().unwrap().contains("openvpn"));

    assert_eq!(
        app.delete("/api/v1/kb/pages/vpn-setup", Some(&key))
            .await
            .status(),
        204
    );
    assert_eq!(
        app.delete("/api/v1/kb/pages/vpn-setup", Some(&key))
            .await
            .status(),
        404
    );
    assert_eq!(
        app.get("/api/v1/kb/pages/vpn-setup", Some(&key))
            .await
            .status(),
        404
    );
    let gone = search(&app, &key, json!({"query": "openvpn"})).await;
    assert!(slugs(&gone).is_empty(), "{gone}");
    assert!(
        gone["guidance"]
            .as_str()
            .unwrap()
            .contains("does not mean the information does not exist")
    );
}

#[tokio::test]
async fn bad_requests_get_clear_400s_and_no_key_gets_401() {
    let app = TestApp::spawn().await;
    let key = key_for(&app, "acme").await;
    let cases = [
        (json!({"title": "x", "content_html": "y"}), "slug"),
        (
            json!({"slug": "a", "title": 5, "content_html": "y"}),
            "title",
        ),
        (
            json!({"slug": "a", "title": "t", "content_html": "y", "colour": "red"}),
            "colour",
        ),
        (
            json!({"slug": "has space", "title": "t", "content_html": "y"}),
            "whitespace",
        ),
        (
            json!({"slug": "", "title": "t", "content_html": "y"}),
            "slug",
        ),
        (
            json!({"slug": "a", "title": "t", "content_html": "y", "public_id": "x".repeat(17)}),
            "public_id",
        ),
    ];
    for (body, needle) in cases {
        let resp = app.post_json("/api/v1/kb/pages", Some(&key), &body).await;
        assert_eq!(resp.status(), 400, "{body}");
        let v: Value = resp.json().await.unwrap();
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(msg.contains(needle), "{msg} should mention {needle}");
    }
    let resp = app
        .client
        .post(app.url("/api/v1/kb/search"))
        .bearer_auth(&key)
        .body("query=x")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    for body in [
        json!({"query": "  "}),
        json!({"query": "x", "limit": 0}),
        json!({"query": "x", "limit": 101}),
        json!({"query": "x", "source_types": "manual"}),
    ] {
        let resp = app.post_json("/api/v1/kb/search", Some(&key), &body).await;
        assert_eq!(resp.status(), 400, "{body}");
    }
    let resp = app
        .post_json("/api/v1/kb/search", None, &json!({"query": "x"}))
        .await;
    assert_eq!(resp.status(), 401);
}

#[tokio::test]
async fn results_keep_three_chunks_per_page_attach_neighbours_and_filter_by_source_type() {
    three_per_page_neighbours_and_source_filter().await;
}

/// The same semantics when the search runs in place on a runtime worker
/// (`block_in_place`, the server's multi-threaded runtime) instead of on the
/// blocking pool (the tests' current-thread runtime).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_are_the_same_when_the_search_runs_in_place_on_a_worker() {
    three_per_page_neighbours_and_source_filter().await;
}

async fn three_per_page_neighbours_and_source_filter() {
    let app = TestApp::spawn().await;
    let key = key_for(&app, "acme").await;
    let big = put_page(
        &app,
        &key,
        json!({"slug": "kubernetes-guide", "title": "Kubernetes guide",
               "content_html": long_page("kubernetes deployments", 8)}),
    )
    .await;
    assert!(big["chunks"].as_u64().unwrap() >= 6, "{big}");
    put_page(
        &app,
        &key,
        json!({"slug": "kubernetes-faq", "title": "Kubernetes FAQ", "source_type": "api",
               "content_html": "<p>Kubernetes deployments roll out pods gradually.</p>"}),
    )
    .await;
    let v = search(
        &app,
        &key,
        json!({"query": "kubernetes deployments worked examples"}),
    )
    .await;
    let s = slugs(&v);
    assert_eq!(
        s.iter().filter(|x| *x == "kubernetes-guide").count(),
        3,
        "cap 3 chunks per page: {s:?}"
    );
    assert!(s.contains(&"kubernetes-faq".to_string()));
    // Neighbours: ±1 of a result, not already a result, ≤ 600 chars, ≤ 10 in all.
    let results = v["results"].as_array().unwrap();
    let mut neighbours = 0;
    for r in results {
        let idx = r["chunk_index"].as_i64().unwrap();
        for n in r["neighbors"].as_array().unwrap() {
            neighbours += 1;
            let ni = n["chunk_index"].as_i64().unwrap();
            assert!(ni == idx - 1 || ni == idx + 1);
            assert!(n["text"].as_str().unwrap().chars().count() <= 600);
            assert!(
                !results
                    .iter()
                    .any(|o| o["slug"] == r["slug"] && o["chunk_index"].as_i64() == Some(ni)),
                "a neighbour already in the results is skipped"
            );
        }
    }
    assert!(neighbours > 0 && neighbours <= 10, "{neighbours}");

    let only_api = search(
        &app,
        &key,
        json!({"query": "kubernetes deployments", "source_types": ["api"]}),
    )
    .await;
    assert_eq!(slugs(&only_api), vec!["kubernetes-faq"]);
    let none = search(
        &app,
        &key,
        json!({"query": "kubernetes deployments", "source_types": []}),
    )
    .await;
    assert!(slugs(&none).is_empty());
    let limited = search(
        &app,
        &key,
        json!({"query": "kubernetes deployments", "limit": 2}),
    )
    .await;
    assert_eq!(limited["results"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn a_tenants_pages_never_reach_another_tenant_even_after_restart() {
    let app = TestApp::spawn().await;
    let a = key_for(&app, "alpha").await;
    let b = key_for(&app, "beta").await;
    put_page(
        &app,
        &a,
        json!({"slug": "secret-plan", "title": "Secret plan",
               "content_html": "<p>The zeppelin launch happens at dawn.</p>"}),
    )
    .await;
    put_page(
        &app,
        &b,
        json!({"slug": "beta-notes", "title": "Notes",
               "content_html": "<p>Beta keeps bicycles in the shed.</p>"}),
    )
    .await;
    let q = json!({"query": "zeppelin launch dawn"});
    assert_eq!(
        slugs(&search(&app, &a, q.clone()).await),
        vec!["secret-plan"]
    );
    assert!(!slugs(&search(&app, &b, q.clone()).await).contains(&"secret-plan".to_string()));
    assert_eq!(
        app.get("/api/v1/kb/pages/secret-plan", Some(&b))
            .await
            .status(),
        404
    );

    let dir = app.stop_keep_dir().await;
    let app = TestApp::spawn_in(dir, &[]).await;
    assert_eq!(
        slugs(&search(&app, &a, q.clone()).await),
        vec!["secret-plan"]
    );
    assert!(!slugs(&search(&app, &b, q).await).contains(&"secret-plan".to_string()));
    assert_eq!(
        slugs(&search(&app, &b, json!({"query": "bicycles shed"})).await),
        vec!["beta-notes"]
    );
}

#[tokio::test]
async fn the_vector_floor_cuts_the_vector_lane_only() {
    let page_a = json!({"slug": "redeploy", "title": "Notes",
        "content_html": "<p>Redeploying happens nightly.</p>"});
    let page_b = json!({"slug": "deployments", "title": "Deployments",
        "content_html": "<p>Deployments need a green build.</p>"});
    // Floor 0: the vector lane may return weak matches (shared n-grams only).
    let app = TestApp::spawn_with(&[("SEARCH_VECTOR_FLOORS", "root/hashing-v1=0.0")]).await;
    let key = key_for(&app, "acme").await;
    put_page(&app, &key, page_a.clone()).await;
    put_page(&app, &key, page_b.clone()).await;
    let open = search(&app, &key, json!({"query": "deployments"})).await;
    let weak = open["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["slug"] == "redeploy")
        .expect("found through the vector lane alone");
    assert!(
        weak["vector_rank"].is_number() && weak["keyword_rank"].is_null(),
        "{weak}"
    );
    drop(app);

    // Floor 0.99: nothing passes the vector floor, the keyword lane is untouched.
    let app = TestApp::spawn_with(&[("SEARCH_VECTOR_FLOORS", "root/hashing-v1=0.99")]).await;
    let key = key_for(&app, "acme").await;
    put_page(&app, &key, page_a).await;
    put_page(&app, &key, page_b).await;
    let floored = search(&app, &key, json!({"query": "deployments"})).await;
    assert_eq!(slugs(&floored), vec!["deployments"], "{floored}");
    let r = &floored["results"][0];
    assert!(r["vector_rank"].is_null() && r["keyword_rank"] == 1, "{r}");
}

/// A reranker that prefers the candidate whose text mentions "zebra", or fails.
struct Scripted {
    fail: bool,
}

#[async_trait::async_trait]
impl index::rerank::Reranker for Scripted {
    async fn score(
        &self,
        _query: &str,
        candidates: &[index::rerank::RerankCandidate],
    ) -> Result<Vec<(String, f64)>, index::rerank::RerankError> {
        if self.fail {
            return Err(index::rerank::RerankError::InvalidResponse(
                "scripted outage".into(),
            ));
        }
        assert!(candidates.len() <= 20, "the knowledge rerank window is 20");
        Ok(candidates
            .iter()
            .map(|c| {
                (
                    c.id.clone(),
                    if c.excerpt.contains("zebra") {
                        9.0
                    } else {
                        1.0
                    },
                )
            })
            .collect())
    }
}

#[tokio::test]
async fn a_successful_rerank_keeps_twelve_and_a_failed_one_keeps_the_fused_order() {
    let app = TestApp::spawn().await;
    let key = key_for(&app, "acme").await;
    put_numbered_pages(&app, &key, 15, "stripe", "Stripes", |i| {
        let extra = if i == 14 { " zebra" } else { "" };
        format!("<p>Stripes pattern number {i}{extra}.</p>")
    })
    .await;
    let tenant = tenant_row(&app, "acme").await;
    let ctx = root::platform::tenancy::TenantContext {
        tenant: std::sync::Arc::new(tenant),
    };
    let q = || root::retrieval::KnowledgeQuery {
        query: "stripes pattern".into(),
        rerank: true,
        ..Default::default()
    };
    let ok = app
        .state
        .retrieval
        .clone()
        .with_reranker(Some(std::sync::Arc::new(Scripted { fail: false })), true);
    let out = root::platform::tenancy::scope(ctx.clone(), ok.search_knowledge(q()))
        .await
        .unwrap();
    assert!(out.reranked);
    assert_eq!(out.results.len(), 12, "min(limit 25, keep 12)");
    assert_eq!(
        out.results[0].slug, "stripe-14",
        "the model's favourite first"
    );

    let failing = app
        .state
        .retrieval
        .clone()
        .with_reranker(Some(std::sync::Arc::new(Scripted { fail: true })), true);
    let out = root::platform::tenancy::scope(ctx.clone(), failing.search_knowledge(q()))
        .await
        .unwrap();
    assert!(!out.reranked);
    assert_eq!(
        out.results.len(),
        15,
        "fail-open keeps every fused result up to the limit"
    );

    let switched_off = app
        .state
        .retrieval
        .clone()
        .with_reranker(Some(std::sync::Arc::new(Scripted { fail: false })), false);
    let out = root::platform::tenancy::scope(ctx, switched_off.search_knowledge(q()))
        .await
        .unwrap();
    assert!(!out.reranked, "SEARCH_LLM_RERANK=false");
    assert_eq!(out.results.len(), 15);
}

/// A chunk row deleted behind the index's back (the index answers before
/// the outbox is applied) drops out, and the next fused candidates fill the
/// caller's limit instead of the page coming back short.
#[tokio::test]
async fn rows_deleted_after_the_index_answered_are_replaced_by_the_next_candidates() {
    use storage::{KnowledgeChunk, Store, key};
    let app = TestApp::spawn().await;
    let key_ = key_for(&app, "acme").await;
    put_numbered_pages(&app, &key_, 26, "gryphon", "Gryphon note", |i| {
        format!("<p>Rotate the gryphon certificates every month, note {i}.</p>")
    })
    .await;
    let query = json!({"query": "rotate gryphon certificates", "limit": 20});
    let before = search(&app, &key_, query.clone()).await;
    let results = before["results"].as_array().unwrap();
    assert_eq!(results.len(), 20, "{before}");
    let tenant = tenant_row(&app, "acme").await;
    // Raw row deletes: no outbox entry, so the index still returns them.
    let gone: Vec<String> = results[..3]
        .iter()
        .map(|r| r["slug"].as_str().unwrap().to_string())
        .collect();
    for r in &results[..3] {
        let id: uuid::Uuid = r["chunk_id"].as_str().unwrap().parse().unwrap();
        assert!(
            app.state
                .store
                .delete::<KnowledgeChunk>(Some(tenant.id), key().uuid(id))
                .await
                .unwrap()
        );
    }
    let after = search(&app, &key_, query).await;
    let s = slugs(&after);
    assert_eq!(s.len(), 20, "the limit is still filled: {s:?}");
    assert!(s.iter().all(|x| !gone.contains(x)), "{s:?} vs {gone:?}");
    // Every survivor is still returned. (Their exact order may move: the
    // vector lane rescores candidates against the f16 rows, and a deleted
    // row can only keep its i8 graph score, so among these near-identical
    // pages its rank — and so its neighbours' fused scores — shift a little.)
    let survivors: Vec<String> = slugs(&before)[3..].to_vec();
    assert!(
        survivors.iter().all(|x| s.contains(x)),
        "{s:?} vs {survivors:?}"
    );
}

/// L9 (§11.2 step 5): page HTML is sanitised on ingest — the stored copy
/// has no script, handler or `javascript:` URL, and what was removed is
/// not searchable either.
#[tokio::test]
async fn page_html_is_sanitised_before_it_is_stored_or_indexed() {
    let app = TestApp::spawn().await;
    let key = key_for(&app, "acme").await;
    put_page(
        &app,
        &key,
        json!({"slug": "house-rules", "title": "House rules",
               "content_html": "<h2 onmouseover=\"steal()\">Quiet hours</h2><p>Quiet after ten. <a href=\"javascript:exfiltrate()\">More</a></p><script>exfiltrate(document.cookie)</script>"}),
    )
    .await;
    let resp = app.get("/api/v1/kb/pages/house-rules", Some(&key)).await;
    assert_eq!(resp.status(), 200);
    let page: Value = resp.json().await.unwrap();
    let html = page["content_html"].as_str().unwrap();
    assert_eq!(
        html,
        "<h2>Quiet hours</h2><p>Quiet after ten. <a rel=\"noopener noreferrer\">More</a></p>"
    );
    let found = search(&app, &key, json!({"query": "exfiltrate cookie"})).await;
    assert_eq!(
        found["results"].as_array().map(Vec::len),
        Some(0),
        "{found}"
    );
}

/// L10: `GET /kb/pages` always applies its limit — 100 when absent, cut to
/// 500 when larger — also with both filters, and lists summary fields only.
#[tokio::test]
async fn the_page_listing_always_applies_its_limit_and_lists_summaries() {
    use storage::{KnowledgePage, Store, Ts};
    let app = TestApp::spawn().await;
    let key = key_for(&app, "acme").await;
    let tenant = tenant_row(&app, "acme").await;
    let rows: Vec<KnowledgePage> = (0..520)
        .map(|i| KnowledgePage {
            id: uuid::Uuid::new_v4(),
            tenant_id: tenant.id,
            slug: format!("page-{i:04}"),
            title: format!("Page {i}"),
            content_html: "<p>a long body</p>".repeat(50),
            content_text: Some("a long body".into()),
            author_member_id: Some("U1".into()),
            source_type: "api".into(),
            public_id: Some(format!("p{i}")),
            created_at: Ts(1_000),
            updated_at: Ts(2_000),
            ..KnowledgePage::default()
        })
        .collect();
    app.state.store.insert_many(rows).await.unwrap();
    let list = |q: &'static str| {
        let app = &app;
        let key = key.clone();
        async move {
            let resp = app.get(&format!("/api/v1/kb/pages{q}"), Some(&key)).await;
            assert_eq!(resp.status(), 200, "{q}");
            resp.json::<Value>().await.unwrap()
        }
    };
    let count = |v: &Value| v["pages"].as_array().unwrap().len();
    let absent = list("").await;
    assert_eq!(count(&absent), 100);
    assert_eq!(absent["limit"], 100);
    for q in [
        "?limit=100000",
        "?source_type=api&limit=501",
        "?author_member_id=U1&limit=9999",
        "?source_type=api&author_member_id=U1&limit=600",
    ] {
        let v = list(q).await;
        assert_eq!(count(&v), 500, "{q}");
        assert_eq!(v["limit"], 500, "{q}");
    }
    assert_eq!(
        count(&list("?source_type=api&author_member_id=U1").await),
        100
    );
    assert_eq!(count(&list("?limit=7").await), 7);
    assert_eq!(
        app.get("/api/v1/kb/pages?limit=0", Some(&key))
            .await
            .status(),
        400
    );
    // Summary fields, no body.
    let first = &absent["pages"][0];
    assert_eq!(first["slug"], "page-0000");
    assert_eq!(first["title"], "Page 0");
    assert_eq!(first["source_type"], "api");
    assert_eq!(first["author_member_id"], "U1");
    assert_eq!(first["public_id"], "p0");
    assert_eq!(first["is_public"], false);
    let mut fields: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "author_member_id",
            "author_name",
            "created_at",
            "id",
            "is_public",
            "knowledge_date",
            "public_id",
            "slug",
            "source_type",
            "source_url",
            "title",
            "updated_at"
        ]
    );
}

/// L3: `POST /kb/search` with a `principal_ref` applies that principal's
/// tier scoping (manifest `knowledge_source_types`); an unknown ref gets the
/// reserved `unresolved` tier's; a tier that may not search is a 403.
#[tokio::test]
async fn search_as_a_principal_applies_the_tiers_knowledge_scoping() {
    use root::platform::tenancy::{self, TenantContext};
    use storage::{Principal, Store, Ts};
    use testkit::stub::StubBackend;

    let app = TestApp::spawn().await;
    let key = key_for(&app, "acme").await;
    let tenant = tenant_row(&app, "acme").await;
    let ctx = TenantContext {
        tenant: std::sync::Arc::new(tenant.clone()),
    };
    let stub = StubBackend::start("stub-secret-0123456789").await.unwrap();
    let mut manifest = StubBackend::default_manifest();
    manifest["access_tiers"] = json!([
        {"name": "member", "core_tools": ["search_knowledge_base"], "knowledge_source_types": ["faq"]},
        {"name": "unresolved", "core_tools": ["search_knowledge_base"], "knowledge_source_types": ["policy"]},
        "partner"
    ]);
    stub.set_manifest(manifest);
    crate::support::register_stub(&app, &ctx, &stub, "stub-secret-0123456789").await;
    for (slug, source_type) in [
        ("dues-faq", "faq"),
        ("dues-policy", "policy"),
        ("dues-notes", "manual"),
    ] {
        put_page(
            &app,
            &key,
            json!({"slug": slug, "title": format!("Membership dues {source_type}"),
                   "content_html": "<p>Membership dues are paid every January by bank transfer.</p>",
                   "source_type": source_type}),
        )
        .await;
    }
    let now = Ts::now();
    for (r, tier) in [("ann", "member"), ("vis", "public")] {
        app.state
            .store
            .insert(Principal {
                id: uuid::Uuid::new_v4(),
                tenant_id: tenant.id,
                ref_: r.into(),
                tier: tier.into(),
                created_at: now,
                updated_at: now,
                ..Principal::default()
            })
            .await
            .unwrap();
    }
    let _ = tenancy::scope(ctx.clone(), app.state.integrations.prime()).await;
    let sorted = |v: Value| {
        let mut s = slugs(&v);
        s.sort();
        s.dedup();
        s
    };
    let q = "membership dues january";
    assert_eq!(
        sorted(search(&app, &key, json!({"query": q})).await),
        ["dues-faq", "dues-notes", "dues-policy"]
    );
    assert_eq!(
        sorted(search(&app, &key, json!({"query": q, "principal_ref": "ann"})).await),
        ["dues-faq"]
    );
    // The caller's own filter narrows the scope, never widens it.
    assert!(
        sorted(
            search(
                &app,
                &key,
                json!({"query": q, "principal_ref": "ann", "source_types": ["policy"]})
            )
            .await
        )
        .is_empty()
    );
    assert_eq!(
        sorted(search(&app, &key, json!({"query": q, "principal_ref": "nobody"})).await),
        ["dues-policy"]
    );
    let resp = app
        .post_json(
            "/api/v1/kb/search",
            Some(&key),
            &json!({"query": q, "principal_ref": "vis"}),
        )
        .await;
    assert_eq!(resp.status(), 403);
}
