//! Property tests (proptest, a bounded number of cases) for the two
//! encodings everything on disk rests on: the key encoding (`key.rs`: byte
//! order = value order for strings, integers, timestamps, uuids, optional
//! columns and tuples of them; keys decode back to their values and are
//! self-delimiting, so prefix scans are exact) and the row codec
//! (`codec.rs`: decode(encode(row)) == row for rows of several tables with
//! arbitrary field values). The production code has no key decoder (keys are
//! only compared and range-scanned), so `decode` here is the format read
//! back by hand: a second, independent statement of the layout.

use std::cmp::Ordering;

use proptest::prelude::*;
use serde_json::Value;
use storage::{
    Embedding, Environment, Json, KnowledgePage, ProcessedSlackMessage, Record, Tenant,
    TenantStatus, Ts, decode_row, encode_row, key,
};
use uuid::Uuid;

/// 256 cases per property keeps the whole file well under a second.
fn config() -> ProptestConfig {
    ProptestConfig::with_cases(256)
}

/// One key column, as the `Key` builder appends it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Col {
    Str(String),
    I64(i64),
    U64(u64),
    Ts(Ts),
    Uuid(Uuid),
    OptUuid(Option<Uuid>),
    OptTs(Option<Ts>),
}

/// Strings that hit the escapes: NUL, 0x01, 0xFF-ish bytes, shared prefixes.
fn tricky_string() -> impl Strategy<Value = String> {
    prop_oneof!["[ab\\x00\\x01\u{ff}]{0,6}", any::<String>(),]
}

fn uuid() -> impl Strategy<Value = Uuid> {
    prop_oneof![
        any::<u128>().prop_map(Uuid::from_u128),
        // Few distinct values, so equal columns (and ties) happen.
        (0u128..4).prop_map(Uuid::from_u128),
    ]
}

fn ts() -> impl Strategy<Value = Ts> {
    prop_oneof![any::<i64>().prop_map(Ts), (-3i64..3).prop_map(Ts)]
}

fn int() -> impl Strategy<Value = i64> {
    prop_oneof![any::<i64>(), -3i64..3, Just(i64::MIN), Just(i64::MAX)]
}

/// A column of kind `k` (0..7).
fn col(k: u8) -> BoxedStrategy<Col> {
    match k {
        0 => tricky_string().prop_map(Col::Str).boxed(),
        1 => int().prop_map(Col::I64).boxed(),
        2 => prop_oneof![any::<u64>(), 0u64..3]
            .prop_map(Col::U64)
            .boxed(),
        3 => ts().prop_map(Col::Ts).boxed(),
        4 => uuid().prop_map(Col::Uuid).boxed(),
        5 => proptest::option::of(uuid()).prop_map(Col::OptUuid).boxed(),
        _ => proptest::option::of(ts()).prop_map(Col::OptTs).boxed(),
    }
}

/// A tuple of columns of the given kinds.
fn tuple(kinds: Vec<u8>) -> BoxedStrategy<Vec<Col>> {
    kinds.into_iter().map(col).collect::<Vec<_>>().boxed()
}

/// Two tuples of one shape (1–4 columns of any kinds).
fn tuple_pair() -> impl Strategy<Value = (Vec<u8>, Vec<Col>, Vec<Col>)> {
    proptest::collection::vec(0u8..7, 1..=4)
        .prop_flat_map(|kinds| (Just(kinds.clone()), tuple(kinds.clone()), tuple(kinds)))
}

fn encode(cols: &[Col]) -> Vec<u8> {
    let mut k = key();
    for c in cols {
        k = match c {
            Col::Str(s) => k.str(s),
            Col::I64(v) => k.i64(*v),
            Col::U64(v) => k.u64(*v),
            Col::Ts(t) => k.ts(*t),
            Col::Uuid(u) => k.uuid(*u),
            Col::OptUuid(u) => k.opt_uuid(*u),
            Col::OptTs(t) => k.opt_ts(*t),
        };
    }
    k.0
}

