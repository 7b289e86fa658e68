//! Dashboard user tools of the dashboard chat (§5.1, §14.1): list, invite,
//! change the role of and remove the community's dashboard users — the
//! `auth::team` functions the `/team` page calls, with the same rules
//! judged against the role of who asked (the turn's dashboard user): an
//! admin never makes or touches an owner, the last owner stays. Users
//! belong to the live community, also when the dashboard shows its dev
//! shadow. Inviting adds the address to the sign-in allowlist and, when a
//! mail sender is configured, mails a sign-in link; the result says
//! whether one went out.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use storage::{Store, Tenant, TenantUser, key};
use uuid::Uuid;

use super::sources::NoArgs;
use super::{AdminConfig, broke, changed};
use crate::agent::ToolResult;
use crate::auth::team::{
    LAST_OWNER, NOT_OWNER, ROLE_CHOICES, TeamActor, TeamOutcome, UserRef, add_user, list_users,
    live_tenant_id, may_manage, parse_role, remove_user, set_role,
};
use crate::auth::{LinkDelivery, normalize_email};
use crate::platform::tool_names as names;
use crate::tools::{TurnContext, TypedTool};

impl AdminConfig {
    /// Who asked, or the refusal when the turn does not say.
    fn caller(&self) -> Result<&TeamActor, ToolResult> {
        self.caller.as_deref().ok_or_else(|| {
            ToolResult::failed(
                "Dashboard users are managed by a signed-in owner or admin on the dashboard; \
                 this conversation does not say who is asking, so nothing was changed.",
            )
        })
    }
}

impl AdminConfig {
    /// Who asked and the live tenant whose users they manage, or the
    /// failed result to answer with.
    async fn asked(&self, ctx: &TurnContext, tool: &str) -> Result<(&TeamActor, Uuid), ToolResult> {
        let by = self.caller()?;
        Ok((by, live_tenant(ctx, tool).await?))
    }
}

/// The live tenant whose users the turn's tenant has.
async fn live_tenant(ctx: &TurnContext, tool: &str) -> Result<Uuid, ToolResult> {
    match ctx
        .services
        .store
        .get::<Tenant>(None, key().uuid(ctx.tenant_id))
        .await
    {
        Ok(Some(t)) => Ok(live_tenant_id(&t)),
        Ok(None) => Err(broke(tool, "the turn's tenant row is missing")),
        Err(e) => Err(broke(tool, e)),
    }
}

/// A user for the model.
fn summary(u: &TenantUser, by: &TeamActor) -> Value {
    json!({
        "email": u.email,
        "role": u.role.as_str(),
        "added_at": u.created_at,
        "is_you": u.email.trim().eq_ignore_ascii_case(&by.email),
        "you_may_change": may_manage(by, Some(u.role), None),
    })
}

/// The failed result of a refused change of `email`.
fn refused(outcome: TeamOutcome, email: &str) -> ToolResult {
    ToolResult::failed(match outcome {
        TeamOutcome::Missing => format!(
            "{email} is not a dashboard user of this community; list the users for the right address."
        ),
        TeamOutcome::NotAllowed => NOT_OWNER.to_string(),
        TeamOutcome::LastOwner => LAST_OWNER.to_string(),
        TeamOutcome::Duplicate => format!(
            "{email} is already a dashboard user of this community; change their role with \
             set_dashboard_user_role instead."
        ),
        TeamOutcome::Done(_) => "The change was made.".to_string(),
    })
}

/// `list_dashboard_users()`.
pub struct ListDashboardUsers(pub AdminConfig);

#[async_trait]
impl TypedTool for ListDashboardUsers {
    type Args = NoArgs;
    fn name(&self) -> &'static str {
        names::LIST_DASHBOARD_USERS
    }
    fn description(&self) -> &'static str {
        "List the community's dashboard users (who may sign in to the dashboard) with their \
         roles — owner, admin, viewer or member — and whether you may change each."
    }
    async fn run(&self, _: NoArgs, ctx: &TurnContext) -> ToolResult {
        let (by, tenant) = match self.0.asked(ctx, self.name()).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        match list_users(&ctx.services.store, tenant).await {
            Ok(rows) => {
                let users: Vec<Value> = rows.iter().map(|u| summary(u, by)).collect();
                ToolResult::ok(json!({"users": users, "count": users.len()}))
            }
            Err(e) => broke(self.name(), e),
        }
    }
}

/// A user and a role.
#[derive(Deserialize, JsonSchema)]
pub struct UserRoleArgs {
    /// The person's email address.
    pub email: String,
    /// `owner`, `admin` (changes settings), `viewer` (reads the dashboard)
    /// or `member` (no dashboard; trusted by email when the access policy
    /// trusts dashboard users).
    pub role: String,
}

/// `invite_dashboard_user(email, role)`.
pub struct InviteDashboardUser(pub AdminConfig);

