//! `POST /api/v1/principals/sync` (§12.2): the community's own portal
//! pushes its members — a roster pushed instead of pulled. Up to
//! [`PRINCIPAL_SYNC_MAX`] entries, validated **all or nothing**: one bad
//! entry and the whole batch is refused with every bad entry listed, before
//! anything is written. Each entry is then upserted with the roster's rules
//! (keyed by Slack id, else ref, else email; `Identity::merge`), stamped
//! `traits.tier_source = api_sync`: a tier the portal set is what identity
//! resolve uses when no integration answers for that member, instead of the
//! channel's trust default (docs/decisions.md).

use std::collections::HashSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Identity;
use super::roster::Applied;
use crate::integrations::client::ResolvedPrincipal;
use crate::platform::tenancy;
use crate::platform::tiers::{MAX_TIER_NAME_CHARS, is_reserved_tier};

/// Entries one sync accepts at most (§12.2).
pub const PRINCIPAL_SYNC_MAX: usize = 500;
/// `traits.tier_source` of a principal the portal synced.
pub const TIER_SOURCE_API_SYNC: &str = "api_sync";
/// Longest ref accepted.
pub const MAX_REF_CHARS: usize = 255;
/// Longest display name accepted.
pub const MAX_DISPLAY_NAME_CHARS: usize = 200;
/// Longest profile context accepted.
pub const MAX_PROFILE_CONTEXT_CHARS: usize = 4_000;

/// One member as the portal knows them.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SyncEntry {
    /// The portal's stable id for the member (`principals.ref`).
    #[serde(rename = "ref")]
    pub ref_: String,
    /// Manifest tier (not a reserved one).
    pub tier: String,
    /// Name shown to the agent.
    #[serde(default)]
    pub display_name: Option<String>,
    /// Community admin.
    #[serde(default)]
    pub is_admin: bool,
    /// Email address.
    #[serde(default)]
    pub email: Option<String>,
    /// Slack user id (`U…` / `W…`).
    #[serde(default)]
    pub slack_user_id: Option<String>,
    /// Profile text for the system prompt.
    #[serde(default)]
    pub profile_context: Option<String>,
    /// Free-form traits (an object).
    #[serde(default)]
    pub traits: Option<Value>,
}

/// Why one entry was refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct EntryError {
    /// Position in `principals`.
    pub index: usize,
    /// The field at fault (`principals[3].email`).
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

/// What a sync wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SyncReport {
    /// New principals.
    pub created: usize,
    /// Principals rewritten.
    pub updated: usize,
    /// Entries whose principal already said the same.
    pub unchanged: usize,
    /// Entries matching a Slack principal by email only (kept as they are).
    pub read_only: usize,
    /// Entries that collided with a concurrent write (send them again).
    pub conflicts: usize,
}

fn is_slack_user_id(s: &str) -> bool {
    s.len() >= 3
        && (s.starts_with('U') || s.starts_with('W'))
        && s.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
}

fn is_email(s: &str) -> bool {
    let s = s.trim();
    match s.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !s.chars().any(char::is_whitespace)
                && !domain.contains('@')
        }
        None => false,
    }
}

/// Every problem of `entries`, in order; empty = the batch may be written.
/// Refs, Slack ids and emails must also be unique within the batch.
pub fn validate(entries: &[SyncEntry]) -> Vec<EntryError> {
    let mut errors = Vec::new();
    let mut refs = HashSet::new();
    let mut slack_ids = HashSet::new();
    let mut emails = HashSet::new();
    for (i, e) in entries.iter().enumerate() {
        let mut bad = |field: &str, message: String| {
            errors.push(EntryError {
                index: i,
                field: format!("principals[{i}].{field}"),
                message,
            })
        };
        let r = e.ref_.trim();
        if r.is_empty() {
            bad("ref", "must not be empty".into());
        } else if r.chars().count() > MAX_REF_CHARS {
            bad("ref", format!("is longer than {MAX_REF_CHARS} characters"));
        } else if !refs.insert(r.to_string()) {
            bad("ref", format!("{r:?} appears twice in the batch"));
        }
        let tier = e.tier.trim();
        if tier.is_empty() {
            bad("tier", "must not be empty".into());
        } else if tier.chars().count() > MAX_TIER_NAME_CHARS {
            bad(
                "tier",
                format!("is longer than {MAX_TIER_NAME_CHARS} characters"),
            );
        } else if is_reserved_tier(tier) {
            bad(
                "tier",
                format!("{tier:?} is a reserved tier; only Root assigns it"),
            );
        }
        if let Some(name) = &e.display_name
            && name.chars().count() > MAX_DISPLAY_NAME_CHARS
        {
            bad(
                "display_name",
                format!("is longer than {MAX_DISPLAY_NAME_CHARS} characters"),
            );
        }
        if let Some(email) = &e.email {
            let normalized = super::normalize_email(email);
            if !is_email(email) {
                bad("email", format!("{email:?} is not an email address"));
            } else if !emails.insert(normalized) {
                bad("email", format!("{email:?} appears twice in the batch"));
            }
        }
        if let Some(id) = &e.slack_user_id {
            if !is_slack_user_id(id.trim()) {
                bad(
                    "slack_user_id",
                    format!("{id:?} is not a Slack user id (U… or W…)"),
                );
            } else if !slack_ids.insert(id.trim().to_string()) {
                bad(
                    "slack_user_id",
                    format!("{id:?} appears twice in the batch"),
                );
            }
        }
        if let Some(p) = &e.profile_context
            && p.chars().count() > MAX_PROFILE_CONTEXT_CHARS
        {
            bad(
                "profile_context",
                format!("is longer than {MAX_PROFILE_CONTEXT_CHARS} characters"),
            );
        }
        if e.traits.as_ref().is_some_and(|t| !t.is_object()) {
            bad("traits", "must be a JSON object".into());
        }
    }
    errors
}

