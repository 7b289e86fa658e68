//! Index crash consistency (GUIDE §4): a child process writes pages and is
//! killed with SIGKILL after the redb commit but before the index caught up
//! (and before any vector snapshot); the restarted server replays the outbox
//! and finds every page. Also: deleted index files are rebuilt from redb.
//! `cargo test kb_crash` selects these.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use storage::{
    Embedding, IndexCorpus, Json, KnowledgeChunk, KnowledgePage, Tenant, TenantStore, Ts,
};
use uuid::Uuid;

use root::ai::embeddings::{Embedder, HashingEmbedder};
use root::app::{AppState, open_store};
use root::platform::clock::SystemClock;
use root::platform::tenancy::{self, TenantContext};
use root::retrieval::PageUpsert;

use crate::kb::{key_for, put_page, search};
use crate::support::{TestApp, run_child_until_marker_then_sigkill, test_config};

const CHILD_ENV: &str = "ROOT_KB_CRASH_CHILD_DIR";

fn slugs(v: &serde_json::Value) -> Vec<String> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["slug"].as_str().unwrap().to_string())
        .collect()
}

/// Child entry point: a no-op unless started by the crash test.
#[tokio::test]
async fn kb_crash_child_writer() {
    let Some(dir) = std::env::var_os(CHILD_ENV).map(PathBuf::from) else {
        return;
    };
    let config = test_config(&dir.join("data"), &[]);
    let store = open_store(&config).await.unwrap();
    let state = AppState::new(config, store.clone(), Arc::new(SystemClock)).unwrap();
    let tenant = store
        .create_tenant(Tenant::new("acme", "Acme"))
        .await
        .unwrap();
    let ctx = TenantContext {
        tenant: Arc::new(tenant.clone()),
    };
    // Open the (empty) index first, as a running server would have.
    state
        .retrieval
        .registry()
        .get(tenant.id, IndexCorpus::Knowledge)
        .await
        .unwrap();
    tenancy::scope(ctx, async {
        // Page A through the real path: searchable (keyword lane committed),
        // but no vector snapshot yet (the interval is 60 s).
        let write = state
            .retrieval
            .upsert_page(PageUpsert {
                slug: "walrus-care".into(),
                title: "Walrus care".into(),
                content_html: "<p>Feed the walrus herring twice a day.</p>".into(),
                source_type: "manual".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        state
            .retrieval
            .wait_searchable(IndexCorpus::Knowledge, write.index_seq)
            .await
            .unwrap();
        // Page B: committed to redb with its outbox entries exactly like the
        // ingest path, and the process dies before any writer sees it.
        let page = KnowledgePage {
            id: Uuid::new_v4(),
            tenant_id: tenant.id,
            slug: "narwhal-care".into(),
            title: "Narwhal care".into(),
            content_html: "<p>Narwhal tusks need gentle polishing.</p>".into(),
            source_type: "manual".into(),
            created_at: Ts::now(),
            updated_at: Ts::now(),
            ..Default::default()
        };
        let text = "Narwhal tusks need gentle polishing.".to_string();
        let v = HashingEmbedder
            .embed(&[format!("Narwhal care\n\n{text}")], "test")
            .await
            .unwrap()
            .pop()
            .unwrap();
        let chunk = KnowledgeChunk {
            id: Uuid::new_v4(),
            tenant_id: tenant.id,
            knowledge_page_id: page.id,
            chunk_index: 0,
            chunk_text: text,
            embedding: Some(Embedding::from_f32(HashingEmbedder.model(), &v)),
            metadata: Json(json!({"title": "Narwhal care", "slug": "narwhal-care",
                "public_id": null, "source_type": "manual", "author_name": null,
                "section_heading": null})),
            created_at: Ts::now(),
        };
        let tid = tenant.id;
        store
            .transact(move |tx| {
                tx.insert(&page)?;
                tx.insert(&chunk)?;
                tx.index_change(tid, IndexCorpus::Knowledge, chunk.id)?;
                Ok(())
            })
            .await
            .unwrap();
    })
    .await;
    std::fs::write(dir.join("committed"), b"1").unwrap();
    std::future::pending::<()>().await;
}

#[tokio::test]
async fn kb_crash_sigkill_after_commit_before_index_replays_on_restart() {
    let dir = tempfile::tempdir().unwrap();
    run_child_until_marker_then_sigkill(
        "kb_crash::kb_crash_child_writer",
        CHILD_ENV,
        dir.path(),
        "committed",
        Duration::from_secs(60),
    )
    .await;
    let tenant_dir = std::fs::read_dir(dir.path().join("data/index"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let current = std::fs::read_to_string(tenant_dir.join("knowledge/CURRENT")).unwrap();
    assert!(
        current.contains("seq 0\n"),
        "the only vector snapshot is the empty one from before both pages: {current}"
    );

    let app = TestApp::spawn_in(dir, &[]).await;
    let key = key_for(&app, "acme").await;
    let a = search(&app, &key, json!({"query": "walrus herring"})).await;
    assert_eq!(slugs(&a), vec!["walrus-care"], "{a}");
    let b = search(&app, &key, json!({"query": "narwhal tusks polishing"})).await;
    assert_eq!(slugs(&b), vec!["narwhal-care"], "{b}");
    assert!(
        b["results"][0]["vector_rank"].is_number(),
        "the replay restored the vector lane too: {b}"
    );
}

#[tokio::test]
async fn kb_crash_deleted_index_files_are_rebuilt_from_redb() {
    let app = TestApp::spawn().await;
    let key = key_for(&app, "acme").await;
    put_page(
        &app,
        &key,
        json!({"slug": "otter-notes", "title": "Otters",
               "content_html": "<p>Otters hold hands while sleeping.</p>"}),
    )
    .await;
    let data_dir = app.data_dir.clone();
    let dir = app.stop_keep_dir().await;
    // A clean stop snapshots and clears the outbox …
    let index_dir = data_dir.join("index");
    assert!(index_dir.exists());
    // … then the files are lost (or restored from an old backup).
    std::fs::remove_dir_all(&index_dir).unwrap();
    let app = TestApp::spawn_in(dir, &[]).await;
    let v = search(&app, &key, json!({"query": "otters sleeping"})).await;
    assert_eq!(slugs(&v), vec!["otter-notes"], "{v}");
    assert!(v["results"][0]["vector_rank"].is_number(), "{v}");
}
