//! Secure personal links at delivery (§7.3 `links_issue`, Appendix A.4).
//!
//! The model is told to write a destination's bare path exactly as listed;
//! before the reply is delivered every listed path it wrote is replaced by
//! a fresh URL the integration issues for this principal. A `?token=…` the
//! model wrote itself is discarded. When issuance fails the bare path stays
//! (it leads to the backend's login) and the failure is logged.

use std::sync::Arc;

use storage::Channel;

use crate::integrations::manifest::LinkDestinationDetail;
use crate::integrations::registry::{Integrations, PrimedIntegration};
use crate::prompts::system::LinkState;

/// The link-guidance state of a conversation (A.4): links are issued only
/// in Slack DMs and to resolved email senders; the API and web chat get no
/// link guidance.
pub fn link_state(
    channel: Channel,
    is_dm: bool,
    resolved: bool,
    has_destinations: bool,
) -> LinkState {
    if !has_destinations {
        return LinkState::None;
    }
    match channel {
        Channel::Slack if is_dm => LinkState::Available,
        Channel::Slack => LinkState::PublicChannel,
        Channel::Email if resolved => LinkState::Available,
        Channel::Email => LinkState::UnresolvedMember,
        Channel::Api | Channel::Web => LinkState::None,
    }
}

/// The link destinations this audience may be sent to, by integration.
pub struct LinkIssuer {
    integrations: Integrations,
    primed: Arc<Vec<PrimedIntegration>>,
    /// (index into `primed`, detail) for every allowed destination with a path.
    details: Vec<(usize, LinkDestinationDetail)>,
    public_guide_url: Option<String>,
}

impl LinkIssuer {
    /// The destinations of `primed` allowed on `channel` for `tier`.
    pub fn new(
        integrations: Integrations,
        primed: Arc<Vec<PrimedIntegration>>,
        channel: &str,
        tier: &str,
        is_admin: bool,
    ) -> Self {
        let mut details = Vec::new();
        let mut public_guide_url = None;
        for (i, p) in primed.iter().enumerate() {
            let d = p.link_destinations_for(channel, tier, is_admin);
            if public_guide_url.is_none() {
                public_guide_url = d.public_guide_url.filter(|u| !u.trim().is_empty());
            }
            for detail in d.details {
                let has_path = detail.path.as_deref().is_some_and(|p| p.starts_with('/'));
                if has_path
                    && !details
                        .iter()
                        .any(|(_, x): &(usize, LinkDestinationDetail)| x.path == detail.path)
                {
                    details.push((i, detail));
                }
            }
        }
        LinkIssuer {
            integrations,
            primed,
            details,
            public_guide_url,
        }
    }

    /// The allowed destinations (with paths).
    pub fn details(&self) -> Vec<LinkDestinationDetail> {
        self.details.iter().map(|(_, d)| d.clone()).collect()
    }

    /// The manifest's public guide, for the fallback sentence.
    pub fn public_guide_url(&self) -> Option<String> {
        self.public_guide_url.clone()
    }

    /// `text` with every listed path the model wrote replaced by a freshly
    /// issued URL for `principal_ref`.
    pub async fn attach_tokens(&self, text: &str, principal_ref: &str) -> String {
        let mut out = text.to_string();
        for (i, detail) in &self.details {
            let Some(path) = detail.path.as_deref() else {
                continue;
            };
            if find_path(&out, path).is_none() {
                continue;
            }
            let primed = &self.primed[*i];
            match self
                .integrations
                .issue_link(primed.name(), &detail.destination, principal_ref)
                .await
            {
                Ok(url) => out = replace_path(&out, path, &url),
                Err(e) => tracing::warn!(
                    integration = %primed.name(),
                    destination = %detail.destination,
                    error = %e,
                    "secure link not issued; the bare path stays"
                ),
            }
        }
        out
    }
}

fn is_open(c: char) -> bool {
    c.is_whitespace() || matches!(c, '(' | '<' | '|' | '[' | '"' | '\'' | '`' | ':')
}

/// A character that would make the match part of a longer path.
fn continues_path(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '/' | '-' | '_' | '#' | '%' | '=' | '&')
}

/// The byte range of the first standalone occurrence of `path` (plus a
/// model-written `?token=…`), if any.
fn find_path(text: &str, path: &str) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(pos) = text[from..].find(path) {
        let start = from + pos;
        let end = start + path.len();
        let before_ok = text[..start].chars().next_back().is_none_or(is_open);
        let rest = &text[end..];
        // A trailing `.` ends a sentence unless a path segment follows.
        let after_ok = rest.chars().next().is_none_or(|c| !continues_path(c))
            && !(rest.starts_with('.')
                && rest[1..].chars().next().is_some_and(char::is_alphanumeric));
        if before_ok && after_ok {
            let mut end = end;
            if let Some(q) = rest.strip_prefix("?token=") {
                let len = q
                    .find(|c: char| c.is_whitespace() || matches!(c, '>' | ')' | '|' | ']'))
                    .unwrap_or(q.len());
                end += "?token=".len() + len;
            } else if rest.starts_with('?') || rest.starts_with('/') {
                from = end;
                continue;
            }
            return Some((start, end));
        }
        from = end;
    }
    None
}

fn replace_path(text: &str, path: &str, url: &str) -> String {
    let mut out = String::with_capacity(text.len() + url.len());
    let mut rest = text;
    while let Some((s, e)) = find_path(rest, path) {
        out.push_str(&rest[..s]);
        out.push_str(url);
        rest = &rest[e..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_paths_are_replaced_where_they_stand_alone() {
        let u = "https://members.example.org/dashboard?token=fresh";
        assert_eq!(
            replace_path("Open /dashboard to see it.", "/dashboard", u),
            format!("Open {u} to see it.")
        );
        assert_eq!(
            replace_path(
                "See <dashboard|/dashboard> or (/dashboard)",
                "/dashboard",
                u
            ),
            format!("See <dashboard|{u}> or ({u})")
        );
        // A model-written token is discarded.
        assert_eq!(
            replace_path("Go to /dashboard?token=made-up now", "/dashboard", u),
            format!("Go to {u} now")
        );
        // Other paths that merely start the same are left alone.
        for keep in [
            "/dashboards",
            "/dashboard/settings",
            "x/dashboard",
            "/dashboard.html",
        ] {
            assert_eq!(replace_path(keep, "/dashboard", u), keep);
        }
    }

    #[test]
    fn link_state_follows_channel_and_identity() {
        assert_eq!(
            link_state(Channel::Slack, true, true, true),
            LinkState::Available
        );
        assert_eq!(
            link_state(Channel::Slack, false, true, true),
            LinkState::PublicChannel
        );
        assert_eq!(
            link_state(Channel::Email, true, false, true),
            LinkState::UnresolvedMember
        );
        assert_eq!(
            link_state(Channel::Email, true, true, true),
            LinkState::Available
        );
        assert_eq!(link_state(Channel::Web, true, true, true), LinkState::None);
        assert_eq!(
            link_state(Channel::Slack, true, true, false),
            LinkState::None
        );
    }
}
