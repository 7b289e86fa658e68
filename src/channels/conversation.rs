//! Conversation memory of the shared turn runner (§8.1): thread keys,
//! history from `conversation_logs`, and the inbound/outbound rows of one
//! exchange.
//!
//! A thread key is `${channel}:${userId}` or
//! `${channel}:${userId}:${segment}` where `segment` is the caller's thread
//! key, sanitized and cut to [`THREAD_SEGMENT_MAX_CHARS`]. `userId` is the
//! channel handle the caller arrived with (stable user id, email address,
//! Slack user id), not the resolved principal ref, so a conversation keeps
//! its history when the member's tier or ref is resolved later.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use storage::{
    Channel, ConversationLog, Direction, Json, RedbStore, Scan, StorageError, Store, Ts, key,
};
use uuid::Uuid;

use crate::ai::chat::ChatMessage;

/// How many earlier log rows of the thread are loaded as history (§8.1).
pub const HISTORY_LIMIT: usize = 20;
/// Longest thread-key segment (§8.1).
pub const THREAD_SEGMENT_MAX_CHARS: usize = 120;

/// The thread key of a conversation (§8.1).
///
/// Keys never collide: `userId` has `%` and `:` percent-encoded, so it
/// cannot smuggle a segment into another user's thread (`a:b` vs `a` +
/// segment `b`), and a segment that had to be changed to fit keeps a hash
/// of the original (see [`sanitize_segment`]).
pub fn thread_key(channel: Channel, user_id: &str, segment: Option<&str>) -> String {
    thread_key_in(channel.as_str(), user_id, segment)
}

/// [`thread_key`] under `namespace` instead of a channel name (the
/// dashboard's `/chat` uses `dashboard`, apart from the web test chat's
/// `web`). Every key starts with `namespace:`, so no segment reaches another
/// namespace's threads.
pub fn thread_key_in(namespace: &str, user_id: &str, segment: Option<&str>) -> String {
    let user = user_id.replace('%', "%25").replace(':', "%3A");
    let base = format!("{namespace}:{user}");
    // A key this function returned, sent back to continue: the same key
    // (never nested one level deeper per turn).
    let segment = segment.map(str::trim).map(|s| {
        if s == base {
            ""
        } else {
            s.strip_prefix(base.as_str())
                .and_then(|rest| rest.strip_prefix(':'))
                .unwrap_or(s)
        }
    });
    match segment.map(sanitize_segment).filter(|s| !s.is_empty()) {
        Some(s) => format!("{base}:{s}"),
        None => base,
    }
}

/// Characters a thread-key segment keeps as they are.
fn segment_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '@' | '-')
}

/// Hex digits of the SHA-256 tag a rewritten segment ends with.
const SEGMENT_HASH_HEX: usize = 16;

/// A caller-supplied thread key as a key segment of at most
/// [`THREAD_SEGMENT_MAX_CHARS`] characters. Surrounding space is dropped; a
/// segment made only of `[A-Za-z0-9._:@-]` that fits is kept as it is
/// (Slack `thread_ts` values, UUIDs). Anything else is rewritten — other
/// characters become `-`, the text is cut — and ends in `~` plus 16 hex
/// digits of the SHA-256 of the original, so two different thread keys
/// never share a conversation (`~` never appears in a kept segment).
pub fn sanitize_segment(raw: &str) -> String {
    let raw = raw.trim();
    if raw.chars().count() <= THREAD_SEGMENT_MAX_CHARS && raw.chars().all(segment_char) {
        return raw.to_string();
    }
    let digest = hex::encode(Sha256::digest(raw.as_bytes()));
    let mut s: String = raw
        .chars()
        .map(|c| if segment_char(c) { c } else { '-' })
        .take(THREAD_SEGMENT_MAX_CHARS - 1 - SEGMENT_HASH_HEX)
        .collect();
    s.push('~');
    s.push_str(&digest[..SEGMENT_HASH_HEX]);
    s
}

