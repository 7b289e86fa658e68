//! Events API payloads (§8.2): the outer envelope (`url_verification` or
//! `event_callback`) and the inner message / `app_mention` event, parsed
//! leniently — unknown fields are ignored and every field Root does not
//! need is optional, because Slack's payloads vary by event, subtype and
//! app configuration (see `tests/fixtures/slack/events/`).

use serde::Deserialize;
use serde_json::Value;
use storage::Ts;

/// The outer body Slack POSTs.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Envelope {
    /// `url_verification` | `event_callback` | `app_rate_limited` | ….
    #[serde(rename = "type", default)]
    pub kind: String,
    /// `url_verification` only.
    #[serde(default)]
    pub challenge: Option<String>,
    /// The workspace.
    #[serde(default)]
    pub team_id: Option<String>,
    /// The app.
    #[serde(default)]
    pub api_app_id: Option<String>,
    /// Slack's id of this delivery.
    #[serde(default)]
    pub event_id: Option<String>,
    /// Who the app is in this workspace (`user_id` = the bot user).
    #[serde(default)]
    pub authorizations: Vec<Authorization>,
    /// Older payloads: users the event is visible to (not the bot id).
    #[serde(default)]
    pub authed_users: Vec<String>,
    /// The inner event.
    #[serde(default)]
    pub event: Option<Value>,
}

impl Envelope {
    /// The bot user id this delivery is for: `authorizations[0].user_id`.
    /// Legacy payloads' `authed_users` lists who may see the event, not the
    /// bot (bolt-python's plain channel fixture names the human author
    /// there), so without `authorizations` the caller asks `auth.test`.
    pub fn bot_user_id(&self) -> Option<&str> {
        self.authorizations
            .first()
            .and_then(|a| a.user_id.as_deref())
    }
}

/// One `authorizations[]` entry.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Authorization {
    /// The installation's bot user.
    #[serde(default)]
    pub user_id: Option<String>,
    /// Whether it is a bot authorization.
    #[serde(default)]
    pub is_bot: Option<bool>,
}

/// A `message` or `app_mention` event.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct MessageEvent {
    /// `message` | `app_mention`.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// `bot_message`, `file_share`, `message_changed`, ….
    #[serde(default)]
    pub subtype: Option<String>,
    /// The author (absent on classic bot messages).
    #[serde(default)]
    pub user: Option<String>,
    /// Set when an app posted it.
    #[serde(default)]
    pub bot_id: Option<String>,
    /// Set when an app posted it.
    #[serde(default)]
    pub app_id: Option<String>,
    /// The text (mrkdwn as typed).
    #[serde(default)]
    pub text: String,
    /// The message's ts (its id within the channel).
    #[serde(default)]
    pub ts: String,
    /// The thread's parent ts (a reply when it differs from `ts`).
    #[serde(default)]
    pub thread_ts: Option<String>,
    /// The conversation.
    #[serde(default)]
    pub channel: String,
    /// `im` | `channel` | `group` | `mpim` (absent on `app_mention`).
    #[serde(default)]
    pub channel_type: Option<String>,
    /// Shared files.
    #[serde(default)]
    pub files: Vec<Value>,
    /// `message_changed`: the message after the edit.
    #[serde(default)]
    pub message: Option<Box<MessageEvent>>,
    /// `message_deleted`: the deleted message's ts.
    #[serde(default)]
    pub deleted_ts: Option<String>,
}

impl MessageEvent {
    /// Parse an inner event; `None` for events that are not messages.
    pub fn from_value(v: &Value) -> Option<MessageEvent> {
        let kind = v["type"].as_str()?;
        if kind != "message" && kind != "app_mention" {
            return None;
        }
        serde_json::from_value(v.clone()).ok()
    }

    /// A direct message (`D…` conversation or `channel_type: im`).
    pub fn is_dm(&self) -> bool {
        self.channel_type.as_deref() == Some("im")
            || (self.channel_type.is_none() && self.channel.starts_with('D'))
    }

    /// A reply inside a thread (not the parent).
    pub fn is_thread_reply(&self) -> bool {
        self.thread_ts.as_deref().is_some_and(|t| t != self.ts)
    }

    /// The ts replies go under: the thread's parent, else this message.
    pub fn reply_parent_ts(&self) -> &str {
        self.thread_ts.as_deref().unwrap_or(&self.ts)
    }

    /// Does the text @-mention `bot_user_id`?
    pub fn mentions(&self, bot_user_id: &str) -> bool {
        self.kind == "app_mention"
            || self.text.contains(&format!("<@{bot_user_id}>"))
            || self.text.contains(&format!("<@{bot_user_id}|"))
    }

    /// The text without the bot's own @-mention(s).
    pub fn text_without_mention(&self, bot_user_id: &str) -> String {
        let mut out = self.text.replace(&format!("<@{bot_user_id}>"), "");
        let prefix = format!("<@{bot_user_id}|");
        while let Some(i) = out.find(&prefix) {
            match out[i..].find('>') {
                Some(j) => out.replace_range(i..i + j + 1, ""),
                None => break,
            }
        }
        out.trim().to_string()
    }