#[async_trait]
impl TypedTool for InviteDashboardUser {
    type Args = UserRoleArgs;
    fn name(&self) -> &'static str {
        names::INVITE_DASHBOARD_USER
    }
    fn description(&self) -> &'static str {
        "Invite someone to the dashboard: add their address with a role to the sign-in \
         allowlist and, when this server can send mail, email them a sign-in link. The result \
         says whether a link was sent."
    }
    async fn run(&self, a: UserRoleArgs, ctx: &TurnContext) -> ToolResult {
        let Some(email) = normalize_email(&a.email) else {
            return ToolResult::failed(format!(
                "{:?} is not one email address; give one like ada@example.org.",
                a.email.trim()
            ));
        };
        let Some(role) = parse_role(&a.role) else {
            return ToolResult::failed(ROLE_CHOICES);
        };
        let (by, tenant) = match self.0.asked(ctx, self.name()).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let now = ctx.services.clock.now();
        let store = &ctx.services.store;
        match add_user(store, by, tenant, &email, role, now).await {
            Ok(TeamOutcome::Done(_)) => {}
            Ok(other) => return refused(other, &email),
            Err(e) => return broke(self.name(), e),
        }
        changed(ctx, self.name(), &format!("{email} added as {role}"));
        let auth = &self.0.inner.auth;
        let (sent, note) = if !auth.mail_configured() {
            (
                false,
                "No sign-in link was sent: this server has no mail sender configured. An \
                 operator can print one with `root auth link`.",
            )
        } else {
            match auth.request_link(&email).await {
                Ok(LinkDelivery::Sent) => (true, "A sign-in link was emailed to them."),
                Ok(LinkDelivery::SendFailed) => (
                    false,
                    "The sign-in link could not be mailed (the mail provider refused); they can \
                     ask for one on the dashboard's sign-in page.",
                ),
                Ok(LinkDelivery::MailNotConfigured | LinkDelivery::NotAllowed) => (
                    false,
                    "No sign-in link was sent; they can ask for one on the dashboard's sign-in page.",
                ),
                Err(e) => {
                    tracing::warn!(error = %e, "invited user's sign-in link not issued");
                    (
                        false,
                        "No sign-in link was sent (it could not be issued right now); they can \
                         ask for one on the dashboard's sign-in page.",
                    )
                }
            }
        };
        ToolResult::ok(json!({
            "email": email,
            "role": role.as_str(),
            "added": true,
            "sign_in_link_sent": sent,
            "note": note,
        }))
    }
}

/// `set_dashboard_user_role(email, role)`.
pub struct SetDashboardUserRole(pub AdminConfig);

#[async_trait]
impl TypedTool for SetDashboardUserRole {
    type Args = UserRoleArgs;
    fn name(&self) -> &'static str {
        names::SET_DASHBOARD_USER_ROLE
    }
    fn description(&self) -> &'static str {
        "Change a dashboard user's role (owner, admin, viewer or member). Only an owner makes \
         or changes an owner, and the last owner stays an owner."
    }
    async fn run(&self, a: UserRoleArgs, ctx: &TurnContext) -> ToolResult {
        let Some(role) = parse_role(&a.role) else {
            return ToolResult::failed(ROLE_CHOICES);
        };
        let email = a.email.trim().to_lowercase();
        let (by, tenant) = match self.0.asked(ctx, self.name()).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let user = UserRef::Email(email.clone());
        match set_role(&ctx.services.store, by, tenant, user, role).await {
            Ok(TeamOutcome::Done(u)) => {
                changed(ctx, self.name(), &format!("{} is now {}", u.email, u.role));
                ToolResult::ok(json!({"email": u.email, "role": u.role.as_str()}))
            }
            Ok(other) => refused(other, &email),
            Err(e) => broke(self.name(), e),
        }
    }
}

/// A user.
#[derive(Deserialize, JsonSchema)]
pub struct UserArgs {
    /// The dashboard user's email address.
    pub email: String,
}

/// `remove_dashboard_user(email)`.
pub struct RemoveDashboardUser(pub AdminConfig);

#[async_trait]
impl TypedTool for RemoveDashboardUser {
    type Args = UserArgs;
    fn name(&self) -> &'static str {
        names::REMOVE_DASHBOARD_USER
    }
    fn description(&self) -> &'static str {
        "Remove someone from the dashboard (they can no longer sign in to this community). \
         Only an owner removes an owner, and the last owner cannot be removed."
    }
    async fn run(&self, a: UserArgs, ctx: &TurnContext) -> ToolResult {
        let email = a.email.trim().to_lowercase();
        let (by, tenant) = match self.0.asked(ctx, self.name()).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let user = UserRef::Email(email.clone());
        match remove_user(&ctx.services.store, by, tenant, user).await {
            Ok(TeamOutcome::Done(u)) => {
                changed(ctx, self.name(), &format!("{} removed", u.email));
                ToolResult::ok(json!({"email": u.email, "removed": true}))
            }
            Ok(other) => refused(other, &email),
            Err(e) => broke(self.name(), e),
        }
    }
}
