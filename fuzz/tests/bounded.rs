//! The stable, bounded run of every fuzz target (what CI runs; cargo-fuzz
//! needs nightly): per target, its seed corpus as-is, then a fixed number
//! of inputs from a seeded RNG — a quarter pure random bytes, the rest seed
//! inputs mutated libFuzzer-style (bit flips, byte edits, inserted
//! dictionary tokens, deleted / duplicated ranges, splices, extreme
//! numbers) or, for JSON seeds 60 % of the time, as a JSON tree (replaced,
//! dropped, duplicated or renamed members) so inputs get past the parser. Any panic fails the test with the target, seed and iteration,
//! and the input is saved so it can be replayed.
//!
//! - `ROOT_FUZZ_ITERATIONS=N` — inputs per target (default: per target,
//!   ~45 s of CPU in all in a debug build, ~25 s on 2 idle cores; the
//!   slowest, `chunker`, `api_bodies` and the mail parsers, get fewer
//!   inputs).
//! - `ROOT_FUZZ_SEED=N` — the RNG seed (default: fixed per target, so CI is
//!   deterministic).
//! - `ROOT_FUZZ_REPLAY=path` — run only that input file (with the target's
//!   test name as the filter), e.g. a saved failure or a cargo-fuzz crash.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use root_fuzz::Target;
use serde_json::{Value, json};

/// Base of the default per-target seeds.
const BASE_SEED: u64 = 0x0052_6f6f_7446_757a;

/// Share of generated inputs that are pure random bytes (the rest mutate
/// the corpus).
const RANDOM_INPUT_SHARE: f64 = 0.25;

/// Share of mutations of a JSON seed that edit its tree rather than its
/// bytes.
const JSON_MUTATION_SHARE: f64 = 0.6;

/// Byte mutations applied to one seed input at most.
const MAX_MUTATIONS: usize = 8;

/// Tree mutations applied to one JSON seed at most (fewer than byte
/// mutations: each one is bigger, and most inputs should still validate).
const MAX_JSON_MUTATIONS: usize = 3;

/// Bytes a random input usually stays under (longer ones up to the
/// target's `max_len` come one time in four).
const SHORT_INPUT_LEN: usize = 96;

const JSON_TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    ":",
    ",",
    "null",
    "true",
    "false",
    "0",
    "-1",
    "1e999",
    "-0.0",
    "\\u0000",
    "\\ud800",
    "\\\"",
    "\\\\",
    "{}",
    "[]",
    "\"\"",
    "\"type\"",
    "\"progress\"",
    "\"result\"",
    "\"success\"",
    "\"message\"",
    "\"name\"",
    "\"tools\"",
    "\"tiers\"",
    "\"channels\"",
    "\"__admin__\"",
    "\"public\"",
    "\"slack\"",
    "\"query\"",
    "\"when\"",
    "\"id\"",
    "\"principal\"",
    "\"args\"",
    "\"endpoint_paths\"",
    "\"tool_invoke\"",
    "\"/t/:name\"",
    "\"http://127.0.0.1:1\"",
    "\n",
    " ",
    "é",
    "\u{200b}",
    "𝄞",
    "\u{fffd}",
];

const HTML_TOKENS: &[&str] = &[
    "<p>",
    "</p>",
    "<h1>",
    "</h1>",
    "<h2>",
    "<h3>",
    "<h6>",
    "<pre>",
    "</pre>",
    "<table>",
    "<tr>",
    "<td>",
    "</td>",
    "<ul>",
    "<li>",
    "<br>",
    "<div>",
    "</div>",
    "<span>",
    "<script>",
    "</script>",
    "<!--",
    "-->",
    "<![CDATA[",
    "&amp;",
    "&lt;",
    "&#x0;",
    "&#128512;",
    "&nbsp;",
    "\n\n",
    "\r\n",
    ". ",
    "? ",
    "  ",
    "\t",
    "é",
    "\u{200b}",
    "𝄞",
    "a<b",
    "<b>",
    "</",
];

