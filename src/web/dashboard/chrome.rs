//! What every dashboard page shows around its content: the community, the
//! environment switch, who is signed in, the page list, and a one-line
//! notice after a change (`?done=<code>`, mapped to fixed text here so no
//! request text is ever echoed into the page).

use super::Dashboard;

/// The pages in the navigation, in order.
const NAV: &[(&str, &str)] = &[
    ("/dashboard", "Overview"),
    ("/setup", "Setup"),
    ("/knowledge", "Knowledge"),
    ("/knowledge-sources", "Sources"),
    ("/conversations", "Conversations"),
    ("/interventions", "Interventions"),
    ("/chat", "Chat"),
    ("/traces", "Traces"),
    ("/agent", "Agent"),
    ("/integrations", "Integrations"),
    ("/community-builds", "Community builds"),
    ("/channels", "Channels"),
    ("/api-keys", "API keys"),
    ("/access", "Access"),
    ("/team", "Team"),
];

/// The platform pages, for platform admins only.
const PLATFORM_NAV: &[(&str, &str)] =
    &[("/platform", "Communities"), ("/platform/queues", "Queues")];

/// A community in the header's picker.
pub struct Community {
    /// The live tenant's id.
    pub id: String,
    /// Its display name.
    pub name: String,
    /// Whether the dashboard shows it (live or its dev shadow).
    pub current: bool,
}

/// What the layout shows on every page.
pub struct Chrome {
    /// Community name.
    pub community: String,
    /// `live` or `dev`.
    pub environment: &'static str,
    /// Signed-in address.
    pub email: String,
    /// `owner`, `admin`, `viewer`.
    pub role: String,
    /// The CSRF token of the forms.
    pub csrf: String,
    /// Whether forms that change things are shown.
    pub can_change: bool,
    /// Whether the platform pages are linked.
    pub platform_admin: bool,
    /// The navigation entry of this page.
    pub page: &'static str,
    /// The notice after a change.
    pub flash: Option<&'static str>,
    /// A platform admin viewing a community that is not theirs.
    pub impersonating: bool,
    /// The picker's communities (empty with a single membership).
    pub communities: Vec<Community>,
}

impl Chrome {
    /// From the request's dashboard user, for the page at `page`.
    pub fn of(d: &Dashboard, page: &'static str) -> Self {
        let u = &d.user;
        Chrome {
            community: u.tenant.display_name.clone(),
            environment: if u.is_dev() { "dev" } else { "live" },
            email: u.email.clone(),
            role: if u.platform_admin {
                "platform admin".into()
            } else {
                u.role.to_string()
            },
            csrf: d.csrf.clone(),
            can_change: u.can_change(),
            platform_admin: u.platform_admin,
            page,
            flash: None,
            impersonating: u.impersonating,
            communities: if u.memberships.len() > 1 {
                let live = u.tenant.live_tenant_id.unwrap_or(u.tenant.id);
                u.memberships
                    .iter()
                    .map(|m| Community {
                        id: m.tenant.id.to_string(),
                        name: m.tenant.display_name.clone(),
                        current: m.tenant.id == live,
                    })
                    .collect()
            } else {
                Vec::new()
            },
        }
    }

    /// With the notice for `done` (unknown codes show nothing).
    pub fn with_flash(mut self, done: Option<&str>) -> Self {
        self.flash = done.and_then(flash);
        self
    }

    /// Whether `path` is this page's navigation entry.
    pub fn is_page(&self, path: &str) -> bool {
        self.page == path
    }

    /// The navigation this user sees.
    pub fn nav(&self) -> Vec<(&'static str, &'static str)> {
        let platform = if self.platform_admin {
            PLATFORM_NAV
        } else {
            &[]
        };
        NAV.iter().chain(platform).copied().collect()
    }
}

/// The fixed text of each `?done=` code.
fn flash(code: &str) -> Option<&'static str> {
    Some(match code {
        "page-saved" => "The page was saved and is searchable.",
        "page-saved-indexing" => "The page was saved; search catches up in a moment.",
        "page-saved-too-short" => {
            "The page was saved, but it has under 20 characters of text, so search skips it. Add more text to make it findable."
        }
        "page-deleted" => "The page was deleted.",
        "key-revoked" => "The key was revoked; requests with it are refused from now on.",
        "agent-saved" => "The agent's identity was saved.",
        "prompt-saved" => "Your addition was saved; the agent uses it from its next turn.",
        "prompt-reset" => "The prompt is back to the built-in text.",
        "source-saved" => "The source was saved.",
        "source-deleted" => "The source was deleted; its pages stay, no longer synced.",
        "sync-started" => "A sync run started; reload to see its result.",
        "intervention-updated" => "The intervention was updated.",
        "access-saved" => "The access policy was saved; it applies from the next message.",
        "user-added" => "The user was added and can sign in now.",
        "role-changed" => "The role was changed; it applies at their next page load.",
        "user-removed" => "The user was removed; they lose access at their next page load.",
        "manifest-refreshed" => "The manifest was fetched and validated.",
        "integration-disabled" => {
            "The integration was disabled: no tools, identity answers or refreshes."
        }
        "override-saved" => "The tool override was saved; it applies from the next turn.",
        "slack-saved" => "The Slack credentials were checked with Slack and saved.",
        "email-saved" => "The email channel was saved.",
        "web-rotated" => "A new web chat link was made; the old one stopped working.",
        "community-created" => "The community was created; its owner can sign in now.",
        "community-suspended" => "The community was suspended.",
        "community-reactivated" => "The community is active again.",
        _ => return None,
    })
}
