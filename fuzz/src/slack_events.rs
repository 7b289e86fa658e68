//! Target `slack_events`: an Events API body (§8.2) read the way the
//! `/slack/events` routes read it after the signature verified — bytes →
//! [`Envelope`] → the inner event through [`MessageEvent::from_value`] —
//! then everything the channel asks of a message: DM / thread / mention
//! tests, the text without the bot's mention, the author's class, the
//! dedupe key and the ts as an instant, also for the nested
//! `message_changed` message.
//!
//! Invariants checked: only `message` / `app_mention` events come out; the
//! reply parent is the thread's ts, else the message's; a literal
//! `<@BOT>` is a mention; stripping a mention never lengthens the text and
//! leaves it trimmed; the author class agrees with the fields it reads.

use root::slack::events::{
    Author, Envelope, MessageEvent, author, is_conversational_subtype, ts_instant,
};

/// Bot id used when the envelope names none (the channel then asks
/// `auth.test`).
const FALLBACK_BOT: &str = "UBOT";

/// Parse one delivery body and exercise its message.
pub fn run(data: &[u8]) {
    let Ok(envelope) = serde_json::from_slice::<Envelope>(data) else {
        return;
    };
    let bot = envelope.bot_user_id().map(str::to_string);
    let Some(event) = envelope.event.as_ref().and_then(MessageEvent::from_value) else {
        return;
    };
    assert!(
        event.kind == "message" || event.kind == "app_mention",
        "{:?} is not a message",
        event.kind
    );
    check(&event, bot.as_deref());
}

fn check(event: &MessageEvent, bot: Option<&str>) {
    assert_eq!(
        event.reply_parent_ts(),
        event.thread_ts.as_deref().unwrap_or(&event.ts)
    );
    assert_eq!(
        event.is_thread_reply(),
        event.thread_ts.as_deref().is_some_and(|t| t != event.ts)
    );
    let _ = event.is_dm();
    for id in [bot.unwrap_or(FALLBACK_BOT), ""] {
        if event.text.contains(&format!("<@{id}>")) {
            assert!(event.mentions(id), "a literal <@{id}> is a mention");
        }
        let stripped = event.text_without_mention(id);
        assert!(stripped.len() <= event.text.len());
        assert_eq!(stripped, stripped.trim());
    }
    match author(event, bot) {
        Author::OwnBot => assert_eq!(event.user.as_deref(), bot),
        Author::Human(u) => {
            assert_eq!(event.user.as_deref(), Some(u.as_str()));
            assert!(event.bot_id.is_none() && event.app_id.is_none());
            assert_ne!(event.subtype.as_deref(), Some("bot_message"));
        }
        Author::AppWithUser(u) => {
            assert_eq!(event.user.as_deref(), Some(u.as_str()));
            assert!(event.bot_id.is_some() || event.app_id.is_some());
        }
        Author::Bot => assert!(
            event.user.is_none() || event.subtype.as_deref() == Some("bot_message"),
            "{event:?}"
        ),
    }
    assert_eq!(
        event.dedupe_suffix(),
        format!("{}_{}", event.channel, event.ts)
    );
    let _ = is_conversational_subtype(event.subtype.as_deref());
    let _ = ts_instant(&event.ts);
    if let Some(t) = &event.thread_ts {
        let _ = ts_instant(t);
    }
    if let Some(d) = &event.deleted_ts {
        let _ = ts_instant(d);
    }
    if let Some(inner) = &event.message {
        check(inner, bot);
    }
}
