//! The OpenAPI document (§12.2) covers exactly the routes `api::router`
//! mounts: every `.route(…)` of its source, with each method, is an
//! operation of `GET /api/v1/openapi.json`, and every operation is mounted.
//! A route added without its table entry (or an entry without a route)
//! fails here.

use std::collections::BTreeSet;

use serde_json::Value;

use root::platform::api_keys::KeyKind;

use crate::support::{TestApp, mint_key};

/// `(method, path)` of every route in `router()` of `src/web/api/mod.rs`.
fn mounted() -> BTreeSet<(String, String)> {
    let src = include_str!("../../src/web/api/mod.rs");
    let start = src.find("pub fn router(").expect("router()");
    let body = &src[start..];
    let end = body.find(".fallback(").expect("the router's fallback");
    let body = &body[..end];
    let mut out = BTreeSet::new();
    for chunk in body.split(".route(").skip(1) {
        let path = chunk
            .split('"')
            .nth(1)
            .expect("a route's path literal")
            .to_string();
        // The handler expression runs to the next `.route(` (split above).
        let handlers = &chunk[chunk.find(path.as_str()).unwrap() + path.len()..];
        for method in ["get", "post", "put", "patch", "delete"] {
            let call = format!("{method}(");
            let found = handlers.match_indices(&call).any(|(i, _)| {
                let before = handlers[..i].chars().last();
                matches!(
                    before,
                    Some('.') | Some(':') | Some(' ') | Some('(') | Some('\n')
                )
            });
            if found {
                out.insert((method.to_string(), path.clone()));
            }
        }
    }
    out
}

#[tokio::test]
async fn the_document_lists_exactly_the_mounted_routes() {
    let app = TestApp::spawn().await;
    let key = mint_key(&app.state.store, "root", KeyKind::Live).await;
    let resp = app.get("/api/v1/openapi.json", Some(&key)).await;
    assert_eq!(resp.status(), 200);
    let doc: Value = resp.json().await.unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            documented.insert((method.clone(), path.clone()));
        }
    }
    let mounted = mounted();
    assert!(
        mounted.len() > 40,
        "the parser found the routes: {mounted:?}"
    );
    let undocumented: Vec<_> = mounted.difference(&documented).collect();
    let unmounted: Vec<_> = documented.difference(&mounted).collect();
    assert!(
        undocumented.is_empty() && unmounted.is_empty(),
        "mounted without an OpenAPI entry: {undocumented:?}; documented but not mounted: {unmounted:?}"
    );
    // Every `$ref` resolves inside the document.
    let text = doc.to_string();
    for r in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
        let name = r.split('"').next().unwrap();
        assert!(
            doc["components"]["schemas"][name].is_object(),
            "dangling $ref {name}"
        );
    }
    assert_eq!(
        app.get("/api/v1/openapi.json", None).await.status(),
        401,
        "the same bearer auth as the API"
    );
}
