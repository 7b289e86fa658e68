//! `/access` (§14.2, §9): the access policy editor for `settings.access` —
//! the Slack and email modes, the tier channel trust grants, the trusted
//! domains and addresses, and whether dashboard users are trusted. Every
//! field goes through `platform::access_policy::update_access_policy` (the
//! validator `root tenant settings --set` uses, inside one write
//! transaction that re-reads the tenant row; the dashboard chat's
//! `update_access_policy` tool calls it too). Nothing typed is lost on a
//! refusal: the page comes back 422 with the field's error. After a save the tenant cache
//! and the identity cache forget what they held, so channel trust is
//! recomputed under the new policy at the next message.
//!
//! `/access/matrix`: the authority matrix — every tool × audience ×
//! surface, allowed or not and why — from `web::api::catalog`, the function
//! behind `GET /api/v1/tools`, so the page and the API cannot disagree.
//! The catalog gives the reason of every allowed cell; a denied cell's
//! reason is read from the same row (not built, wrong channel, shadowed)
//! and the §5.2 / §7.5 rule that left it out.

use askama::Template;
use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use serde::Deserialize;

use super::{Chrome, Dashboard, Done, PageForm, failed, harden};
use crate::platform::access_policy::{
    AccessChange, AccessErrors, AccessUpdate, mode_names, update_access_policy,
};
use crate::platform::settings::AccessPolicy;
use crate::state::AppState;
use crate::tools::gating::{Surface, Tier, audience};
use crate::web::api::{RowSource, ToolCatalogResponse, ToolRow, catalog};
use crate::web::pages::render_page;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/access", get(show).post(save))
        .route("/access/matrix", get(matrix))
}

/// The policy as the form shows it (typed values kept as typed).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct AccessForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    slack: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    default_tier: String,
    /// One per line (commas and spaces also separate).
    #[serde(default)]
    email_domains: String,
    /// One per line (commas and spaces also separate).
    #[serde(default)]
    email_addresses: String,
    /// Present when the box is ticked.
    #[serde(default)]
    dashboard_users: Option<String>,
}

impl AccessForm {
    fn of(p: &AccessPolicy) -> AccessForm {
        let (slack, email) = mode_names(p);
        AccessForm {
            csrf: String::new(),
            slack: slack.into(),
            email: email.into(),
            default_tier: p.default_tier.clone(),
            email_domains: p.email_domains.join("\n"),
            email_addresses: p.email_addresses.join("\n"),
            dashboard_users: p.dashboard_users.then(|| "on".into()),
        }
    }

    /// The form as a change of every field.
    fn change(&self) -> AccessChange {
        AccessChange {
            slack: Some(self.slack.clone()),
            email: Some(self.email.clone()),
            default_tier: Some(self.default_tier.clone()),
            email_domains: Some(entries(&self.email_domains)),
            email_addresses: Some(entries(&self.email_addresses)),
            dashboard_users: Some(self.dashboard_users_on()),
        }
    }

    fn dashboard_users_on(&self) -> bool {
        self.dashboard_users.is_some()
    }
}

