//! Changing a community's access policy (§9, `settings.access`): the one
//! function the dashboard's `/access` page and the dashboard chat's
//! `update_access_policy` tool (§5.1) call. Every given field goes through
//! [`apply_setting`], the validator `root tenant settings --set` uses,
//! inside one write transaction that re-reads the tenant row; a refusal
//! reports what was wrong with each field (all of them, not the first) and
//! changes nothing. The caller forgets what its caches held (the tenant
//! cache, the identity cache) after a save, so channel trust is recomputed
//! under the new policy at the next message.

use serde_json::Value;
use storage::{Json, RedbStore, StorageError, Tenant, Ts, key};
use uuid::Uuid;

use super::settings::{AccessPolicy, EmailAccess, SlackAccess, apply_setting};

/// A change to the policy: each `Some` field is set, each `None` kept.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AccessChange {
    /// `open` or `integration`.
    pub slack: Option<String>,
    /// `domains` or `integration`.
    pub email: Option<String>,
    /// The tier channel trust grants (not a reserved tier).
    pub default_tier: Option<String>,
    /// Trusted domains.
    pub email_domains: Option<Vec<String>>,
    /// Trusted addresses.
    pub email_addresses: Option<Vec<String>>,
    /// Whether dashboard users are trusted.
    pub dashboard_users: Option<bool>,
}

/// What was wrong with each field of a refused change.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AccessErrors {
    /// `slack`.
    pub slack: Option<String>,
    /// `email`.
    pub email: Option<String>,
    /// `default_tier`.
    pub default_tier: Option<String>,
    /// `email_domains`.
    pub email_domains: Option<String>,
    /// `email_addresses`.
    pub email_addresses: Option<String>,
    /// `dashboard_users`.
    pub dashboard_users: Option<String>,
}

impl AccessErrors {
    /// Whether any field was refused.
    pub fn any(&self) -> bool {
        self.fields().iter().any(|(_, e)| e.is_some())
    }

    /// `(field, error)` in form order.
    pub fn fields(&self) -> [(&'static str, &Option<String>); 6] {
        [
            ("slack", &self.slack),
            ("email", &self.email),
            ("default_tier", &self.default_tier),
            ("email_domains", &self.email_domains),
            ("email_addresses", &self.email_addresses),
            ("dashboard_users", &self.dashboard_users),
        ]
    }

    /// Every refusal as `field: message`, joined by `; `.
    pub fn summary(&self) -> String {
        self.fields()
            .iter()
            .filter_map(|(f, e)| e.as_ref().map(|e| format!("{f}: {e}")))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// The policy's mode names, as the settings store them.
pub fn mode_names(p: &AccessPolicy) -> (&'static str, &'static str) {
    (
        match p.slack {
            SlackAccess::Open => "open",
            SlackAccess::Integration => "integration",
        },
        match p.email {
            EmailAccess::Domains => "domains",
            EmailAccess::Integration => "integration",
        },
    )
}

/// Write `change` into `settings` through the settings validator, every
/// given field checked: `None` when all were good, else what was wrong with
/// each (`settings` may then be partly written: discard it).
pub fn apply_access_change(settings: &mut Value, change: &AccessChange) -> Option<AccessErrors> {
    let mut errors = AccessErrors::default();
    let list = |v: &Vec<String>| Value::Array(v.iter().cloned().map(Value::String).collect());
    let fields: [(&str, Option<Value>, &mut Option<String>); 6] = [
        (
            "access.slack",
            change
                .slack
                .as_ref()
                .map(|s| Value::String(s.trim().into())),
            &mut errors.slack,
        ),
        (
            "access.email",
            change
                .email
                .as_ref()
                .map(|s| Value::String(s.trim().into())),
            &mut errors.email,
        ),
        (
            "access.default_tier",
            change.default_tier.clone().map(Value::String),
            &mut errors.default_tier,
        ),
        (
            "access.email_domains",
            change.email_domains.as_ref().map(list),
            &mut errors.email_domains,
        ),
        (
            "access.email_addresses",
            change.email_addresses.as_ref().map(list),
            &mut errors.email_addresses,
        ),
        (
            "access.dashboard_users",
            change.dashboard_users.map(Value::Bool),
            &mut errors.dashboard_users,
        ),
    ];
    let mut bad = false;
    for (path, value, slot) in fields {
        let Some(value) = value else { continue };
        if let Err(e) = apply_setting(settings, path, &value) {
            *slot = Some(e);
            bad = true;
        }
    }
    bad.then_some(errors)
}

/// How a policy change ended.
#[derive(Debug)]
pub enum AccessUpdate {
    /// Saved: the tenant row as it now is.
    Saved(Tenant),
    /// Refused: nothing changed.
    Invalid(AccessErrors),
    /// No such tenant.
    NoTenant,
}

/// Apply `change` to the tenant `id`'s settings in one write transaction
/// that re-reads the row (stamping `updated_at` with `now`).
pub async fn update_access_policy(
    store: &RedbStore,
    id: Uuid,
    change: AccessChange,
    now: Ts,
) -> Result<AccessUpdate, StorageError> {
    let (outcome, _) = store
        .transact(move |tx| {
            let Some(mut tenant) = tx.get::<Tenant>(None, key().uuid(id))? else {
                return Ok(AccessUpdate::NoTenant);
            };
            let mut settings = tenant.settings.0.clone();
            if let Some(errors) = apply_access_change(&mut settings, &change) {
                return Ok(AccessUpdate::Invalid(errors));
            }
            tenant.settings = Json(settings);
            tenant.updated_at = now;
            tx.update(&tenant)?;
            Ok(AccessUpdate::Saved(tenant))
        })
        .await?;
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_given_fields_change_and_every_refusal_is_reported() {
        let mut s = json!({"access": {"slack": "integration", "default_tier": "partner"}});
        let change = AccessChange {
            email_domains: Some(vec!["Acme.org".into()]),
            dashboard_users: Some(false),
            ..AccessChange::default()
        };
        assert_eq!(apply_access_change(&mut s, &change), None);
        assert_eq!(s["access"]["slack"], "integration");
        assert_eq!(s["access"]["default_tier"], "partner");
        assert_eq!(s["access"]["email_domains"], json!(["acme.org"]));
        assert_eq!(s["access"]["dashboard_users"], json!(false));

        let bad = AccessChange {
            slack: Some("everyone".into()),
            default_tier: Some("public".into()),
            ..AccessChange::default()
        };
        let e = apply_access_change(&mut json!({}), &bad).unwrap();
        assert!(e.any());
        assert!(e.slack.is_some() && e.default_tier.is_some());
        assert!(e.email.is_none());
        let summary = e.summary();
        assert!(summary.starts_with("slack: "), "{summary}");
        assert!(summary.contains("; default_tier: "), "{summary}");
        assert!(!AccessErrors::default().any());
    }
}
