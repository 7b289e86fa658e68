//! The email authorization gate (§8.3, A.5): before a mutation tool runs
//! in an email turn whose sender may be acting for someone else, one
//! structured call (`email.authorization_gate_system`) decides `proceed`,
//! `refuse` or `clarify`. Refuse / clarify ⇒ the tool does not run; the
//! model gets a failed result with `authorization_blocked: true`, the
//! `verdict` and a `suggested_reply` to base its answer on.
//!
//! When the gate runs:
//! - the sender is a **delegate** of the resolved account: before every
//!   mutation;
//! - the sender **is** the account owner: the mentor intent classifier
//!   (`email.mentor_intent_classifier_system`) runs once per email — at the
//!   first mutation, so a mail that only reads costs no extra call — and
//!   the gate runs only when it did not say `self_action`.
//!
//! `escalate_to_admin` always proceeds without a call (it acts on no one's
//! identity). A gate that cannot decide (provider down, bad answer) blocks
//! with `clarify`: this check exists to stop acting for the wrong person,
//! so it fails closed; a failed classifier counts as `unclear`.

use std::collections::HashMap;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{Mutex, OnceCell};

use crate::agent::ToolResult;
use crate::ai::chat::{ChatClient, ChatOptions, JsonSchema};
use crate::platform::tool_names::ESCALATE_TO_ADMIN;
use crate::prompts::render::PromptVars;
use crate::prompts::{Prompts, keys};
use crate::tools::{GateDecision, ToolGate};

/// `llm:<purpose>` of the gate's call.
pub const GATE_PURPOSE: &str = "email_authorization_gate";
/// `llm:<purpose>` of the classifier's call.
pub const INTENT_PURPOSE: &str = "email_mentor_intent";
/// The email body shown to the gate and the classifier is cut here.
pub const GATE_BODY_MAX_CHARS: usize = 8_000;

/// The mentor intent classifier's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MentorIntent {
    /// About the sender's own account.
    SelfAction,
    /// Asks to act for someone else.
    ThirdPartyAction,
    /// Cannot tell.
    Unclear,
}

#[derive(Debug, Deserialize)]
struct IntentAnswer {
    intent: MentorIntent,
}

/// The gate's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The action is for the resolved account.
    Proceed,
    /// It is for someone else.
    Refuse,
    /// Cannot tell.
    Clarify,
}

impl Verdict {
    fn as_str(self) -> &'static str {
        match self {
            Verdict::Proceed => "proceed",
            Verdict::Refuse => "refuse",
            Verdict::Clarify => "clarify",
        }
    }
}

/// The gate's structured answer.
#[derive(Clone, Debug, Deserialize)]
pub struct GateAnswer {
    /// The decision.
    pub verdict: Verdict,
    /// Why (logged at debug, never shown).
    #[serde(default)]
    pub reasoning: String,
    /// The reply to the sender when blocked.
    #[serde(default)]
    pub refusal_message: Option<String>,
}

/// The mail and the people the gate reasons about.
#[derive(Clone, Debug, Default)]
pub struct GateMail {
    /// The actual sender.
    pub sender_name: String,
    /// Their address.
    pub sender_email: String,
    /// The account the tools act for.
    pub account_name: String,
    /// Its address (may be empty).
    pub account_email: String,
    /// Why the sender may act for it (plain words); `None` = the owner.
    pub delegation_reason: Option<String>,
    /// Other To / Cc participants (`Name <addr>`).
    pub participants: Vec<String>,
    /// Subject line.
    pub subject: String,
    /// The new text of the mail (quoted history stripped).
    pub body: String,
}

/// One email turn's gate.
pub struct AuthorizationGate {
    llm: ChatClient,
    prompts: Prompts,
    mail: GateMail,
    intent: OnceCell<MentorIntent>,
    decided: Mutex<HashMap<String, GateDecision>>,
}

impl AuthorizationGate {
    /// A gate for `mail`. A delegate (`mail.delegation_reason` set) is
    /// gated before every mutation; the owner after the classifier.
    pub fn new(llm: ChatClient, prompts: Prompts, mail: GateMail) -> Self {
        AuthorizationGate {
            llm,
            prompts,
            mail,
            intent: OnceCell::new(),
            decided: Mutex::new(HashMap::new()),
        }
    }

    fn is_delegate(&self) -> bool {
        self.mail.delegation_reason.is_some()
    }

