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

/// The top-level modules of `src/` (a file `x.rs` / `x_test.rs` or a dir
/// `x/`), and for each the set of others its code names as `crate::<m>`.
fn module_graph() -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    use std::collections::{BTreeMap, BTreeSet};
    let src = root().join("src");
    let mut modules = BTreeSet::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let name = name.strip_suffix("_test").unwrap_or(&name).to_string();
        if name != "lib" && name != "main" {
            modules.insert(name);
        }
    }
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(&src) {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .to_string();
        let first = rel.split('/').next().unwrap().trim_end_matches(".rs");
        let from = first.strip_suffix("_test").unwrap_or(first).to_string();
        if !modules.contains(&from) {
            continue;
        }
        let text = code(&file);
        let mut names = BTreeSet::new();
        // `crate::m…` anywhere, and `m::` / `m,` inside `use crate::{…}`.
        for (i, _) in text.match_indices("crate::") {
            let rest = &text[i + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let group = &group[..group.find(';').unwrap_or(group.len())];
                for part in group.split([',', '{', '}']) {
                    let head = part.trim().split("::").next().unwrap_or("").trim();
                    names.insert(head.to_string());
                }
            } else {
                let head: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                names.insert(head);
            }
        }
        let deps = graph.entry(from.clone()).or_default();
        deps.extend(
            names
                .into_iter()
                .filter(|n| *n != from && modules.contains(n)),
        );
    }
    graph
}

