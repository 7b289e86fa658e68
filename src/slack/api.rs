//! The Slack Web API client (§8.2): every method is `POST {SLACK_API_BASE_URL}/<method>`
//! with the bot token as a bearer header — read methods form-encoded,
//! writes as JSON. Slack answers most errors with HTTP 200 and
//! `{"ok": false, "error": "…"}`; that is an error here. A 429 waits the
//! `Retry-After` it names, 5xx and network failures back off, both up to
//! [`MAX_ATTEMPTS`]; everything else fails at once. Cursor pagination
//! (`response_metadata.next_cursor`) is [`SlackApi::paginate`].
//!
//! The base URL is the operator's (like `OPENROUTER_BASE_URL`), not a
//! tenant's, so this is a plain client with timeouts and capped bodies
//! rather than the SSRF-guarded one.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::config::Secret;
use crate::outbound::{BodyError, read_capped};

/// Attempts per call (the first plus retries of 429 / 5xx / network).
pub const MAX_ATTEMPTS: u32 = 3;
/// Backoff before the n-th retry of a 5xx or network failure, in units.
const BACKOFF_UNITS: [u32; 2] = [1, 2];
/// Longest `Retry-After` honoured; a longer one fails the call instead.
pub const MAX_RETRY_AFTER_SECS: u64 = 60;
/// Whole-request bound.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// Connection bound.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest Web API answer read (history pages are the big ones).
pub const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;
/// Page size asked of paginated methods.
pub const PAGE_LIMIT: u32 = 200;
/// Pages followed at most by [`SlackApi::paginate`] (a bound, not a goal).
pub const MAX_PAGES: usize = 50;

/// A failed Web API call.
#[derive(Debug, thiserror::Error)]
pub enum SlackError {
    /// `{"ok": false, "error": code}` (e.g. `channel_not_found`, `not_authed`).
    #[error("slack {method}: {code}")]
    Api {
        /// The Web API method.
        method: String,
        /// Slack's error code.
        code: String,
    },
    /// Rate limited past the retries (or a `Retry-After` above the bound).
    #[error("slack {method}: rate limited (retry after {retry_after_secs} s)")]
    RateLimited {
        /// The Web API method.
        method: String,
        /// What Slack asked for.
        retry_after_secs: u64,
    },
    /// A non-2xx status other than 429.
    #[error("slack {method}: HTTP {status}")]
    Http {
        /// The Web API method.
        method: String,
        /// The status.
        status: u16,
    },
    /// No answer: connect failure, reset, timeout.
    #[error("slack {method}: {message}")]
    Transport {
        /// The Web API method.
        method: String,
        /// What went wrong (no token in it).
        message: String,
    },
    /// A 2xx answer that is not the JSON Slack documents.
    #[error("slack {method}: invalid answer: {message}")]
    InvalidResponse {
        /// The Web API method.
        method: String,
        /// Why it is unusable.
        message: String,
    },
    /// A file download answered `200 text/html`: Slack's sign-in page, i.e.
    /// the bot token was not accepted for that file (missing `files:read`,
    /// a revoked token, a file the bot cannot see).
    #[error("slack file download: Slack answered with its sign-in page (token not accepted)")]
    SignInPage,
    /// A file larger than the caller's cap (refused before its body is read,
    /// or as soon as the stream passes the cap).
    #[error("slack file download: over {max_bytes} bytes")]
    FileTooLarge {
        /// The cap.
        max_bytes: usize,
    },
}

impl SlackError {
    /// Slack's error code, when Slack gave one.
    pub fn code(&self) -> Option<&str> {
        match self {
            SlackError::Api { code, .. } => Some(code),
            _ => None,
        }
    }
}

/// How a call's parameters travel.
#[derive(Clone, Debug)]
pub enum Params {
    /// `application/x-www-form-urlencoded` (read methods).
    Form(Vec<(String, String)>),
    /// `application/json` (writes: `chat.postMessage`, …).
    Json(Value),
}

impl Params {
    /// Form parameters from pairs.
    pub fn form<const N: usize>(pairs: [(&str, &str); N]) -> Params {
        Params::Form(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }
}

/// One workspace's Web API: the base URL and its bot token. Cheap to clone.
#[derive(Clone)]
pub struct SlackApi {
    pub(super) http: reqwest::Client,
    base: String,
    pub(super) token: std::sync::Arc<Secret>,
    /// What one `Retry-After` second and one backoff unit last (1 s; tests
    /// shrink it so retries need no real waiting).
    time_unit: Duration,
}

impl std::fmt::Debug for SlackApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlackApi")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl SlackApi {
    /// A client for `base` (e.g. `https://slack.com/api`) with `token`.
    pub fn new(http: reqwest::Client, base: &str, token: Secret) -> SlackApi {
        SlackApi {
            http,
            base: base.trim_end_matches('/').to_string(),
            token: std::sync::Arc::new(token),
            time_unit: Duration::from_secs(1),
        }
    }

