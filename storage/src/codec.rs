//! Row codec and the value types shared by row structs.
//!
//! A stored row is `[format version byte][bincode payload]`. bincode is not
//! self-describing, so the version byte is what lets a later migration tell
//! old rows from new ones and rewrite them. Decoding always runs with a size
//! limit: a mismatched decode without one can try to allocate gigabytes.

use serde::{Deserialize, Deserializer, Serialize, Serializer, de::DeserializeOwned};

use crate::error::{StorageError, StorageResult};

/// Upper bound for one decoded row (64 MiB: the largest rows are KB pages).
const DECODE_LIMIT: usize = 64 * 1024 * 1024;

fn config() -> bincode::config::Configuration {
    bincode::config::standard()
}

/// Encode a row with its format version in front.
pub fn encode_row<T: Serialize>(version: u8, row: &T) -> StorageResult<Vec<u8>> {
    let mut out = vec![version];
    bincode::serde::encode_into_std_write(row, &mut out, config())
        .map_err(|e| StorageError::Backend(format!("encode: {e}")))?;
    Ok(out)
}

/// Decode a row, refusing any format version other than `version`.
pub fn decode_row<T: DeserializeOwned>(
    table: &'static str,
    version: u8,
    bytes: &[u8],
) -> StorageResult<T> {
    let payload = versioned_payload(table, version, bytes)?;
    bincode::serde::decode_from_slice(payload, config().with_limit::<DECODE_LIMIT>())
        .map(|(row, _)| row)
        .map_err(|e| corrupted(table, e))
}

/// Decode a row borrowing from `bytes` (strings and byte columns as slices
/// of the stored value, no copies) — for [`crate::Projection`]s on hot read
/// paths. Same version check and size limit as [`decode_row`].
pub fn decode_row_borrowed<'de, T: Deserialize<'de>>(
    table: &'static str,
    version: u8,
    bytes: &'de [u8],
) -> StorageResult<T> {
    let payload = versioned_payload(table, version, bytes)?;
    bincode::serde::borrow_decode_from_slice(payload, config().with_limit::<DECODE_LIMIT>())
        .map(|(row, _)| row)
        .map_err(|e| corrupted(table, e))
}

/// The bincode payload after the format version byte, which must be `version`.
fn versioned_payload<'a>(
    table: &'static str,
    version: u8,
    bytes: &'a [u8],
) -> StorageResult<&'a [u8]> {
    match bytes.split_first() {
        None => Err(corrupted(table, "empty row")),
        Some((&found, payload)) if found == version => Ok(payload),
        Some((&found, _)) => Err(corrupted(
            table,
            format!("row format version {found}, expected {version} (run `root migrate`)"),
        )),
    }
}

fn corrupted(table: &'static str, detail: impl std::fmt::Display) -> StorageError {
    StorageError::Corrupted {
        table,
        detail: detail.to_string(),
    }
}

/// A point in time, UTC, microsecond precision.
///
/// Stored as `i64` micros in rows and keys (compact, ordered); serialised as
/// RFC 3339 in JSON so API payloads read naturally.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Ts(pub i64);

impl Ts {
    /// The current time.
    pub fn now() -> Self {
        Ts(jiff::Timestamp::now().as_microsecond())
    }
    /// Microseconds since the Unix epoch.
    pub fn micros(self) -> i64 {
        self.0
    }
    /// From whole seconds since the Unix epoch.
    pub fn from_secs(secs: i64) -> Self {
        Ts(secs.saturating_mul(1_000_000))
    }
    /// This instant shifted by `micros` (negative goes back).
    pub fn plus_micros(self, micros: i64) -> Self {
        Ts(self.0.saturating_add(micros))
    }
    /// As a jiff timestamp (for formatting and time-zone math).
    pub fn to_jiff(self) -> jiff::Timestamp {
        jiff::Timestamp::from_microsecond(self.0).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
    }
}

impl std::fmt::Display for Ts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.to_jiff())
    }
}

impl Serialize for Ts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.collect_str(&self.to_jiff())
        } else {
            s.serialize_i64(self.0)
        }
    }
}

/// In JSON APIs a `Ts` is an RFC 3339 string (its human-readable serde form).
impl schemars::JsonSchema for Ts {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Timestamp".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "format": "date-time"})
    }
}

