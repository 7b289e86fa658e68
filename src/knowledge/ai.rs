//! §11.2 step 3, the AI step: web pages are always distilled into a clean
//! article (`web-distill-v2`); other kinds get a fact-preserving cleanup
//! (`knowledge-cleanup-v1`) when the source (or the run's options) asks
//! for it. The model answers Markdown, rendered to HTML here; the page is
//! then sanitized like any other. The spec gives no text for these two
//! prompts: they are ours, and a change to either must bump its version
//! tag (the tag is part of the raw hash, so every page is redone once).

use crate::ai::chat::{ChatClient, ChatOptions};
use crate::ai::http::AiError;

use super::document::AiStep;

/// Input to the model is cut here (§11.2 step 3).
pub const AI_INPUT_MAX_CHARS: usize = 80_000;
/// `llm:<purpose>` of a distillation.
pub const DISTILL_PURPOSE: &str = "knowledge_web_distill";
/// `llm:<purpose>` of a cleanup.
pub const CLEANUP_PURPOSE: &str = "knowledge_cleanup";

/// The `web-distill-v2` instructions.
pub const WEB_DISTILL_SYSTEM: &str = "\
You turn one web page into a clean knowledge-base article for a community assistant.

Rules:
- Keep every fact: names, dates, times, prices, amounts, addresses, opening hours, rules, \
eligibility, steps, contact details and links (as Markdown links with their URLs).
- Drop everything that is not the page's content: navigation, menus, cookie and newsletter \
banners, ads, share buttons, footers, related-article lists, comment sections.
- Do not add facts, opinions, summaries of your own or a conclusion. Do not invent headings the \
page's structure does not support.
- Keep the page's order and structure: headings as Markdown headings, lists as lists, tables as \
Markdown tables.
- Write in the page's language.

Answer with the article as Markdown only — no preamble, no code fence.";

/// The `knowledge-cleanup-v1` instructions (the tenant's instructions are
/// appended).
pub const KNOWLEDGE_CLEANUP_SYSTEM: &str = "\
You clean up one document for a community's knowledge base without changing what it says.

Rules:
- Preserve every fact exactly: names, dates, times, numbers, prices, amounts, identifiers, \
codes, links and their URLs, rules and conditions.
- Fix formatting only: broken markup, stray characters, duplicated whitespace, leftover \
template text, navigation or boilerplate that is not part of the document.
- Use Markdown structure (headings, lists, tables) where the document already has that \
structure.
- Never add information, never summarise, never drop a section that carries facts.
- Write in the document's language.

Answer with the cleaned document as Markdown only — no preamble, no code fence.";

/// Why the AI step did not produce content.
#[derive(Debug, thiserror::Error)]
pub enum AiStepError {
    /// The provider failed.
    #[error(transparent)]
    Provider(#[from] AiError),
    /// It answered nothing usable.
    #[error("the model answered an empty document")]
    Empty,
}

/// The model's input: title, URL and the content, cut to
/// [`AI_INPUT_MAX_CHARS`].
fn input(title: &str, source_url: Option<&str>, content_html: &str) -> String {
    let mut out = format!("Title: {title}\n");
    if let Some(u) = source_url {
        out.push_str(&format!("URL: {u}\n"));
    }
    out.push_str("\nContent (HTML):\n");
    let budget = AI_INPUT_MAX_CHARS.saturating_sub(out.chars().count());
    out.extend(content_html.chars().take(budget));
    out
}

/// Run `step` over one document; the cleaned content as sanitizable HTML.
/// `AiStep::None` is not an AI step: the content comes back unchanged.
pub async fn run_step(
    llm: &ChatClient,
    step: &AiStep,
    title: &str,
    source_url: Option<&str>,
    content_html: &str,
) -> Result<String, AiStepError> {
    let (purpose, system) = match step {
        AiStep::None => return Ok(content_html.to_string()),
        AiStep::Distill => (DISTILL_PURPOSE, WEB_DISTILL_SYSTEM.to_string()),
        AiStep::Cleanup { instructions } => {
            let mut s = KNOWLEDGE_CLEANUP_SYSTEM.to_string();
            if let Some(i) = instructions
                .as_deref()
                .map(str::trim)
                .filter(|i| !i.is_empty())
            {
                s.push_str("\n\nThe community's own instructions for its documents:\n");
                s.push_str(i);
            }
            (CLEANUP_PURPOSE, s)
        }
    };
    let markdown = llm
        .chat_text(
            purpose,
            &system,
            &input(title, source_url, content_html),
            &ChatOptions::default(),
        )
        .await?;
    let markdown = strip_fence(markdown.trim());
    if markdown.trim().is_empty() {
        return Err(AiStepError::Empty);
    }
    Ok(markdown_to_html(markdown))
}

/// A reply wrapped in one code fence despite the instructions: its inside.
fn strip_fence(s: &str) -> &str {
    let Some(rest) = s.strip_prefix("```") else {
        return s;
    };
    let rest = rest.split_once('\n').map_or("", |(_, r)| r);
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

/// Markdown (with tables) as HTML; raw HTML in it is left to the sanitizer.
pub fn markdown_to_html(markdown: &str) -> String {
    use pulldown_cmark::{Options, Parser, html};
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_TABLES);
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    let mut out = String::with_capacity(markdown.len() * 5 / 4);
    html::push_html(&mut out, Parser::new_ext(markdown, opts));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_input_is_capped_at_80_000_chars() {
        assert_eq!(AI_INPUT_MAX_CHARS, 80_000);
        let i = input("T", Some("https://x.example/a"), &"é".repeat(100_000));
        assert_eq!(i.chars().count(), AI_INPUT_MAX_CHARS);
        assert!(i.starts_with("Title: T\nURL: https://x.example/a\n\nContent (HTML):\n"));
    }

    #[test]
    fn markdown_answers_become_html_and_fences_are_dropped() {
        assert_eq!(strip_fence("```markdown\n# A\n```"), "# A");
        assert_eq!(strip_fence("# A"), "# A");
        let html =
            markdown_to_html("# Parking\n\n- Bikes: free\n\n| a | b |\n|---|---|\n| 1 | 2 |");
        assert!(html.contains("<h1>Parking</h1>"));
        assert!(html.contains("<li>Bikes: free</li>"));
        assert!(html.contains("<table>"));
    }
}
