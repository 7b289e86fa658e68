//! Deep truncation of oversized tool results (§4.3): a result whose
//! serialization exceeds [`TOOL_RESULT_SERIALIZED_CAP`] characters is cut
//! to at most [`TOOL_RESULT_TRUNCATE_BUDGET`]. A cut string ends with
//! [`STRING_TRUNCATION_MARKER`]; a cut array ends with one placeholder
//! string saying how many items were cut. Long strings are cut before any
//! item is dropped, and siblings are cut alike, so a short title next to a
//! huge body survives. Structure (keys, nesting) is kept so the model can
//! still read the shape.

use serde_json::{Map, Value};

use super::constants::{
    STRING_TRUNCATION_MARKER, TOOL_RESULT_SERIALIZED_CAP, TOOL_RESULT_TRUNCATE_BUDGET,
};

/// Serialize a model-visible result for the transcript, deep-truncating it
/// when it exceeds the cap. Returns the text and whether it was truncated.
pub fn serialize_for_transcript(value: &Value) -> (String, bool) {
    let text = value.to_string();
    if char_len(&text) <= TOOL_RESULT_SERIALIZED_CAP {
        return (text, false);
    }
    (deep_truncate_to(value, TOOL_RESULT_TRUNCATE_BUDGET), true)
}

/// The placeholder that replaces `n` cut array items.
pub fn array_tail_placeholder(n: usize) -> String {
    format!("[… {n} more items omitted for size]")
}

/// Strings are never cut below this many characters while arrays can
/// still give up items instead.
const MIN_STRING_CAP_CHARS: usize = 200;

/// Deep-truncate `value` so that its serialization is at most `budget`
/// characters, cutting as little as possible and treating siblings alike:
///
/// 1. the largest per-string cap `L` (binary search) such that cutting every
///    longer string to `L` characters + marker fits — no item is lost;
/// 2. if even `L` = 200 does not fit, strings stay capped at 200 and the
///    largest per-array item cap `N` that fits is searched the same way;
/// 3. if one item per array still does not fit, a depth-first walk with a
///    character budget keeps what fits, in order.
pub fn deep_truncate_to(value: &Value, budget: usize) -> String {
    let fits = |text: &str| char_len(text) <= budget;
    let longest = longest_string_chars(value);
    let floor = cut(value, MIN_STRING_CAP_CHARS.min(longest), usize::MAX).to_string();
    if fits(&floor) {
        let (mut lo, mut hi) = (MIN_STRING_CAP_CHARS.min(longest), longest);
        let mut best = floor;
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            let text = cut(value, mid, usize::MAX).to_string();
            if fits(&text) {
                lo = mid;
                best = text;
            } else {
                hi = mid - 1;
            }
        }
        return best;
    }
    let longest_array = longest_array_len(value);
    let one = cut(value, MIN_STRING_CAP_CHARS, 1).to_string();
    if longest_array > 0 && fits(&one) {
        let (mut lo, mut hi) = (1, longest_array);
        let mut best = one;
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            let text = cut(value, MIN_STRING_CAP_CHARS, mid).to_string();
            if fits(&text) {
                lo = mid;
                best = text;
            } else {
                hi = mid - 1;
            }
        }
        return best;
    }
    greedy_truncate_to(value, budget)
}

/// Cut every string longer than `max_chars` (adding the marker) and every
/// array longer than `max_items` (adding the tail placeholder).
fn cut(value: &Value, max_chars: usize, max_items: usize) -> Value {
    match value {
        Value::String(s) => match s.char_indices().nth(max_chars) {
            Some((i, _)) => Value::String(format!("{}{}", &s[..i], STRING_TRUNCATION_MARKER)),
            None => value.clone(),
        },
        Value::Array(items) => {
            let mut out: Vec<Value> = items
                .iter()
                .take(max_items)
                .map(|v| cut(v, max_chars, max_items))
                .collect();
            if items.len() > max_items {
                out.push(Value::String(array_tail_placeholder(
                    items.len() - max_items,
                )));
            }
            Value::Array(out)
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), cut(v, max_chars, max_items)))
                .collect(),
        ),
        scalar => scalar.clone(),
    }
}