    /// The HTTP client every Slack call of the process shares.
    pub fn http_client() -> reqwest::Result<reqwest::Client> {
        reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("root/", env!("CARGO_PKG_VERSION")))
            .build()
    }

    /// Scale the waits (`Retry-After` seconds, backoff units).
    pub fn with_time_unit(mut self, unit: Duration) -> SlackApi {
        self.time_unit = unit;
        self
    }

    /// Call `method` with `params`; the JSON answer of an `ok: true` call.
    pub async fn call(&self, method: &str, params: Params) -> Result<Value, SlackError> {
        self.retrying(method, || self.call_once(method, &params))
            .await
    }

    /// Run `once` up to [`MAX_ATTEMPTS`] times: a 429 waits its
    /// `Retry-After` (at most [`MAX_RETRY_AFTER_SECS`]), 5xx and network
    /// failures back off; anything else is final.
    pub(super) async fn retrying<T, F, Fut>(
        &self,
        method: &str,
        mut once: F,
    ) -> Result<T, SlackError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, SlackError>>,
    {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match once().await {
                Err(SlackError::RateLimited {
                    retry_after_secs, ..
                }) if attempt < MAX_ATTEMPTS && retry_after_secs <= MAX_RETRY_AFTER_SECS => {
                    tracing::info!(method, retry_after_secs, "slack rate limit; waiting");
                    let wait = self
                        .time_unit
                        .saturating_mul(retry_after_secs.max(1) as u32);
                    tokio::time::sleep(wait).await;
                }
                Err(e @ (SlackError::Transport { .. } | SlackError::Http { .. }))
                    if attempt < MAX_ATTEMPTS && retryable(&e) =>
                {
                    let units = BACKOFF_UNITS[(attempt as usize - 1).min(BACKOFF_UNITS.len() - 1)];
                    tracing::warn!(method, error = %e, attempt, "slack call failed; retrying");
                    tokio::time::sleep(self.time_unit.saturating_mul(units)).await;
                }
                other => return other,
            }
        }
    }

    async fn call_once(&self, method: &str, params: &Params) -> Result<Value, SlackError> {
        let url = format!("{}/{method}", self.base);
        let req = self.http.post(&url).bearer_auth(self.token.expose());
        let req = match params {
            Params::Form(pairs) => req.form(pairs),
            Params::Json(body) => req
                .header(
                    reqwest::header::CONTENT_TYPE,
                    "application/json; charset=utf-8",
                )
                .body(body.to_string()),
        };
        let resp = req.send().await.map_err(|e| transport_error(method, &e))?;
        if let Some(e) = status_error(method, &resp) {
            return Err(e);
        }
        let bytes = read_capped(resp, MAX_RESPONSE_BYTES)
            .await
            .map_err(|e| match e {
                BodyError::TooLarge { .. } => SlackError::InvalidResponse {
                    method: method.into(),
                    message: format!("answer over {MAX_RESPONSE_BYTES} bytes"),
                },
                other => SlackError::Transport {
                    method: method.into(),
                    message: other.to_string(),
                },
            })?;
        let value: Value =
            serde_json::from_slice(&bytes).map_err(|e| SlackError::InvalidResponse {
                method: method.into(),
                message: e.to_string(),
            })?;
        if value["ok"].as_bool() == Some(true) {
            Ok(value)
        } else {
            Err(SlackError::Api {
                method: method.into(),
                code: value["error"]
                    .as_str()
                    .unwrap_or("unknown_error")
                    .to_string(),
            })
        }
    }

    /// Every item of `key` over the pages of a cursor-paginated method
    /// (at most [`MAX_PAGES`] pages of [`PAGE_LIMIT`]).
    pub async fn paginate(
        &self,
        method: &str,
        params: &[(&str, &str)],
        key: &str,
    ) -> Result<Vec<Value>, SlackError> {
        let mut out = Vec::new();
        let mut cursor = String::new();
        for _ in 0..MAX_PAGES {
            let mut pairs: Vec<(String, String)> = params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            pairs.push(("limit".into(), PAGE_LIMIT.to_string()));
            if !cursor.is_empty() {
                pairs.push(("cursor".into(), cursor.clone()));
            }
            let page = self.call(method, Params::Form(pairs)).await?;
            if let Some(items) = page[key].as_array() {
                out.extend(items.iter().cloned());
            }
            cursor = page["response_metadata"]["next_cursor"]
                .as_str()
                .unwrap_or("")
                .to_string();
            if cursor.is_empty() {
                return Ok(out);
            }
        }
        tracing::warn!(
            method,
            pages = MAX_PAGES,
            "slack pagination stopped at the page bound"
        );
        Ok(out)
    }

    /// `auth.test`: who the token is (validates credentials).
    pub async fn auth_test(&self) -> Result<AuthIdentity, SlackError> {
        let v = self.call("auth.test", Params::Form(Vec::new())).await?;
        parse("auth.test", v)
    }

    /// `users.info`.
    pub async fn users_info(&self, user: &str) -> Result<SlackUser, SlackError> {
        let v = self
            .call("users.info", Params::form([("user", user)]))
            .await?;
        parse("users.info", v["user"].clone())
    }

    /// `conversations.replies`: a thread's messages, parent first.
    pub async fn conversations_replies(
        &self,
        channel: &str,
        ts: &str,
    ) -> Result<Vec<Value>, SlackError> {
        self.paginate(
            "conversations.replies",
            &[("channel", channel), ("ts", ts)],
            "messages",
        )
        .await
    }

    /// The message at exactly `ts` in `channel`, live
    /// (`conversations.history` at that ts, then `conversations.replies` for
    /// a thread reply); `None` when Slack has no such message (or says no).
    pub async fn message_at(&self, channel: &str, ts: &str) -> Option<Value> {
        let history = self
            .call(
                "conversations.history",
                Params::form([
                    ("channel", channel),
                    ("latest", ts),
                    ("oldest", ts),
                    ("inclusive", "true"),
                    ("limit", "1"),
                ]),
            )
            .await
            .ok();
        let found = history
            .as_ref()
            .and_then(|h| h["messages"].as_array())
            .and_then(|ms| ms.iter().find(|m| m["ts"].as_str() == Some(ts)).cloned());
        match found {
            Some(m) => Some(m),
            None => self
                .conversations_replies(channel, ts)
                .await
                .ok()?
                .into_iter()
                .find(|m| m["ts"].as_str() == Some(ts)),
        }
    }

    /// `chat.update`: replace a message Root posted (the "working…" line).
    pub async fn update_message(
        &self,
        channel: &str,
        ts: &str,
        text: &str,
        blocks: &[Value],
    ) -> Result<(), SlackError> {
        let mut body = json!({"channel": channel, "ts": ts, "text": text});
        if !blocks.is_empty() {
            body["blocks"] = Value::Array(blocks.to_vec());
        }
        self.call("chat.update", Params::Json(body))
            .await
            .map(|_| ())
    }

    /// `conversations.info`: the channel's name (`None` when it has none).
    pub async fn channel_name(&self, channel: &str) -> Result<Option<String>, SlackError> {
        let v = self
            .call("conversations.info", Params::form([("channel", channel)]))
            .await?;
        Ok(v["channel"]["name"].as_str().map(str::to_string))
    }

    /// `chat.getPermalink`: the message's permanent link.
    pub async fn permalink(&self, channel: &str, ts: &str) -> Result<String, SlackError> {
        let v = self
            .call(
                "chat.getPermalink",
                Params::form([("channel", channel), ("message_ts", ts)]),
            )
            .await?;
        v["permalink"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| SlackError::InvalidResponse {
                method: "chat.getPermalink".into(),
                message: "no permalink".into(),
            })
    }

    /// `conversations.list` of `types` (e.g. `public_channel`), every page;
    /// archived ones left out when `exclude_archived`.
    pub async fn conversations_list(
        &self,
        types: &str,
        exclude_archived: bool,
    ) -> Result<Vec<SlackConversation>, SlackError> {
        let exclude = if exclude_archived { "true" } else { "false" };
        self.paginate(
            "conversations.list",
            &[("types", types), ("exclude_archived", exclude)],
            "channels",
        )
        .await?
        .into_iter()
        .map(|v| parse("conversations.list", v))
        .collect()
    }

    /// `conversations.join`: the bot joins a public channel. Already being
    /// in it (Slack's `already_in_channel`, as an error or a warning) is
    /// [`Joined::Already`].
    pub async fn conversations_join(&self, channel: &str) -> Result<Joined, SlackError> {
        match self
            .call("conversations.join", Params::form([("channel", channel)]))
            .await
        {
            Ok(v) if v["warning"].as_str() == Some("already_in_channel") => Ok(Joined::Already),
            Ok(_) => Ok(Joined::Joined),
            Err(e) if e.code() == Some("already_in_channel") => Ok(Joined::Already),
            Err(e) => Err(e),
        }
    }

    /// `chat.postMessage` (threaded when `thread_ts` is set); the posted ts.
    pub async fn post_message(&self, message: &OutgoingMessage) -> Result<String, SlackError> {
        let mut body = json!({
            "channel": message.channel,
            "text": message.text,
            "mrkdwn": true,
        });
        if !message.blocks.is_empty() {
            body["blocks"] = Value::Array(message.blocks.clone());
        }
        if let Some(ts) = &message.thread_ts {
            body["thread_ts"] = json!(ts);
        }
        let v = self.call("chat.postMessage", Params::Json(body)).await?;
        v["ts"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| SlackError::InvalidResponse {
                method: "chat.postMessage".into(),
                message: "no ts".into(),
            })
    }
}