const WHEN_TOKENS: &[&str] = &[
    "every ",
    "in ",
    "on ",
    "at ",
    "next ",
    " minutes",
    " hours",
    " days",
    " weeks",
    "an hour",
    "today",
    "tomorrow",
    "noon",
    "midnight",
    "9am",
    "9:30 pm",
    "21:15",
    "0:00",
    "12:59",
    "monday",
    "sunday",
    "weekday",
    "weekdays",
    "daily",
    "hourly",
    "2026-03-08T02:30",
    "2026-04-05T01:45",
    "2026-02-29",
    "[America/Los_Angeles]",
    "Z",
    "+05:45",
    "-07:00",
    "99999999999",
    "0",
    "-1",
    " ",
];

/// Raw mail: header names, folding, MIME structure and encodings.
const MIME_TOKENS: &[&str] = &[
    "\r\n",
    "\n",
    "\r\n\r\n",
    "\r\n ",
    "\r\n\t",
    "From: ",
    "Sender: ",
    "To: ",
    "Cc: ",
    "Reply-To: ",
    "Subject: ",
    "Date: ",
    "Message-ID: ",
    "In-Reply-To: ",
    "References: ",
    "MIME-Version: 1.0",
    "Content-Type: ",
    "multipart/alternative; boundary=\"b1\"",
    "multipart/mixed; boundary=b2",
    "text/plain; charset=utf-8",
    "text/html",
    "message/rfc822",
    "--b1",
    "--b1--",
    "--b2",
    "Content-Transfer-Encoding: base64",
    "Content-Transfer-Encoding: quoted-printable",
    "Content-Disposition: attachment; filename*=UTF-8''%E2%82%AC.txt",
    "=?utf-8?B?w6k=?=",
    "=?iso-8859-1?Q?=E9t=E9?=",
    "=?",
    "?=",
    "=\r\n",
    "=E9",
    "<a@b>",
    "<",
    ">",
    "@",
    "\"Name, Q.\" <n@x.y>",
    "undisclosed-recipients:;",
    "(comment)",
    "From ",
    "On Mon, 1 Jan 2024, A <a@x> wrote:",
    "> ",
    "-----Original Message-----",
    "Fri, 21 Nov 1997 09:55:06 -0600",
    "+05:45",
    "é",
    "\u{200b}",
    "\u{0}",
];

/// Slack events and mail-provider JSON: the field names those parsers
/// read, on top of the JSON grammar.
const EVENT_JSON_TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    ":",
    ",",
    "null",
    "true",
    "false",
    "0",
    "-1",
    "\\u0000",
    "\\ud800",
    "{}",
    "[]",
    "\"\"",
    "\"type\"",
    "\"event\"",
    "\"event_callback\"",
    "\"message\"",
    "\"app_mention\"",
    "\"subtype\"",
    "\"bot_message\"",
    "\"message_changed\"",
    "\"user\"",
    "\"bot_id\"",
    "\"text\"",
    "\"ts\"",
    "\"thread_ts\"",
    "\"1700000000.000100\"",
    "\"channel\"",
    "\"channel_type\"",
    "\"im\"",
    "\"authorizations\"",
    "\"<@U0LAN0Z89>\"",
    "\"<@U0LAN0Z89|root>\"",
    "\"email\"",
    "\"email.received\"",
    "\"headers\"",
    "\"parsed\"",
    "\"content\"",
    "\"raw\"",
    "\"included\"",
    "\"data\"",
    "\"sha256\"",
    "\"from\"",
    "\"reply_to\"",
    "\"references\"",
    "\"in_reply_to\"",
    "\"message_id\"",
    "\"From\"",
    "\"FromFull\"",
    "\"ToFull\"",
    "\"CcFull\"",
    "\"Headers\"",
    "\"Name\"",
    "\"Value\"",
    "\"Email\"",
    "\"Message-ID\"",
    "\"References\"",
    "\"<a@b>\"",
    "\"a@b\"",
    "\"\\\"A, B\\\" <a@b>\"",
    "\"SGVsbG8=\"",
    "\n",
    " ",
    "é",
    "\u{200b}",
];