impl<'de> Deserialize<'de> for Ts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if d.is_human_readable() {
            let s = String::deserialize(d)?;
            let t: jiff::Timestamp = s.parse().map_err(serde::de::Error::custom)?;
            Ok(Ts(t.as_microsecond()))
        } else {
            Ok(Ts(i64::deserialize(d)?))
        }
    }
}

/// A secret column (signing secrets, callback tokens, channel and source
/// credentials): stored exactly as its inner value — `#[serde(transparent)]`,
/// so the row's bytes are unchanged — but printed as `[redacted]` by
/// `Debug`, so a row that reaches a log line or a panic message never
/// carries the secret. Read it with [`Redacted::expose`] at the one place
/// that must use it.
#[derive(Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Redacted<T>(T);

impl<T> Redacted<T> {
    /// Wrap a secret value.
    pub fn new(value: T) -> Self {
        Redacted(value)
    }
    /// The secret itself.
    pub fn expose(&self) -> &T {
        &self.0
    }
    /// The secret itself, by value.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> From<T> for Redacted<T> {
    fn from(value: T) -> Self {
        Redacted(value)
    }
}

impl<T> std::fmt::Debug for Redacted<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

/// A JSONB column. bincode cannot carry `serde_json::Value` (it needs
/// `deserialize_any`), so in rows the value travels as JSON text; in JSON
/// output it is the value itself.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Json(pub serde_json::Value);

impl Json {
    /// `{}` — the spec's `JSONB DEFAULT '{}'`.
    pub fn empty_object() -> Self {
        Json(serde_json::Value::Object(Default::default()))
    }
    /// `[]` — the spec's `JSONB DEFAULT '[]'`.
    pub fn empty_array() -> Self {
        Json(serde_json::Value::Array(Vec::new()))
    }
}

impl From<serde_json::Value> for Json {
    fn from(v: serde_json::Value) -> Self {
        Json(v)
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            self.0.serialize(s)
        } else {
            let text = serde_json::to_string(&self.0).map_err(serde::ser::Error::custom)?;
            s.serialize_str(&text)
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if d.is_human_readable() {
            Ok(Json(serde_json::Value::deserialize(d)?))
        } else {
            let text = String::deserialize(d)?;
            Ok(Json(
                serde_json::from_str(&text).map_err(serde::de::Error::custom)?,
            ))
        }
    }
}

/// An embedding column (`halfvec(3072)` in the reference): the vector as
/// little-endian f16 bytes plus the id of the model that produced it, so a
/// model change can be detected and re-embedded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Embedding {
    /// Model id, e.g. `openai/text-embedding-3-large`.
    pub model: String,
    /// `dims × 2` bytes of little-endian IEEE 754 half floats.
    #[serde(with = "byte_buf")]
    pub f16: Vec<u8>,
}

/// A `Vec<u8>` field as serde bytes. In bincode this is the very same
/// encoding as the default sequence of `u8` (a length, then one byte each),
/// so rows written either way read either way; decoding is one copy instead
/// of one visitor call per byte (6,144 per 3072-d embedding, read for every
/// knowledge-search result row).
mod byte_buf {
    use serde::de::{SeqAccess, Visitor};
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        d.deserialize_byte_buf(Bytes)
    }

    struct Bytes;

    impl<'de> Visitor<'de> for Bytes {
        type Value = Vec<u8>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("bytes")
        }

        fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
            Ok(v.to_vec())
        }

        fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
            Ok(v)
        }

        // Self-describing formats (JSON) hand over a sequence of numbers.
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
            while let Some(b) = seq.next_element()? {
                out.push(b);
            }
            Ok(out)
        }
    }
}

