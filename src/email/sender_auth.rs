//! Is the `From:` of an inbound mail really the sender's (security H-1)?
//!
//! Anyone can write any `From:`. Root counts a sender as identified only
//! when someone who saw the SMTP transaction vouches for it:
//!
//! - **Primitive** (`platform_alias`): the event's `email.auth` verdicts —
//!   `dmarc: "pass"`, or a DKIM signature that passed and is aligned with
//!   the `From` domain, or an SPF pass aligned with it
//!   ([`from_primitive`]).
//! - **Postmark inbound JSON** (through a BYO forwarder): the verdict
//!   headers Postmark's receiving servers add on top of the message — the
//!   first `Authentication-Results`, the first `Received-SPF` and the first
//!   `X-Spam-Tests` (`DKIM_VALID_AU`). Only the first of each counts: a
//!   sender can put any number of fake ones further down
//!   ([`from_headers`]).
//! - **A BYO forwarder** says it itself with the request header
//!   [`BYO_AUTH_HEADER`] (`pass` / `fail`), after its own MTA checked
//!   DMARC ([`from_byo_header`]); absent means "no verdict" for raw MIME.
//!
//! Alignment is checked by Root against the parsed `From` domain, stricter
//! than DMARC's relaxed mode: the two domains must be equal or one a
//! subdomain of the other (no public-suffix list, so a false "no" is
//! possible, a false "yes" is not). Anything else is unauthenticated and
//! runs on the public email surface (`channels::email::reply`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::inbound::Mailbox;

/// The request header a BYO forwarder sets to say whether the mail's
/// `From` passed its own DMARC / DKIM / SPF checks: `pass` (also `true`,
/// `yes`) or anything else (`fail`).
pub const BYO_AUTH_HEADER: &str = "x-root-sender-auth";

/// Whether the sender is who `From:` says, and why (for the log line and
/// the conversation row). The default — also for jobs queued before this
/// field existed — is unauthenticated.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SenderAuth {
    /// A provider (or the tenant's forwarder) vouched for `From`.
    #[serde(default)]
    pub authenticated: bool,
    /// A few words: `dmarc=pass (primitive)`, `no verdict`, …
    #[serde(default)]
    pub reason: String,
}

impl SenderAuth {
    fn pass(reason: impl Into<String>) -> SenderAuth {
        SenderAuth {
            authenticated: true,
            reason: reason.into(),
        }
    }

    fn fail(reason: impl Into<String>) -> SenderAuth {
        SenderAuth {
            authenticated: false,
            reason: reason.into(),
        }
    }

    /// No one said anything about the sender.
    pub fn no_verdict() -> SenderAuth {
        SenderAuth::fail("no verdict")
    }
}

/// The domain of an address, lower-cased (`None` without `@`).
fn domain_of(address: &str) -> Option<String> {
    let address = address.trim().trim_matches(['<', '>', '"']);
    let (_, d) = address.rsplit_once('@')?;
    let d = d.trim().trim_end_matches('.').to_ascii_lowercase();
    (!d.is_empty()).then_some(d)
}

/// Equal, or one a subdomain of the other.
fn aligned(domain: &str, from_domain: &str) -> bool {
    let d = domain.trim().trim_end_matches('.').to_ascii_lowercase();
    let f = from_domain;
    !d.is_empty() && (d == f || d.ends_with(&format!(".{f}")) || f.ends_with(&format!(".{d}")))
}

/// Primitive's `email.auth` object for a mail whose parsed sender is `from`.
pub fn from_primitive(auth: &Value, from: &Mailbox) -> SenderAuth {
    let Some(obj) = auth.as_object().filter(|o| !o.is_empty()) else {
        return SenderAuth::fail("no verdict (primitive)");
    };
    let Some(from_domain) = domain_of(&from.email) else {
        return SenderAuth::fail("sender has no domain");
    };
    let word = |k: &str| {
        obj.get(k)
            .and_then(Value::as_str)
            .map(|s| s.trim().to_ascii_lowercase())
            .unwrap_or_default()
    };
    // A verdict about another domain says nothing about this `From`
    // (several From headers, or a parse that differs from ours).
    if let Some(d) = obj.get("dmarcFromDomain").and_then(Value::as_str)
        && !d.trim().is_empty()
        && !d
            .trim()
            .trim_end_matches('.')
            .eq_ignore_ascii_case(&from_domain)
    {
        return SenderAuth::fail(format!(
            "verdict is for {} (primitive)",
            d.trim().to_ascii_lowercase()
        ));
    }
    if word("dmarc") == "pass" {
        return SenderAuth::pass("dmarc=pass (primitive)");
    }
    let dkim = obj
        .get("dkimSignatures")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|s| {
            let result = s["result"].as_str().unwrap_or("");
            let domain = s["domain"].as_str().unwrap_or("");
            result.eq_ignore_ascii_case("pass")
                && s["aligned"].as_bool() != Some(false)
                && aligned(domain, &from_domain)
        });
    if let Some(sig) = dkim {
        return SenderAuth::pass(format!(
            "dkim=pass d={} aligned (primitive)",
            sig["domain"].as_str().unwrap_or("").to_ascii_lowercase()
        ));
    }
    if word("spf") == "pass" && obj.get("dmarcSpfAligned").and_then(Value::as_bool) == Some(true) {
        return SenderAuth::pass("spf=pass aligned (primitive)");
    }
    SenderAuth::fail(format!(
        "dmarc={} spf={} no aligned dkim pass (primitive)",
        or_none(&word("dmarc")),
        or_none(&word("spf"))
    ))
}

