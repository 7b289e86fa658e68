//! Fuzz targets for every parser that reads input Root does not control:
//! what tenant backends send (manifests, NDJSON tool streams, signed
//! requests), what models send (tool arguments, follow-up `when` text), what
//! API clients send (JSON bodies), what pages contain (chunker HTML), what
//! Slack sends (signed Events API bodies) and what mail providers and
//! forwarders send (Primitive's signed events, Postmark JSON, raw MIME).
//!
//! Each target is one plain function over `&[u8]` (structured targets decode
//! their input with `arbitrary`), written once and driven two ways: the
//! `fuzz_targets/*.rs` bins run them under cargo-fuzz (nightly, feature
//! `libfuzzer`), and `tests/bounded.rs` runs them on stable over seeded random
//! and mutated-corpus inputs as part of `cargo test`. A target panics only on
//! a real bug: a parser panic or a broken invariant it asserts.
//!
//! A new parser (a channel's Slack events, MIME, provider JSON) is one more
//! module here, one entry in [`TARGETS`], one bin in `Cargo.toml` and
//! `fuzz_targets/`, and seeds in `corpus/<name>/` (see `README.md`).

pub mod api_bodies;
pub mod chunker;
pub mod email_mime;
pub mod follow_up_when;
mod mail;
pub mod manifest;
pub mod ndjson;
pub mod page_html;
pub mod postmark;
pub mod primitive_event;
pub mod primitive_signature;
pub mod signature;
pub mod slack_events;
pub mod slack_signature;
pub mod tool_args;

/// One fuzz target as the bounded runner sees it.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// The cargo-fuzz bin name and the `corpus/<name>/` folder.
    pub name: &'static str,
    /// The target body: returns normally or panics on a bug.
    pub run: fn(&[u8]),
    /// Longest input the bounded runner generates (bytes), sized so one
    /// call stays cheap in a debug build.
    pub max_len: usize,
}

/// Every target, in the order the bounded runner reports them.
pub const TARGETS: &[Target] = &[
    Target {
        name: "manifest",
        run: manifest::run,
        max_len: 8 * 1024,
    },
    Target {
        name: "tool_args",
        run: tool_args::run,
        max_len: 4 * 1024,
    },
    Target {
        name: "follow_up_when",
        run: follow_up_when::run,
        max_len: 256,
    },
    Target {
        name: "api_bodies",
        run: api_bodies::run,
        max_len: 8 * 1024,
    },
    Target {
        name: "chunker",
        run: chunker::run,
        max_len: 6 * 1024,
    },
    Target {
        name: "ndjson",
        run: ndjson::run,
        max_len: 4 * 1024,
    },
    Target {
        name: "page_html",
        run: page_html::run,
        max_len: 6 * 1024,
    },
    Target {
        name: "signature",
        run: signature::run_bytes,
        max_len: 512,
    },
    Target {
        name: "slack_signature",
        run: slack_signature::run_bytes,
        max_len: 512,
    },
    Target {
        name: "slack_events",
        run: slack_events::run,
        max_len: 6 * 1024,
    },
    Target {
        name: "primitive_signature",
        run: primitive_signature::run_bytes,
        max_len: 1024,
    },
    Target {
        name: "primitive_event",
        run: primitive_event::run,
        max_len: 8 * 1024,
    },
    Target {
        name: "email_mime",
        run: email_mime::run,
        max_len: 8 * 1024,
    },
    Target {
        name: "postmark",
        run: postmark::run,
        max_len: 6 * 1024,
    },
];

/// The target named `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}
