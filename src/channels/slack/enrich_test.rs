use serde_json::json;

use super::*;

fn file(name: &str, mimetype: &str, filetype: &str) -> SharedFile {
    SharedFile {
        id: "F1".into(),
        name: Some(name.into()),
        mimetype: (!mimetype.is_empty()).then(|| mimetype.into()),
        filetype: (!filetype.is_empty()).then(|| filetype.into()),
        ..SharedFile::default()
    }
}

#[test]
fn lines_are_formatted_on_one_line_with_safe_brackets() {
    assert_eq!(
        image_line("diagram.png", "A flow chart\n of the  deploy."),
        "[Shared image: diagram.png — A flow chart of the deploy.]"
    );
    assert_eq!(
        file_line("notes.md", "Meeting notes [draft]"),
        "[Shared file: notes.md — Meeting notes (draft)]"
    );
    assert_eq!(
        metadata_line("deck.pdf", Some("application/pdf")),
        "[Shared file: deck.pdf (application/pdf)]"
    );
    assert_eq!(
        metadata_line("blob", None),
        "[Shared file: blob (unknown type)]"
    );
    // A long summary is cut at a char boundary with an ellipsis.
    let long = "é".repeat(MAX_SUMMARY_CHARS + 50);
    let line = image_line("x.png", &long);
    let summary = line
        .strip_prefix("[Shared image: x.png — ")
        .and_then(|s| s.strip_suffix(']'))
        .unwrap();
    assert_eq!(summary.chars().count(), MAX_SUMMARY_CHARS);
    assert!(summary.ends_with('…'));
}

#[test]
fn files_are_sorted_into_image_text_and_other() {
    assert_eq!(file("a.png", "image/png", "png").kind(), FileKind::Image);
    assert_eq!(file("a.jpg", "image/jpeg", "jpg").kind(), FileKind::Image);
    assert_eq!(
        file("a.svg", "image/svg+xml", "svg").kind(),
        FileKind::Other
    );
    assert_eq!(file("a.txt", "text/plain", "text").kind(), FileKind::Text);
    assert_eq!(file("a.csv", "text/csv", "csv").kind(), FileKind::Text);
    assert_eq!(
        file("a.json", "application/json", "json").kind(),
        FileKind::Text
    );
    assert_eq!(file("a.md", "", "markdown").kind(), FileKind::Text);
    assert_eq!(file("a.html", "text/html", "html").kind(), FileKind::Other);
    assert_eq!(
        file("a.pdf", "application/pdf", "pdf").kind(),
        FileKind::Other
    );
    assert_eq!(file("a.bin", "", "").kind(), FileKind::Other);
}

#[test]
fn file_objects_parse_leniently_and_are_named_by_name_title_or_id() {
    let f = SharedFile::from_value(&json!({
        "id": "F9", "name": "shot.png", "title": "Screenshot", "mimetype": "image/png",
        "size": 1234, "url_private": "https://files.slack.com/x/shot.png", "filetype": "png",
        "thumb_64": "ignored"
    }))
    .unwrap();
    assert_eq!(f.size, Some(1234));
    assert_eq!(f.display_name(), "shot.png");
    // A wrong type is a missing field, not a failed parse.
    let f = SharedFile::from_value(&json!({"id": "F8", "title": "Plan", "size": "big"})).unwrap();
    assert_eq!((f.size, f.display_name()), (None, "Plan".to_string()));
    let f = SharedFile::from_value(&json!({"id": "F7"})).unwrap();
    assert_eq!(f.display_name(), "F7");
    assert_eq!(SharedFile::from_value(&json!({})), None);
    assert_eq!(SharedFile::from_value(&json!("F1")), None);
}

#[test]
fn unfurls_become_shared_link_lines() {
    let m = json!({
        "text": "look",
        "attachments": [
            {"title": "Rust 1.80 released", "title_link": "https://blog.rust-lang.org/x",
             "from_url": "https://blog.rust-lang.org/x?utm=1", "text": "Stable now"},
            {"from_url": "https://example.org/page", "text": "An example page"},
            {"original_url": "https://example.org/bare"},
            {"title": "no link at all"},
            {"title": "duplicate", "title_link": "https://blog.rust-lang.org/x"},
            {"title": "not web", "title_link": "javascript:alert(1)"}
        ]
    });
    assert_eq!(
        unfurl_lines(&m),
        vec![
            "[Shared link: Rust 1.80 released — https://blog.rust-lang.org/x]",
            "[Shared link: An example page — https://example.org/page]",
            "[Shared link: https://example.org/bare]",
        ]
    );
    assert!(unfurl_lines(&json!({"text": "no attachments"})).is_empty());
    let many: Vec<Value> = (0..9)
        .map(|i| json!({"title": "t", "title_link": format!("https://e.org/{i}")}))
        .collect();
    assert_eq!(
        unfurl_lines(&json!({"attachments": many})).len(),
        MAX_UNFURLS
    );
}

#[test]
fn history_text_joins_text_unfurls_and_the_stored_summary() {
    let m = json!({"text": " see this ", "attachments": [
        {"title": "Docs", "title_link": "https://docs.example.org"}]});
    assert_eq!(
        history_text(&m, Some("[Shared image: a.png — A chart]")),
        "see this\n[Shared link: Docs — https://docs.example.org]\n[Shared image: a.png — A chart]"
    );
    assert_eq!(history_text(&json!({"text": ""}), None), "");
    assert_eq!(
        history_text(
            &json!({"text": ""}),
            Some("[Shared file: a.csv (text/csv)]")
        ),
        "[Shared file: a.csv (text/csv)]"
    );
}

#[test]
fn the_turn_message_carries_text_then_file_lines() {
    let lines = vec!["[Shared image: a.png — A cat]".to_string()];
    assert_eq!(turn_message("", &[]), SHARED_A_FILE);
    assert_eq!(turn_message(" hi ", &[]), "hi");
    assert_eq!(turn_message("", &lines), "[Shared image: a.png — A cat]");
    assert_eq!(
        turn_message("what is this?", &lines),
        "what is this?\n\n[Shared image: a.png — A cat]"
    );
}

#[test]
fn images_become_data_uris_by_their_bytes() {
    let mut png = Vec::new();
    image::DynamicImage::new_rgb8(2, 2)
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    let uri = image_data_uri(&png).unwrap();
    assert!(uri.starts_with("data:image/png;base64,iVBOR"), "{uri}");
    assert!(image_data_uri(b"<html>sign in</html>").is_err());
    // BMP is an image, but not one sent to the model.
    assert!(image_data_uri(b"BM\x00\x00\x00\x00\x00\x00").is_err());
}

#[test]
fn text_excerpts_are_capped_and_binary_is_refused() {
    let long = "a".repeat(MAX_TEXT_CHARS + 10);
    assert_eq!(text_excerpt(long.as_bytes()).unwrap().len(), MAX_TEXT_CHARS);
    assert_eq!(
        text_excerpt(b"col1,col2\n1,2\n").unwrap(),
        "col1,col2\n1,2\n"
    );
    assert_eq!(text_excerpt(b"PK\x03\x04\x00\x00"), None);
    assert_eq!(text_excerpt(b"  \n "), None);
}