/// The last [`HISTORY_LIMIT`] messages of `thread_key`, oldest first, as
/// chat messages (inbound → user, outbound → assistant). Rows without text
/// are skipped.
pub async fn load_history(
    store: &RedbStore,
    tenant: Uuid,
    thread_key: &str,
) -> Result<Vec<ChatMessage>, StorageError> {
    let mut rows: Vec<ConversationLog> = store
        .scan(
            Some(tenant),
            Scan::index(ConversationLog::THREAD_KEY_IDX, key().str(thread_key))
                .desc()
                .limit(HISTORY_LIMIT),
        )
        .await?;
    rows.reverse();
    Ok(rows
        .into_iter()
        .filter_map(|r| {
            let text = r.message_text.filter(|t| !t.trim().is_empty())?;
            Some(match r.direction {
                Direction::Inbound => ChatMessage::user(text),
                Direction::Outbound => ChatMessage::assistant(text),
            })
        })
        .collect())
}

/// One exchange (an inbound message and the reply to it).
#[derive(Clone, Debug)]
pub struct Exchange {
    /// Tenant.
    pub tenant_id: Uuid,
    /// The UUID `exchangeKey` (§8.1).
    pub exchange_key: String,
    /// Log channel.
    pub channel: Channel,
    /// Derived thread key.
    pub thread_key: String,
    /// `principals.id`, when the sender has a row.
    pub principal_id: Option<Uuid>,
    /// The principal ref (`member_id` column).
    pub member_ref: String,
    /// Slack sender.
    pub slack_user_id: Option<String>,
    /// Slack conversation.
    pub slack_channel_id: Option<String>,
    /// Email sender.
    pub from_email: Option<String>,
    /// The inbound message's own id (email `Message-ID`).
    pub external_message_id: Option<String>,
}

impl Exchange {
    /// A new exchange with a fresh UUID key.
    pub fn new(tenant_id: Uuid, channel: Channel, thread_key: String, member_ref: String) -> Self {
        Exchange {
            tenant_id,
            exchange_key: Uuid::new_v4().to_string(),
            channel,
            thread_key,
            principal_id: None,
            member_ref,
            slack_user_id: None,
            slack_channel_id: None,
            from_email: None,
            external_message_id: None,
        }
    }

    /// The `${exchangeKey}:in` / `:out` dedupe key.
    pub fn dedupe_key(&self, direction: Direction) -> String {
        match direction {
            Direction::Inbound => format!("{}:in", self.exchange_key),
            Direction::Outbound => format!("{}:out", self.exchange_key),
        }
    }

    /// The log row of one side of the exchange.
    pub fn row(
        &self,
        direction: Direction,
        text: &str,
        at: Ts,
        metadata: Value,
    ) -> ConversationLog {
        ConversationLog {
            id: Uuid::new_v4(),
            tenant_id: self.tenant_id,
            principal_id: self.principal_id,
            dedupe_key: Some(self.dedupe_key(direction)),
            exchange_key: Some(self.exchange_key.clone()),
            member_id: Some(self.member_ref.clone()),
            channel: self.channel,
            direction,
            source: "runtime".into(),
            status: "recorded".into(),
            message_text: Some(text.to_string()),
            message_at: at,
            thread_key: Some(self.thread_key.clone()),
            slack_user_id: self.slack_user_id.clone(),
            slack_channel_id: self.slack_channel_id.clone(),
            from_email: self.from_email.clone(),
            external_message_id: match direction {
                Direction::Inbound => self.external_message_id.clone(),
                Direction::Outbound => None,
            },
            metadata: Json(if metadata.is_object() {
                metadata
            } else {
                json!({})
            }),
            created_at: at,
            ..ConversationLog::default()
        }
    }