impl Identity {
    /// Upsert a validated batch into the current tenant's principals (call
    /// [`validate`] first). The tier cache is flushed afterwards so the
    /// next message already sees the synced tiers.
    pub async fn sync_principals(&self, entries: &[SyncEntry]) -> anyhow::Result<SyncReport> {
        let ctx = tenancy::current().ok_or_else(|| anyhow::anyhow!("no tenant context"))?;
        let started = self.clock.now();
        let mut report = SyncReport::default();
        for e in entries {
            let p = ResolvedPrincipal {
                principal_ref: e.ref_.trim().to_string(),
                display_name: e.display_name.clone(),
                tier: e.tier.trim().to_string(),
                is_admin: e.is_admin,
                traits: e.traits.clone(),
                email: e.email.as_deref().map(super::normalize_email),
                profile_context: e.profile_context.clone(),
                slack_user_id: e.slack_user_id.as_deref().map(|s| s.trim().to_string()),
            };
            match self
                .apply_roster_entry(ctx.id(), &p, started, TIER_SOURCE_API_SYNC)
                .await?
            {
                Applied::Created => report.created += 1,
                Applied::Updated => report.updated += 1,
                Applied::Unchanged => report.unchanged += 1,
                Applied::ReadOnly => report.read_only += 1,
                // Nothing is fresher than the sync's own start; a row written
                // meanwhile is a collision the client retries.
                Applied::Fresher | Applied::Conflict => report.conflicts += 1,
            }
        }
        self.invalidate_all();
        tracing::info!(tenant = %ctx.id(), ?report, "principals synced");
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(r: &str) -> SyncEntry {
        SyncEntry {
            ref_: r.into(),
            tier: "member".into(),
            display_name: None,
            is_admin: false,
            email: None,
            slack_user_id: None,
            profile_context: None,
            traits: None,
        }
    }

    #[test]
    fn every_bad_entry_is_listed_with_its_field() {
        let mut dup = entry("m-1");
        dup.email = Some("Ada@Example.org".into());
        let mut first = entry("m-1");
        first.email = Some("ada@example.org".into());
        let mut reserved = entry("m-3");
        reserved.tier = "unresolved".into();
        let mut slack = entry("m-4");
        slack.slack_user_id = Some("not-an-id".into());
        let mut traits = entry("m-5");
        traits.traits = Some(Value::from(3));
        let errors = validate(&[first, dup, reserved, slack, traits, entry("m-6")]);
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "principals[1].ref",
                "principals[1].email",
                "principals[2].tier",
                "principals[3].slack_user_id",
                "principals[4].traits",
            ]
        );
        assert!(validate(&[entry("a"), entry("b")]).is_empty());
    }

    #[test]
    fn slack_ids_and_emails_are_checked_by_shape() {
        assert!(is_slack_user_id("U043H11ES4V") && is_slack_user_id("W12"));
        assert!(!is_slack_user_id("C043H11ES4V") && !is_slack_user_id("u12"));
        assert!(is_email("ada@example.org"));
        for bad in [
            "ada",
            "ada@",
            "@example.org",
            "ada@example",
            "a da@example.org",
        ] {
            assert!(!is_email(bad), "{bad}");
        }
    }
}