const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551616",
    "99999999999999999999999",
    "1e308",
    "-1e400",
    "0.0000001",
    "4294967296",
];

fn dictionary(target: &str) -> &'static [&'static str] {
    match target {
        "chunker" | "page_html" => HTML_TOKENS,
        "follow_up_when" => WHEN_TOKENS,
        "email_mime" => MIME_TOKENS,
        "slack_events" | "primitive_event" | "postmark" => EVENT_JSON_TOKENS,
        _ => JSON_TOKENS,
    }
}

fn env_u64(name: &str) -> Option<u64> {
    let raw = std::env::var(name).ok()?;
    Some(
        raw.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a whole number, got {raw:?}")),
    )
}

/// FNV-1a of the target name: a stable per-target default seed.
fn default_seed(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    }) ^ BASE_SEED
}

fn corpus_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(name)
}

/// The target's seed inputs, in file-name order.
fn corpus(name: &str) -> Vec<(String, Vec<u8>)> {
    let Ok(dir) = std::fs::read_dir(corpus_dir(name)) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = dir
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p.display().to_string(), bytes)
        })
        .collect()
}

fn random_input(rng: &mut StdRng, max_len: usize) -> Vec<u8> {
    let cap = if rng.random_bool(0.25) {
        max_len
    } else {
        SHORT_INPUT_LEN.min(max_len)
    };
    let len = rng.random_range(0..=cap);
    let printable = rng.random_bool(0.5);
    (0..len)
        .map(|_| {
            if printable {
                rng.random_range(0x20..0x7f)
            } else {
                rng.random()
            }
        })
        .collect()
}

fn mutate(
    rng: &mut StdRng,
    seed: &[u8],
    corpus: &[(String, Vec<u8>)],
    dict: &[&str],
    max_len: usize,
) -> Vec<u8> {
    let mut data = seed.to_vec();
    for _ in 0..rng.random_range(1..=MAX_MUTATIONS) {
        let len = data.len();
        let at = rng.random_range(0..=len);
        match rng.random_range(0..8) {
            0 if len > 0 => {
                let i = at.min(len - 1);
                data[i] ^= 1 << rng.random_range(0..8);
            }
            1 if len > 0 => {
                let i = at.min(len - 1);
                data[i] = [0, 0xff, b'"', b'{', b'<', b'>', b'\n', b'\\', 0x80, 0xc3]
                    [rng.random_range(0..10)];
            }
            2 => {
                let n = rng.random_range(1..=8);
                let bytes: Vec<u8> = (0..n).map(|_| rng.random()).collect();
                data.splice(at..at, bytes);
            }
            3 if len > 0 => {
                let end = rng.random_range(at..=len.min(at + 64));
                data.drain(at..end);
            }
            4 if len > 0 => {
                let start = rng.random_range(0..len);
                let end = rng.random_range(start..=len.min(start + 128));
                let copy = data[start..end].to_vec();
                for _ in 0..rng.random_range(1..=4) {
                    data.splice(at..at, copy.iter().copied());
                }
            }
            5 => {
                let token = dict[rng.random_range(0..dict.len())];
                data.splice(at..at, token.bytes());
            }
            6 if !corpus.is_empty() => {
                let other = &corpus[rng.random_range(0..corpus.len())].1;
                let from = rng.random_range(0..=other.len());
                data.truncate(at);
                data.extend_from_slice(&other[from..]);
            }
            _ => {
                // Replace a digit run (or insert) with an extreme number.
                let number = NUMBERS[rng.random_range(0..NUMBERS.len())];
                let start = data[..at]
                    .iter()
                    .rposition(|b| !b.is_ascii_digit())
                    .map_or(0, |p| p + 1);
                let end = data[at..]
                    .iter()
                    .position(|b| !b.is_ascii_digit())
                    .map_or(len, |p| at + p);
                data.splice(start..end, number.bytes());
            }
        }
    }
    data.truncate(max_len);
    data
}

