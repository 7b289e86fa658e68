//! Tidy checks (in the style of rust-analyzer's `tidy`): the layering rules
//! of `ARCHITECTURE.md`, read off the source text so a violation fails the
//! build's tests instead of surviving review.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The code of a file without comment lines (doc comments mention crates
/// and paths freely).
fn code(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Files under `dir` whose code contains any of `needles`.
fn offenders(dir: &str, needles: &[&str], except: &[&str]) -> Vec<String> {
    let base = root().join(dir);
    rust_files(&base)
        .into_iter()
        .filter(|p| {
            let rel = p
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .to_string();
            !except.iter().any(|e| rel.starts_with(e))
        })
        .filter_map(|p| {
            let text = code(&p);
            let hits: Vec<&str> = needles
                .iter()
                .copied()
                .filter(|n| text.contains(n))
                .collect();
            (!hits.is_empty()).then(|| format!("{}: {hits:?}", p.display()))
        })
        .collect()
}

#[test]
fn tidy_storage_knows_nothing_of_http_indexes_or_the_app() {
    let bad = offenders(
        "storage/src",
        &[
            "axum",
            "reqwest",
            "tantivy",
            "usearch",
            "root::",
            "index::",
            "root_index",
        ],
        &[],
    );
    assert!(bad.is_empty(), "storage must stay backend-only: {bad:#?}");
}

#[test]
fn tidy_index_knows_nothing_of_http_storage_or_the_app() {
    let bad = offenders(
        "index/src",
        &[
            "axum",
            "reqwest",
            "redb",
            "root::",
            "storage::",
            "root_storage",
        ],
        &[],
    );
    assert!(bad.is_empty(), "index must stay mechanics-only: {bad:#?}");
}

/// Only the web layer names axum / tower.
#[test]
fn tidy_only_the_web_layer_knows_axum() {
    let bad = offenders(
        "src",
        &["axum::", "use axum", "tower::", "tower_http::"],
        &["src/web/"],
    );
    assert!(bad.is_empty(), "axum/tower outside src/web/: {bad:#?}");
}

#[test]
fn tidy_the_ai_layer_does_not_reach_up_into_the_agent() {
    let bad = offenders("src/ai", &["crate::agent"], &[]);
    assert!(bad.is_empty(), "ai must not import agent: {bad:#?}");
}

#[test]
fn tidy_no_unfinished_code_ships() {
    let needles = ["todo!(", "unimplemented!(", "TODO", "FIXME"];
    let mut bad = Vec::new();
    for dir in ["src", "storage/src", "index/src", "testkit/src", "fuzz/src"] {
        bad.extend(offenders(dir, &needles, &[]));
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// Every core tool handler is in the §5.1 catalog (a handler missing from
/// `CATALOG` would silently never be offered).
#[test]
fn tidy_every_core_tool_handler_is_catalogued() {
    let tools = root::tools::turn::CoreTools::platform();
    let missing: Vec<&str> = tools
        .names()
        .filter(|n| root::tools::catalog::catalog_tool(n).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "handlers without a catalog entry: {missing:?}"
    );
}