/// A send failure as a [`SlackError::Transport`] (no token in it: the token
/// travels in a header, never the URL).
pub(super) fn transport_error(method: &str, e: &reqwest::Error) -> SlackError {
    SlackError::Transport {
        method: method.into(),
        message: if e.is_timeout() {
            "timed out".into()
        } else {
            crate::outbound::error_chain(e)
        },
    }
}

/// A 429 ([`SlackError::RateLimited`] with its `Retry-After`) or another
/// non-2xx status ([`SlackError::Http`]); `None` for a success.
pub(super) fn status_error(method: &str, resp: &reqwest::Response) -> Option<SlackError> {
    let status = resp.status();
    if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
        let retry_after_secs = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(1);
        return Some(SlackError::RateLimited {
            method: method.into(),
            retry_after_secs,
        });
    }
    (!status.is_success()).then(|| SlackError::Http {
        method: method.into(),
        status: status.as_u16(),
    })
}

fn retryable(e: &SlackError) -> bool {
    match e {
        SlackError::Transport { .. } => true,
        SlackError::Http { status, .. } => *status >= 500,
        _ => false,
    }
}

fn parse<T: serde::de::DeserializeOwned>(method: &str, v: Value) -> Result<T, SlackError> {
    serde_json::from_value(v).map_err(|e| SlackError::InvalidResponse {
        method: method.into(),
        message: e.to_string(),
    })
}