impl Embedding {
    /// Quantise an f32 vector to f16 for storage.
    pub fn from_f32(model: impl Into<String>, v: &[f32]) -> Self {
        let mut f16 = Vec::with_capacity(v.len() * 2);
        for x in v {
            f16.extend_from_slice(&half::f16::from_f32(*x).to_le_bytes());
        }
        Embedding {
            model: model.into(),
            f16,
        }
    }
    /// Number of dimensions.
    pub fn dims(&self) -> usize {
        self.f16.len() / 2
    }
    /// Back to f32 (for index rebuilds).
    pub fn to_f32(&self) -> Vec<f32> {
        self.f16
            .chunks_exact(2)
            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Sample {
        at: Ts,
        meta: Json,
    }

    /// L4: a secret column keeps the stored bytes of its plain type (no
    /// migration) and never shows in `Debug`.
    #[test]
    fn redacted_columns_store_plain_bytes_and_hide_in_debug() {
        #[derive(Serialize, Deserialize, Debug)]
        struct Plain {
            secret: String,
            creds: Json,
            token: Option<String>,
        }
        #[derive(Serialize, Deserialize, Debug)]
        struct Sealed {
            secret: Redacted<String>,
            creds: Redacted<Json>,
            token: Option<Redacted<String>>,
        }
        let plain = Plain {
            secret: "whsec_topsecret".into(),
            creds: Json(serde_json::json!({"password": "pw-topsecret"})),
            token: Some("tok-topsecret".into()),
        };
        let bytes = encode_row(1, &plain).unwrap();
        let sealed: Sealed = decode_row("t", 1, &bytes).unwrap();
        assert_eq!(sealed.secret.expose(), "whsec_topsecret");
        assert_eq!(sealed.creds.expose().0["password"], "pw-topsecret");
        assert_eq!(encode_row(1, &sealed).unwrap(), bytes);
        let dbg = format!("{sealed:?}");
        assert!(!dbg.contains("topsecret"), "{dbg}");
        assert!(dbg.contains("[redacted]"), "{dbg}");
        let integration =
            crate::Integration::new(uuid::Uuid::nil(), "b", "https://b", "sk-topsecret");
        assert!(!format!("{integration:?}").contains("topsecret"));
    }

    #[test]
    fn rows_round_trip_with_version_byte() {
        let row = Sample {
            at: Ts(1_700_000_000_123_456),
            meta: Json(serde_json::json!({"a": [1, 2, {"b": null}]})),
        };
        let bytes = encode_row(3, &row).unwrap();
        assert_eq!(bytes[0], 3);
        let back: Sample = decode_row("t", 3, &bytes).unwrap();
        assert_eq!(back, row);
    }

    #[test]
    fn a_row_of_another_format_version_is_refused() {
        let bytes = encode_row(1, &Ts(5)).unwrap();
        let err = decode_row::<Ts>("t", 2, &bytes).unwrap_err();
        assert!(matches!(err, StorageError::Corrupted { .. }), "{err}");
    }

    #[test]
    fn garbage_bytes_are_an_error_not_a_panic() {
        let err =
            decode_row::<Sample>("t", 1, &[1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).unwrap_err();
        assert!(matches!(err, StorageError::Corrupted { .. }));
        assert!(decode_row::<Sample>("t", 1, &[]).is_err());
    }

    #[test]
    fn json_and_ts_are_natural_in_json_output() {
        let row = Sample {
            at: Ts(0),
            meta: Json(serde_json::json!({"k": 1})),
        };
        let text = serde_json::to_string(&row).unwrap();
        assert_eq!(text, r#"{"at":"1970-01-01T00:00:00Z","meta":{"k":1}}"#);
        let back: Sample = serde_json::from_str(&text).unwrap();
        assert_eq!(back, row);
    }

    #[test]
    fn embeddings_keep_f16_precision_and_model() {
        // Bytes and the default `Vec<u8>` sequence encode identically, so
        // rows written before the field became serde bytes still decode.
        #[derive(Serialize, Deserialize, Debug, PartialEq)]
        struct OldEmbedding {
            model: String,
            f16: Vec<u8>,
        }
        let old = OldEmbedding {
            model: "m".into(),
            f16: (0..=255u8).cycle().take(6144).collect(),
        };
        let new = Embedding {
            model: old.model.clone(),
            f16: old.f16.clone(),
        };
        let old_bytes = encode_row(1, &old).unwrap();
        assert_eq!(old_bytes, encode_row(1, &new).unwrap());
        assert_eq!(decode_row::<Embedding>("t", 1, &old_bytes).unwrap(), new);
        let json = serde_json::to_string(&new).unwrap();
        assert_eq!(json, serde_json::to_string(&old).unwrap());
        assert_eq!(serde_json::from_str::<Embedding>(&json).unwrap(), new);

        let e = Embedding::from_f32("m", &[0.5, -1.0, 0.25]);
        assert_eq!(e.dims(), 3);
        assert_eq!(e.to_f32(), vec![0.5, -1.0, 0.25]);
        assert_eq!(e.model, "m");
    }
}