    /// The owner's mail: classified once (a failure counts as `unclear`).
    async fn owner_intent(&self) -> MentorIntent {
        *self
            .intent
            .get_or_init(|| async {
                let intent = self.classify().await.unwrap_or(MentorIntent::Unclear);
                tracing::info!(event = "email.mentor_intent", intent = ?intent, "owner mail classified");
                intent
            })
            .await
    }

    async fn classify(&self) -> Option<MentorIntent> {
        let system = self
            .prompts
            .render(
                keys::EMAIL_MENTOR_INTENT_CLASSIFIER_SYSTEM,
                &PromptVars::new(),
            )
            .await
            .ok()?;
        let user = format!(
            "Subject: {}\n\nEmail body:\n{}",
            self.mail.subject,
            cut(&self.mail.body)
        );
        match self
            .llm
            .chat_json::<IntentAnswer>(
                INTENT_PURPOSE,
                &system,
                &user,
                &intent_schema(),
                &ChatOptions::default(),
            )
            .await
        {
            Ok(a) => Some(a.intent),
            Err(e) => {
                tracing::warn!(error = %e, "mentor intent classifier failed; treated as unclear");
                None
            }
        }
    }

    /// Ask the gate about one call.
    async fn ask(&self, tool: &str, args: &Value) -> Option<GateAnswer> {
        let system = self
            .prompts
            .render(keys::EMAIL_AUTHORIZATION_GATE_SYSTEM, &PromptVars::new())
            .await
            .ok()?;
        let user = gate_input(&self.mail, tool, args);
        match self
            .llm
            .chat_json::<GateAnswer>(
                GATE_PURPOSE,
                &system,
                &user,
                &gate_schema(),
                &ChatOptions::default(),
            )
            .await
        {
            Ok(a) => Some(a),
            Err(e) => {
                tracing::warn!(error = %e, tool, "email authorization gate failed; blocking (clarify)");
                None
            }
        }
    }

    /// The failed result the model gets instead of running the tool.
    fn blocked(&self, verdict: Verdict, refusal: Option<String>) -> ToolResult {
        let suggested = refusal
            .map(|r| r.trim().to_string())
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| fallback_reply(&self.mail));
        ToolResult {
            success: false,
            data: Some(json!({
                "authorization_blocked": true,
                "verdict": verdict.as_str(),
                "suggested_reply": suggested,
            })),
            error: Some(format!(
                "Not done: this action could only be taken for {}'s own account, and the request \
                 could not be confirmed as that. Use suggested_reply as the basis of your answer.",
                self.mail.account_name
            )),
            ..ToolResult::default()
        }
    }
}

#[async_trait]
impl ToolGate for AuthorizationGate {
    async fn check(&self, tool: &str, args: &Value) -> GateDecision {
        if tool == ESCALATE_TO_ADMIN {
            return GateDecision::Proceed;
        }
        if !self.is_delegate() && self.owner_intent().await == MentorIntent::SelfAction {
            return GateDecision::Proceed;
        }
        let key = format!("{tool}\n{args}");
        if let Some(d) = self.decided.lock().await.get(&key) {
            return d.clone();
        }
        let decision = match self.ask(tool, args).await {
            Some(GateAnswer {
                verdict: Verdict::Proceed,
                ..
            }) => GateDecision::Proceed,
            Some(a) => {
                tracing::debug!(reasoning = %a.reasoning, "authorization gate blocked a tool");
                GateDecision::Block(self.blocked(a.verdict, a.refusal_message))
            }
            None => GateDecision::Block(self.blocked(Verdict::Clarify, None)),
        };
        tracing::info!(
            target: "audit",
            event = "email.authorization_gate",
            tool,
            delegate = self.is_delegate(),
            verdict = match &decision {
                GateDecision::Proceed => "proceed",
                GateDecision::Block(_) => "blocked",
            },
            "email authorization gate decided"
        );
        self.decided.lock().await.insert(key, decision.clone());
        decision
    }
}

/// The gate's input: the mail, the people, and the pending call.
fn gate_input(m: &GateMail, tool: &str, args: &Value) -> String {
    let delegation = match &m.delegation_reason {
        Some(r) => format!("The sender is a delegate of the resolved account ({r})."),
        None => "The sender is the resolved account owner; the email may concern a third party."
            .to_string(),
    };
    let participants = if m.participants.is_empty() {
        "none".to_string()
    } else {
        m.participants.join(", ")
    };
    let account = if m.account_email.is_empty() {
        m.account_name.clone()
    } else {
        format!("{} <{}>", m.account_name, m.account_email)
    };
    format!(
        "EMAIL\nSender: {} <{}>\nResolved account: {account}\n{delegation}\n\
         Other participants on To/Cc: {participants}\nSubject: {}\n\nBody:\n{}\n\n\
         PENDING ACTION (runs as the resolved account)\nTool: {tool}\nArguments: {args}",
        m.sender_name,
        m.sender_email,
        m.subject,
        cut(&m.body),
    )
}

