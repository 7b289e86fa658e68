//! The integration escalations webhook as an [`InterventionSink`] (§15.2,
//! §7.3): escalations, requests, missing-tool requests and mistake reports
//! are posted, signed, to every active integration of the tenant, with the
//! §7.3 body built from the stored `human_interventions` row (`type` = the
//! category). System failures are not sent to tenant backends.

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use storage::{HumanIntervention, InterventionCategory};

use super::{Escalation, Integrations};
use crate::platform::notify::InterventionSink;

/// Metadata fields of other notification types passed through as-is.
const EXTRA_FIELDS: [&str; 5] = [
    "user_complaint",
    "mistake_summary",
    "correct_information",
    "trace_id",
    "channel_id",
];

/// Posts interventions to the tenant's integration escalation webhooks.
#[derive(Clone)]
pub struct EscalationWebhook {
    integrations: Integrations,
}

impl EscalationWebhook {
    /// A sink over the integrations registry.
    pub fn new(integrations: Integrations) -> Self {
        EscalationWebhook { integrations }
    }
}

/// The §7.3 body of `row` (the client adds `tenant_id`), or `None` for a
/// category the webhook does not receive.
pub fn escalation_body(row: &HumanIntervention) -> Option<Escalation> {
    let kind = match row.category {
        InterventionCategory::Escalation => "escalation",
        InterventionCategory::Request => "request",
        InterventionCategory::MissingTool => "missing_tool",
        InterventionCategory::MistakeReport => "mistake_report",
        InterventionCategory::SystemFailure => return None,
    };
    let meta = &row.metadata.0;
    let text = |k: &str| meta.get(k).and_then(Value::as_str).map(str::to_string);
    let mut extra = Map::new();
    extra.insert("title".into(), json!(row.title));
    extra.insert("details".into(), json!(row.details));
    extra.insert("created_at".into(), json!(row.created_at));
    for k in EXTRA_FIELDS {
        if let Some(v) = meta.get(k).filter(|v| !v.is_null()) {
            extra.insert(k.into(), v.clone());
        }
    }
    Some(Escalation {
        kind: kind.into(),
        intervention_id: Some(row.id),
        principal_ref: text("principal_ref"),
        user_name: text("display_name"),
        channel: row.channel.as_str().into(),
        tier: text("tier"),
        escalation_reason: text("escalation_reason"),
        user_request_summary: text("user_request_summary").or_else(|| Some(row.title.clone())),
        what_was_checked: text("what_was_checked"),
        extra,
    })
}

#[async_trait]
impl InterventionSink for EscalationWebhook {
    fn name(&self) -> &'static str {
        "integration_escalations_webhook"
    }

    async fn deliver(&self, intervention: &HumanIntervention) -> anyhow::Result<()> {
        let Some(body) = escalation_body(intervention) else {
            return Ok(());
        };
        // Each failing integration is logged by the registry with its error.
        let outcomes = self.integrations.post_escalation(&body).await?;
        let failed: Vec<&str> = outcomes
            .iter()
            .filter(|(_, r)| r.is_err())
            .map(|(name, _)| name.as_str())
            .collect();
        if failed.is_empty() {
            Ok(())
        } else {
            anyhow::bail!("escalation webhook failed for {}", failed.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage::{Channel, InterventionStatus, Json, Ts};
    use uuid::Uuid;

    fn row(category: InterventionCategory, metadata: Value) -> HumanIntervention {
        HumanIntervention {
            id: Uuid::new_v4(),
            tenant_id: Uuid::new_v4(),
            principal_id: None,
            channel: Channel::Slack,
            category,
            status: InterventionStatus::Open,
            title: "Refund my ticket".into(),
            details: Some("details".into()),
            metadata: Json(metadata),
            created_at: Ts::from_secs(1_700_000_000),
            updated_at: Ts::from_secs(1_700_000_000),
        }
    }

    #[test]
    fn an_escalation_has_the_section_7_3_shape() {
        let r = row(
            InterventionCategory::Escalation,
            json!({"principal_ref": "U0ANN", "display_name": "Ann", "tier": "member",
                   "escalation_reason": "billing", "user_request_summary": "Refund my ticket",
                   "what_was_checked": null, "trace_id": null}),
        );
        let body = serde_json::to_value(escalation_body(&r).unwrap()).unwrap();
        assert_eq!(
            body,
            json!({
                "type": "escalation", "intervention_id": r.id, "principal_ref": "U0ANN",
                "user_name": "Ann", "channel": "slack", "tier": "member",
                "escalation_reason": "billing", "user_request_summary": "Refund my ticket",
                "what_was_checked": null, "title": "Refund my ticket", "details": "details",
                "created_at": "2023-11-14T22:13:20Z",
            })
        );
    }

    #[test]
    fn other_categories_carry_their_type_and_fields_system_failures_stay_home() {
        let r = row(
            InterventionCategory::MistakeReport,
            json!({"mistake_summary": "Said 9am", "trace_id": "t-1", "tier": "member"}),
        );
        let body = serde_json::to_value(escalation_body(&r).unwrap()).unwrap();
        assert_eq!(body["type"], "mistake_report");
        assert_eq!(body["mistake_summary"], "Said 9am");
        assert_eq!(body["trace_id"], "t-1");
        assert_eq!(body["escalation_reason"], Value::Null);
        assert_eq!(body["user_request_summary"], "Refund my ticket");
        let req = row(InterventionCategory::Request, json!({}));
        assert_eq!(escalation_body(&req).unwrap().kind, "request");
        let missing = row(InterventionCategory::MissingTool, json!({}));
        assert_eq!(escalation_body(&missing).unwrap().kind, "missing_tool");
        let sys = row(InterventionCategory::SystemFailure, json!({}));
        assert!(escalation_body(&sys).is_none());
    }
}
