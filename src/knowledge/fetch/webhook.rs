//! The `webhook` kind (§11.1): POST a `knowledge.sync.requested` event to
//! the tenant, signed exactly as integration calls are (§7.1, keyed with
//! `secrets.webhook_signing_secret`), telling it where to push the
//! documents ([`Fetcher::callback_url`]). The tenant usually answers
//! 202/204 and pushes later (the run ends `triggered`); a tenant that has
//! the documents at hand may answer them inline as `{"documents": [...]}`.
//!
//! The event is signed with the same code as every other platform →
//! tenant request, so a backend verifies all of them with one routine.

use reqwest::header::CONTENT_TYPE;
use serde_json::{Value, json};
use storage::{KnowledgeSource, Ts};

use super::{
    FetchError, FetchOutcome, Fetched, Fetcher, MAX_API_BYTES, MAX_DOCUMENTS_PER_RUN, RawDocument,
    RunRef, read_body, secret, send, source_url, status_error,
};
use crate::integrations::signing::{self, SIGNATURE_HEADER, TIMESTAMP_HEADER};
use crate::outbound::body::parse_sized;

/// The event's `type`.
pub const EVENT_TYPE: &str = "knowledge.sync.requested";

/// The event body: who asks (run, tenant, source), where to push, when.
pub(super) fn event(
    source: &KnowledgeSource,
    run: &RunRef,
    callback_url: &str,
    requested_at: Ts,
) -> Value {
    json!({
        "type": EVENT_TYPE,
        "run_id": run.run_id,
        "tenant_id": run.tenant_id,
        "source": {
            "id": source.id,
            "key": source.source_key,
            "name": source.name,
        },
        "callback": { "url": callback_url, "method": "POST" },
        "requested_at": requested_at.to_string(),
    })
}

/// Trigger a `webhook` source.
pub(super) async fn fetch(
    f: &Fetcher,
    source: &KnowledgeSource,
    run: &RunRef,
) -> Result<FetchOutcome, FetchError> {
    let url = source_url(source)?;
    let signing_secret = secret(source, "webhook_signing_secret")
        .ok_or_else(|| FetchError::new("webhook sources need secrets.webhook_signing_secret"))?;
    let now = f.clock.now();
    let body = event(source, run, &f.callback_url(run), now)
        .to_string()
        .into_bytes();
    let timestamp = signing::unix_secs(now);
    let signature = signing::sign(signing_secret, timestamp, &body);
    let req = f
        .request(reqwest::Method::POST, url)?
        .header(CONTENT_TYPE, "application/json")
        .header(TIMESTAMP_HEADER, timestamp.to_string())
        .header(SIGNATURE_HEADER, signature)
        .body(body);
    let deadline = f.deadline();
    let resp = f.within(deadline, send(req)).await?;
    if !resp.status().is_success() {
        return Err(status_error(&resp));
    }
    let status = resp.status().as_u16();
    let answer = f
        .within(deadline, read_body(resp, MAX_API_BYTES))
        .await
        .map_err(|e| e.with_status(status))?;
    parse_sized(answer.len(), move || interpret(status, &answer))
        .await
        .map_err(|e| {
            FetchError::new(format!("the webhook's answer could not be parsed ({e})"))
                .with_status(status)
        })?
}

/// What a 2xx answer means: 202, 204 or an empty body → triggered; a JSON
/// object with a `documents` array → those documents (each must be a
/// [`RawDocument`]); anything else → triggered (the tenant acknowledged in
/// its own words).
pub(super) fn interpret(status: u16, answer: &[u8]) -> Result<FetchOutcome, FetchError> {
    let triggered = Ok(FetchOutcome::Triggered {
        http_status: status,
    });
    if status == 202 || status == 204 || answer.iter().all(u8::is_ascii_whitespace) {
        return triggered;
    }
    let Ok(Value::Object(mut object)) = serde_json::from_slice::<Value>(answer) else {
        return triggered;
    };
    let Some(Value::Array(items)) = object.remove("documents") else {
        return triggered;
    };
    let documents_total = items.len();
    if documents_total == 0 {
        return Err(FetchError::new("the webhook answered with zero documents").with_status(status));
    }
    let documents = items
        .into_iter()
        .take(MAX_DOCUMENTS_PER_RUN)
        .enumerate()
        .map(|(i, item)| {
            serde_json::from_value::<RawDocument>(item).map_err(|e| {
                FetchError::new(format!(
                    "the webhook's documents[{i}] is not a document: {e}"
                ))
                .with_status(status)
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(FetchOutcome::Documents(Fetched {
        documents,
        documents_total,
        http_status: Some(status),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn triggered(status: u16) -> Result<FetchOutcome, FetchError> {
        Ok(FetchOutcome::Triggered {
            http_status: status,
        })
    }

    #[test]
    fn acknowledgements_trigger() {
        assert_eq!(
            interpret(202, br#"{"documents":[{"title":"x"}]}"#),
            triggered(202)
        );
        assert_eq!(interpret(204, b""), triggered(204));
        assert_eq!(interpret(200, b""), triggered(200));
        assert_eq!(interpret(200, b" \n"), triggered(200));
        assert_eq!(interpret(200, b"ok"), triggered(200));
        assert_eq!(interpret(200, br#"{"status":"queued"}"#), triggered(200));
        assert_eq!(interpret(200, br#"{"documents":"later"}"#), triggered(200));
    }

    #[test]
    fn inline_documents_are_read_and_checked() {
        let Ok(FetchOutcome::Documents(f)) = interpret(
            200,
            br#"{"documents":[{"external_id":"a","title":"A","content_text":"alpha"}]}"#,
        ) else {
            panic!("documents expected");
        };
        assert_eq!(f.documents_total, 1);
        assert_eq!(f.documents[0].external_id.as_deref(), Some("a"));
        assert_eq!(f.http_status, Some(200));
        let e = interpret(200, br#"{"documents":[{"title":"A"},{"titel":"B"}]}"#).unwrap_err();
        assert!(
            e.message
                .starts_with("the webhook's documents[1] is not a document: unknown field `titel`"),
            "{}",
            e.message
        );
        assert_eq!(e.http_status, Some(200));
        let e = interpret(200, br#"{"documents":[]}"#).unwrap_err();
        assert_eq!(e.message, "the webhook answered with zero documents");
    }
}