fn longest_string_chars(value: &Value) -> usize {
    match value {
        Value::String(s) => s.chars().count(),
        Value::Array(items) => items.iter().map(longest_string_chars).max().unwrap_or(0),
        Value::Object(map) => map.values().map(longest_string_chars).max().unwrap_or(0),
        _ => 0,
    }
}

fn longest_array_len(value: &Value) -> usize {
    match value {
        Value::Array(items) => items
            .iter()
            .map(longest_array_len)
            .max()
            .unwrap_or(0)
            .max(items.len()),
        Value::Object(map) => map.values().map(longest_array_len).max().unwrap_or(0),
        _ => 0,
    }
}

/// Last resort: a depth-first walk with a character budget. The walk
/// estimates sizes in bytes (≥ characters), then the result is checked;
/// JSON escaping can make the estimate short, so the walk repeats with a
/// smaller allowance until it fits.
fn greedy_truncate_to(value: &Value, budget: usize) -> String {
    let mut allowance = budget;
    loop {
        let mut remaining = allowance as isize;
        let cut = walk(value, &mut remaining);
        let text = cut.to_string();
        let len = char_len(&text);
        if len <= budget {
            return text;
        }
        let over = len - budget;
        if allowance <= over + 64 {
            // Nothing sensible fits (pathological budget): the bare marker.
            return Value::String(STRING_TRUNCATION_MARKER.to_string()).to_string();
        }
        allowance -= over + 64;
    }
}

fn char_len(s: &str) -> usize {
    s.chars().count()
}

/// Serialized length of a JSON string (quotes and escapes included).
fn json_str_len(s: &str) -> isize {
    Value::String(s.to_string()).to_string().len() as isize
}

fn walk(value: &Value, remaining: &mut isize) -> Value {
    match value {
        Value::String(s) => {
            let cost = json_str_len(s);
            if cost <= *remaining {
                *remaining -= cost;
                return value.clone();
            }
            let marker_cost = json_str_len(STRING_TRUNCATION_MARKER);
            let keep_bytes = (*remaining - marker_cost).max(0) as usize;
            let mut end = keep_bytes.min(s.len());
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            let cut = format!("{}{}", &s[..end], STRING_TRUNCATION_MARKER);
            *remaining -= json_str_len(&cut);
            Value::String(cut)
        }
        Value::Array(items) => {
            *remaining -= 2;
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let left = items.len() - i;
                let placeholder = array_tail_placeholder(left);
                // Keep room for the placeholder unless this is the last item.
                let reserve = if left > 1 {
                    json_str_len(&placeholder) + 1
                } else {
                    0
                };
                if *remaining - reserve <= 0 || (i > 0 && too_big_for(item, *remaining - reserve)) {
                    *remaining -= json_str_len(&placeholder) + 1;
                    out.push(Value::String(placeholder));
                    break;
                }
                *remaining -= reserve;
                out.push(walk(item, remaining));
                *remaining += reserve;
                *remaining -= 1; // comma
            }
            Value::Array(out)
        }
        Value::Object(map) => {
            *remaining -= 2;
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                *remaining -= json_str_len(k) + 2; // "key": and comma
                out.insert(k.clone(), walk(v, remaining));
            }
            Value::Object(out)
        }
        scalar => {
            *remaining -= scalar.to_string().len() as isize;
            scalar.clone()
        }
    }
}

