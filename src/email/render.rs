//! The reply's Markdown as the two parts of a mail: HTML (pulldown-cmark,
//! then sanitized with ammonia — the model's text is untrusted) and a
//! readable plain-text part (links as `text (url)`, list bullets, code kept,
//! raw HTML dropped).

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH
}

/// `(text, html)` of `markdown`.
pub fn render_reply(markdown: &str) -> (String, String) {
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, Parser::new_ext(markdown, options()));
    (plain_text(markdown), ammonia::clean(&html))
}

/// One open list: the next number of an ordered list, or `None`.
struct List(Option<u64>);

fn plain_text(markdown: &str) -> String {
    let mut out = String::new();
    let mut lists: Vec<List> = Vec::new();
    // The destination of each open link / image, to append after its text.
    let mut links: Vec<(String, usize)> = Vec::new();
    let mut in_cell = false;
    for event in Parser::new_ext(markdown, options()) {
        match event {
            Event::Start(Tag::Item) => {
                let depth = lists.len().saturating_sub(1);
                out.push_str(&"  ".repeat(depth));
                match lists.last_mut() {
                    Some(List(Some(n))) => {
                        out.push_str(&format!("{n}. "));
                        *n += 1;
                    }
                    _ => out.push_str("- "),
                }
            }
            Event::Start(Tag::List(start)) => {
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push('\n');
                }
                lists.push(List(start));
            }
            Event::End(TagEnd::List(_)) => {
                lists.pop();
                if lists.is_empty() {
                    out.push('\n');
                }
            }
            Event::End(TagEnd::Item) if !out.ends_with('\n') => out.push('\n'),
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                links.push((dest_url.to_string(), out.len()));
            }
            Event::End(TagEnd::Link | TagEnd::Image) => {
                if let Some((url, start)) = links.pop() {
                    let label = out.get(start..).unwrap_or("").trim().to_string();
                    let bare = url.strip_prefix("mailto:").unwrap_or(&url);
                    if label.is_empty() {
                        out.push_str(bare);
                    } else if label == url && bare != url {
                        // `<mailto:a@b>` autolinks: the address alone.
                        out.truncate(start);
                        out.push_str(bare);
                    } else if label != url && label != bare {
                        out.push_str(&format!(" ({url})"));
                    }
                }
            }
            Event::End(TagEnd::Paragraph | TagEnd::Heading(_) | TagEnd::BlockQuote(_)) => {
                if lists.is_empty() {
                    out.push_str("\n\n");
                } else {
                    out.push('\n');
                }
            }
            Event::End(TagEnd::CodeBlock) | Event::Rule => {
                if matches!(event, Event::Rule) {
                    out.push_str("---");
                }
                out.push_str("\n\n");
            }
            Event::Start(Tag::TableCell) => {
                if in_cell {
                    out.push_str(" | ");
                }
                in_cell = true;
            }
            Event::End(TagEnd::TableHead | TagEnd::TableRow) => {
                out.push('\n');
                in_cell = false;
            }
            Event::End(TagEnd::Table) => out.push('\n'),
            Event::Text(t) | Event::Code(t) => out.push_str(&t),
            Event::SoftBreak | Event::HardBreak => out.push('\n'),
            Event::TaskListMarker(done) => out.push_str(if done { "[x] " } else { "[ ] " }),
            _ => {}
        }
    }
    tidy(&out)
}

/// Trailing spaces off every line, at most one blank line in a row.
fn tidy(text: &str) -> String {
    let mut out = String::new();
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_renders_to_safe_html_and_readable_text() {
        let md = "# Hello\n\nSee [the guide](https://example.org/g) and **bold** `code`.\n\n\
                  - one\n- two\n  1. a\n  2. b\n\n<script>alert(1)</script>\n\n\
                  Mail <mailto:a@b.example> or https://x.example\n\n```\nfn x() {}\n```\n";
        let (text, html) = render_reply(md);
        assert_eq!(
            text,
            "Hello\n\nSee the guide (https://example.org/g) and bold code.\n\n\
             - one\n- two\n  1. a\n  2. b\n\n\
             Mail a@b.example or https://x.example\n\nfn x() {}"
        );
        assert!(html.contains("<h1>Hello</h1>"), "{html}");
        assert!(
            html.contains(
                "<a href=\"https://example.org/g\" rel=\"noopener noreferrer\">the guide</a>"
            ),
            "{html}"
        );
        assert!(html.contains("<strong>bold</strong>"), "{html}");
        assert!(!html.contains("<script"), "{html}");
        assert!(html.contains("<li>one</li>"), "{html}");
    }

    #[test]
    fn tables_and_empty_input() {
        let (text, _) = render_reply("| a | b |\n|---|---|\n| 1 | 2 |\n");
        assert_eq!(text, "a | b\n1 | 2");
        assert_eq!(render_reply(""), (String::new(), String::new()));
    }
}