/// The suggested reply when the gate could not give one.
fn fallback_reply(m: &GateMail) -> String {
    let because = match &m.delegation_reason {
        Some(r) => format!(" You're able to act for {} because {r}.", m.account_name),
        None => String::new(),
    };
    format!(
        "Hi {}, I wasn't able to confirm that this request is for {}'s own account, so I \
         haven't made that change.{because} Could you confirm it's for {}? If it's for someone \
         else, please ask them to email me directly from their own address.",
        m.sender_name, m.account_name, m.account_name
    )
}

fn cut(body: &str) -> String {
    body.chars().take(GATE_BODY_MAX_CHARS).collect()
}

fn gate_schema() -> JsonSchema {
    JsonSchema::new(
        "email_authorization_gate",
        json!({
            "type": "object",
            "properties": {
                "verdict": {"type": "string", "enum": ["proceed", "refuse", "clarify"]},
                "reasoning": {"type": "string"},
                "refusal_message": {"type": ["string", "null"]},
            },
            "required": ["verdict", "reasoning", "refusal_message"],
            "additionalProperties": false,
        }),
    )
}

fn intent_schema() -> JsonSchema {
    JsonSchema::new(
        "email_mentor_intent",
        json!({
            "type": "object",
            "properties": {
                "intent": {"type": "string",
                    "enum": ["self_action", "third_party_action", "unclear"]},
                "reasoning": {"type": "string"},
            },
            "required": ["intent", "reasoning"],
            "additionalProperties": false,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mail(reason: Option<&str>) -> GateMail {
        GateMail {
            sender_name: "Alice".into(),
            sender_email: "alice@example.org".into(),
            account_name: "Maria".into(),
            account_email: "maria@example.org".into(),
            delegation_reason: reason.map(str::to_string),
            participants: vec!["Albert <albert@example.org>".into()],
            subject: "Sessions".into(),
            body: "Please book Albert's session on Tuesday.".into(),
        }
    }

    #[test]
    fn the_gate_sees_the_people_the_body_and_the_pending_call() {
        let input = gate_input(
            &mail(Some("Maria copied you on an earlier email")),
            "book_room",
            &json!({"room": "Garden"}),
        );
        assert!(input.contains("Sender: Alice <alice@example.org>"));
        assert!(input.contains("Resolved account: Maria <maria@example.org>"));
        assert!(input.contains("delegate of the resolved account"));
        assert!(input.contains("Albert <albert@example.org>"));
        assert!(input.contains("Please book Albert's session"));
        assert!(input.contains("Tool: book_room\nArguments: {\"room\":\"Garden\"}"));
        let owner = gate_input(&mail(None), "book_room", &json!({}));
        assert!(owner.contains("resolved account owner"));
    }

    #[test]
    fn answers_parse_in_the_spec_shape() {
        let a: GateAnswer = serde_json::from_str(
            r#"{"verdict":"refuse","reasoning":"for Albert","refusal_message":"Hi Alice"}"#,
        )
        .unwrap();
        assert_eq!(a.verdict, Verdict::Refuse);
        assert_eq!(a.refusal_message.as_deref(), Some("Hi Alice"));
        let i: IntentAnswer =
            serde_json::from_str(r#"{"intent":"third_party_action","reasoning":"x"}"#).unwrap();
        assert_eq!(i.intent, MentorIntent::ThirdPartyAction);
        assert!(serde_json::from_str::<GateAnswer>(r#"{"verdict":"maybe"}"#).is_err());
    }

    #[test]
    fn the_fallback_reply_addresses_the_sender_and_names_the_account() {
        let r = fallback_reply(&mail(Some("Maria copied you on an earlier email")));
        assert!(r.starts_with("Hi Alice,"));
        assert!(r.contains("Maria's own account"));
        assert!(r.contains("because Maria copied you on an earlier email"));
        assert!(r.contains("email me directly from their own address"));
        assert_eq!(GATE_BODY_MAX_CHARS, 8_000);
        assert_eq!(cut(&"é".repeat(9_000)).chars().count(), 8_000);
    }
}
