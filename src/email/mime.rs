//! Small, total helpers over header text: message ids, address strings,
//! dates and HTML → text. Nothing here panics on any input.

use mail_parser::{DateTime, MessageParser};

/// Longest message id kept (RFC 5322's line limit).
const MAX_ID_LEN: usize = 998;

/// RFC 5322 unfolding: a line break followed by whitespace is removed
/// (the whitespace stays).
pub(crate) fn unfold(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' | '\r' if matches!(chars.peek(), Some(' ' | '\t')) => {}
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

/// `<left@right>` when `inner` (without brackets) is a plausible msg-id:
/// printable ASCII without whitespace or brackets, non-empty on both sides
/// of an `@`.
fn valid_id(inner: &str) -> Option<String> {
    let (left, right) = inner.split_once('@')?;
    let ok = !left.is_empty()
        && !right.is_empty()
        && inner.len() + 2 <= MAX_ID_LEN
        && inner
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'<' && b != b'>');
    ok.then(|| format!("<{inner}>"))
}

/// Every valid message id in a header value, in order. Bracketed ids are
/// read first; a value with no `<` at all is read as bare ids separated by
/// whitespace or commas (some mailers and JSON APIs drop the brackets).
/// Invalid ids are skipped.
pub(crate) fn message_ids(value: &str) -> Vec<String> {
    let value = unfold(value);
    let mut out = Vec::new();
    if value.contains('<') {
        let mut rest = value.as_str();
        while let Some(open) = rest.find('<') {
            let after = &rest[open + 1..];
            let Some(close) = after.find('>') else {
                break;
            };
            if let Some(id) = valid_id(&after[..close]) {
                out.push(id);
            }
            rest = &after[close + 1..];
        }
    } else {
        out.extend(
            value
                .split(|c: char| c.is_whitespace() || c == ',')
                .filter_map(valid_id),
        );
    }
    out
}

/// The first valid id of `value`, normalized to `<…>`.
pub(crate) fn normalize_id(value: &str) -> Option<String> {
    message_ids(value).into_iter().next()
}

/// Ids in order with duplicates removed (first occurrence kept).
pub(crate) fn dedupe(ids: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for id in ids {
        if !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

/// `(address, display name)` pairs from an address-list string
/// (`"A" <a@x>, b@y`), through the MIME parser (RFC 2047 names decoded).
/// Line breaks are flattened first so the string cannot add headers.
pub(crate) fn parse_addresses(value: &str) -> Vec<(String, Option<String>)> {
    let flat: String = value
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.trim().is_empty() {
        return Vec::new();
    }
    let raw = format!("To: {flat}\r\n\r\n");
    let Some(msg) = MessageParser::default().parse_headers(raw.as_bytes()) else {
        return Vec::new();
    };
    msg.to()
        .map(|a| {
            a.iter()
                .filter_map(|addr| {
                    let email = addr.address()?.trim();
                    (!email.is_empty())
                        .then(|| (email.to_string(), addr.name().map(str::to_string)))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Unix seconds of a date header value, read leniently: RFC 5322, the
/// same with a `+hh:mm` offset, RFC 3339. `None` when nothing fits or the
/// year is implausible.
pub(crate) fn parse_date(value: &str) -> Option<i64> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    let plausible = |d: DateTime| {
        ((1970..=9999).contains(&d.year)
            && (1..=12).contains(&d.month)
            && (1..=31).contains(&d.day))
        .then(|| d.to_timestamp())
    };
    if let Some(t) = DateTime::parse_rfc822(value).and_then(plausible) {
        return Some(t);
    }
    if let Some(t) = DateTime::parse_rfc3339(value).and_then(plausible) {
        return Some(t);
    }
    // `… -04:00`: drop the colon of a trailing numeric offset.
    let n = value.len();
    let b = value.as_bytes();
    if n > 6 && (b[n - 6] == b'+' || b[n - 6] == b'-') && b[n - 3] == b':' {
        let without_colon = format!("{}{}", &value[..n - 3], &value[n - 2..]);
        return DateTime::parse_rfc822(&without_colon).and_then(plausible);
    }
    None
}

/// Readable text of an HTML body: sanitized with ammonia first (scripts,
/// styles and handlers gone), then flattened by the MIME parser's
/// converter.
pub(crate) fn html_to_text(html: &str) -> String {
    let clean = ammonia::clean(html);
    mail_parser::decoders::html::html_to_text(&clean)
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_read_in_order_and_invalid_ones_skipped() {
        assert_eq!(
            message_ids("<baz@bar.net>, <invalid.   \n something@bar.net>"),
            vec!["<baz@bar.net>"]
        );
        assert_eq!(message_ids("abc@x.y"), vec!["<abc@x.y>"]);
        assert_eq!(
            message_ids("<a@b> (comment) <c@d>\r\n\t<e@f>"),
            vec!["<a@b>", "<c@d>", "<e@f>"]
        );
        assert!(message_ids("<no-at-sign> <@x> <x@> <").is_empty());
        assert_eq!(
            normalize_id("  <k=1@m.example>  ").as_deref(),
            Some("<k=1@m.example>")
        );
    }

    #[test]
    fn lenient_dates() {
        assert_eq!(
            parse_date("Fri, 21 Nov 1997 09:55:06 -0600"),
            Some(880127706)
        );
        assert_eq!(
            parse_date("Fri, 1 Aug 2014 16:45:32 -04:00"),
            Some(1406925932)
        );
        assert_eq!(parse_date("2025-12-14T11:59:50Z"), Some(1765713590));
        assert_eq!(parse_date("yesterday"), None);
        assert_eq!(parse_date(""), None);
        assert!(parse_date("Sat, 19 Aug 2017 19:37:23 +0200 (Mitteleurop?ische").is_some());
    }

    #[test]
    fn address_strings_cannot_inject_headers() {
        assert_eq!(
            parse_addresses("\"Mary Smith: Personal Account\" <smith@home.example>"),
            vec![(
                "smith@home.example".to_string(),
                Some("Mary Smith: Personal Account".to_string())
            )]
        );
        assert_eq!(parse_addresses("a@x\r\n"), vec![("a@x".to_string(), None)]);
        assert!(parse_addresses(" \r\n ").is_empty());
    }
}
