//! The Slack channel (§8.2): what Root does with a verified Events API
//! delivery. The web route (`web::slack`) verifies the signature, claims the
//! dedupe key and acks; [`SlackChannel::handle`] then runs on its own task in
//! the tenant's scope:
//!
//! 1. Authors: our own posts, bot posts and non-conversational subtypes are
//!    ignored; an app's post carrying a `user` that `users.info` calls a
//!    human is that human's message (app-relayed humans).
//! 2. Reply policy ([`reply_decision`]): DMs always (thread replies in a DM
//!    only where Root already took part); in channels only when @-mentioned.
//! 3. DMs first pass the intent gate (`intent`): a nicety gets the gate's
//!    one-line reply verbatim and no tool runs.
//! 4. A "working…" status line is posted where the answer will go and
//!    updated with tools' progress; the answer's first message replaces it.
//! 5. The turn: `run_channel_turn` with the Slack identity, thread history
//!    from `conversations.replies` (with link unfurls and stored file
//!    summaries, `enrich`), the message's own files summarised (bounded,
//!    best effort), then delivery as mrkdwn Block Kit
//!    messages threaded on the parent ts. A failed turn still answers (the
//!    retryable failure text), never silence.
//!
//! Independently of replies, public-channel human messages go to the
//! Slack index (`ingest`), edits re-index and deletions withdraw.

mod delivery;
pub mod distill;
pub mod enrich;
pub mod ingest;
pub mod intent;
pub mod proactive;
pub mod review;

pub use delivery::PROGRESS_BUFFER;
use delivery::forward_progress;

use std::sync::Arc;
use std::time::Duration;

use storage::{Channel, Principal, Store, Tenant, key};
use tokio::sync::mpsc;
use tokio_util::task::TaskTracker;
use uuid::Uuid;

use super::conversation;
use super::turn::{TurnError, TurnRequest, TurnServices, run_channel_turn};
use crate::ai::chat::ChatMessage;
use crate::config::Config;
use crate::platform::replay::ReplayCache;
use crate::platform::tenancy::{self, TenantContext};
use crate::queue::Queues;
use crate::retrieval::Retrieval;
use crate::slack::events::{Author, Envelope, MessageEvent, author, is_conversational_subtype};
use crate::slack::{OutgoingMessage, SlackApi, SlackCredentials, SlackError, Workspaces};

/// How long Slack user and channel names are cached.
pub const NAME_TTL: Duration = Duration::from_secs(3600);
/// How long a claimed `{tenant}:{channel}_{ts}` key blocks repeats (§8.2).
pub const DEDUPE_TTL: Duration = Duration::from_secs(30 * 60);
/// Dedupe keys held at most (bounded memory under a flood).
pub const DEDUPE_CAPACITY: u64 = 200_000;
/// Thread messages before the current one given to the model as history.
pub const THREAD_HISTORY_MESSAGES: usize = 20;
/// The placeholder posted while a turn runs (§8.2 "Root is working"); it
/// becomes the answer's first message.
pub const WORKING_TEXT: &str = "_Working on it…_";
/// Progress lines update the placeholder at most this often.
pub const PROGRESS_MIN_INTERVAL: Duration = Duration::from_millis(1500);
/// What a member sees when the turn itself failed (never silence).
pub const TURN_FAILED_REPLY: &str =
    "Sorry — something went wrong while I was working on that. Please try again in a moment.";

/// Where a top-level DM's answer goes (§5.1 `set_dm_reply_style`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DmReplyStyle {
    /// In the DM itself.
    Direct,
    /// In a thread under the member's message.
    Thread,
}

/// Whether to answer a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyDecision {
    /// Answer it.
    Reply,
    /// Not addressed to Root (no reply; ingest still applies elsewhere).
    Skip(&'static str),
}

/// The §8.2 reply policy for a human message. `participated` = Root has
/// a message in this thread (only asked for thread replies).
pub fn reply_decision(m: &MessageEvent, mentioned: bool, participated: bool) -> ReplyDecision {
    if m.is_dm() {
        if m.is_thread_reply() && !participated {
            return ReplyDecision::Skip("dm thread without Root");
        }
        return ReplyDecision::Reply;
    }
    if mentioned {
        ReplyDecision::Reply
    } else {
        ReplyDecision::Skip("channel message without a mention")
    }
}

