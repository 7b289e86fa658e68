//! Documents that arrive from outside (§11.1): `POST /api/v1/kb/sync` for
//! an api_push source, and the signed callback of a triggered webhook run
//! (§7.1 headers, the source's `webhook_signing_secret`). Either way the
//! documents ride in the run's `input_payload` and the run is queued.

use serde::Deserialize;
use serde_json::{Value, json};
use storage::{
    Json, KnowledgeSource, KnowledgeSyncRun, SourceKind, Store, SyncRunStatus, SyncTrigger, key,
};
use uuid::Uuid;

use super::KnowledgeSync;
use super::fetch::{MAX_DOCUMENTS_PER_RUN, RawDocument};
use super::runs::{RunOptions, SYNC_JOB_PREFIX};
use super::sources::{SourceError, invalid};

/// Skew accepted on a webhook callback's signature (§7.1).
pub const CALLBACK_MAX_SKEW_SECS: i64 = 300;

/// A push: documents and options (`POST /kb/sync`, a webhook callback).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PushBody {
    /// `{key}` naming the api_push source (`POST /kb/sync` only).
    #[serde(default)]
    pub source: Option<SourceRef>,
    /// ≤ 250 documents.
    pub documents: Vec<RawDocument>,
    /// Run option overrides.
    #[serde(default)]
    pub options: Option<RunOptions>,
}

/// `source: {key}`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceRef {
    /// The source's `source_key`.
    pub key: String,
}

fn push_payload(body: &PushBody) -> Result<Value, SourceError> {
    if body.documents.is_empty() {
        return invalid("documents must not be empty");
    }
    if body.documents.len() > MAX_DOCUMENTS_PER_RUN {
        return invalid(format!(
            "documents: at most {MAX_DOCUMENTS_PER_RUN} per sync"
        ));
    }
    Ok(json!({"documents": body.documents, "options": body.options}))
}

impl KnowledgeSync {
    /// `POST /kb/sync`: documents for an api_push source.
    pub async fn push(
        &self,
        tenant: Uuid,
        body: PushBody,
    ) -> Result<KnowledgeSyncRun, SourceError> {
        let Some(r) = &body.source else {
            return invalid("source.key is required");
        };
        let source = self.source(tenant, &r.key).await?;
        if source.source_kind != SourceKind::ApiPush {
            return invalid(format!(
                "source {:?} is a {} source; only api_push sources take pushed documents",
                r.key,
                source.source_kind.as_str()
            ));
        }
        let payload = push_payload(&body)?;
        Ok(self
            .start_run(&source, SyncTrigger::Api, Some(payload))
            .await?)
    }

    /// The signed callback of a triggered webhook run: its documents, then
    /// the same run is queued again. The signature is §7.1's, with the
    /// source's `webhook_signing_secret`.
    pub async fn push_to_run(
        &self,
        tenant: Uuid,
        run_id: Uuid,
        raw: &[u8],
        timestamp: Option<&str>,
        signature: Option<&str>,
    ) -> Result<KnowledgeSyncRun, SourceError> {
        let store = &self.inner.store;
        let not_found = || SourceError::NotFound("no such sync run".into());
        let run: KnowledgeSyncRun = store
            .get(Some(tenant), key().uuid(run_id))
            .await?
            .ok_or_else(not_found)?;
        let source: KnowledgeSource = store
            .get(Some(tenant), key().uuid(run.source_id))
            .await?
            .ok_or_else(not_found)?;
        let secret = source
            .secrets
            .expose()
            .0
            .get("webhook_signing_secret")
            .and_then(Value::as_str)
            .ok_or_else(not_found)?
            .to_string();
        let (Some(ts), Some(sig)) = (timestamp, signature) else {
            return Err(SourceError::BadSignature);
        };
        let now = self.inner.clock.now().micros().div_euclid(1_000_000);
        crate::integrations::signing::verify(&secret, ts, raw, sig, now, CALLBACK_MAX_SKEW_SECS)
            .map_err(|_| SourceError::BadSignature)?;
        if run.status != SyncRunStatus::Triggered {
            return Err(SourceError::Conflict(format!(
                "the run is {}; documents are accepted only while it is triggered",
                run.status.as_str()
            )));
        }
        let body: PushBody = serde_json::from_slice(raw)
            .map_err(|e| SourceError::Invalid(format!("invalid body: {e}")))?;
        if body.source.is_some() {
            return invalid("source must not be given on a run callback");
        }
        let payload = push_payload(&body)?;
        let mut queued = run.clone();
        queued.status = SyncRunStatus::Queued;
        queued.input_payload = Some(Json(payload));
        queued.finished_at = None;
        queued.updated_at = self.inner.clock.now();
        let job_id = format!("{SYNC_JOB_PREFIX}{run_id}-documents");
        queued.queue_job_id = Some(job_id.clone());
        let queued = store.update(queued).await?;
        self.enqueue(&queued, &job_id).await?;
        Ok(queued)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushes_are_bounded() {
        let body = |n: usize| PushBody {
            source: None,
            documents: vec![RawDocument::default(); n],
            options: None,
        };
        assert!(push_payload(&body(0)).is_err());
        assert!(push_payload(&body(250)).is_ok());
        assert!(
            push_payload(&body(251))
                .unwrap_err()
                .to_string()
                .contains("at most 250")
        );
    }
}
