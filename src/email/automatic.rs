//! Mail that no person wrote (security M-2): auto-replies (RFC 3834),
//! delivery reports and bounces (RFC 3464), list and bulk mail. Root never
//! answers these — answering an out-of-office or a bounce is how two
//! automatic responders end up mailing each other forever.
//!
//! [`classify`] reads only headers and the envelope, so every inbound
//! shape (raw MIME, Postmark JSON, a Primitive event) is judged by the
//! same rules; the reason is logged by the channel, never the content.

/// What [`classify`] looks at.
#[derive(Debug, Default)]
pub struct MailTraits<'a> {
    /// Every header as `(name, value)`, in order.
    pub headers: Vec<(&'a str, &'a str)>,
    /// The `From` address (lower-cased).
    pub from: &'a str,
    /// The SMTP envelope sender when the provider reported one (`Some("")`
    /// or `Some("<>")` is the null reverse-path of a bounce).
    pub envelope_from: Option<&'a str>,
    /// `type/subtype` of the top-level body, lower-cased, when known.
    pub content_type: Option<String>,
}

/// Why a mail is automatic, or `None` for one a person wrote.
pub fn classify(m: &MailTraits<'_>) -> Option<String> {
    let value = |name: &str| {
        m.headers
            .iter()
            .find(|(n, _)| n.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    };
    // RFC 3834 §5: anything but `no` (parameters and comments aside).
    if let Some(v) = value("Auto-Submitted") {
        let keyword = v
            .split([';', '(', ' '])
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if keyword != "no" {
            return Some(format!("Auto-Submitted: {}", clip(&keyword)));
        }
    }
    if let Some(v) = value("Precedence") {
        let v = v.to_ascii_lowercase();
        if matches!(v.as_str(), "bulk" | "junk" | "list" | "auto_reply") {
            return Some(format!("Precedence: {v}"));
        }
    }
    for h in ["List-Id", "List-Unsubscribe", "List-Post"] {
        if value(h).is_some() {
            return Some(format!("mailing list ({h})"));
        }
    }
    for h in ["X-Autoreply", "X-Autorespond", "X-Auto-Reply"] {
        if value(h).is_some() {
            return Some(format!("auto-responder ({h})"));
        }
    }
    if m.content_type
        .as_deref()
        .is_some_and(|c| c.trim().eq_ignore_ascii_case("multipart/report"))
    {
        return Some("delivery or read report (multipart/report)".into());
    }
    let null_path = |p: &str| matches!(p.trim(), "" | "<>");
    if value("Return-Path").is_some_and(null_path) || m.envelope_from.is_some_and(null_path) {
        return Some("null return path (a bounce)".into());
    }
    let local = m.from.rsplit_once('@').map_or(m.from, |(l, _)| l);
    let local = local.to_ascii_lowercase();
    if matches!(local.as_str(), "mailer-daemon" | "postmaster") {
        return Some(format!("sent by {local}"));
    }
    None
}

fn clip(s: &str) -> String {
    s.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traits<'a>(headers: &[(&'a str, &'a str)], from: &'a str) -> MailTraits<'a> {
        MailTraits {
            headers: headers.to_vec(),
            from,
            envelope_from: None,
            content_type: None,
        }
    }

    #[test]
    fn auto_replies_bounces_and_lists_are_automatic() {
        let person = "ada@example.org";
        for (h, want) in [
            (
                ("Auto-Submitted", "auto-replied"),
                "Auto-Submitted: auto-replied",
            ),
            (
                ("auto-submitted", "Auto-Generated; owner-email=x"),
                "Auto-Submitted: auto-generated",
            ),
            (("Precedence", "bulk"), "Precedence: bulk"),
            (("Precedence", "Junk"), "Precedence: junk"),
            (("Precedence", "list"), "Precedence: list"),
            (("List-Id", "<news.example.org>"), "mailing list (List-Id)"),
            (
                ("List-Unsubscribe", "<mailto:u@x>"),
                "mailing list (List-Unsubscribe)",
            ),
            (("X-Autoreply", "yes"), "auto-responder (X-Autoreply)"),
            (("Return-Path", "<>"), "null return path (a bounce)"),
        ] {
            assert_eq!(
                classify(&traits(&[h], person)).as_deref(),
                Some(want),
                "{h:?}"
            );
        }
        assert_eq!(
            classify(&traits(&[], "MAILER-DAEMON@mx.example.org")).as_deref(),
            Some("sent by mailer-daemon")
        );
        assert_eq!(
            classify(&traits(&[], "postmaster@example.org")).as_deref(),
            Some("sent by postmaster")
        );
        let mut report = traits(&[], person);
        report.content_type = Some("multipart/report".into());
        assert!(classify(&report).is_some());
        let mut bounce = traits(&[], person);
        bounce.envelope_from = Some("");
        assert!(classify(&bounce).is_some());
    }

    #[test]
    fn a_persons_mail_is_not_automatic() {
        let h = [
            ("Auto-Submitted", "no"),
            ("Precedence", "first-class"),
            ("Return-Path", "<ada@example.org>"),
        ];
        let mut t = traits(&h, "ada@example.org");
        t.envelope_from = Some("ada@example.org");
        t.content_type = Some("multipart/alternative".into());
        assert_eq!(classify(&t), None);
    }
}