/// The Slack channel service. Cheap to clone: one `Arc` (every event's
/// task takes a clone).
#[derive(Clone)]
pub struct SlackChannel(Arc<SlackChannelInner>);

impl std::ops::Deref for SlackChannel {
    type Target = SlackChannelInner;
    fn deref(&self) -> &SlackChannelInner {
        &self.0
    }
}

/// The services of [`SlackChannel`].
pub struct SlackChannelInner {
    turns: TurnServices,
    queues: Queues,
    retrieval: Retrieval,
    config: Arc<Config>,
    names: moka::sync::Cache<(Uuid, String), String>,
    dedupe: ReplayCache,
    workspaces: Workspaces,
    tasks: TaskTracker,
}

impl SlackChannel {
    /// The channel over the turn services and `SLACK_API_BASE_URL`.
    pub fn new(
        turns: TurnServices,
        queues: Queues,
        retrieval: Retrieval,
        config: Arc<Config>,
        workspaces: Workspaces,
    ) -> SlackChannel {
        SlackChannel(Arc::new(SlackChannelInner {
            turns,
            queues,
            retrieval,
            names: moka::sync::Cache::builder()
                .max_capacity(100_000)
                .time_to_live(NAME_TTL)
                .build(),
            dedupe: ReplayCache::new(DEDUPE_TTL, DEDUPE_CAPACITY),
            config,
            workspaces,
            tasks: TaskTracker::new(),
        }))
    }

    /// Run [`SlackChannel::handle`] on its own task in `tenant`'s scope,
    /// tracked so shutdown lets in-flight replies finish.
    pub fn spawn_handle(
        &self,
        tenant: Arc<Tenant>,
        creds: SlackCredentials,
        envelope: Envelope,
        event: MessageEvent,
    ) {
        let this = self.clone();
        let ctx = TenantContext {
            tenant: tenant.clone(),
        };
        self.tasks.spawn(tenancy::scope(ctx, async move {
            this.handle(tenant, creds, envelope, event).await;
        }));
    }

    /// Wait for every spawned event task to finish (shutdown).
    pub async fn idle(&self) {
        self.tasks.close();
        self.tasks.wait().await;
        self.tasks.reopen();
    }

    /// Now, on the app's clock.
    pub fn now(&self) -> storage::Ts {
        self.turns.tools.clock.now()
    }

    /// The client of the tenant in scope, `None` when it has no Slack
    /// credentials (jobs run in the tenant's scope).
    pub async fn current_api(&self) -> Result<Option<SlackApi>, anyhow::Error> {
        self.workspaces.current().await
    }

    /// A member's display name (`users.info`, cached an hour), best effort.
    pub async fn user_name(&self, api: &SlackApi, user: &str) -> Option<String> {
        let tenant = tenancy::current_tenant_id().ok()?;
        let key = (tenant, format!("u:{user}"));
        if let Some(n) = self.names.get(&key) {
            return Some(n);
        }
        let name = api.users_info(user).await.ok()?.display_name()?;
        self.names.insert(key, name.clone());
        Some(name)
    }

    /// A channel's name (`conversations.info`, cached an hour), best effort.
    pub async fn channel_name(&self, api: &SlackApi, channel: &str) -> Option<String> {
        let tenant = tenancy::current_tenant_id().ok()?;
        let key = (tenant, format!("c:{channel}"));
        if let Some(n) = self.names.get(&key) {
            return Some(n);
        }
        let name = api.channel_name(channel).await.ok()??;
        self.names.insert(key, name.clone());
        Some(name)
    }

    /// Claim a delivery's dedupe key (§8.2: before any await). `false` for
    /// a repeat — a Slack retry or the second of an `app_mention` +
    /// `message` pair — which is acked and dropped.
    pub fn claim(&self, tenant: Uuid, event: &MessageEvent) -> bool {
        self.dedupe
            .first_seen(&format!("{tenant}:{}", event.dedupe_suffix()))
    }

    /// The cached client for `tenant` (rebuilt when its credentials change).
    pub fn api(&self, tenant: Uuid, creds: &SlackCredentials) -> SlackApi {
        self.workspaces.api(tenant, creds)
    }

    /// File summaries over this channel's model, store and clock.
    pub fn enricher(&self) -> enrich::Enricher {
        enrich::Enricher::new(
            self.turns.tools.llm.clone(),
            self.turns.store.clone(),
            self.turns.tools.clock.clone(),
        )
    }

    /// The workspaces service (per-tenant clients).
    pub fn workspaces(&self) -> &Workspaces {
        &self.workspaces
    }