/// Is `item` so large that the remaining budget would only hold a sliver of
/// it? Then the array tail is cut here instead of keeping a stub item.
fn too_big_for(item: &Value, remaining: isize) -> bool {
    match item {
        Value::Object(_) | Value::Array(_) => remaining < 200,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn small_results_pass_unchanged() {
        let v = json!({"success": true, "data": {"results": ["a", "b"]}});
        let (text, truncated) = serialize_for_transcript(&v);
        assert!(!truncated);
        assert_eq!(text, v.to_string());
    }

    #[test]
    fn exactly_at_cap_is_not_truncated_one_over_is() {
        // {"s":"…"} = 8 chars of framing.
        let at_cap = json!({"s": "x".repeat(TOOL_RESULT_SERIALIZED_CAP - 8)});
        assert_eq!(at_cap.to_string().len(), TOOL_RESULT_SERIALIZED_CAP);
        assert!(!serialize_for_transcript(&at_cap).1);
        let over = json!({"s": "x".repeat(TOOL_RESULT_SERIALIZED_CAP - 7)});
        let (text, truncated) = serialize_for_transcript(&over);
        assert!(truncated);
        assert!(char_len(&text) <= TOOL_RESULT_TRUNCATE_BUDGET);
    }

    #[test]
    fn long_string_is_cut_with_the_exact_marker() {
        let v = json!({"success": true, "data": {"page": "word ".repeat(20_000)}});
        let (text, truncated) = serialize_for_transcript(&v);
        assert!(truncated);
        assert!(char_len(&text) <= TOOL_RESULT_TRUNCATE_BUDGET);
        let back: Value = serde_json::from_str(&text).unwrap();
        let page = back["data"]["page"].as_str().unwrap();
        assert!(page.ends_with(STRING_TRUNCATION_MARKER));
        assert!(page.starts_with("word word"));
        // Most of the budget is used: the cut is not overly aggressive.
        assert!(char_len(&text) > TOOL_RESULT_TRUNCATE_BUDGET - 500);
        assert_eq!(back["success"], json!(true));
    }

    #[test]
    fn oversized_array_tail_becomes_a_placeholder_with_the_count() {
        let items: Vec<Value> = (0..2000)
            .map(|i| json!({"id": i, "text": "lorem ipsum dolor sit amet ".repeat(3)}))
            .collect();
        let v = json!({"success": true, "data": {"results": items}});
        assert!(v.to_string().len() > TOOL_RESULT_SERIALIZED_CAP);
        let (text, truncated) = serialize_for_transcript(&v);
        assert!(truncated);
        assert!(char_len(&text) <= TOOL_RESULT_TRUNCATE_BUDGET);
        let back: Value = serde_json::from_str(&text).unwrap();
        let results = back["data"]["results"].as_array().unwrap();
        let kept = results.len() - 1;
        assert!(kept > 100, "kept {kept}");
        // Kept items are whole and in order.
        for (i, item) in results[..kept].iter().enumerate() {
            assert_eq!(item["id"], json!(i));
            assert!(!item["text"].as_str().unwrap().contains("TRUNCATED"));
        }
        assert_eq!(
            results[kept],
            json!(array_tail_placeholder(2000 - kept)),
            "placeholder names how many were cut"
        );
    }

    #[test]
    fn short_siblings_survive_a_huge_string() {
        let v = json!({"body": "b".repeat(100_000), "title": "Handbook", "z": "end"});
        let text = deep_truncate_to(&v, 10_000);
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["title"], "Handbook");
        assert_eq!(back["z"], "end");
        assert!(
            back["body"]
                .as_str()
                .unwrap()
                .ends_with(STRING_TRUNCATION_MARKER)
        );
        assert!(char_len(&text) > 9_800, "uses the budget");
    }

    #[test]
    fn greedy_walk_handles_deep_nesting_when_nothing_else_fits() {
        // 50 arrays of 50 objects of 40 keys: even one item per array with
        // 200-char strings is too big for a 2 000-char budget.
        let obj: serde_json::Map<String, Value> = (0..40)
            .map(|i| (format!("k{i}"), json!("v".repeat(300))))
            .collect();
        let inner = Value::Array(vec![Value::Object(obj); 50]);
        let v = Value::Array(vec![inner; 50]);
        let text = deep_truncate_to(&v, 2_000);
        assert!(char_len(&text) <= 2_000);
        serde_json::from_str::<Value>(&text).unwrap();
    }

    #[test]
    fn multibyte_text_is_cut_on_char_boundaries() {
        let v = json!({"s": "é✓🙂".repeat(30_000)});
        let text = deep_truncate_to(&v, 1000);
        assert!(char_len(&text) <= 1000);
        let back: Value = serde_json::from_str(&text).unwrap();
        assert!(
            back["s"]
                .as_str()
                .unwrap()
                .ends_with(STRING_TRUNCATION_MARKER)
        );
    }

    #[test]
    fn escape_heavy_strings_still_fit_the_budget() {
        let v = json!({"s": "\"\\\n".repeat(40_000)});
        let text = deep_truncate_to(&v, TOOL_RESULT_TRUNCATE_BUDGET);
        assert!(char_len(&text) <= TOOL_RESULT_TRUNCATE_BUDGET);
        serde_json::from_str::<Value>(&text).unwrap();
    }
}
