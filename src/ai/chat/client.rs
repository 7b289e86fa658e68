//! The non-streamed call ([`ChatClient::chat`]) and the helpers built on
//! it: [`ChatClient::chat_text`], [`ChatClient::chat_vision`] and
//! [`ChatClient::chat_json`] with its repair retries and escalating budgets.

use std::time::Instant;

use serde::de::DeserializeOwned;

use super::wire::{WireResponse, response_from_wire};
use super::{
    CHAT_JSON_MAX_REPAIRS, CHAT_JSON_MAX_TOKENS_CEILING, ChatClient, ChatMessage, ChatOptions,
    ChatRequest, ChatResponse, HELPER_REASONING_EFFORT, JsonSchema, MAX_CHAT_RESPONSE_BYTES,
    ModelRole, log_call, traced_call,
};
use crate::ai::http::AiError;
use crate::ai::usage::Usage;
use crate::trace;

/// At most this much of an invalid structured reply is echoed back in the
/// repair request: enough to show the mistake without re-sending a runaway.
const REPAIR_ECHO_CHARS: usize = 16_000;

impl ChatClient {
    /// One non-streamed call, metered as `purpose`. Fails with
    /// [`AiError::NotConfigured`] without a key, a classified [`AiError`]
    /// on provider/transport failure, [`AiError::InvalidResponse`] on an
    /// answer without choices.
    pub async fn chat(
        &self,
        purpose: &str,
        request: &ChatRequest,
    ) -> Result<ChatResponse, AiError> {
        if !trace::active() {
            return self.chat_once(purpose, request).await;
        }
        let call = self.chat_once(purpose, request);
        traced_call(purpose, request, false, call).await
    }

    async fn chat_once(
        &self,
        purpose: &str,
        request: &ChatRequest,
    ) -> Result<ChatResponse, AiError> {
        let started = Instant::now();
        let body = self.wire(request, false);
        let wire: WireResponse = self
            .http
            .post_json(
                "chat/completions",
                &body,
                Some(self.timeout),
                MAX_CHAT_RESPONSE_BYTES,
            )
            .await?;
        // Metered before validation: an unusable answer was still billed.
        let usage = wire
            .usage
            .as_ref()
            .map(Usage::from_json)
            .unwrap_or_default();
        self.usage.record(purpose, &request.model, &usage).await;
        trace::record_llm_usage(&request.model, usage.for_trace());
        let response = response_from_wire(wire, usage)?;
        log_call(purpose, request, &response, started, false);
        Ok(response)
    }

    fn helper_model(&self, opts: &ChatOptions, default_role: ModelRole) -> Result<String, AiError> {
        if let Some(m) = &opts.model {
            return Ok(m.clone());
        }
        let role = opts.role.unwrap_or(default_role);
        self.model(role).map(str::to_string).ok_or_else(|| {
            AiError::InvalidRequest(format!("no model configured for the {role:?} role"))
        })
    }

    fn helper_request(
        &self,
        opts: &ChatOptions,
        default_role: ModelRole,
        messages: Vec<ChatMessage>,
    ) -> Result<ChatRequest, AiError> {
        Ok(ChatRequest {
            model: self.helper_model(opts, default_role)?,
            messages,
            temperature: opts.temperature.or(self.temperature),
            max_tokens: Some(self.helper_max_tokens(opts)),
            reasoning_effort: Some(opts.reasoning_effort.unwrap_or(HELPER_REASONING_EFFORT)),
            ..ChatRequest::default()
        })
    }

    fn helper_max_tokens(&self, opts: &ChatOptions) -> u32 {
        opts.max_tokens
            .filter(|n| *n > 0)
            .unwrap_or_else(|| self.agent_max_tokens())
    }

    /// `chatText`: a system prompt (omitted when empty) and one user
    /// message; returns the answer text as sent (possibly empty).
    pub async fn chat_text(
        &self,
        purpose: &str,
        system: &str,
        user: &str,
        opts: &ChatOptions,
    ) -> Result<String, AiError> {
        let request = self.helper_request(opts, ModelRole::Default, prompt(system, user))?;
        Ok(self.chat(purpose, &request).await?.text)
    }