fn or_none(s: &str) -> &str {
    if s.is_empty() { "none" } else { s }
}

/// The verdict headers of a message (Postmark's `Headers` array, in order)
/// for a sender `from`: the first `Authentication-Results`, `Received-SPF`
/// and `X-Spam-Tests` only.
pub fn from_headers<'a>(
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
    from: &Mailbox,
) -> SenderAuth {
    let Some(from_domain) = domain_of(&from.email) else {
        return SenderAuth::fail("sender has no domain");
    };
    let (mut ar, mut spf, mut tests) = (None, None, None);
    for (name, value) in headers {
        let name = name.trim();
        if ar.is_none() && name.eq_ignore_ascii_case("Authentication-Results") {
            ar = Some(value);
        } else if spf.is_none() && name.eq_ignore_ascii_case("Received-SPF") {
            spf = Some(value);
        } else if tests.is_none() && name.eq_ignore_ascii_case("X-Spam-Tests") {
            tests = Some(value);
        }
    }
    if let Some(v) = ar
        && let Some(reason) = authentication_results_pass(v, &from_domain)
    {
        return SenderAuth::pass(reason);
    }
    if let Some(v) = spf
        && received_spf_pass(v, &from_domain)
    {
        return SenderAuth::pass("spf=pass aligned (Received-SPF)");
    }
    if let Some(v) = tests
        && v.split([',', ' '])
            .any(|t| t.trim().eq_ignore_ascii_case("DKIM_VALID_AU"))
    {
        return SenderAuth::pass("dkim valid for the author domain (X-Spam-Tests)");
    }
    if ar.is_none() && spf.is_none() && tests.is_none() {
        SenderAuth::no_verdict()
    } else {
        SenderAuth::fail("no aligned pass in the verdict headers")
    }
}

/// RFC 8601 `Authentication-Results`: an aligned `dmarc=pass`, `dkim=pass`
/// or `spf=pass` → why it counts.
fn authentication_results_pass(value: &str, from_domain: &str) -> Option<String> {
    let clean = strip_comments(value);
    // The first part is the authserv-id (and an optional version).
    for resinfo in clean.split(';').skip(1) {
        let mut tokens = resinfo.split_whitespace();
        let Some((method, result)) = tokens.next().and_then(|t| t.split_once('=')) else {
            continue;
        };
        if !result.eq_ignore_ascii_case("pass") {
            continue;
        }
        let props: Vec<(String, String)> = tokens
            .filter_map(|t| t.split_once('='))
            .map(|(k, v)| (k.to_ascii_lowercase(), v.trim_matches('"').to_string()))
            .collect();
        let prop = |name: &str| props.iter().find(|(k, _)| k == name).map(|(_, v)| v);
        let method = method.to_ascii_lowercase();
        let domain = match method.as_str() {
            // A DMARC pass is about `header.from`; without it, the mail's From.
            "dmarc" => prop("header.from")
                .cloned()
                .unwrap_or_else(|| from_domain.to_string()),
            "dkim" => match (prop("header.d"), prop("header.i")) {
                (Some(d), _) => d.clone(),
                (None, Some(i)) => domain_of(i).unwrap_or_default(),
                _ => continue,
            },
            "spf" => match prop("smtp.mailfrom") {
                Some(m) if m.contains('@') => domain_of(m).unwrap_or_default(),
                Some(m) => m.clone(),
                None => continue,
            },
            _ => continue,
        };
        if aligned(&domain, from_domain) {
            return Some(format!("{method}=pass {domain} (Authentication-Results)"));
        }
    }
    None
}

/// RFC 7208 `Received-SPF: pass … envelope-from=<a@b>` aligned with From.
fn received_spf_pass(value: &str, from_domain: &str) -> bool {
    let clean = strip_comments(value);
    let mut words = clean.split_whitespace();
    if !words.next().is_some_and(|w| w.eq_ignore_ascii_case("pass")) {
        return false;
    }
    clean
        .split([';', ' '])
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| k.eq_ignore_ascii_case("envelope-from"))
        .and_then(|(_, v)| domain_of(v.trim_matches('"')))
        .is_some_and(|d| aligned(&d, from_domain))
}