/// Strings JSON mutations put in place of a value or a key.
const JSON_STRINGS: &[&str] = &[
    "",
    " ",
    "root-int/1",
    "root-int/",
    "__admin__",
    "public",
    "public_email",
    "unresolved",
    "member",
    "slack",
    "email",
    "api",
    "web",
    "fax",
    "a-b_c",
    "bad name!",
    "/",
    "/t/:name",
    ":name",
    "http://127.0.0.1:1/",
    "https://user:pw@example.org/?q#f",
    "progress",
    "result",
    "tomorrow at 9am",
    "every 4 hours",
    "\u{0}",
    "é\u{200b}𝄞",
    "9223372036854775808",
];

/// A random JSON scalar or small container.
fn random_json(rng: &mut StdRng) -> Value {
    match rng.random_range(0..8) {
        0 => Value::Null,
        1 => Value::Bool(rng.random()),
        2 => json!(rng.random::<i64>() >> rng.random_range(0..64)),
        3 => json!(rng.random::<f64>() * 1e6 - 5e5),
        4 => json!([]),
        5 => json!({}),
        6 => {
            let n = rng.random_range(0..200);
            Value::String("x".repeat(n))
        }
        _ => Value::String(JSON_STRINGS[rng.random_range(0..JSON_STRINGS.len())].into()),
    }
}

/// Structure-aware mutation of a JSON seed: walk to a random node and
/// replace it, drop or duplicate a member, or rename a key — so inputs stay
/// JSON and reach the validation behind the parser.
fn mutate_json(rng: &mut StdRng, value: &mut Value, depth: usize) {
    let descend = depth < 8 && rng.random_bool(0.7);
    match value {
        Value::Object(map) if !map.is_empty() => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = keys[rng.random_range(0..keys.len())].clone();
            if descend {
                if let Some(child) = map.get_mut(&key) {
                    mutate_json(rng, child, depth + 1);
                }
                return;
            }
            match rng.random_range(0..4) {
                0 => {
                    map.remove(&key);
                }
                1 => {
                    let v = map.remove(&key).unwrap_or(Value::Null);
                    let renamed = JSON_STRINGS[rng.random_range(0..JSON_STRINGS.len())];
                    map.insert(renamed.into(), v);
                }
                2 => {
                    map.insert(key, random_json(rng));
                }
                _ => *value = random_json(rng),
            }
        }
        Value::Array(items) if !items.is_empty() => {
            let i = rng.random_range(0..items.len());
            if descend {
                mutate_json(rng, &mut items[i], depth + 1);
                return;
            }
            match rng.random_range(0..4) {
                0 => {
                    items.remove(i);
                }
                1 => {
                    let copy = items[i].clone();
                    for _ in 0..rng.random_range(1..=20) {
                        items.push(copy.clone());
                    }
                }
                2 => items.push(random_json(rng)),
                _ => *value = random_json(rng),
            }
        }
        _ => *value = random_json(rng),
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".into())
}

/// Run one input; on a panic, save it and fail with everything needed to
/// reproduce.
fn run_one(target: &Target, input: &[u8], origin: &str, seed: u64) {
    let Err(payload) = catch_unwind(AssertUnwindSafe(|| (target.run)(input))) else {
        return;
    };
    let dir = std::env::temp_dir().join("root-fuzz-failures");
    let path = dir.join(format!(
        "{}-{seed}-{}.bin",
        target.name,
        origin.replace(['/', ' '], "_")
    ));
    let saved = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&path, input))
        .map_or_else(
            |e| format!("(not saved: {e})"),
            |()| path.display().to_string(),
        );
    let preview: String = String::from_utf8_lossy(&input[..input.len().min(300)])
        .escape_debug()
        .collect();
    panic!(
        "fuzz target `{name}` panicked on {origin} (seed {seed}): {msg}\n\
         input: {len} bytes, saved to {saved}\n\
         preview: \"{preview}\"\n\
         reproduce: ROOT_FUZZ_SEED={seed} cargo test -p root-fuzz --test bounded {name}\n\
         replay:    ROOT_FUZZ_REPLAY={saved} cargo test -p root-fuzz --test bounded {name}",
        name = target.name,
        msg = panic_message(payload.as_ref()),
        len = input.len(),
    );
}