/// `auth.test`'s answer.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct AuthIdentity {
    /// The workspace.
    pub team_id: String,
    /// The bot's user id (its own posts are ignored).
    pub user_id: String,
    /// The bot id.
    #[serde(default)]
    pub bot_id: Option<String>,
}

/// One channel of `conversations.list`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct SlackConversation {
    /// `C…`.
    pub id: String,
    /// Name without `#`.
    #[serde(default)]
    pub name: Option<String>,
    /// Whether the bot is in it.
    #[serde(default)]
    pub is_member: bool,
    /// Archived.
    #[serde(default)]
    pub is_archived: bool,
}

/// What `conversations.join` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Joined {
    /// The bot joined now.
    Joined,
    /// The bot was already a member.
    Already,
}

/// The parts of `users.info`'s user Root reads.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct SlackUser {
    /// `U…`.
    pub id: String,
    /// Bots and apps are never members.
    #[serde(default)]
    pub is_bot: bool,
    /// An app's user.
    #[serde(default)]
    pub is_app_user: bool,
    /// Deactivated.
    #[serde(default)]
    pub deleted: bool,
    /// Handle.
    #[serde(default)]
    pub name: Option<String>,
    /// Full name.
    #[serde(default)]
    pub real_name: Option<String>,
    /// Profile (display name, email).
    #[serde(default)]
    pub profile: SlackProfile,
}

impl SlackUser {
    /// A human (neither a bot nor an app user).
    pub fn is_human(&self) -> bool {
        !self.is_bot && !self.is_app_user
    }

    /// The best name to call them by.
    pub fn display_name(&self) -> Option<String> {
        [
            self.profile.display_name.as_deref(),
            self.profile.real_name.as_deref(),
            self.real_name.as_deref(),
            self.name.as_deref(),
        ]
        .into_iter()
        .flatten()
        .map(str::trim)
        .find(|n| !n.is_empty())
        .map(str::to_string)
    }
}

/// `user.profile`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct SlackProfile {
    /// Display name.
    #[serde(default)]
    pub display_name: Option<String>,
    /// Real name.
    #[serde(default)]
    pub real_name: Option<String>,
    /// Email (with the `users:read.email` scope).
    #[serde(default)]
    pub email: Option<String>,
}

/// One `chat.postMessage`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OutgoingMessage {
    /// Conversation id.
    pub channel: String,
    /// Plain-text fallback (always sent).
    pub text: String,
    /// Block Kit blocks.
    pub blocks: Vec<Value>,
    /// The parent ts to thread under.
    pub thread_ts: Option<String>,
}
