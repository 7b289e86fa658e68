//! The embedding-audit sweep (§11.3): NULL embeddings are filled, vectors
//! of another model are re-embedded, and the rows then reach the vector lane.

use std::sync::Arc;

use serde_json::json;
use storage::{
    Embedding, IndexCorpus, Json, KnowledgeChunk, KnowledgePage, Scan, Store, Tenant, TenantStore,
    Ts,
};
use uuid::Uuid;

use root::app::{AppState, open_store};
use root::platform::clock::SystemClock;
use root::platform::tenancy::{self, TenantContext};
use root::queue::Outcome;
use root::queue::job::{EmbeddingAuditTick, JobOptions};
use root::queue::registry::EMBEDDING_AUDIT;
use root::retrieval::{KnowledgeQuery, PageUpsert};

use crate::support::{drain_jobs, test_config};

#[tokio::test]
async fn the_audit_embeds_null_vectors_and_re_embeds_other_models() {
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(&dir.path().join("data"), &[]);
    let store = open_store(&config).await.unwrap();
    let state = AppState::new(config, store.clone(), Arc::new(SystemClock)).unwrap();
    let tenant = store
        .create_tenant(Tenant::new("acme", "Acme"))
        .await
        .unwrap();
    let ctx = TenantContext {
        tenant: Arc::new(tenant.clone()),
    };
    let r = state.retrieval.clone();
    let model = r.embedder().model().to_string();

    tenancy::scope(ctx.clone(), async {
        // A page stored while the embedder was unavailable: NULL vectors.
        let w = r
            .upsert_page_chunks(
                PageUpsert {
                    slug: "pelican-feeding".into(),
                    title: "Pelican feeding".into(),
                    content_html: String::new(),
                    source_type: "manual".into(),
                    ..Default::default()
                },
                vec![("Pelicans eat sardines at noon.".into(), None)],
            )
            .await
            .unwrap();
        assert_eq!(w.unembedded, 1);
        // A chunk embedded by a model that is no longer configured.
        let page = KnowledgePage {
            id: Uuid::new_v4(),
            tenant_id: tenant.id,
            slug: "heron-notes".into(),
            title: "Heron notes".into(),
            source_type: "manual".into(),
            created_at: Ts::now(),
            updated_at: Ts::now(),
            ..Default::default()
        };
        let chunk = KnowledgeChunk {
            id: Uuid::new_v4(),
            tenant_id: tenant.id,
            knowledge_page_id: page.id,
            chunk_index: 0,
            chunk_text: "Herons stand still in shallow water.".into(),
            embedding: Some(Embedding::from_f32("old/model", &vec![0.01; 3072])),
            metadata: Json(json!({"title": "Heron notes", "slug": "heron-notes",
                "source_type": "manual"})),
            created_at: Ts::now(),
        };
        let tid = tenant.id;
        let (_, seq) = store
            .transact(move |tx| {
                tx.insert(&page)?;
                tx.insert(&chunk)?;
                tx.index_change(tid, IndexCorpus::Knowledge, chunk.id)?;
                Ok(())
            })
            .await
            .unwrap();
        r.wait_searchable(IndexCorpus::Knowledge, seq.max(w.index_seq))
            .await
            .unwrap();
        // Neither is in the vector lane yet.
        for q in ["pelicans sardines", "herons shallow water"] {
            let s = r
                .search_knowledge(KnowledgeQuery {
                    query: q.into(),
                    ..Default::default()
                })
                .await
                .unwrap();
            assert!(s.results[0].vector_rank.is_none(), "{q}: {:?}", s.results);
        }
    })
    .await;

    // The repeatable job, through the real worker runtime.
    state
        .queues
        .enqueue_job(
            &EmbeddingAuditTick {
                scheduled_for: Ts::now(),
            },
            JobOptions::default(),
        )
        .await
        .unwrap();
    let out = drain_jobs(&state, EMBEDDING_AUDIT).await;
    assert!(
        matches!(out.as_slice(), [Outcome::Completed { .. }]),
        "{out:?}"
    );

    tenancy::scope(ctx.clone(), async {
        let chunks: Vec<KnowledgeChunk> = store.scan(Some(tenant.id), Scan::all()).await.unwrap();
        assert_eq!(chunks.len(), 2);
        assert!(
            chunks
                .iter()
                .all(|c| c.embedding.as_ref().is_some_and(|e| e.model == model)),
            "every chunk now carries the configured model's vector"
        );
        // The audit's index changes are applied; both are in the vector lane.
        let h = r
            .registry()
            .get(tenant.id, IndexCorpus::Knowledge)
            .await
            .unwrap();
        let last = storage::IndexOutboxStore::outbox_last_seq(&store)
            .await
            .unwrap();
        r.registry()
            .wait_applied(
                tenant.id,
                IndexCorpus::Knowledge,
                last,
                std::time::Duration::from_secs(10),
            )
            .await
            .unwrap();
        assert_eq!(h.index.vector_len(), 2);
        for q in ["pelicans sardines", "herons shallow water"] {
            let s = r
                .search_knowledge(KnowledgeQuery {
                    query: q.into(),
                    ..Default::default()
                })
                .await
                .unwrap();
            assert!(s.results[0].vector_rank.is_some(), "{q}: {:?}", s.results);
        }
        // A second pass finds nothing to do.
        let again = r.audit_embeddings().await.unwrap();
        assert_eq!(again, Default::default());
    })
    .await;
}
