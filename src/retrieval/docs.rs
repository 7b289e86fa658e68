//! What each corpus puts in its indexes: rows of redb turned into
//! [`IndexDoc`]s, read in one batch per outbox batch (no N+1 reads).
//!
//! The keyword text follows the spec's `search_tsv` definitions (§2.5):
//! knowledge chunks index `title || ' ' || chunk_text`; Slack messages
//! `channel_name user_name message_text`; artifacts their `document_text`.
//! A vector enters the vector lane only when it was made by the current
//! embedding model: vectors of different models live in different spaces,
//! and the embedding-audit sweep re-embeds the others.

use index::corpus::{Change, IndexDoc};
use storage::{
    Embedding, IndexCorpus, KnowledgeChunk, ProcessedSlackMessage, RedbStore, SlackThreadArtifact,
    StorageResult, Store, key,
};
use uuid::Uuid;

/// Thread key of §10.3: `channel_id:(thread_ts || message_ts)`.
pub fn thread_key(channel_id: &str, thread_ts: Option<&str>, message_ts: &str) -> String {
    format!("{channel_id}:{}", thread_ts.unwrap_or(message_ts))
}

fn vector_of(e: &Option<Embedding>, model: &str) -> Option<Vec<f32>> {
    let e = e.as_ref()?;
    (e.model == model && e.dims() == index::vector::DIMENSIONS).then(|| e.to_f32())
}

fn meta_str<'a>(meta: &'a serde_json::Value, field: &str) -> &'a str {
    meta.get(field).and_then(|v| v.as_str()).unwrap_or("")
}

/// The index document of a knowledge chunk (group = page, ordinal = chunk
/// index, tag = the page's `source_type`).
pub fn knowledge_doc(c: &KnowledgeChunk, model: &str) -> IndexDoc {
    let meta = &c.metadata.0;
    IndexDoc {
        row: c.id.as_u128(),
        group: c.knowledge_page_id.to_string(),
        ordinal: i64::from(c.chunk_index),
        tag: meta_str(meta, "source_type").to_string(),
        text: format!("{} {}", meta_str(meta, "title"), c.chunk_text),
        aux: String::new(),
        vector: vector_of(&c.embedding, model),
    }
}

/// The index document of a Slack message (group = thread, ordinal = message
/// date in µs, tag = channel id). Withdrawn messages are never indexed.
pub fn slack_message_doc(m: &ProcessedSlackMessage, model: &str) -> Option<IndexDoc> {
    if m.withdrawn_at.is_some() {
        return None;
    }
    let channel = m.channel_name.as_deref().unwrap_or("");
    let user = m.user_name.as_deref().unwrap_or("");
    Some(IndexDoc {
        row: m.id.as_u128(),
        group: thread_key(&m.channel_id, m.thread_ts.as_deref(), &m.message_ts),
        ordinal: m.message_date.micros(),
        tag: m.channel_id.clone(),
        text: format!("{channel} {user} {}", m.message_text),
        aux: format!("{channel} {user}"),
        vector: vector_of(&m.embedding, model),
    })
}

/// The index document of a thread artifact (group = thread, ordinal =
/// `updated_at` µs, tag = kind).
pub fn artifact_doc(a: &SlackThreadArtifact, model: &str) -> IndexDoc {
    IndexDoc {
        row: a.id.as_u128(),
        group: thread_key(&a.channel_id, Some(&a.thread_ts), &a.thread_ts),
        ordinal: a.updated_at.micros(),
        tag: a.kind.as_str().to_string(),
        text: a.document_text.clone(),
        aux: a.channel_name.clone().unwrap_or_default(),
        vector: vector_of(&a.embedding, model),
    }
}

/// The changes that make the index reflect the current state of `rows`
/// (a missing row becomes a removal).
pub async fn changes_for(
    store: &RedbStore,
    tenant: Uuid,
    corpus: IndexCorpus,
    rows: &[Uuid],
    model: &str,
) -> StorageResult<Vec<Change>> {
    let pks = rows.iter().map(|id| key().uuid(*id)).collect::<Vec<_>>();
    let docs: Vec<Option<IndexDoc>> = match corpus {
        IndexCorpus::Knowledge => store
            .get_many::<KnowledgeChunk>(Some(tenant), pks)
            .await?
            .iter()
            .map(|c| c.as_ref().map(|c| knowledge_doc(c, model)))
            .collect(),
        IndexCorpus::SlackMessages => store
            .get_many::<ProcessedSlackMessage>(Some(tenant), pks)
            .await?
            .iter()
            .map(|m| m.as_ref().and_then(|m| slack_message_doc(m, model)))
            .collect(),
        IndexCorpus::SlackArtifacts => store
            .get_many::<SlackThreadArtifact>(Some(tenant), pks)
            .await?
            .iter()
            .map(|a| a.as_ref().map(|a| artifact_doc(a, model)))
            .collect(),
    };
    Ok(rows
        .iter()
        .zip(docs)
        .map(|(id, doc)| match doc {
            Some(d) => Change::Upsert(d),
            None => Change::Remove(id.as_u128()),
        })
        .collect())
}

/// One page of every row of `corpus` for a rebuild, pk order after `after`.
pub async fn rebuild_page(
    store: &RedbStore,
    tenant: Uuid,
    corpus: IndexCorpus,
    after: Option<Uuid>,
    limit: usize,
    model: &str,
) -> StorageResult<(Vec<Change>, Option<Uuid>)> {
    use storage::Scan;
    let scan = Scan::all()
        .between(after.map(|id| key().uuid(id).raw(&[0])), None)
        .limit(limit);
    let (changes, last): (Vec<Change>, Option<Uuid>) = match corpus {
        IndexCorpus::Knowledge => {
            let rows: Vec<KnowledgeChunk> = store.scan(Some(tenant), scan).await?;
            let last = rows.last().map(|r| r.id);
            let docs = rows.iter().map(|c| Change::Upsert(knowledge_doc(c, model)));
            (docs.collect(), last)
        }
        IndexCorpus::SlackMessages => {
            let rows: Vec<ProcessedSlackMessage> = store.scan(Some(tenant), scan).await?;
            let last = rows.last().map(|r| r.id);
            let docs = rows
                .iter()
                .filter_map(|m| slack_message_doc(m, model))
                .map(Change::Upsert);
            (docs.collect(), last)
        }
        IndexCorpus::SlackArtifacts => {
            let rows: Vec<SlackThreadArtifact> = store.scan(Some(tenant), scan).await?;
            let last = rows.last().map(|r| r.id);
            let docs = rows.iter().map(|a| Change::Upsert(artifact_doc(a, model)));
            (docs.collect(), last)
        }
    };
    Ok((changes, last))
}
