//! Tests of the chunker: the §11.3 lengths and overlap, sections and
//! breadcrumbs, atomic blocks, plain text, and hostile markup.

use super::section::HEADING_MAX_CHARS;
use super::*;

// Root's §11.3 values (`root::retrieval::params::CHUNKER`), as test values.
const CHUNK_TARGET_CHARS: usize = 1500;
const CHUNK_OVERLAP_CHARS: usize = 200;
const SENTENCE_SPLIT_ABOVE_CHARS: usize = CHUNK_TARGET_CHARS * 3 / 2;
const PARAMS: ChunkerParams = ChunkerParams {
    target_chars: CHUNK_TARGET_CHARS,
    overlap_chars: CHUNK_OVERLAP_CHARS,
    split_above_chars: SENTENCE_SPLIT_ABOVE_CHARS,
    min_page_text_chars: 20,
};

fn chunk_page(page: &PageInput) -> Vec<Chunk> {
    super::chunk_page(page, &PARAMS)
}

fn page(content: &str) -> PageInput {
    PageInput {
        title: "Handbook".to_owned(),
        slug: "handbook".to_owned(),
        public_id: Some("pub123".to_owned()),
        source_type: "manual".to_owned(),
        author_name: None,
        content_html: content.to_owned(),
    }
}

/// The chunk text without its breadcrumb line.
fn body(chunk: &Chunk) -> &str {
    chunk
        .section_heading
        .as_deref()
        .and_then(|heading| chunk.text.strip_prefix(heading))
        .and_then(|rest| rest.strip_prefix("\n\n"))
        .unwrap_or(&chunk.text)
}

