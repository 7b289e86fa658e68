//! Target `chunker`: a knowledge page's body (sanitized HTML, or plain text)
//! through [`chunk_page`] (§11.3), which promises never to panic whatever
//! the markup.
//!
//! Invariants checked, each a promise of `index::chunker`: chunks are
//! numbered 0.. contiguously; none is blank; none exceeds the
//! [`SENTENCE_SPLIT_ABOVE_CHARS`] ceiling (breadcrumb included); a chunk
//! with a section heading starts with that breadcrumb and a blank line; the
//! embedding input is `title\n\ntext`; the metadata has exactly the six §2.5
//! keys; and the output is a pure function of the input.

use index::chunker::{PageInput, chunk_page};
use root::retrieval::params::{CHUNKER, SENTENCE_SPLIT_ABOVE_CHARS};

const TITLE: &str = "Fuzzed page";

/// Chunk one page body.
pub fn run(data: &[u8]) {
    let page = PageInput {
        title: TITLE.into(),
        slug: "fuzzed-page".into(),
        public_id: None,
        source_type: "manual".into(),
        author_name: Some("Fuzz".into()),
        content_html: String::from_utf8_lossy(data).into_owned(),
    };
    let chunks = chunk_page(&page, &CHUNKER);
    for (i, chunk) in chunks.iter().enumerate() {
        assert_eq!(usize::try_from(chunk.chunk_index).ok(), Some(i));
        assert!(!chunk.text.trim().is_empty(), "chunk {i} is blank");
        let chars = chunk.text.chars().count();
        assert!(
            chars <= SENTENCE_SPLIT_ABOVE_CHARS,
            "chunk {i} has {chars} chars"
        );
        if let Some(heading) = &chunk.section_heading {
            assert!(
                chunk.text.starts_with(&format!("{heading}\n\n")),
                "chunk {i} does not start with its breadcrumb"
            );
        }
        assert_eq!(chunk.embed_input(), format!("{TITLE}\n\n{}", chunk.text));
        let metadata = chunk.metadata();
        let keys: Vec<&str> = metadata
            .as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        assert_eq!(keys.len(), 6, "metadata keys: {keys:?}");
        assert_eq!(
            metadata["section_heading"],
            serde_json::json!(chunk.section_heading)
        );
    }
    // Determinism costs a second parse: checked on one input in four.
    if data.len().is_multiple_of(4) {
        assert_eq!(
            chunk_page(&page, &CHUNKER),
            chunks,
            "chunking is deterministic"
        );
    }
}