/// Run `name` over its corpus and `default_iterations` generated inputs
/// (or what the environment asks for).
fn fuzz(name: &str, default_iterations: u64) {
    let target = root_fuzz::target(name).unwrap_or_else(|| panic!("no target {name}"));
    if let Ok(path) = std::env::var("ROOT_FUZZ_REPLAY") {
        let input = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        run_one(target, &input, "replay", 0);
        return;
    }
    let seed = env_u64("ROOT_FUZZ_SEED").unwrap_or_else(|| default_seed(name));
    let iterations = env_u64("ROOT_FUZZ_ITERATIONS").unwrap_or(default_iterations);
    let corpus = corpus(name);
    for (file, input) in &corpus {
        run_one(target, input, &format!("corpus file {file}"), seed);
    }
    let dict = dictionary(name);
    let mut rng = StdRng::seed_from_u64(seed);
    for i in 0..iterations {
        let input = if corpus.is_empty() || rng.random_bool(RANDOM_INPUT_SHARE) {
            random_input(&mut rng, target.max_len)
        } else {
            let base = &corpus[rng.random_range(0..corpus.len())].1;
            match serde_json::from_slice::<Value>(base) {
                Ok(mut value) if rng.random_bool(JSON_MUTATION_SHARE) => {
                    for _ in 0..rng.random_range(1..=MAX_JSON_MUTATIONS) {
                        mutate_json(&mut rng, &mut value, 0);
                    }
                    let mut bytes = value.to_string().into_bytes();
                    bytes.truncate(target.max_len);
                    bytes
                }
                _ => mutate(&mut rng, base, &corpus, dict, target.max_len),
            }
        };
        run_one(target, &input, &format!("iteration {i}"), seed);
    }
}

#[test]
fn every_target_is_run_here() {
    let names: Vec<&str> = root_fuzz::TARGETS.iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        [
            "manifest",
            "tool_args",
            "follow_up_when",
            "api_bodies",
            "chunker",
            "ndjson",
            "page_html",
            "signature",
            "slack_signature",
            "slack_events",
            "primitive_signature",
            "primitive_event",
            "email_mime",
            "postmark"
        ],
        "a new target needs a test below"
    );
}

#[test]
fn manifest() {
    fuzz("manifest", 60_000);
}

#[test]
fn tool_args() {
    fuzz("tool_args", 60_000);
}

#[test]
fn follow_up_when() {
    fuzz("follow_up_when", 80_000);
}

#[test]
fn api_bodies() {
    fuzz("api_bodies", 40_000);
}

#[test]
fn chunker() {
    fuzz("chunker", 30_000);
}

#[test]
fn page_html() {
    fuzz("page_html", 20_000);
}

#[test]
fn ndjson() {
    fuzz("ndjson", 80_000);
}

#[test]
fn signature() {
    fuzz("signature", 70_000);
}

#[test]
fn slack_signature() {
    fuzz("slack_signature", 20_000);
}

#[test]
fn slack_events() {
    fuzz("slack_events", 10_000);
}

#[test]
fn primitive_signature() {
    fuzz("primitive_signature", 20_000);
}

#[test]
fn primitive_event() {
    fuzz("primitive_event", 5_000);
}

#[test]
fn email_mime() {
    fuzz("email_mime", 5_000);
}

#[test]
fn postmark() {
    fuzz("postmark", 5_000);
}