    /// Log one side durably. A row with this dedupe key already written
    /// (a retried delivery) is kept as it is and returned.
    pub async fn log(
        &self,
        store: &RedbStore,
        direction: Direction,
        text: &str,
        at: Ts,
        metadata: Value,
    ) -> Result<ConversationLog, StorageError> {
        let row = self.row(direction, text, at, metadata);
        match store.insert(row).await {
            Ok(row) => Ok(row),
            Err(StorageError::Conflict { .. }) => store
                .find_unique(
                    Some(self.tenant_id),
                    ConversationLog::DEDUPE_KEY,
                    key().str(&self.dedupe_key(direction)),
                )
                .await?
                .ok_or(StorageError::Conflict {
                    constraint: ConversationLog::DEDUPE_KEY,
                }),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_keys_follow_the_spec_format() {
        assert_eq!(
            thread_key(Channel::Web, "ada@example.org", None),
            "web:ada@example.org"
        );
        assert_eq!(thread_key(Channel::Api, "m-1", Some("")), "api:m-1");
        // A returned key sent back continues the same thread.
        let k = thread_key(Channel::Web, "ada@example.org", Some("t-1"));
        assert_eq!(thread_key(Channel::Web, "ada@example.org", Some(&k)), k);
        let base = thread_key(Channel::Web, "ada@example.org", None);
        assert_eq!(
            thread_key(Channel::Web, "ada@example.org", Some(&base)),
            base
        );
        // Another member's key is only a segment of one's own.
        assert_eq!(
            thread_key(Channel::Web, "eve@example.org", Some(&k)),
            "web:eve@example.org:web:ada@example.org:t-1"
        );
        assert_eq!(
            thread_key(Channel::Slack, "U1", Some(" 1700000000.000100 ")),
            "slack:U1:1700000000.000100"
        );
        let rewritten = thread_key(Channel::Slack, "U1", Some("  deal #42 / q3 "));
        assert!(
            rewritten.starts_with("slack:U1:deal--42---q3~"),
            "{rewritten}"
        );
        assert_eq!(rewritten.len(), "slack:U1:deal--42---q3~".len() + 16);
        let long = "x".repeat(500);
        let k = thread_key(Channel::Api, "m-1", Some(&long));
        assert_eq!(k.len(), "api:m-1:".len() + THREAD_SEGMENT_MAX_CHARS);
        let exact = "y".repeat(THREAD_SEGMENT_MAX_CHARS);
        assert_eq!(sanitize_segment(&exact), exact);
        assert_eq!(THREAD_SEGMENT_MAX_CHARS, 120);
        assert_eq!(HISTORY_LIMIT, 20);
    }

    /// L11: distinct (user, segment) pairs never share a thread.
    #[test]
    fn thread_keys_cannot_collide() {
        let keys = [
            thread_key(Channel::Api, "a:b", None),
            thread_key(Channel::Api, "a", Some("b")),
            thread_key(Channel::Api, "a%3Ab", None),
            thread_key(Channel::Api, "a", Some("deal #1")),
            thread_key(Channel::Api, "a", Some("deal-#1")),
            thread_key(Channel::Api, "a", Some("deal--1")),
            thread_key(Channel::Api, "a", Some(&format!("{}1", "x".repeat(200)))),
            thread_key(Channel::Api, "a", Some(&format!("{}2", "x".repeat(200)))),
            thread_key(Channel::Api, "a", Some(&"x".repeat(120))),
            thread_key(Channel::Api, "a", Some(&"x".repeat(121))),
        ];
        let distinct: std::collections::HashSet<&String> = keys.iter().collect();
        assert_eq!(distinct.len(), keys.len(), "{keys:#?}");
        assert_eq!(keys[0], "api:a%3Ab");
        assert_eq!(keys[1], "api:a:b");
        assert_eq!(keys[2], "api:a%253Ab");
        for k in &keys {
            let segment = k.splitn(3, ':').nth(2).unwrap_or("");
            assert!(segment.chars().count() <= THREAD_SEGMENT_MAX_CHARS, "{k}");
        }
    }

    #[test]
    fn dedupe_keys_are_exchange_in_and_out() {
        let x = Exchange::new(Uuid::nil(), Channel::Web, "web:a".into(), "a".into());
        assert!(Uuid::parse_str(&x.exchange_key).is_ok());
        assert_eq!(
            x.dedupe_key(Direction::Inbound),
            format!("{}:in", x.exchange_key)
        );
        assert_eq!(
            x.dedupe_key(Direction::Outbound),
            format!("{}:out", x.exchange_key)
        );
    }
}
