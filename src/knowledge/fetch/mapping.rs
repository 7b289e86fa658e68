//! The `knowledge_sources.mapping` of a JSON answer (§2.5): which nodes are
//! documents (`documents_path`) and where each [`RawDocument`] field sits in
//! a document node (`*_path`), as RFC 9535 JSONPath (`serde_json_path`).
//!
//! Paths are checked when a source is saved ([`validate_mapping`]) so an
//! admin learns of a typo then, not at the next scheduled run; a run
//! compiles them again (`Mapping::compile`) because rows can predate the
//! check. Unset paths fall back to conventional key names, so an API that
//! already answers `[{"id", "title", "html"}]` needs no mapping at all.

use serde_json::Value;
use serde_json_path::JsonPath;

use super::{MAX_DOCUMENTS_PER_RUN, RawDocument};

/// The keys a mapping may have (§2.5), in order: `documents_path`, then
/// one per [`RawDocument`] field.
pub const MAPPING_FIELDS: [&str; 9] = [
    "documents_path",
    "external_id_path",
    "slug_path",
    "title_path",
    "content_html_path",
    "content_text_path",
    "source_url_path",
    "author_name_path",
    "knowledge_date_path",
];

/// One [`RawDocument`] field: its mapping key, the keys tried when the
/// path is unset, and where it goes.
struct FieldSpec {
    key: &'static str,
    defaults: &'static [&'static str],
    slot: fn(&mut RawDocument) -> &mut Option<String>,
}

const FIELDS: [FieldSpec; 8] = [
    FieldSpec {
        key: "external_id_path",
        defaults: &["external_id", "id"],
        slot: |d| &mut d.external_id,
    },
    FieldSpec {
        key: "slug_path",
        defaults: &["slug"],
        slot: |d| &mut d.slug,
    },
    FieldSpec {
        key: "title_path",
        defaults: &["title", "name"],
        slot: |d| &mut d.title,
    },
    FieldSpec {
        key: "content_html_path",
        defaults: &["content_html", "html"],
        slot: |d| &mut d.content_html,
    },
    FieldSpec {
        key: "content_text_path",
        defaults: &["content_text", "text", "content", "body"],
        slot: |d| &mut d.content_text,
    },
    FieldSpec {
        key: "source_url_path",
        defaults: &["source_url", "url"],
        slot: |d| &mut d.source_url,
    },
    FieldSpec {
        key: "author_name_path",
        defaults: &["author_name", "author"],
        slot: |d| &mut d.author_name,
    },
    FieldSpec {
        key: "knowledge_date_path",
        defaults: &["knowledge_date", "date", "updated_at"],
        slot: |d| &mut d.knowledge_date,
    },
];

/// Check a `knowledge_sources.mapping` object: only the nine §2.5 keys, each a string that
/// compiles as JSONPath; Err names the field ("mapping.title_path: …").
///
/// `null` (no mapping) is accepted, and so is a key set to `null` or `""`
/// (a form's empty field): both mean "unset, use the conventional keys".
pub fn validate_mapping(mapping: &Value) -> Result<(), String> {
    Mapping::compile(mapping).map(|_| ())
}

/// A compiled mapping.
#[derive(Clone, Debug, Default)]
pub(super) struct Mapping {
    documents: Option<JsonPath>,
    /// One per [`FIELDS`] entry.
    fields: [Option<JsonPath>; 8],
}

impl Mapping {
    /// Compile `mapping` (see [`validate_mapping`] for what is accepted).
    pub(super) fn compile(mapping: &Value) -> Result<Mapping, String> {
        let object = match mapping {
            Value::Null => return Ok(Mapping::default()),
            Value::Object(o) => o,
            _ => return Err("mapping: must be a JSON object of JSONPath strings".into()),
        };
        let mut compiled = Mapping::default();
        for (key, value) in object {
            if !MAPPING_FIELDS.contains(&key.as_str()) {
                let shown: String = key.chars().take(64).collect();
                return Err(format!(
                    "mapping.{shown}: unknown field; expected one of {}",
                    MAPPING_FIELDS.join(", ")
                ));
            }
            let path = match value {
                Value::Null => continue,
                Value::String(s) if s.trim().is_empty() => continue,
                Value::String(s) => JsonPath::parse(s.trim()).map_err(|e| {
                    format!(
                        "mapping.{key}: not a valid JSONPath ({} at position {})",
                        e.message(),
                        e.position()
                    )
                })?,
                _ => {
                    return Err(format!(
                        "mapping.{key}: must be a string (a JSONPath such as $.title)"
                    ));
                }
            };
            if key == "documents_path" {
                compiled.documents = Some(path);
            } else if let Some(i) = FIELDS.iter().position(|f| f.key == key) {
                compiled.fields[i] = Some(path);
            }
        }
        Ok(compiled)
    }

    /// The documents of `root` (at most [`MAX_DOCUMENTS_PER_RUN`]) and how
    /// many document nodes it has in all.
    ///
    /// Document nodes: `documents_path`'s matches — the elements, when it
    /// matches a single array (`$.items` meaning `$.items[*]`); without the
    /// path, the root's elements if it is an array, else the root itself.
    /// A node that fills no field (a scalar, an empty object) is no
    /// document, so a path pointing at the wrong level maps to zero
    /// documents instead of a run of empty pages.
    pub(super) fn documents(&self, root: &Value) -> (Vec<RawDocument>, usize) {
        let nodes: Vec<&Value> = match &self.documents {
            Some(path) => {
                let matched = path.query(root).all();
                match matched.as_slice() {
                    [Value::Array(items)] => items.iter().collect(),
                    _ => matched,
                }
            }
            None => match root {
                Value::Array(items) => items.iter().collect(),
                other => vec![other],
            },
        };
        let mut documents = Vec::new();
        let mut total = 0;
        for node in nodes {
            let Some(document) = self.document(node) else {
                continue;
            };
            total += 1;
            if documents.len() < MAX_DOCUMENTS_PER_RUN {
                documents.push(document);
            }
        }
        (documents, total)
    }

    /// The fields of one document node, `None` when it fills none.
    fn document(&self, node: &Value) -> Option<RawDocument> {
        let mut document = RawDocument::default();
        let mut filled = false;
        for (spec, path) in FIELDS.iter().zip(&self.fields) {
            let value = match path {
                Some(path) => path.query(node).first().and_then(scalar),
                None => spec
                    .defaults
                    .iter()
                    .find_map(|key| node.get(key).and_then(scalar)),
            };
            if let Some(value) = value {
                *(spec.slot)(&mut document) = Some(value);
                filled = true;
            }
        }
        filled.then_some(document)
    }
}

/// A field value: strings as they are, numbers and booleans as their JSON
/// text; null, arrays and objects are no value.
fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

#[cfg(test)]
#[path = "mapping_test.rs"]
mod tests;