/// No two top-level modules of `src/` depend on each other, directly or
/// through others: the layers of `ARCHITECTURE.md` form a DAG.
#[test]
fn tidy_the_module_graph_has_no_cycles() {
    let graph = module_graph();
    // Depth-first search with colours; report the first cycle's path.
    fn visit(
        m: &str,
        graph: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        state: &mut std::collections::BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(m) {
            Some(2) => return None,
            Some(1) => {
                let start = path.iter().position(|p| p == m).unwrap();
                let mut cycle = path[start..].to_vec();
                cycle.push(m.to_string());
                return Some(cycle);
            }
            _ => {}
        }
        state.insert(m.to_string(), 1);
        path.push(m.to_string());
        for dep in graph.get(m).into_iter().flatten() {
            if let Some(c) = visit(dep, graph, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(m.to_string(), 2);
        None
    }
    let mut state = std::collections::BTreeMap::new();
    for m in graph.keys() {
        let cycle = visit(m, &graph, &mut state, &mut Vec::new());
        assert!(
            cycle.is_none(),
            "module cycle: {}",
            cycle.unwrap().join(" → ")
        );
    }
    // The check sees the edges it must: the web layer reaches the state.
    assert!(graph["web"].contains("state"), "{:?}", graph["web"]);
}

/// Time comes from the injected `Clock` (tests drive a manual one): the
/// system time is read in `platform/clock.rs` only.
#[test]
fn tidy_the_system_time_is_read_only_by_the_clock() {
    let bad = offenders(
        "src",
        &["Ts::now()", "Timestamp::now()", "SystemTime::now()"],
        &["src/platform/clock.rs"],
    );
    assert!(bad.is_empty(), "read time through the Clock: {bad:#?}");
}

/// Every queue handler in `src/` is registered by `app::build_workers` (a
/// handler nobody registers would silently never run), and every
/// registered queue is a row of the §13 table.
#[test]
fn tidy_every_queue_handler_is_registered() {
    let app = code(&root().join("src/app.rs"));
    let start = app
        .find("pub fn build_workers")
        .expect("app::build_workers");
    let body = &app[start..];
    let body = &body[..body.find("\n}\n").unwrap_or(body.len())];
    let mut handlers = Vec::new();
    for file in rust_files(&root().join("src")) {
        let rel = file
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .to_string();
        if rel.starts_with("src/tooling/") || rel.ends_with("src/queue/job.rs") {
            continue; // bench's counting handler; the typed adapter
        }
        let text = code(&file);
        for marker in ["impl TypedJobHandler for ", "impl JobHandler for "] {
            for (i, _) in text.match_indices(marker) {
                let name: String = text[i + marker.len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                handlers.push((rel.clone(), name));
            }
        }
    }
    assert!(handlers.len() >= 2, "found {handlers:?}");
    let missing: Vec<_> = handlers
        .iter()
        .filter(|(_, name)| !body.contains(name.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "handlers build_workers does not register: {missing:?}"
    );
    for spec in root::queue::registry::QUEUES {
        assert_eq!(root::queue::registry::spec(spec.name), Some(spec));
    }
}

/// A file's code before its `#[cfg(test)]` module (unit tests spell
/// names out on purpose), or nothing for a test-only file.
fn production_code(path: &Path) -> String {
    let name = path.file_name().unwrap().to_string_lossy();
    if name == "tests.rs" || name.ends_with("_test.rs") {
        return String::new();
    }
    let text = code(path);
    match text.find("#[cfg(test)]") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// Tool names are defined once (`platform/tool_names.rs`): no production
/// code spells a catalogued tool's name as a string literal.
#[test]
fn tidy_tool_names_are_defined_once() {
    let names: Vec<&str> = root::tools::catalog::CATALOG
        .iter()
        .map(|t| t.name)
        .collect();
    assert!(names.len() >= 36, "{names:?}");
    let mut bad = Vec::new();
    for file in rust_files(&root().join("src")) {
        if file.ends_with("platform/tool_names.rs") {
            continue;
        }
        let text = production_code(&file);
        let hits: Vec<&&str> = names
            .iter()
            .filter(|n| text.contains(&format!("\"{n}\"")))
            .collect();
        if !hits.is_empty() {
            bad.push(format!("{}: {hits:?}", file.display()));
        }
    }
    assert!(bad.is_empty(), "use platform::tool_names: {bad:#?}");
}

/// Web answers are typed serde structs (the API issue generates its
/// OpenAPI document from them), never ad-hoc `json!` values.
#[test]
fn tidy_web_responses_are_typed() {
    let mut bad = Vec::new();
    for file in rust_files(&root().join("src/web")) {
        let text = production_code(&file);
        if text.contains("json!(") || text.contains("-> Result<Json<Value>") {
            bad.push(file.display().to_string());
        }
    }
    assert!(bad.is_empty(), "untyped JSON answers in: {bad:#?}");
}

/// The developer tooling (`src/tooling/`: benches, eval) stays off the
/// server's path: only the CLI mounts it, so `--no-default-features`
/// builds the server without it.
#[test]
fn tidy_only_the_cli_reaches_the_tooling() {
    let bad = offenders("src", &["crate::tooling"], &["src/tooling/", "src/cli.rs"]);
    assert!(bad.is_empty(), "server code importing tooling: {bad:#?}");
    let graph = module_graph();
    assert!(graph["cli"].contains("tooling"), "{:?}", graph["cli"]);
}

/// Files stay reviewable: none over 800 lines (a module that outgrows it
/// becomes a directory split by topic).
#[test]
fn tidy_no_source_file_over_800_lines() {
    let mut bad = Vec::new();
    for dir in [
        "src",
        "storage/src",
        "storage/tests",
        "index/src",
        "tests",
        "testkit/src",
        "fuzz/src",
        "benches",
    ] {
        for file in rust_files(&root().join(dir)) {
            let lines = std::fs::read_to_string(&file).unwrap().lines().count();
            if lines > 800 {
                bad.push(format!("{}: {lines}", file.display()));
            }
        }
    }
    assert!(bad.is_empty(), "split these along their seams: {bad:#?}");
}

/// The layers of `ARCHITECTURE.md`'s bird's-eye view, bottom first: a
/// module may import only modules of lower layers. A new top-level module
/// must be placed here (the test fails for an unplaced one).
const LAYERS: &[&[&str]] = &[
    &["config"],
    &["platform", "outbound"],
    &["trace", "prompts", "follow_ups", "insights", "builds"],
    &["ai", "queue", "integrations", "slack"],
    &["limits", "agent", "identity", "email", "memory"],
    &["retrieval", "auth"],
    &["tools", "knowledge", "ops"],
    &["channels"],
    &["state"],
    &["web"],
    &["app"],
    &["tooling"],
    &["cli"],
];

#[test]
fn tidy_modules_import_only_lower_layers() {
    let layer_of = |m: &str| LAYERS.iter().position(|l| l.contains(&m));
    let graph = module_graph();
    let mut bad = Vec::new();
    for (module, deps) in &graph {
        let Some(own) = layer_of(module) else {
            bad.push(format!("{module}: not placed in LAYERS"));
            continue;
        };
        for dep in deps {
            match layer_of(dep) {
                Some(l) if l < own => {}
                _ => bad.push(format!("{module} (layer {own}) imports {dep}")),
            }
        }
    }
    assert!(bad.is_empty(), "layering violations: {bad:#?}");
}