/// A textarea's entries: lines (commas and spaces also separate), blanks
/// dropped.
fn entries(raw: &str) -> Vec<String> {
    raw.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

#[derive(Template)]
#[template(path = "dashboard/access.html")]
struct AccessPage {
    chrome: Chrome,
    form: AccessForm,
    errors: AccessErrors,
    dev: bool,
}

fn access_page(d: &Dashboard, chrome: Chrome, form: AccessForm, errors: AccessErrors) -> Response {
    let status = if errors.any() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    let body = AccessPage {
        chrome,
        form,
        errors,
        dev: d.user.is_dev(),
    };
    harden((status, render_page(&body, "access policy", ())).into_response())
}

async fn show(d: Dashboard, Query(done): Query<Done>) -> Response {
    let chrome = Chrome::of(&d, "/access").with_flash(done.done.as_deref());
    let form = AccessForm::of(&AccessPolicy::from_settings(&d.user.tenant.settings.0));
    access_page(&d, chrome, form, AccessErrors::default())
}

async fn save(
    State(state): State<AppState>,
    d: Dashboard,
    PageForm(form): PageForm<AccessForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    let id = d.user.tenant.id;
    let now = state.clock.now();
    let result = update_access_policy(&state.store, id, form.change(), now).await;
    match result {
        Ok(AccessUpdate::Saved(tenant)) => {
            state.tenants.invalidate(&tenant);
            // Channel trust is recomputed at each resolve; forget the cached
            // ones so the new policy holds from the next message.
            state.identity.invalidate_all();
            tracing::info!(tenant = %tenant.id, by = %d.user.email, "access policy saved from the dashboard");
            Redirect::to("/access?done=access-saved").into_response()
        }
        Ok(AccessUpdate::Invalid(errors)) => {
            let chrome = Chrome::of(&d, "/access");
            access_page(&d, chrome, form, errors)
        }
        Ok(AccessUpdate::NoTenant) => failed("The community was not found."),
        Err(e) => {
            tracing::error!(tenant = %id, error = %e, "saving the access policy failed");
            failed("The access policy could not be saved.")
        }
    }
}

/// One cell: may this audience use the tool on this surface, and why.
pub struct Cell {
    audience: String,
    allowed: bool,
    reason: String,
}

/// One tool on one surface, across the audiences.
pub struct MatrixRow {
    name: String,
    source: String,
    description: String,
    cells: Vec<Cell>,
}

/// One surface's table.
pub struct SurfaceTable {
    name: &'static str,
    rows: Vec<MatrixRow>,
}

#[derive(Template)]
#[template(path = "dashboard/matrix.html")]
struct MatrixPage {
    chrome: Chrome,
    audiences: Vec<String>,
    default_tier: String,
    surfaces: Vec<SurfaceTable>,
}

/// The gating surface of a catalog surface name.
fn surface_of(name: &str) -> Option<Surface> {
    Some(match name {
        "slack" => Surface::Slack,
        "email" => Surface::Email,
        "api" => Surface::Api,
        // The dashboard's /chat is the web surface with the admin config
        // tools added (`GateInput::dashboard_chat`).
        "web" | "dashboard_chat" => Surface::Web,
        "public_email" => Surface::PublicEmail,
        _ => return None,
    })
}

/// An audience of the catalog: its label, the access level it is judged
/// with, and whether as an admin (the catalog's last audience, `admin`,
/// is the default tier as an admin).
struct Audience<'a> {
    label: &'a str,
    level: &'a str,
    admin: bool,
}

/// Why `row` is not offered to `who` on `surface` (the catalog gives the
/// reasons of allowed cells only): the row's own facts first, then the
/// §5.2 rule (core tools) or the §7.5 audience rule (integration tools).
fn why_not(row: &ToolRow, who: &Audience<'_>, surface: Surface, surface_name: &str) -> String {
    if let Some(r) = row
        .shadowed
        .as_ref()
        .and_then(|m| m.get(who.label))
        .and_then(|m| m.get(surface_name))
    {
        return format!("not offered: {r}");
    }
    let channel = surface.channel().as_str();
    let off_channel = row
        .channels
        .as_ref()
        .is_some_and(|cs| !cs.iter().any(|c| c == channel));
    let (tier, admin) = audience(surface, Some(who.level), who.admin);
    match &row.source {
        RowSource::Platform(group) => {
            if !row.implemented {
                return "not built in this version: offered to nobody".into();
            }
            if off_channel {
                let cs = row.channels.as_deref().unwrap_or_default().join(", ");
                return format!("a {cs} tool: not offered on {channel}");
            }
            if *group == "admin_config" {
                return "admin config: offered on the dashboard /chat only".into();
            }
            if *group == "admin_messaging" {
                return if surface == Surface::Api {
                    "admin messaging: the API surface never acts as an admin".into()
                } else {
                    "admin messaging: offered to admins on Slack only".into()
                };
            }
            match tier {
                Tier::Public | Tier::PublicEmail => format!(
                    "{}public tier: escalation only, plus knowledge search when the manifest grants it with source types",
                    if surface == Surface::PublicEmail {
                        "the public email surface is the "
                    } else {
                        ""
                    }
                ),
                Tier::Unresolved => format!(
                    "reserved tier unresolved: not in its fixed tool set{}",
                    if who.level == "unresolved" {
                        String::new()
                    } else {
                        format!(" ({} is not a usable tier name)", who.level)
                    }
                ),
                Tier::Named(_) => {
                    format!("not in the manifest's core_tools allowlist for tier {tier}")
                }
            }
        }
        RowSource::Integration { integration } => {
            if off_channel {
                return format!("integration {integration}: not declared for {channel}");
            }
            if surface == Surface::PublicEmail {
                return format!(
                    "integration {integration}: not declared for the public or public_email tier"
                );
            }
            let as_whom = if admin {
                format!("tier {tier} or admins")
            } else if who.admin {
                format!("tier {tier} (the API surface never acts as an admin)")
            } else {
                format!("tier {tier}")
            };
            format!("integration {integration}: its tiers and admin_only do not admit {as_whom}")
        }
        RowSource::CommunityBuild { community_build } => {
            if off_channel {
                return format!("community build {community_build}: not declared for {channel}");
            }
            if surface == Surface::PublicEmail {
                return format!(
                    "community build {community_build}: not declared for the public or public_email tier"
                );
            }
            format!("community build {community_build}: its tiers do not admit tier {tier}")
        }
    }
}

