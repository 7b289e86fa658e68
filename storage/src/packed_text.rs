//! Long text columns stored zstd-compressed (a knowledge page's HTML and
//! plain text: at 100k chunks the page rows held every chunk's text a
//! second time, ~137 MB, in 8–32 KiB redb pages; issue 23).
//!
//! The stored form stays readable by the plain `String` encoding it
//! replaces, so no row rewrite or format version is needed: bincode writes
//! a string and a byte string the same way (a length, then the bytes), and
//! a packed value starts with `0xFF`, a byte that never begins UTF-8 text.
//! Rows written before this module read as they are; short text, and text
//! that does not shrink, is stored as before. Human-readable formats (JSON
//! exports, API bodies) always see the plain string.
//!
//! Packed layout: `0xFF`, the text's length as u32 little-endian, one zstd
//! frame. The length bounds the decompression (no bomb can ask for more
//! than it says, and it says at most [`MAX_TEXT_BYTES`]).

use serde::de::{Deserialize, Deserializer, Visitor};
use serde::ser::{Serialize, Serializer};

/// First byte of a packed value (never the first byte of UTF-8 text).
const MARK: u8 = 0xFF;
/// Shorter text is stored plain (zstd's frame overhead eats the gain).
pub const MIN_PACKED_BYTES: usize = 256;
/// zstd level: 3 is zstd's default (~3× on English HTML and prose, tens
/// of µs for a page).
const LEVEL: i32 = 3;
/// Largest text a packed value may claim (a row's decode limit).
pub const MAX_TEXT_BYTES: usize = 64 * 1024 * 1024;

/// The stored bytes of `text`: packed when that is smaller, else `None`
/// (store the plain string).
pub fn pack(text: &str) -> Option<Vec<u8>> {
    if text.len() < MIN_PACKED_BYTES || text.len() > MAX_TEXT_BYTES {
        return None;
    }
    let frame = zstd::bulk::compress(text.as_bytes(), LEVEL).ok()?;
    if frame.len() + 5 >= text.len() {
        return None;
    }
    let mut out = Vec::with_capacity(frame.len() + 5);
    out.push(MARK);
    out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    out.extend_from_slice(&frame);
    Some(out)
}

/// The text of stored bytes (packed or plain UTF-8).
pub fn unpack(stored: &[u8]) -> Result<String, String> {
    match stored.split_first() {
        Some((&MARK, rest)) => {
            let (len, frame) = rest
                .split_first_chunk::<4>()
                .ok_or("packed text without its length")?;
            let len = u32::from_le_bytes(*len) as usize;
            if len > MAX_TEXT_BYTES {
                return Err(format!("packed text claims {len} bytes"));
            }
            let bytes = zstd::bulk::decompress(frame, len).map_err(|e| e.to_string())?;
            if bytes.len() != len {
                return Err(format!("packed text is {} bytes, not {len}", bytes.len()));
            }
            String::from_utf8(bytes).map_err(|e| e.to_string())
        }
        _ => std::str::from_utf8(stored)
            .map(str::to_string)
            .map_err(|e| e.to_string()),
    }
}

/// `#[serde(with = "crate::packed_text")]` for a `String` column.
pub fn serialize<S: Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
    if s.is_human_readable() {
        return s.serialize_str(text);
    }
    match pack(text) {
        Some(bytes) => s.serialize_bytes(&bytes),
        None => s.serialize_str(text),
    }
}

/// See [`serialize`].
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    if d.is_human_readable() {
        String::deserialize(d)
    } else {
        d.deserialize_bytes(Text)
    }
}

struct Text;

impl Visitor<'_> for Text {
    type Value = String;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("text, plain or packed")
    }

    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<String, E> {
        unpack(v).map_err(E::custom)
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_string())
    }
}

/// `#[serde(with = "crate::packed_text::option")]` for an `Option<String>`
/// column.
pub mod option {
    use super::*;