/// `value` without RFC 5322 comments (parenthesised, nested).
fn strip_comments(value: &str) -> String {
    let mut depth = 0usize;
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '(' => depth += 1,
            ')' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// The BYO forwarder's [`BYO_AUTH_HEADER`] value, when it sent one.
pub fn from_byo_header(value: &str) -> SenderAuth {
    let v = value.trim().to_ascii_lowercase();
    if matches!(v.as_str(), "pass" | "true" | "yes") {
        SenderAuth::pass("the tenant's forwarder vouched (X-Root-Sender-Auth: pass)")
    } else {
        SenderAuth::fail(format!(
            "the tenant's forwarder said {:?} (X-Root-Sender-Auth)",
            v.chars().take(20).collect::<String>()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn from(addr: &str) -> Mailbox {
        Mailbox::new(addr, None).unwrap()
    }

    #[test]
    fn primitive_dmarc_or_an_aligned_dkim_or_spf_pass_authenticates() {
        let alice = from("alice@acme.org");
        assert!(from_primitive(&json!({"dmarc": "pass"}), &alice).authenticated);
        let dkim = json!({"dmarc": "none", "spf": "fail", "dkimSignatures": [
            {"domain": "mail.acme.org", "result": "pass", "aligned": true}]});
        assert!(from_primitive(&dkim, &alice).authenticated);
        let spf = json!({"dmarc": "none", "spf": "pass", "dmarcSpfAligned": true});
        assert!(from_primitive(&spf, &alice).authenticated);
        // Failing, unaligned or about another domain: not authenticated.
        for v in [
            json!({}),
            json!(null),
            json!({"dmarc": "fail", "spf": "fail", "dkimSignatures": []}),
            json!({"spf": "pass", "dmarcSpfAligned": false}),
            json!({"dkimSignatures": [{"domain": "evil.example", "result": "pass", "aligned": true}]}),
            json!({"dkimSignatures": [{"domain": "acme.org", "result": "fail", "aligned": true}]}),
            json!({"dkimSignatures": [{"domain": "acme.org", "result": "pass", "aligned": false}]}),
            json!({"dmarc": "pass", "dmarcFromDomain": "evil.example"}),
        ] {
            let got = from_primitive(&v, &alice);
            assert!(!got.authenticated, "{v} → {got:?}");
            assert!(!got.reason.is_empty());
        }
    }

    #[test]
    fn only_the_first_verdict_header_of_each_kind_counts() {
        let alice = from("alice@acme.org");
        let pass = [(
            "Authentication-Results",
            "mx.postmarkapp.com; dkim=pass (2048-bit key) header.d=acme.org; spf=fail smtp.mailfrom=x@evil.example",
        )];
        assert!(from_headers(pass, &alice).authenticated);
        // The receiving server's verdict first says fail; a forged pass below
        // it is the sender's own text.
        let forged = [
            (
                "Authentication-Results",
                "mx.example; dmarc=fail header.from=acme.org",
            ),
            (
                "Authentication-Results",
                "mx.example; dmarc=pass header.from=acme.org",
            ),
        ];
        assert!(!from_headers(forged, &alice).authenticated);
        let spf = [(
            "Received-SPF",
            "Pass (sender SPF authorized) identity=mailfrom; client-ip=1.2.3.4; envelope-from=bounce@acme.org; receiver=x",
        )];
        assert!(from_headers(spf, &alice).authenticated);
        let spf_other = [(
            "Received-SPF",
            "Pass identity=mailfrom; envelope-from=x@evil.example",
        )];
        assert!(!from_headers(spf_other, &alice).authenticated);
        let sa = [(
            "X-Spam-Tests",
            "DKIM_SIGNED,DKIM_VALID,DKIM_VALID_AU,SPF_PASS",
        )];
        assert!(from_headers(sa, &alice).authenticated);
        let sa_not_author = [("X-Spam-Tests", "DKIM_SIGNED,DKIM_VALID,SPF_PASS")];
        assert!(!from_headers(sa_not_author, &alice).authenticated);
        assert_eq!(
            from_headers(Vec::<(&str, &str)>::new(), &alice),
            SenderAuth::no_verdict()
        );
        // Alignment is about the From domain, never a look-alike.
        let lookalike = [(
            "Authentication-Results",
            "mx; dkim=pass header.d=notacme.org",
        )];
        assert!(!from_headers(lookalike, &alice).authenticated);
    }

    #[test]
    fn the_byo_header_says_pass_or_not() {
        assert!(from_byo_header("pass").authenticated);
        assert!(from_byo_header(" TRUE ").authenticated);
        assert!(!from_byo_header("fail").authenticated);
        assert!(!from_byo_header("").authenticated);
    }
}