/// The catalog as one table per surface.
fn tables(cat: &ToolCatalogResponse, default_tier: &str) -> Vec<SurfaceTable> {
    let last = cat.audiences.len().saturating_sub(1);
    let audiences: Vec<Audience<'_>> = cat
        .audiences
        .iter()
        .enumerate()
        .map(|(i, label)| {
            let admin = i == last && label == "admin";
            Audience {
                label,
                level: if admin { default_tier } else { label },
                admin,
            }
        })
        .collect();
    cat.surfaces
        .iter()
        .filter_map(|name| surface_of(name).map(|s| (*name, s)))
        .map(|(name, surface)| SurfaceTable {
            name,
            rows: cat
                .tools
                .iter()
                .map(|row| MatrixRow {
                    name: row.name.clone(),
                    source: match &row.source {
                        RowSource::Platform(p) => (*p).to_string(),
                        RowSource::Integration { integration } => {
                            format!("integration {integration}")
                        }
                        RowSource::CommunityBuild { community_build } => {
                            format!("community build {community_build}")
                        }
                    },
                    description: row.description.clone().unwrap_or_default(),
                    cells: audiences
                        .iter()
                        .map(
                            |who| match row.allowed.get(who.label).and_then(|m| m.get(name)) {
                                Some(reason) => Cell {
                                    audience: who.label.to_string(),
                                    allowed: true,
                                    reason: reason.clone(),
                                },
                                None => Cell {
                                    audience: who.label.to_string(),
                                    allowed: false,
                                    reason: why_not(row, who, surface, name),
                                },
                            },
                        )
                        .collect(),
                })
                .collect(),
        })
        .collect()
}

async fn matrix(State(state): State<AppState>, d: Dashboard) -> Response {
    let chrome = Chrome::of(&d, "/access");
    let cat = match d.scoped(catalog(&state)).await {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(tenant = %d.user.tenant.id, error = %e, "authority matrix failed");
            return failed("The tool catalog could not be computed.");
        }
    };
    let default_tier = AccessPolicy::from_settings(&d.user.tenant.settings.0).default_tier;
    let body = MatrixPage {
        chrome,
        surfaces: tables(&cat, &default_tier),
        audiences: cat.audiences,
        default_tier,
    };
    harden(render_page(&body, "authority matrix", ()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::access_policy::apply_access_change;
    use serde_json::json;

    fn form(tier: &str, domains: &str) -> AccessForm {
        AccessForm {
            slack: "integration".into(),
            email: "domains".into(),
            default_tier: tier.into(),
            email_domains: domains.into(),
            email_addresses: "Ada@Example.org\n\n".into(),
            dashboard_users: None,
            ..AccessForm::default()
        }
    }

    #[test]
    fn the_form_goes_through_the_settings_validator() {
        let mut s = json!({"persona": "Hi"});
        let refused = apply_access_change(
            &mut s,
            &form("partner", "acme.org\r\nexample.com, b.org").change(),
        );
        assert!(refused.is_none(), "{refused:?}");
        assert_eq!(
            s,
            json!({"persona": "Hi", "access": {"slack": "integration", "email": "domains",
                "default_tier": "partner", "email_domains": ["acme.org", "example.com", "b.org"],
                "email_addresses": ["ada@example.org"], "dashboard_users": false}})
        );
        let p = AccessPolicy::from_settings(&s);
        assert_eq!(
            AccessForm::of(&p).email_domains,
            "acme.org\nexample.com\nb.org"
        );

        let e =
            apply_access_change(&mut json!({}), &form("public", "not a domain").change()).unwrap();
        assert!(e.default_tier.unwrap().contains("reserved"));
        assert!(e.email_domains.is_some());
        assert!(e.slack.is_none() && e.email_addresses.is_none());
    }
}