    /// The bot's user id: the delivery's `authorizations[0].user_id`, else
    /// `auth.test` (cached with the client).
    async fn bot_user_id(
        &self,
        tenant: Uuid,
        creds: &SlackCredentials,
        envelope: &Envelope,
    ) -> Result<String, SlackError> {
        let api = self.api(tenant, creds);
        self.workspaces
            .bot_user_id(tenant, &api, envelope.bot_user_id())
            .await
    }

    /// Handle one verified, claimed message event for `tenant` (runs in
    /// the tenant's scope). Errors are logged here: the delivery was acked.
    pub async fn handle(
        &self,
        tenant: Arc<Tenant>,
        creds: SlackCredentials,
        envelope: Envelope,
        event: MessageEvent,
    ) {
        let channel = event.channel.clone();
        if let Err(e) = self.handle_inner(&tenant, &creds, &envelope, event).await {
            tracing::error!(tenant = %tenant.id, %channel, error = %e, "slack event not handled");
        }
    }

    async fn handle_inner(
        &self,
        tenant: &Tenant,
        creds: &SlackCredentials,
        envelope: &Envelope,
        event: MessageEvent,
    ) -> Result<(), SlackError> {
        let api = self.api(tenant.id, creds);
        match event.subtype.as_deref() {
            Some("message_deleted") => return self.withdraw(&event).await,
            Some("message_changed") => {
                let bot = self.bot_user_id(tenant.id, creds, envelope).await?;
                return self.reindex_edit(tenant.id, &api, &event, &bot).await;
            }
            s if !is_conversational_subtype(s) => {
                tracing::debug!(subtype = ?s, "slack subtype ignored");
                return Ok(());
            }
            _ => {}
        }
        let bot = self.bot_user_id(tenant.id, creds, envelope).await?;
        let user = match author(&event, Some(&bot)) {
            Author::Human(u) => u,
            Author::AppWithUser(u) => {
                // Another app relayed a person's message (Slack's "sent
                // using …"): theirs if Slack says they are a human.
                let who = api.users_info(&u).await?;
                if !who.is_human() {
                    tracing::debug!(user = %u, "app post by a non-human user ignored");
                    return Ok(());
                }
                u
            }
            Author::OwnBot | Author::Bot => return Ok(()),
        };
        // The ingest hook: independent of whether Root replies.
        if ingest::should_ingest(&event)
            && let Err(e) = ingest::enqueue(&self.queues, tenant.id, &event, &user, None).await
        {
            tracing::error!(tenant = %tenant.id, error = %e, "slack message not queued for ingest");
        }
        let mentioned = event.mentions(&bot);
        let thread = if event.is_thread_reply() {
            api.conversations_replies(&event.channel, event.reply_parent_ts())
                .await?
        } else {
            Vec::new()
        };
        let participated = thread
            .iter()
            .any(|m| m["user"].as_str() == Some(bot.as_str()));
        // Not addressed to Root: perhaps a proactive reply (its bar, or none).
        let proactive = match reply_decision(&event, mentioned, participated) {
            ReplyDecision::Reply => None,
            ReplyDecision::Skip(why) => match self.proactive_bar(tenant, &event, &user).await {
                Some(bar) => Some(bar),
                None => {
                    tracing::debug!(%user, channel = %event.channel, why, "no reply");
                    return Ok(());
                }
            },
        };
        if let Some(bar) = proactive {
            return self.proactive_reply(&api, &event, &user, &bot, bar).await;
        }
        let text = event.text_without_mention(&bot);
        if text.is_empty() && event.files.is_empty() {
            return Ok(());
        }
        let profile = api.users_info(&user).await.ok();
        let user_name = profile.as_ref().and_then(|p| p.display_name());
        let history = if event.is_thread_reply() {
            let files = self.enricher().for_thread(&event.channel, &thread).await;
            Some(thread_history(&thread, &event.ts, &bot, &files))
        } else {
            None
        };
        // Channels: always in the thread of the message; DMs: a reply to a
        // thread stays in it, a top-level DM is answered top-level unless the
        // member chose threaded DM replies (`set_dm_reply_style`).
        let thread_ts = if event.is_dm() && !event.is_thread_reply() {
            match self.dm_reply_style(tenant.id, &user).await {
                DmReplyStyle::Thread => Some(event.ts.clone()),
                DmReplyStyle::Direct => None,
            }
        } else {
            Some(event.reply_parent_ts().to_string())
        };
        // The DM intent gate: a nicety gets its one-line reply, no tools.
        // Skipped past the daily LLM budget (the loop refuses with its
        // member text and the admin notice).
        let within_budget = self
            .turns
            .limits
            .budget()
            .within(tenant.id, &self.turns.limits.limits_for(tenant))
            .await
            .unwrap_or(false);
        if event.is_dm() && !text.is_empty() && within_budget {
            let gate_history = match &history {
                Some(h) => h.clone(),
                None => {
                    let key =
                        conversation::thread_key(Channel::Slack, &user, Some(&thread_key(&event)));
                    conversation::load_history(&self.turns.store, tenant.id, &key)
                        .await
                        .unwrap_or_default()
                }
            };
            let first_name = user_name
                .as_deref()
                .and_then(|n| n.split_whitespace().next())
                .unwrap_or("there");
            if let Some(verdict) = intent::classify(
                &self.turns.tools.llm,
                &self.turns.prompts,
                first_name,
                &gate_history,
                &text,
            )
            .await
                && let Some(reply) = verdict.nicety()
            {
                tracing::info!(%user, "slack DM nicety answered by the intent gate");
                return self.deliver(&api, &event.channel, thread_ts, reply).await;
            }
        }
        // The "working…" line, updated by tools' progress, then replaced by
        // the answer. Without it (a failed post) the answer is posted anew.
        let status_ts = match api
            .post_message(&OutgoingMessage {
                channel: event.channel.clone(),
                text: WORKING_TEXT.into(),
                blocks: Vec::new(),
                thread_ts: thread_ts.clone(),
            })
            .await
        {
            Ok(ts) => Some(ts),
            Err(e) => {
                tracing::warn!(error = %e, "slack status line not posted");
                None
            }
        };
        let (progress_tx, progress_rx) = mpsc::channel::<String>(PROGRESS_BUFFER);
        let updater = status_ts.clone().map(|ts| {
            tokio::spawn(forward_progress(
                api.clone(),
                event.channel.clone(),
                ts,
                progress_rx,
            ))
        });
        // The message's own files, summarised before the turn (bounded).
        let shared = self.enricher().for_turn(&api, &event).await;
        let asked = enrich::turn_message(&text, &shared);
        let req = TurnRequest {
            channel: Some(Channel::Slack),
            message: asked.clone(),
            slack_user_id: Some(user.clone()),
            user_name,
            slack_channel_id: Some(event.channel.clone()),
            thread_key: Some(thread_key(&event)),
            history,
            slack_thread_ts: Some(event.reply_parent_ts().to_string()),
            progress: Some(progress_tx),
            ..TurnRequest::default()
        };
        let (reply, images) = match run_channel_turn(&self.turns, req).await {
            Ok(outcome) if outcome.success => {
                // A.6: scored, repaired when LOW, unsupported claims cut.
                let (reply, review) = review::review_reply(
                    &self.turns.tools.llm,
                    &self.turns.prompts,
                    &asked,
                    &outcome.reply,
                    &outcome.tool_calls,
                )
                .await;
                tracing::info!(%user, ?review, "slack reply reviewed");
                (reply, outcome.images)
            }
            Ok(outcome) => (outcome.reply, outcome.images),
            Err(TurnError::Refused(r)) => (r.member_text(), Vec::new()),
            Err(e) => {
                tracing::error!(tenant = %tenant.id, error = %e, "slack turn failed");
                (TURN_FAILED_REPLY.to_string(), Vec::new())
            }
        };
        // Every progress sender is gone with the turn: the updater ends.
        if let Some(u) = updater {
            let _ = u.await;
        }
        match &status_ts {
            Some(ts) => {
                self.deliver_into(&api, &event.channel, ts, thread_ts.clone(), &reply)
                    .await?
            }
            None => {
                self.deliver(&api, &event.channel, thread_ts.clone(), &reply)
                    .await?
            }
        }
        if !images.is_empty() {
            self.upload_images(&api, &event.channel, thread_ts.as_deref(), &images)
                .await;
        }
        Ok(())
    }

