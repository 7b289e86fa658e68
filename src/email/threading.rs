//! Reply threading (RFC 5322 §3.6.4) and reply recipients.
//!
//! - `In-Reply-To` = the parent's Message-ID.
//! - `References` = the parent's References (or, when it has none, its
//!   single In-Reply-To) followed by the parent's Message-ID.
//! - The subject carries exactly one `Re: ` (`RE:`, `re:`, `Re[2]:`,
//!   `Re(3):` and repeats of them collapse into it).
//! - To = the parent's Reply-To, else its From; Cc = the thread's To + Cc
//!   minus Root's own addresses and the new To, without duplicates.

use serde::{Deserialize, Serialize};

use super::inbound::{InboundEmail, Mailbox};

/// The threading headers and subject of a reply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplyThreading {
    /// The parent's Message-ID (none when it had none).
    pub in_reply_to: Option<String>,
    /// The chain, oldest first, ending with the parent's Message-ID.
    pub references: Vec<String>,
    /// `Re: <subject>`.
    pub subject: String,
}

/// The headers of a reply to `parent`.
pub fn reply_headers(parent: &InboundEmail) -> ReplyThreading {
    let mut references: Vec<String> = if parent.references.is_empty() {
        parent.in_reply_to.iter().cloned().collect()
    } else {
        parent.references.clone()
    };
    if let Some(id) = &parent.message_id {
        references.retain(|r| r != id);
        references.push(id.clone());
    }
    ReplyThreading {
        in_reply_to: parent.message_id.clone(),
        references,
        subject: reply_subject(&parent.subject),
    }
}

/// `rest` after one leading reply prefix (`re:`, `re[2]:`, `re(2):`, any
/// case, then whitespace), or `None` when `s` does not start with one.
fn strip_one_prefix(s: &str) -> Option<&str> {
    let head = s.get(..2)?;
    if !head.eq_ignore_ascii_case("re") {
        return None;
    }
    let mut rest = &s[2..];
    for (open, close) in [('[', ']'), ('(', ')')] {
        if let Some(inner) = rest.strip_prefix(open) {
            let end = inner.find(close)?;
            if !inner[..end].bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            rest = &inner[end + 1..];
        }
    }
    let rest = rest.trim_start().strip_prefix(':')?;
    Some(rest.trim_start())
}

/// `Re: ` + the subject without any reply prefixes (`Re:` alone for an
/// empty one).
pub fn reply_subject(subject: &str) -> String {
    let mut s = subject.trim();
    while let Some(rest) = strip_one_prefix(s) {
        s = rest;
    }
    format!("Re: {s}").trim_end().to_string()
}

/// Who may receive a reply (security H-1 / M-2).
#[derive(Clone, Copy, Debug, Default)]
pub struct RecipientRules<'a> {
    /// Root's own addresses (compared case-insensitively): never a recipient.
    pub own: &'a [String],
    /// No address at this domain (`PLATFORM_EMAIL_DOMAIN`: every tenant's
    /// alias and Root's service addresses) is ever a recipient — two
    /// tenants must not be able to answer each other.
    pub platform_domain: Option<&'a str>,
    /// Send to `Reply-To` instead of `From`: only for a public sender whose
    /// `From` was authenticated. A member's answer goes to the
    /// authenticated `From` alone, so it never reaches a stranger.
    pub honour_reply_to: bool,
    /// Copy the mail's other To / Cc recipients (reply-all): only for an
    /// authenticated sender — a forged mail must not make Root write to
    /// people its sender chose.
    pub reply_all: bool,
}

impl RecipientRules<'_> {
    fn refused(&self, m: &Mailbox) -> bool {
        let own = self
            .own
            .iter()
            .any(|o| o.trim().eq_ignore_ascii_case(&m.email));
        let platform = self.platform_domain.is_some_and(|d| {
            let d = d.trim().to_ascii_lowercase();
            !d.is_empty()
                && m.email
                    .rsplit_once('@')
                    .is_some_and(|(_, at)| at == d || at.ends_with(&format!(".{d}")))
        });
        own || platform
    }
}

/// `(to, cc)` of a reply to `parent` under `rules`.
pub fn reply_recipients(
    parent: &InboundEmail,
    rules: &RecipientRules<'_>,
) -> (Vec<Mailbox>, Vec<Mailbox>) {
    let target = match (&parent.reply_to, rules.honour_reply_to) {
        (Some(r), true) => r.clone(),
        _ => parent.from.clone(),
    };
    let to = if rules.refused(&target) {
        Vec::new()
    } else {
        vec![target]
    };
    let mut cc: Vec<Mailbox> = Vec::new();
    if rules.reply_all {
        for m in parent.to.iter().chain(&parent.cc) {
            let taken = to.iter().chain(&cc).any(|t| t.email == m.email);
            if !taken && !rules.refused(m) {
                cc.push(m.clone());
            }
        }
    }
    (to, cc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_get_exactly_one_re() {
        for (given, want) in [
            ("Saying Hello", "Re: Saying Hello"),
            ("Re: Saying Hello", "Re: Saying Hello"),
            ("RE: re: Saying Hello", "Re: Saying Hello"),
            ("Re[2]: Saying Hello", "Re: Saying Hello"),
            ("Re(3):Re: x", "Re: x"),
            ("Regarding: budget", "Re: Regarding: budget"),
            ("Re[x]: odd", "Re: Re[x]: odd"),
            ("Fwd: news", "Re: Fwd: news"),
            ("", "Re:"),
            ("  re:  ", "Re:"),
            ("Ré: accent", "Re: Ré: accent"),
        ] {
            assert_eq!(reply_subject(given), want, "{given:?}");
        }
    }
}
