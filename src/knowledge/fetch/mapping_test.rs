use serde_json::json;

use super::*;

fn map(mapping: Value, root: Value) -> (Vec<RawDocument>, usize) {
    Mapping::compile(&mapping).unwrap().documents(&root)
}

#[test]
fn every_spec_key_with_a_valid_path_is_accepted() {
    let all: serde_json::Map<String, Value> = MAPPING_FIELDS
        .iter()
        .map(|k| (k.to_string(), json!("$.a.b[0]")))
        .collect();
    assert_eq!(validate_mapping(&Value::Object(all)), Ok(()));
    assert_eq!(validate_mapping(&json!({})), Ok(()));
    assert_eq!(validate_mapping(&Value::Null), Ok(()));
    assert_eq!(
        validate_mapping(&json!({"title_path": null, "slug_path": " "})),
        Ok(())
    );
}

#[test]
fn an_unknown_key_is_named() {
    let e = validate_mapping(&json!({"title_path": "$.t", "body_path": "$.b"})).unwrap_err();
    assert!(
        e.starts_with("mapping.body_path: unknown field; expected one of documents_path, "),
        "{e}"
    );
}

#[test]
fn a_path_that_does_not_compile_is_named() {
    let e = validate_mapping(&json!({"title_path": "$.[title"})).unwrap_err();
    assert!(
        e.starts_with("mapping.title_path: not a valid JSONPath ("),
        "{e}"
    );
    let e = validate_mapping(&json!({"documents_path": "data.items"})).unwrap_err();
    assert!(
        e.starts_with("mapping.documents_path: not a valid JSONPath"),
        "{e}"
    );
}

#[test]
fn a_non_string_value_is_named() {
    assert_eq!(
        validate_mapping(&json!({"external_id_path": 3})),
        Err("mapping.external_id_path: must be a string (a JSONPath such as $.title)".into())
    );
    assert!(validate_mapping(&json!({"title_path": ["$.t"]})).is_err());
    assert_eq!(
        validate_mapping(&json!(["$.t"])),
        Err("mapping: must be a JSON object of JSONPath strings".into())
    );
}

#[test]
fn explicit_paths_fill_the_fields_from_each_document_node() {
    let (docs, total) = map(
        json!({
            "documents_path": "$.data.items[*]",
            "external_id_path": "$.uid",
            "title_path": "$.meta.headline",
            "content_html_path": "$.body.html",
            "knowledge_date_path": "$.meta.year",
            "author_name_path": "$.authors[0].name",
        }),
        json!({"data": {"items": [
            {"uid": 7, "meta": {"headline": "Seven", "year": 2024},
             "body": {"html": "<p>7</p>"}, "authors": [{"name": "Kim"}, {"name": "Lee"}]},
            {"uid": "eight", "meta": {"headline": "Eight"}, "title": "ignored: title_path is set"},
        ]}}),
    );
    assert_eq!(total, 2);
    assert_eq!(
        docs[0],
        RawDocument {
            external_id: Some("7".into()),
            title: Some("Seven".into()),
            content_html: Some("<p>7</p>".into()),
            knowledge_date: Some("2024".into()),
            author_name: Some("Kim".into()),
            ..RawDocument::default()
        }
    );
    assert_eq!(docs[1].external_id.as_deref(), Some("eight"));
    assert_eq!(docs[1].title.as_deref(), Some("Eight"));
}

#[test]
fn unset_paths_fall_back_to_conventional_keys_in_order() {
    let (docs, total) = map(
        json!({}),
        json!([
            {"id": 1, "name": "One", "html": "<p>1</p>", "body": "one", "url": "https://x/1",
             "author": "Ann", "updated_at": "2024-01-01", "slug": "one"},
            {"external_id": "e2", "id": 2, "title": "Two", "name": "not me",
             "content_text": "two", "text": "not me", "published": true, "date": "2023"},
        ]),
    );
    assert_eq!(total, 2);
    assert_eq!(
        docs[0],
        RawDocument {
            external_id: Some("1".into()),
            slug: Some("one".into()),
            title: Some("One".into()),
            content_html: Some("<p>1</p>".into()),
            content_text: Some("one".into()),
            source_url: Some("https://x/1".into()),
            author_name: Some("Ann".into()),
            knowledge_date: Some("2024-01-01".into()),
        }
    );
    assert_eq!(docs[1].external_id.as_deref(), Some("e2"));
    assert_eq!(docs[1].title.as_deref(), Some("Two"));
    assert_eq!(docs[1].content_text.as_deref(), Some("two"));
    assert_eq!(docs[1].knowledge_date.as_deref(), Some("2023"));
}

#[test]
fn a_root_object_is_one_document_and_scalars_or_empties_are_none() {
    let (docs, total) = map(json!(null), json!({"title": "Only", "text": "me"}));
    assert_eq!(total, 1);
    assert_eq!(docs[0].title.as_deref(), Some("Only"));
    assert_eq!(map(json!({}), json!("just a string")).1, 0);
    assert_eq!(map(json!({}), json!([1, "x", {}, {"other": 1}])).1, 0);
    // Null, arrays and objects are no value; booleans are text.
    let (docs, _) = map(
        json!({}),
        json!([{"id": null, "title": ["a"], "content": {"x": 1}, "author": false}]),
    );
    assert_eq!(
        docs,
        vec![RawDocument {
            author_name: Some("false".into()),
            ..RawDocument::default()
        }]
    );
}

#[test]
fn a_documents_path_matching_one_array_means_its_elements() {
    let root = json!({"data": {"items": [{"id": 1}, {"id": 2}]}});
    assert_eq!(
        map(json!({"documents_path": "$.data.items"}), root.clone()).1,
        2
    );
    // Pointing at the wrong level maps to nothing rather than one empty page.
    assert_eq!(map(json!({"documents_path": "$.data"}), root).1, 0);
}

#[test]
fn documents_are_cut_at_the_run_limit_and_counted_in_full() {
    let items: Vec<Value> = (0..MAX_DOCUMENTS_PER_RUN + 10)
        .map(|i| json!({"id": i}))
        .collect();
    let (docs, total) = map(json!({}), Value::Array(items));
    assert_eq!(docs.len(), MAX_DOCUMENTS_PER_RUN);
    assert_eq!(total, MAX_DOCUMENTS_PER_RUN + 10);
    assert_eq!(docs[249].external_id.as_deref(), Some("249"));
}