/// Read a key of columns of `kinds` back; `None` unless it is exactly that.
fn decode(kinds: &[u8], mut b: &[u8]) -> Option<Vec<Col>> {
    fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (b.get(..n)?, b.get(n..)?);
        *b = rest;
        Some(head)
    }
    fn i64_of(b: &mut &[u8]) -> Option<i64> {
        let raw = u64::from_be_bytes(take(b, 8)?.try_into().ok()?);
        Some((raw ^ (1 << 63)) as i64)
    }
    fn uuid_of(b: &mut &[u8]) -> Option<Uuid> {
        Some(Uuid::from_bytes(take(b, 16)?.try_into().ok()?))
    }
    fn tag(b: &mut &[u8]) -> Option<bool> {
        match take(b, 1)?[0] {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
    let mut out = Vec::new();
    for k in kinds {
        out.push(match k {
            0 => {
                let mut s = Vec::new();
                loop {
                    match take(&mut b, 1)?[0] {
                        0 => match take(&mut b, 1)?[0] {
                            1 => break,
                            0xff => s.push(0),
                            _ => return None,
                        },
                        x => s.push(x),
                    }
                }
                Col::Str(String::from_utf8(s).ok()?)
            }
            1 => Col::I64(i64_of(&mut b)?),
            2 => Col::U64(u64::from_be_bytes(take(&mut b, 8)?.try_into().ok()?)),
            3 => Col::Ts(Ts(i64_of(&mut b)?)),
            4 => Col::Uuid(uuid_of(&mut b)?),
            5 => Col::OptUuid(if tag(&mut b)? {
                Some(uuid_of(&mut b)?)
            } else {
                None
            }),
            _ => Col::OptTs(if tag(&mut b)? {
                Some(Ts(i64_of(&mut b)?))
            } else {
                None
            }),
        });
    }
    b.is_empty().then_some(out)
}

proptest! {
    #![proptest_config(config())]

    /// `a < b` ⇔ `enc(a) < enc(b)` (and equality), for tuples of one shape.
    #[test]
    fn key_byte_order_is_value_order((_kinds, a, b) in tuple_pair()) {
        let ordering: Ordering = a.cmp(&b);
        prop_assert_eq!(encode(&a).cmp(&encode(&b)), ordering, "{:?} vs {:?}", a, b);
    }

    /// decode(encode(x)) == x, with nothing left over.
    #[test]
    fn keys_decode_back_to_their_values((kinds, a, _b) in tuple_pair()) {
        prop_assert_eq!(decode(&kinds, &encode(&a)), Some(a));
    }

    /// A key's leading columns are a prefix of it, and the prefix's scan
    /// range `[prefix, prefix_end)` holds it: prefix scans are exact.
    #[test]
    fn a_leading_subset_of_columns_scans_exactly((_kinds, a, b) in tuple_pair()) {
        for n in 0..=a.len() {
            let prefix = encode(&a[..n]);
            let full = encode(&a);
            prop_assert!(full.starts_with(&prefix));
            if let Some(end) = storage::Key(prefix.clone()).prefix_end() {
                prop_assert!(full < end);
            }
            // Another tuple is in the range iff its leading columns are equal.
            let other = encode(&b);
            let inside = other.starts_with(&prefix);
            prop_assert_eq!(inside, a[..n] == b[..n], "{:?} / {:?} at {}", a, b, n);
        }
    }

    /// No string's encoding is a proper prefix of another's.
    #[test]
    fn string_keys_are_self_delimiting(a in tricky_string(), b in tricky_string()) {
        let (ea, eb) = (key().str(&a).0, key().str(&b).0);
        prop_assert_eq!(eb.starts_with(&ea), a == b);
    }
}

fn json() -> impl Strategy<Value = Json> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        tricky_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z]{0,4}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .prop_map(Json)
}

fn opt_string() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(tricky_string())
}