    /// `chatVision`: `prompt` plus images (`https://` URLs or
    /// `data:image/…;base64,…` URIs) to the vision model role.
    pub async fn chat_vision(
        &self,
        purpose: &str,
        prompt: &str,
        images: &[String],
        opts: &ChatOptions,
    ) -> Result<String, AiError> {
        if let Some(bad) = images.iter().find(|i| !is_image_ref(i)) {
            let shown: String = bad.chars().take(40).collect();
            return Err(AiError::InvalidRequest(format!(
                "image must be an http(s) URL or a data:image URI, got {shown:?}"
            )));
        }
        let messages = vec![ChatMessage::user_with_images(prompt, images)];
        let request = self.helper_request(opts, ModelRole::Vision, messages)?;
        Ok(self.chat(purpose, &request).await?.text)
    }

    /// `chatJson`: structured output parsed into `T`.
    ///
    /// Sends `response_format: json_schema` and parses the reply (tolerating
    /// a Markdown code fence). When the reply does not parse into `T`, the
    /// bad reply and the error are sent back as a repair request, up to
    /// [`CHAT_JSON_MAX_REPAIRS`] times, so at most 4 requests in all.
    /// Budgets (§3.1 `[base, min(base*2, 96000)]`): the first attempt uses
    /// `base` (`opts.max_tokens`, else `LLM_MAX_TOKENS`, else 16000); every
    /// repair uses `min(base*2, 96000)` (never below `base`), since a reply
    /// cut off at the budget is the commonest cause of invalid JSON.
    /// Exhausted ⇒ [`AiError::StructuredOutput`]; a failed call returns its
    /// own error at once (retrying is the caller's choice).
    pub async fn chat_json<T: DeserializeOwned>(
        &self,
        purpose: &str,
        system: &str,
        user: &str,
        schema: &JsonSchema,
        opts: &ChatOptions,
    ) -> Result<T, AiError> {
        let mut request = self.helper_request(opts, ModelRole::Default, prompt(system, user))?;
        request.response_format = Some(schema.clone());
        let budgets = chat_json_budgets(self.helper_max_tokens(opts));
        let mut last_error = String::new();
        for attempt in 0..=CHAT_JSON_MAX_REPAIRS {
            request.max_tokens = Some(budgets[attempt.min(budgets.len() - 1)]);
            let response = self.chat(purpose, &request).await?;
            match parse_json_reply::<T>(&response.text) {
                Ok(value) => return Ok(value),
                Err(error) => {
                    tracing::warn!(
                        purpose,
                        attempt,
                        finish_reason = response.finish_reason.as_deref().unwrap_or(""),
                        error = %error,
                        "structured output did not parse; asking for a repair"
                    );
                    let cut_off = response.finish_reason.as_deref() == Some("length");
                    if !response.text.trim().is_empty() {
                        let echoed: String =
                            response.text.chars().take(REPAIR_ECHO_CHARS).collect();
                        request.messages.push(ChatMessage::assistant(echoed));
                    }
                    request
                        .messages
                        .push(ChatMessage::user(repair_prompt(&error, cut_off)));
                    last_error = error;
                }
            }
        }
        Err(AiError::StructuredOutput {
            attempts: CHAT_JSON_MAX_REPAIRS + 1,
            message: last_error,
        })
    }
}

/// `max_tokens` per `chat_json` attempt: index 0 for the first attempt,
/// the last entry for every repair.
pub fn chat_json_budgets(base: u32) -> [u32; 2] {
    let escalated = base
        .saturating_mul(2)
        .min(CHAT_JSON_MAX_TOKENS_CEILING)
        .max(base);
    [base, escalated]
}

fn prompt(system: &str, user: &str) -> Vec<ChatMessage> {
    let mut messages = Vec::with_capacity(2);
    if !system.trim().is_empty() {
        messages.push(ChatMessage::system(system));
    }
    messages.push(ChatMessage::user(user));
    messages
}

pub(super) fn is_image_ref(s: &str) -> bool {
    s.starts_with("https://") || s.starts_with("http://") || s.starts_with("data:image/")
}

fn repair_prompt(error: &str, cut_off: bool) -> String {
    let cause = if cut_off {
        "Your previous reply was cut off before the JSON was complete."
    } else {
        "Your previous reply was not valid JSON for the required schema."
    };
    format!(
        "{cause} Error: {error}\nReply again with only the complete, corrected JSON \
         object that matches the schema: no prose, no code fences."
    )
}

/// Parse a structured reply into `T`, tolerating surrounding whitespace and
/// a Markdown code fence (some models add one despite `response_format`).
pub fn parse_json_reply<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("the reply was empty".into());
    }
    let unfenced = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.trim_end().strip_suffix("```"))
        .map(str::trim)
        .unwrap_or(trimmed);
    serde_json::from_str(unfenced).map_err(|e| e.to_string())
}