    /// One of the member's stored preferences (`principals.preferences`).
    async fn member_preference(&self, tenant: Uuid, user: &str, field: &str) -> Option<String> {
        let row: Option<Principal> = self
            .turns
            .store
            .find_unique(Some(tenant), Principal::SLACK_USER_KEY, key().str(user))
            .await
            .ok()
            .flatten();
        row.and_then(|p| p.preferences.0[field].as_str().map(str::to_string))
    }

    /// The member's `set_dm_reply_style` choice, `direct` when unset.
    async fn dm_reply_style(&self, tenant: Uuid, user: &str) -> DmReplyStyle {
        match self
            .member_preference(tenant, user, "dm_reply_style")
            .await
            .as_deref()
        {
            Some("thread") => DmReplyStyle::Thread,
            _ => DmReplyStyle::Direct,
        }
    }

    /// The evaluator score a proactive reply to `event` needs, or `None`
    /// when none may be posted: only top-level channel messages, only with
    /// the tenant's switch on and the author's mode not `off`.
    async fn proactive_bar(
        &self,
        tenant: &Tenant,
        event: &MessageEvent,
        user: &str,
    ) -> Option<f64> {
        if event.is_dm()
            || event.is_thread_reply()
            || event.channel_type.as_deref() != Some("channel")
            || !proactive::tenant_allows(&tenant.settings.0)
        {
            return None;
        }
        let mode = self.member_preference(tenant.id, user, "auto_reply").await;
        proactive::AutoReplyMode::from_preference(mode.as_deref()).threshold()
    }