    /// The dedupe key of §8.2: `{tenantId}:{channel}_{ts}` (the tenant part
    /// is added by the caller). The `app_mention` and `message` deliveries
    /// of one @-mention share it.
    pub fn dedupe_suffix(&self) -> String {
        format!("{}_{}", self.channel, self.ts)
    }
}

/// What kind of author a message has, before `users.info` is asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Author {
    /// A person typed it.
    Human(String),
    /// Our own bot posted it.
    OwnBot,
    /// An app posted it on behalf of `user`: a human only if `users.info`
    /// says `user` is neither a bot nor an app user (app-relayed human).
    AppWithUser(String),
    /// A bot with no user (classic `bot_message`), or no author at all.
    Bot,
}

/// Classify the author of `m` for a workspace whose bot user is `bot_user_id`.
pub fn author(m: &MessageEvent, bot_user_id: Option<&str>) -> Author {
    match (&m.user, m.bot_id.is_some() || m.app_id.is_some()) {
        (Some(u), _) if Some(u.as_str()) == bot_user_id => Author::OwnBot,
        _ if m.subtype.as_deref() == Some("bot_message") => Author::Bot,
        (Some(u), true) => Author::AppWithUser(u.clone()),
        (Some(u), false) => Author::Human(u.clone()),
        (None, _) => Author::Bot,
    }
}

/// Subtypes that are ordinary messages for replies and ingest (§8.2:
/// "ignore most subtypes (allow file_share)"); `thread_broadcast` is a
/// thread reply also shown in the channel.
pub fn is_conversational_subtype(subtype: Option<&str>) -> bool {
    matches!(
        subtype,
        None | Some("file_share") | Some("thread_broadcast")
    )
}

/// `1664408649.009629` → that instant (a ts is seconds.microseconds).
pub fn ts_instant(ts: &str) -> Option<Ts> {
    let (secs, frac) = ts.split_once('.').unwrap_or((ts, "0"));
    let secs: i64 = secs.parse().ok()?;
    let frac = format!("{frac:0<6}");
    let micros: i64 = frac.get(..6)?.parse().ok()?;
    Some(Ts(secs.checked_mul(1_000_000)?.checked_add(micros)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/slack/events");

    fn load(name: &str) -> (Envelope, Option<MessageEvent>) {
        let raw = std::fs::read_to_string(format!("{EVENTS}/{name}")).unwrap();
        let env: Envelope = serde_json::from_str(&raw).unwrap();
        let msg = env.event.as_ref().and_then(MessageEvent::from_value);
        (env, msg)
    }

    #[test]
    fn every_fixture_parses() {
        for entry in std::fs::read_dir(EVENTS).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if !name.ends_with(".json") || name.starts_with('_') {
                continue;
            }
            let (env, _) = load(&name);
            assert!(!env.kind.is_empty(), "{name}");
        }
    }

    #[test]
    fn authors_are_classified_like_the_fixtures_say() {
        let cases = [
            ("message_im.slack-web.json", "human"),
            ("message_channel_plain.bolt-python.json", "human"),
            ("message_subtype_bot_message.slack-web.json", "bot"),
            ("message_subtype_bot_message.bolt-python.json", "bot"),
            ("message_from_other_app.slack-web-circleci.json", "app"),
            ("message_from_own_bot_in_thread.slack-web.json", "own"),
            ("message_from_other_app.bolt-python.json", "own"),
        ];
        for (name, want) in cases {
            let (env, msg) = load(name);
            let msg = msg.unwrap();
            let got = match author(&msg, env.bot_user_id()) {
                Author::Human(_) => "human",
                Author::OwnBot => "own",
                Author::AppWithUser(_) => "app",
                Author::Bot => "bot",
            };
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn dms_threads_and_mentions() {
        let (_, dm) = load("message_im.slack-web.json");
        let dm = dm.unwrap();
        assert!(dm.is_dm());
        assert!(!dm.is_thread_reply());
        let (_, reply) = load("message_channel_thread_reply.bolt-python.json");
        let reply = reply.unwrap();
        assert!(!reply.is_dm());
        assert!(reply.is_thread_reply());
        assert_eq!(reply.reply_parent_ts(), reply.thread_ts.as_deref().unwrap());
        let (env, mention) = load("app_mention.slack-docs.json");
        let mention = mention.unwrap();
        let bot = env.bot_user_id().unwrap_or("U0LAN0Z89");
        assert!(mention.mentions(bot));
        let m = MessageEvent {
            text: "<@UBOT> where is the <@UBOT|root> doc?".into(),
            ..Default::default()
        };
        assert!(m.mentions("UBOT"));
        assert_eq!(m.text_without_mention("UBOT"), "where is the  doc?");
        assert!(!m.mentions("UOTHER"));
    }

    #[test]
    fn subtypes_that_count_as_messages() {
        assert!(is_conversational_subtype(None));
        assert!(is_conversational_subtype(Some("file_share")));
        assert!(is_conversational_subtype(Some("thread_broadcast")));
        for s in [
            "bot_message",
            "message_changed",
            "message_deleted",
            "channel_join",
        ] {
            assert!(!is_conversational_subtype(Some(s)), "{s}");
        }
    }
}