/// Deterministic prose: `count` sentences of varied length.
fn sentences(count: usize, topic: &str) -> String {
    (0..count)
        .map(|i| {
            let filler = [
                "quickly",
                "carefully",
                "again and again",
                "with a short note",
            ];
            format!(
                "The {topic} step {i} runs {} before the next one starts.",
                filler[i % filler.len()]
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Chars shared between the end of `previous` and the start of `next`.
fn shared_overlap(previous: &str, next: &str) -> usize {
    next.char_indices()
        .map(|(at, _)| at)
        .chain([next.len()])
        .rev()
        .find(|&end| end > 0 && previous.ends_with(&next[..end]))
        .map_or(0, |end| char_len(&next[..end]))
}

#[test]
fn hundred_thousand_deep_nesting_is_flattened_to_text_not_parsed() {
    let n = 100_000;
    let html = format!(
        "<h2>Deep</h2>{}<p>The nested answer is forty-two &amp; more.</p><script>x()</script>{}",
        "<div><span>".repeat(n),
        "</span></div>".repeat(n)
    );
    assert!(nesting_exceeds(&html, MAX_HTML_NESTING));
    let chunks = chunk_page(&page(&html));
    assert_eq!(chunks.len(), 1);
    assert!(
        chunks[0]
            .text
            .contains("The nested answer is forty-two & more."),
        "{:?}",
        &chunks[0].text[..200.min(chunks[0].text.len())]
    );
    assert!(!chunks[0].text.contains("x()"), "script text is skipped");
}

#[test]
fn ordinary_pages_are_not_mistaken_for_deep_ones() {
    // 600 list items and paragraphs with optional end tags do not nest.
    let items: String = (0..600)
        .map(|i| format!("<li>item {i}<p>para {i}"))
        .collect();
    let html = format!("<div><ul>{items}</ul><br><img src=x><hr/></div>");
    assert!(!nesting_exceeds(&html, MAX_HTML_NESTING));
    let nested = format!("{}x{}", "<div>".repeat(513), "</div>".repeat(513));
    assert!(nesting_exceeds(&nested, MAX_HTML_NESTING));
    let balanced: String = (0..2_000).map(|_| "<div>a</div>").collect();
    assert!(!nesting_exceeds(&balanced, MAX_HTML_NESTING));
}

#[test]
fn page_with_fewer_than_twenty_chars_of_text_produces_no_chunks() {
    assert!(chunk_page(&page("<p>Too short.</p>")).is_empty());
    assert!(
        chunk_page(&page(
            "<div>   </div><script>much code here, much code</script>"
        ))
        .is_empty()
    );
    assert!(chunk_page(&page("")).is_empty());
    // 19 chars: nothing; 20 chars: one chunk.
    assert!(chunk_page(&page("<p>abcdefghijklmnopqrs</p>")).is_empty());
    assert_eq!(chunk_page(&page("<p>abcdefghijklmnopqrst</p>")).len(), 1);
}

#[test]
fn long_page_chunks_stay_under_the_ceiling_and_near_the_target() {
    let mut html = String::from("<h1>Guide</h1>");
    for section in ["Install", "Configure", "Operate"] {
        html.push_str(&format!("<h2>{section}</h2>"));
        for i in 0..14 {
            html.push_str(&format!("<p>{}</p>", sentences(2 + i % 6, section)));
        }
    }
    let chunks = chunk_page(&page(&html));
    assert!(chunks.len() >= 6, "got {} chunks", chunks.len());
    for chunk in &chunks {
        assert!(char_len(&chunk.text) <= SENTENCE_SPLIT_ABOVE_CHARS);
    }
    // Every chunk but the last of its section is packed close to the target.
    for pair in chunks.windows(2) {
        if pair[0].section_heading == pair[1].section_heading {
            let chars = char_len(&pair[0].text);
            assert!(
                (1000..=CHUNK_TARGET_CHARS).contains(&chars),
                "chunk of {chars} chars"
            );
        }
    }
}

#[test]
fn consecutive_chunks_of_a_section_overlap_by_about_two_hundred_chars() {
    let html: String = (0..12)
        .map(|i| format!("<p>{}</p>", sentences(7, &format!("part{i}"))))
        .collect();
    let html = format!("<h2>Install</h2>{html}");
    let chunks = chunk_page(&page(&html));
    assert!(chunks.len() >= 3);
    for pair in chunks.windows(2) {
        let overlap = shared_overlap(body(&pair[0]), body(&pair[1]));
        assert!(
            (CHUNK_OVERLAP_CHARS / 2..=CHUNK_OVERLAP_CHARS).contains(&overlap),
            "overlap of {overlap} chars"
        );
        // Snapped to a sentence start.
        assert!(body(&pair[1]).starts_with("The "));
    }
}

#[test]
fn overlap_never_crosses_a_section_boundary() {
    let html = format!(
        "<h2>First</h2><p>{}</p><p>{}</p><h2>Second</h2><p>Second section opens here. {}</p>",
        sentences(14, "alpha"),
        sentences(14, "beta"),
        sentences(3, "gamma")
    );
    let chunks = chunk_page(&page(&html));
    let second = chunks
        .iter()
        .find(|chunk| chunk.section_heading.as_deref() == Some("Second"))
        .expect("a chunk for the second section");
    assert!(body(second).starts_with("Second section opens here."));
}

#[test]
fn breadcrumbs_nest_by_level_and_a_new_h2_replaces_the_previous_one() {
    let para = "<p>Enough words in this paragraph to count as text.</p>";
    let html = format!(
        "<h1>Guide</h1>{para}<h2>Install</h2>{para}<h3>Linux</h3>{para}<h2>Usage</h2>{para}<h1>Other</h1>{para}"
    );
    let headings: Vec<_> = chunk_page(&page(&html))
        .into_iter()
        .map(|chunk| chunk.section_heading)
        .collect();
    assert_eq!(
        headings,
        [
            Some("Guide".to_owned()),
            Some("Guide > Install".to_owned()),
            Some("Guide > Install > Linux".to_owned()),
            Some("Guide > Usage".to_owned()),
            Some("Other".to_owned()),
        ]
    );
    let chunks = chunk_page(&page(&html));
    assert!(
        chunks[2]
            .text
            .starts_with("Guide > Install > Linux\n\nEnough words")
    );
}

#[test]
fn text_before_the_first_heading_has_no_section_heading() {
    let chunks = chunk_page(&page(
        "<p>Introduction before any heading.</p><h2>Later</h2><p>Body of the later section.</p>",
    ));
    assert_eq!(chunks[0].section_heading, None);
    assert_eq!(chunks[0].text, "Introduction before any heading.");
    assert_eq!(chunks[1].section_heading.as_deref(), Some("Later"));
}

#[test]
fn a_table_that_fits_is_never_split_and_reads_row_by_row() {
    let rows: String = (0..14)
        .map(|i| {
            format!("<tr><td>Setting {i}</td><td>value number {i}</td><td>default on</td></tr>")
        })
        .collect();
    let html = format!(
        "<p>{}</p><table><tr><th>Name</th><th>Value</th><th>Note</th></tr>{rows}</table>",
        sentences(22, "intro")
    );
    let table: String = std::iter::once("Name | Value | Note".to_owned())
        .chain((0..14).map(|i| format!("Setting {i} | value number {i} | default on")))
        .collect::<Vec<_>>()
        .join("\n");
    let chunks = chunk_page(&page(&html));
    assert!(chunks.len() >= 2, "the table must not fit with the intro");
    assert!(chunks.iter().any(|chunk| chunk.text.contains(&table)));
}

#[test]
fn a_list_that_fits_is_never_split_and_items_get_dash_lines() {
    let items: String = (0..20)
        .map(|i| format!("<li>Checklist item {i} <b>must</b> be done</li>"))
        .collect();
    let html = format!(
        "<p>{}</p><ul>{items}<li>Nested<ul><li>inner item</li></ul></li></ul>",
        sentences(20, "intro")
    );
    let list: String = (0..20)
        .map(|i| format!("- Checklist item {i} must be done\n"))
        .collect::<String>()
        + "- Nested\n  - inner item";
    let chunks = chunk_page(&page(&html));
    assert!(chunks.len() >= 2);
    assert!(chunks.iter().any(|chunk| chunk.text.contains(&list)));
}

#[test]
fn an_oversized_paragraph_is_sentence_split_into_pieces_under_the_ceiling() {
    let paragraph = sentences(90, "long");
    assert!(char_len(&paragraph) > 5000);
    let chunks = chunk_page(&page(&format!("<h2>Long</h2><p>{paragraph}</p>")));
    assert!(chunks.len() >= 3);
    for chunk in &chunks {
        assert!(char_len(&chunk.text) <= SENTENCE_SPLIT_ABOVE_CHARS);
        assert!(body(chunk).ends_with("starts."), "cut mid-sentence");
    }
    for i in 0..90 {
        let needle = format!("The long step {i} runs");
        assert!(chunks.iter().any(|chunk| chunk.text.contains(&needle)));
    }
}

#[test]
fn text_without_sentence_breaks_falls_back_to_words_then_chars() {
    let words = "alpha beta gamma ".repeat(300);
    let chunks = chunk_page(&page(&format!("<p>{words}</p>")));
    assert!(chunks.len() >= 3);
    for chunk in &chunks {
        assert!(char_len(&chunk.text) <= SENTENCE_SPLIT_ABOVE_CHARS);
        assert!(
            chunk
                .text
                .split(' ')
                .all(|word| ["alpha", "beta", "gamma"].contains(&word)),
            "a word was cut"
        );
    }

    // Counting digits never repeat a long substring, so positions are unambiguous.
    let run: String = (0..2000)
        .map(|i: u32| i.to_string())
        .collect::<String>()
        .chars()
        .take(5000)
        .collect();
    let chunks = chunk_page(&page(&format!("<p>{run}</p>")));
    assert!(chunks.len() >= 3);
    let mut covered = 0;
    for chunk in &chunks {
        assert!(char_len(&chunk.text) <= SENTENCE_SPLIT_ABOVE_CHARS);
        let start = run.find(&chunk.text).expect("chunk is a slice of the run");
        assert!(start <= covered, "gap before byte {start}");
        covered = start + chunk.text.len();
    }
    assert_eq!(covered, run.len());
}

#[test]
fn an_oversized_pre_is_split_on_lines_and_keeps_indentation() {
    let code: String = (0..200)
        .map(|i| format!("fn step_{i}() {{\n    run({i});\n}}\n"))
        .collect();
    let chunks = chunk_page(&page(&format!("<pre>{code}</pre>")));
    assert!(chunks.len() >= 3);
    for chunk in &chunks {
        assert!(char_len(&chunk.text) <= SENTENCE_SPLIT_ABOVE_CHARS);
        assert!(chunk.text.contains("\n    run("));
        assert!(!chunk.text.lines().any(|line| line.starts_with("run(")));
    }
}

#[test]
fn multi_byte_text_never_splits_inside_a_char_and_counts_chars() {
    let source = "日本語のテキスト🎉".repeat(600);
    let chunks = chunk_page(&page(&format!("<p>{source}</p>")));
    assert!(chunks.len() >= 3);
    assert!(
        chunks
            .iter()
            .any(|chunk| chunk.text.len() > SENTENCE_SPLIT_ABOVE_CHARS)
    );
    for chunk in &chunks {
        assert!(char_len(&chunk.text) <= SENTENCE_SPLIT_ABOVE_CHARS);
        assert!(source.contains(&chunk.text));
    }
    let emoji = "Ünïcödé 🎉 text with ❤️ and 中文 words. ".repeat(100);
    for chunk in chunk_page(&page(&format!("<h2>Émoji 🎉</h2><p>{emoji}</p>"))) {
        assert!(char_len(&chunk.text) <= SENTENCE_SPLIT_ABOVE_CHARS);
    }
}

#[test]
fn embed_input_is_title_blank_line_then_chunk_text() {
    let chunks = chunk_page(&page("<h2>Install</h2><p>Run the installer twice.</p>"));
    assert_eq!(
        chunks[0].embed_input(),
        "Handbook\n\nInstall\n\nRun the installer twice."
    );
}

#[test]
fn metadata_has_exactly_the_six_keys_with_the_page_values() {
    let chunks = chunk_page(&page(
        "<h1>Guide</h1><h2>Install</h2><p>Run the installer twice.</p>",
    ));
    assert_eq!(
        chunks[0].metadata(),
        json!({
            "title": "Handbook",
            "slug": "handbook",
            "public_id": "pub123",
            "source_type": "manual",
            "author_name": null,
            "section_heading": "Guide > Install",
        })
    );
    let untitled = chunk_page(&page("<p>No heading on this page at all.</p>"));
    assert_eq!(untitled[0].metadata()["section_heading"], Value::Null);
    assert_eq!(untitled[0].metadata().as_object().map(|m| m.len()), Some(6));
}

#[test]
fn chunk_indexes_are_contiguous_from_zero() {
    let html: String = ["A", "B", "C"]
        .iter()
        .map(|h| {
            format!(
                "<h2>{h}</h2><p>{}</p><p>{}</p>",
                sentences(20, h),
                sentences(20, h)
            )
        })
        .collect();
    let chunks = chunk_page(&page(&html));
    assert!(chunks.len() > 3);
    let indexes: Vec<i32> = chunks.iter().map(|chunk| chunk.chunk_index).collect();
    assert_eq!(indexes, (0..chunks.len() as i32).collect::<Vec<_>>());
}

#[test]
fn plain_text_paragraphs_become_blocks_and_angle_brackets_survive() {
    let text = "First paragraph returns Vec<String> when a < b.\nIts second line.\n\n\
                Second paragraph &amp; more.\r\n\r\n   \n\nThird   paragraph.";
    let chunks = chunk_page(&page(text));
    assert_eq!(
        chunks[0].text,
        "First paragraph returns Vec<String> when a < b.\nIts second line.\n\n\
         Second paragraph & more.\n\nThird paragraph."
    );

    let crlf = chunk_page(&page("Windows line one\r\nline two\r\n\r\nNext paragraph."));
    assert_eq!(
        crlf[0].text,
        "Windows line one\nline two\n\nNext paragraph."
    );

    let long: String = (0..10)
        .map(|i| sentences(6, &format!("para{i}")) + "\n\n")
        .collect();
    let chunks = chunk_page(&page(&long));
    assert!(chunks.len() >= 2);
    for i in 0..10 {
        let paragraph = sentences(6, &format!("para{i}"));
        assert!(chunks.iter().any(|chunk| chunk.text.contains(&paragraph)));
    }
}

#[test]
fn loose_text_outside_blocks_is_kept() {
    let chunks = chunk_page(&page(
        "<div>Bare intro in a div.</div>Loose text node.<span> Span text.</span><p>A paragraph.</p>",
    ));
    assert_eq!(
        chunks[0].text,
        "Bare intro in a div.\n\nLoose text node. Span text.\n\nA paragraph."
    );
}

#[test]
fn whitespace_collapses_except_in_pre_and_br_is_a_newline() {
    let chunks = chunk_page(&page(
        "<p>  lots   of\n\n  space </p><pre>  keep\n    this</pre><p>line<br>break</p>",
    ));
    assert_eq!(
        chunks[0].text,
        "lots of space\n\n  keep\n    this\n\nline\nbreak"
    );
}

#[test]
fn scripts_styles_and_templates_are_skipped() {
    let chunks = chunk_page(&page(
        "<script>var secret = 1;</script><style>p { color: red }</style>\
         <noscript>enable javascript</noscript><template><p>template text</p></template>\
         <p>Visible paragraph text here.</p>",
    ));
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].text, "Visible paragraph text here.");
}

#[test]
fn an_overlong_heading_is_capped_in_the_breadcrumb_but_kept_as_text() {
    let heading = "word ".repeat(60).trim_end().to_owned();
    let chunks = chunk_page(&page(&format!("<h2>{heading}</h2><p>Short body.</p>")));
    let breadcrumb = chunks[0].section_heading.clone().unwrap_or_default();
    assert_eq!(char_len(&breadcrumb), HEADING_MAX_CHARS);
    assert!(breadcrumb.ends_with('…'));
    assert!(body(&chunks[0]).starts_with(&heading));
}

#[test]
fn empty_and_garbage_html_never_panics() {
    // html5ever's scope checks make parsing quadratic in nesting depth, so
    // 2,000 levels keeps the test fast while exercising the iterative walk.
    let deep = format!(
        "{}Deeply nested text that still counts.",
        "<div>".repeat(2_000)
    );
    let inputs = [
        String::new(),
        "<".to_owned(),
        "<<<<>>>>".to_owned(),
        "</p></div></table>".to_owned(),
        "<p><table><li><h2>unclosed heading and cells".to_owned(),
        "<!-- an unclosed comment".to_owned(),
        "\u{0}\u{FFFD}<p>\u{0}</p>".to_owned(),
        format!("<h1>{}</h1>", "x".repeat(5000)),
        format!("<pre>{}</pre>", "\n".repeat(5000)),
        format!("<table>{}</table>", "<td>cell".repeat(3000)),
        deep.clone(),
    ];
    for input in &inputs {
        for chunk in chunk_page(&page(input)) {
            assert!(char_len(&chunk.text) <= SENTENCE_SPLIT_ABOVE_CHARS);
        }
    }
    let chunks = chunk_page(&page(&deep));
    assert_eq!(chunks[0].text, "Deeply nested text that still counts.");
}

#[test]
fn output_is_deterministic() {
    let html = format!(
        "<h1>T</h1><p>{}</p><ul><li>a</li><li>b</li></ul><h2>U</h2><p>{}</p>",
        sentences(40, "x"),
        sentences(40, "y")
    );
    assert_eq!(chunk_page(&page(&html)), chunk_page(&page(&html)));
}