    /// Draft an answer, score it, and post it in the message's thread only
    /// when the evaluator calls it safe and good enough (§8.2, A.6). A
    /// failed turn or evaluation posts nothing: nobody asked.
    async fn proactive_reply(
        &self,
        api: &SlackApi,
        event: &MessageEvent,
        user: &str,
        bot: &str,
        bar: f64,
    ) -> Result<(), SlackError> {
        let text = event.text_without_mention(bot);
        if text.is_empty() {
            return Ok(());
        }
        let req = TurnRequest {
            channel: Some(Channel::Slack),
            message: text.clone(),
            slack_user_id: Some(user.to_string()),
            slack_channel_id: Some(event.channel.clone()),
            thread_key: Some(thread_key(event)),
            slack_thread_ts: Some(event.ts.clone()),
            ..TurnRequest::default()
        };
        let outcome = match run_channel_turn(&self.turns, req).await {
            Ok(o) if o.success => o,
            Ok(_) | Err(_) => {
                tracing::info!(%user, "proactive draft failed; nothing posted");
                return Ok(());
            }
        };
        let verdict = proactive::evaluate(
            &self.turns.tools.llm,
            &self.turns.prompts,
            &text,
            &outcome.reply,
            &outcome.tool_calls,
        )
        .await;
        let Some(post) = verdict
            .as_ref()
            .and_then(|v| proactive::proactive_text(&outcome.reply, v, bar))
        else {
            tracing::info!(
                %user,
                score = verdict.as_ref().map(|v| v.score),
                safe = verdict.as_ref().map(|v| v.is_safe_for_proactive_reply),
                "proactive reply withheld"
            );
            return Ok(());
        };
        self.deliver(api, &event.channel, Some(event.ts.clone()), &post)
            .await
    }

    /// `message_deleted`: the message leaves Slack search at once.
    async fn withdraw(&self, event: &MessageEvent) -> Result<(), SlackError> {
        let Some(ts) = event.deleted_ts.as_deref() else {
            return Ok(());
        };
        match self
            .retrieval
            .withdraw_slack_message(&event.channel, ts)
            .await
        {
            Ok(Some(_)) => tracing::info!(channel = %event.channel, ts, "slack message withdrawn"),
            Ok(None) => {}
            Err(e) => tracing::error!(error = %e, "slack message not withdrawn"),
        }
        Ok(())
    }

    /// `message_changed` by a human in a public channel: index the new text.
    async fn reindex_edit(
        &self,
        tenant: Uuid,
        api: &SlackApi,
        event: &MessageEvent,
        bot: &str,
    ) -> Result<(), SlackError> {
        let Some(edited) = event.message.as_deref() else {
            return Ok(());
        };
        if edited.ts.is_empty() {
            return Ok(());
        }
        let mut edited = edited.clone();
        edited.channel = event.channel.clone();
        edited.channel_type = event.channel_type.clone();
        let user = match author(&edited, Some(bot)) {
            Author::Human(u) => u,
            Author::AppWithUser(u) if api.users_info(&u).await?.is_human() => u,
            _ => return Ok(()),
        };
        if ingest::should_ingest(&edited) {
            let edit_ts = event.ts.clone();
            if let Err(e) =
                ingest::enqueue(&self.queues, tenant, &edited, &user, Some(&edit_ts)).await
            {
                tracing::error!(error = %e, "slack edit not queued for ingest");
            }
        }
        Ok(())
    }
}

