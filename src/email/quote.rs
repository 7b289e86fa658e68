//! Quoted-reply stripping: what the sender wrote, without the message it
//! answers. Lines quoted with `>` are dropped; everything from the first
//! quote header on is cut — `On … wrote:` (also wrapped over two lines),
//! an `-----Original Message-----` separator, or an Outlook block (`From:`
//! followed within a few lines by `Sent:` or `Date:`).

/// Lines after a `From:` in which an Outlook header block names `Sent:`.
const OUTLOOK_WINDOW: usize = 4;

fn is_original_message_separator(line: &str) -> bool {
    let t = line.trim();
    let inner = t.trim_matches(|c: char| c == '-' || c == '_' || c.is_whitespace());
    t.starts_with("--") && t.len() > inner.len() && inner.eq_ignore_ascii_case("original message")
}

fn is_on_wrote(lines: &[&str], i: usize) -> bool {
    let line = lines[i].trim();
    if !line.starts_with("On ") {
        return false;
    }
    let wrote = |l: &str| {
        let l = l.trim_end();
        l.ends_with("wrote:") || l.ends_with("writes:")
    };
    wrote(line) || lines.get(i + 1).is_some_and(|next| wrote(next))
}

fn is_outlook_header(lines: &[&str], i: usize) -> bool {
    let starts = |l: &str, p: &str| {
        let l = l.trim_start().trim_start_matches('*');
        l.get(..p.len()).is_some_and(|h| h.eq_ignore_ascii_case(p))
    };
    starts(lines[i], "From:")
        && lines
            .iter()
            .skip(i + 1)
            .take(OUTLOOK_WINDOW)
            .any(|l| starts(l, "Sent:") || starts(l, "Date:"))
}

/// The reply without its quoted part; the whole text (trimmed) when
/// nothing would be left.
pub fn strip_quoted_reply(text: &str) -> String {
    let normalized = text.replace("\r\n", "\n").replace('\r', "\n");
    let lines: Vec<&str> = normalized.lines().collect();
    let mut kept: Vec<&str> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if is_on_wrote(&lines, i)
            || is_original_message_separator(line)
            || is_outlook_header(&lines, i)
        {
            break;
        }
        if line.trim_start().starts_with('>') {
            continue;
        }
        kept.push(line.trim_end());
    }
    let out = kept.join("\n").trim().to_string();
    if out.is_empty() {
        normalized.trim().to_string()
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_headers_and_quoted_lines_go() {
        assert_eq!(
            strip_quoted_reply(
                "Sure.\r\n\r\nOn Mon, Apr 2, 2012 at 6:26 PM, A <a@x>\r\nwrote:\r\n> Hi\r\n"
            ),
            "Sure."
        );
        assert_eq!(
            strip_quoted_reply("Yes\n> a\nand no\n>> b\n"),
            "Yes\nand no"
        );
        assert_eq!(
            strip_quoted_reply("Ok\n\n-----Original Message-----\nFrom: x\nhi"),
            "Ok"
        );
        assert_eq!(
            strip_quoted_reply(
                "Ok\n________________________________\nFrom: A\nSent: today\nTo: B\n"
            ),
            "Ok\n________________________________"
        );
        // A From: line in the reply itself (no Sent:/Date: after it) stays.
        assert_eq!(
            strip_quoted_reply("From: me, with love"),
            "From: me, with love"
        );
        // Only a quote: the text is kept rather than emptied.
        assert_eq!(strip_quoted_reply("> all quoted\n"), "> all quoted");
        assert_eq!(strip_quoted_reply(""), "");
    }
}
