//! The root-int/1 request and answer bodies (§7.2, §7.3) the client sends
//! and parses: the invoke body and its principal / email delegation, the
//! identity query and answer, and the escalation body. Plain serde types,
//! apart from the client's transport so both read in one place each.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::client::CallError;
use super::endpoints::EndpointKey;

/// `principal` of an invoke body.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct InvokePrincipal {
    /// The principal's ref.
    #[serde(rename = "ref")]
    pub ref_: String,
    /// Manifest tier (or a reserved tier).
    pub tier: String,
    /// Admin flag.
    pub is_admin: bool,
    /// Display name.
    pub display_name: Option<String>,
    /// Slack user id.
    pub slack_user_id: Option<String>,
    /// Email address.
    pub email: Option<String>,
}

/// `email_delegation` of an invoke body.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EmailDelegation {
    /// Why the sender acts for the account.
    pub reason: Option<String>,
    /// Is the sender a delegate?
    pub is_delegate: bool,
    /// Sender address.
    pub sender_email: Option<String>,
    /// Sender name.
    pub sender_name: Option<String>,
    /// The resolved account's address.
    pub mentor_email: Option<String>,
    /// The resolved account's name.
    pub mentor_name: Option<String>,
    /// Other participants of the thread.
    pub thread_participants: Vec<Value>,
}

/// What the caller supplies for one invocation; the client adds
/// `invocation_id` and `tenant_id` (§7.3).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct InvokeRequest {
    /// Who is asking.
    pub principal: InvokePrincipal,
    /// `slack` | `email` | `api` | `web`.
    pub channel: String,
    /// Slack conversation id.
    pub slack_channel_id: Option<String>,
    /// The member's current message.
    pub current_user_message: Option<String>,
    /// Slack thread.
    pub thread_ts: Option<String>,
    /// Email delegation context.
    pub email_delegation: Option<EmailDelegation>,
    /// The model's arguments.
    pub params: Value,
    /// `principals.id` for the audit row (not sent).
    #[serde(skip)]
    pub principal_id: Option<Uuid>,
}

/// The invoke body on the wire: the request plus the invocation's ids.
#[derive(Serialize)]
pub(super) struct InvokeBody<'a> {
    pub(super) invocation_id: Uuid,
    pub(super) tenant_id: Uuid,
    #[serde(flatten)]
    pub(super) request: &'a InvokeRequest,
}

/// A principal as identity resolve and roster return it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ResolvedPrincipal {
    /// Stable external ref.
    pub principal_ref: String,
    /// Display name.
    #[serde(default)]
    pub display_name: Option<String>,
    /// Manifest tier.
    pub tier: String,
    /// Admin flag.
    #[serde(default)]
    pub is_admin: bool,
    /// Free-form traits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traits: Option<Value>,
    /// Email address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// Profile text for the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_context: Option<String>,
    /// Slack user id (roster entries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slack_user_id: Option<String>,
}

impl ResolvedPrincipal {
    pub(super) fn check(&self, endpoint: EndpointKey) -> Result<(), CallError> {
        if self.principal_ref.trim().is_empty() || self.tier.trim().is_empty() {
            return Err(CallError::BadResponse {
                endpoint,
                message: "principal needs a non-empty principal_ref and tier".into(),
            });
        }
        Ok(())
    }
}

/// `acts_for` of an identity answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ActsFor {
    /// `historical_cc` | `hosted_office_hours_invite`.
    pub reason: String,
    /// The account acted for.
    pub principal: ResolvedPrincipal,
}

/// An identity answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IdentityResolution {
    /// The person, or `None` when the backend does not know them.
    #[serde(default)]
    pub principal: Option<ResolvedPrincipal>,
    /// The account the sender acts for, if any.
    #[serde(default)]
    pub acts_for: Option<ActsFor>,
}

/// Identity resolve request.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IdentityQuery {
    /// `slack` | `email`.
    pub channel: String,
    /// Slack user id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slack_user_id: Option<String>,
    /// Email address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

/// An escalation or other notification (§7.3, §15.2); the client adds `tenant_id`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Escalation {
    /// `escalation`, or another notification type.
    #[serde(rename = "type")]
    pub kind: String,
    /// The `human_interventions` row.
    pub intervention_id: Option<Uuid>,
    /// Who asked.
    pub principal_ref: Option<String>,
    /// Their name.
    pub user_name: Option<String>,
    /// Channel of the conversation.
    pub channel: String,
    /// Their tier.
    pub tier: Option<String>,
    /// Why it is escalated.
    pub escalation_reason: Option<String>,
    /// What they asked for.
    pub user_request_summary: Option<String>,
    /// What the assistant already checked.
    pub what_was_checked: Option<String>,
    /// Fields of other notification types.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