fn tenant() -> impl Strategy<Value = Tenant> {
    (
        (uuid(), tricky_string(), tricky_string(), tricky_string()),
        (
            prop_oneof![
                Just(TenantStatus::Active),
                Just(TenantStatus::Suspended),
                Just(TenantStatus::Provisioning)
            ],
            tricky_string(),
            json(),
            opt_string(),
        ),
        (
            prop_oneof![Just(Environment::Live), Just(Environment::Dev)],
            proptest::option::of(uuid()),
            ts(),
            ts(),
        ),
    )
        .prop_map(
            |(
                (id, slug, display_name, agent_name),
                (status, timezone, settings, stytch_org_id),
                (environment, live_tenant_id, created_at, updated_at),
            )| Tenant {
                id,
                slug,
                display_name,
                agent_name,
                status,
                timezone,
                settings,
                stytch_org_id,
                environment,
                live_tenant_id,
                created_at,
                updated_at,
            },
        )
}

fn page() -> impl Strategy<Value = KnowledgePage> {
    (
        (
            uuid(),
            uuid(),
            tricky_string(),
            tricky_string(),
            opt_string(),
        ),
        (
            tricky_string(),
            opt_string(),
            opt_string(),
            opt_string(),
            opt_string(),
        ),
        (
            tricky_string(),
            opt_string(),
            opt_string(),
            any::<bool>(),
            opt_string(),
        ),
        (
            proptest::option::of(uuid()),
            proptest::option::of(uuid()),
            opt_string(),
            opt_string(),
            opt_string(),
        ),
        (
            proptest::option::of(ts()),
            proptest::option::of(ts()),
            ts(),
            ts(),
        ),
    )
        .prop_map(|(a, b, c, d, e)| KnowledgePage {
            id: a.0,
            tenant_id: a.1,
            slug: a.2,
            title: a.3,
            source_url: a.4,
            content_html: b.0,
            content_text: b.1,
            author_name: b.2,
            author_member_id: b.3,
            knowledge_date: b.4,
            source_type: c.0,
            source_message_text: c.1,
            public_id: c.2,
            is_public: c.3,
            refresh_frequency: c.4,
            extracted_knowledge_id: d.0,
            knowledge_source_id: d.1,
            external_id: d.2,
            content_hash: d.3,
            raw_content_hash: d.4,
            last_synced_at: e.0,
            fetched_at: e.1,
            created_at: e.2,
            updated_at: e.3,
        })
}

fn slack_message() -> impl Strategy<Value = ProcessedSlackMessage> {
    let embedding = proptest::option::of(
        (
            tricky_string(),
            proptest::collection::vec(-1.0f32..1.0, 0..8),
        )
            .prop_map(|(model, v)| Embedding::from_f32(model, &v)),
    );
    (
        (uuid(), uuid(), tricky_string(), opt_string(), opt_string()),
        (
            opt_string(),
            tricky_string(),
            opt_string(),
            tricky_string(),
            ts(),
        ),
        (
            opt_string(),
            embedding,
            proptest::option::of(ts()),
            proptest::option::of(ts()),
            ts(),
        ),
    )
        .prop_map(|(a, b, c)| ProcessedSlackMessage {
            id: a.0,
            tenant_id: a.1,
            channel_id: a.2,
            channel_name: a.3,
            user_id: a.4,
            user_name: b.0,
            message_ts: b.1,
            thread_ts: b.2,
            message_text: b.3,
            message_date: b.4,
            permalink: c.0,
            embedding: c.1,
            extraction_processed_at: c.2,
            withdrawn_at: c.3,
            created_at: c.4,
        })
}

/// decode(encode(row)) == row, and another format version is refused.
fn round_trips<R: Record + PartialEq>(row: &R) -> Result<(), TestCaseError> {
    let bytes = encode_row(R::VERSION, row).unwrap();
    let back: R = decode_row(R::DEF.name, R::VERSION, &bytes).unwrap();
    prop_assert_eq!(&back, row);
    prop_assert!(decode_row::<R>(R::DEF.name, R::VERSION.wrapping_add(1), &bytes).is_err());
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn tenant_rows_round_trip(row in tenant()) {
        round_trips(&row)?;
    }

    #[test]
    fn knowledge_page_rows_round_trip(row in page()) {
        round_trips(&row)?;
    }

    #[test]
    fn slack_message_rows_round_trip(row in slack_message()) {
        round_trips(&row)?;
    }
}