/// The conversation a message continues (§8.1 thread-key segment): a
/// top-level DM continues the DM itself; anything else is the Slack thread
/// (`{channel}:{parent ts}`; a top-level channel mention starts one).
pub fn thread_key(m: &MessageEvent) -> String {
    if m.is_dm() && !m.is_thread_reply() {
        m.channel.clone()
    } else {
        format!("{}:{}", m.channel, m.reply_parent_ts())
    }
}

/// The thread before `current_ts` as chat history: Root's posts are the
/// assistant's, everyone else's the member side (last
/// [`THREAD_HISTORY_MESSAGES`]); each message's link unfurls and its stored
/// file summary (`files`, by ts) follow its text.
pub fn thread_history(
    thread: &[serde_json::Value],
    current_ts: &str,
    bot_user_id: &str,
    files: &std::collections::HashMap<String, String>,
) -> Vec<ChatMessage> {
    let before: Vec<(&serde_json::Value, String)> = thread
        .iter()
        .filter_map(|m| {
            let ts = m["ts"].as_str().filter(|ts| *ts != current_ts)?;
            let text = enrich::history_text(m, files.get(ts).map(String::as_str));
            (!text.is_empty()).then_some((m, text))
        })
        .collect();
    let from = before.len().saturating_sub(THREAD_HISTORY_MESSAGES);
    before[from..]
        .iter()
        .map(|(m, text)| {
            let text = text.clone();
            if m["user"].as_str() == Some(bot_user_id) {
                ChatMessage::assistant(text)
            } else {
                ChatMessage::user(text)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(channel: &str, ts: &str, thread_ts: Option<&str>, kind: &str) -> MessageEvent {
        MessageEvent {
            kind: "message".into(),
            channel: channel.into(),
            channel_type: Some(kind.into()),
            ts: ts.into(),
            thread_ts: thread_ts.map(str::to_string),
            text: "hello".into(),
            user: Some("U1".into()),
            ..MessageEvent::default()
        }
    }

    /// The §8.2 reply-policy matrix.
    #[test]
    fn reply_policy_matrix() {
        use ReplyDecision::*;
        let dm = msg("D1", "1.1", None, "im");
        let dm_thread = msg("D1", "1.2", Some("1.1"), "im");
        let top = msg("C1", "1.1", None, "channel");
        let reply = msg("C1", "1.2", Some("1.1"), "channel");
        for (m, mentioned, participated, want) in [
            (&dm, false, false, Reply),
            (&dm, true, false, Reply),
            (&dm_thread, false, true, Reply),
            (&dm_thread, false, false, Skip("dm thread without Root")),
            (&top, true, false, Reply),
            (
                &top,
                false,
                false,
                Skip("channel message without a mention"),
            ),
            (&reply, true, false, Reply),
            (&reply, true, true, Reply),
            (
                &reply,
                false,
                true,
                Skip("channel message without a mention"),
            ),
        ] {
            assert_eq!(
                reply_decision(m, mentioned, participated),
                want,
                "{m:?} mentioned={mentioned} participated={participated}"
            );
        }
    }

    #[test]
    fn thread_history_attributes_root_and_drops_the_current_message() {
        let thread = vec![
            serde_json::json!({"ts": "1.1", "user": "U1", "text": "parent"}),
            serde_json::json!({"ts": "1.2", "user": "UBOT", "text": "answer"}),
            serde_json::json!({"ts": "1.3", "user": "U2", "text": ""}),
            serde_json::json!({"ts": "1.4", "user": "U1", "text": "current"}),
        ];
        let h = thread_history(&thread, "1.4", "UBOT", &Default::default());
        assert_eq!(
            h,
            vec![
                ChatMessage::user("parent"),
                ChatMessage::assistant("answer")
            ]
        );
        // A message with no text but a stored file summary is kept.
        let files = [(
            "1.3".to_string(),
            "[Shared image: a.png — A map]".to_string(),
        )]
        .into();
        let h = thread_history(&thread, "1.4", "UBOT", &files);
        assert_eq!(h[2], ChatMessage::user("[Shared image: a.png — A map]"));
    }
}