    struct Packed<'a>(&'a str);

    impl Serialize for Packed<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            super::serialize(self.0, s)
        }
    }

    struct Unpacked(String);

    impl<'de> Deserialize<'de> for Unpacked {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            super::deserialize(d).map(Unpacked)
        }
    }

    /// See [`super::serialize`].
    pub fn serialize<S: Serializer>(text: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
        match text {
            Some(t) => s.serialize_some(&Packed(t)),
            None => s.serialize_none(),
        }
    }

    /// See [`super::deserialize`].
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        Option::<Unpacked>::deserialize(d).map(|o| o.map(|u| u.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, serde::Serialize, Deserialize)]
    struct Packed {
        #[serde(with = "crate::packed_text")]
        body: String,
        #[serde(with = "crate::packed_text::option")]
        text: Option<String>,
        after: u32,
    }

    #[derive(Debug, PartialEq, serde::Serialize, Deserialize)]
    struct Plain {
        body: String,
        text: Option<String>,
        after: u32,
    }

    fn prose(n: usize) -> String {
        "The walrus keeps its tusks clean with a daily scrub of kelp. ".repeat(n)
    }

    fn bin<T: serde::Serialize>(v: &T) -> Vec<u8> {
        bincode::serde::encode_to_vec(v, bincode::config::standard()).unwrap()
    }

    fn unbin<T: serde::de::DeserializeOwned>(b: &[u8]) -> T {
        bincode::serde::decode_from_slice(b, bincode::config::standard())
            .unwrap()
            .0
    }

    #[test]
    fn long_text_is_stored_packed_and_reads_back_exactly() {
        let row = Packed {
            body: prose(200) + "é ✓",
            text: Some(prose(100)),
            after: 7,
        };
        let stored = bin(&row);
        assert!(
            stored.len() < row.body.len() / 5,
            "{} stored bytes for {} of text",
            stored.len(),
            row.body.len() + row.text.as_ref().unwrap().len()
        );
        assert_eq!(unbin::<Packed>(&stored), row);
    }

    /// Rows written before packing (plain strings) read as they are, and
    /// short text is still written plain (the same bytes as before).
    #[test]
    fn plain_rows_read_unchanged_and_short_text_stays_plain() {
        let old = Plain {
            body: prose(200),
            text: None,
            after: 1,
        };
        let read: Packed = unbin(&bin(&old));
        assert_eq!(
            (read.body.as_str(), read.text, read.after),
            (old.body.as_str(), None, 1)
        );
        let short = Packed {
            body: "short".into(),
            text: Some("also short".into()),
            after: 2,
        };
        let as_plain = Plain {
            body: "short".into(),
            text: Some("also short".into()),
            after: 2,
        };
        assert_eq!(bin(&short), bin(&as_plain));
    }

    #[test]
    fn json_sees_the_plain_string() {
        let row = Packed {
            body: prose(50),
            text: Some(prose(20)),
            after: 3,
        };
        let json = serde_json::to_value(&row).unwrap();
        assert_eq!(json["body"], serde_json::Value::String(prose(50)));
        assert_eq!(serde_json::from_value::<Packed>(json).unwrap(), row);
    }

    #[test]
    fn corrupt_or_oversized_packed_values_are_errors_not_panics() {
        let mut packed = pack(&prose(50)).unwrap();
        assert_eq!(packed[0], MARK);
        assert_eq!(unpack(&packed).unwrap(), prose(50));
        packed[1..5].copy_from_slice(&((MAX_TEXT_BYTES as u32) + 1).to_le_bytes());
        assert!(unpack(&packed).unwrap_err().contains("claims"));
        let mut short_claim = pack(&prose(50)).unwrap();
        short_claim[1..5].copy_from_slice(&10u32.to_le_bytes());
        assert!(
            unpack(&short_claim).is_err(),
            "a frame longer than its claim"
        );
        assert!(unpack(&[MARK, 1, 0]).is_err());
        let truncated = &pack(&prose(50)).unwrap()[..20];
        assert!(unpack(truncated).is_err());
        assert!(unpack(&[0xC3]).is_err(), "invalid UTF-8");
    }
}
