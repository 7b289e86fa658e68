//! Order-preserving, self-delimiting key encoding for primary keys and index
//! entries. Byte order of encoded keys equals the logical order of the
//! values, and no encoded key is a prefix of another value's encoding, so an
//! index can be range-scanned by any leading subset of its columns.

use uuid::Uuid;

use crate::codec::Ts;

/// An encoded key (or key prefix).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key(pub Vec<u8>);

/// Start building a key.
pub fn key() -> Key {
    Key(Vec::with_capacity(48))
}

impl Key {
    /// Append a UUID (16 bytes, fixed width).
    pub fn uuid(mut self, v: Uuid) -> Self {
        self.0.extend_from_slice(v.as_bytes());
        self
    }
    /// Append an optional UUID: a 0 tag for NULL (sorts first) or 1 + bytes.
    pub fn opt_uuid(mut self, v: Option<Uuid>) -> Self {
        match v {
            None => self.0.push(0),
            Some(u) => {
                self.0.push(1);
                self.0.extend_from_slice(u.as_bytes());
            }
        }
        self
    }
    /// Append a string. `0x00` is escaped as `0x00 0xFF` and the value ends
    /// with `0x00 0x01`, which keeps order and makes it self-delimiting.
    pub fn str(mut self, v: &str) -> Self {
        for &b in v.as_bytes() {
            self.0.push(b);
            if b == 0 {
                self.0.push(0xff);
            }
        }
        self.0.extend_from_slice(&[0, 1]);
        self
    }
    /// Append a signed integer in ascending order (big-endian, sign bit flipped).
    pub fn i64(mut self, v: i64) -> Self {
        self.0
            .extend_from_slice(&((v as u64) ^ (1 << 63)).to_be_bytes());
        self
    }
    /// Append an unsigned integer in ascending order.
    pub fn u64(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    /// Append a timestamp in ascending order.
    pub fn ts(self, v: Ts) -> Self {
        self.i64(v.0)
    }
    /// Append an optional timestamp (NULL sorts first).
    pub fn opt_ts(mut self, v: Option<Ts>) -> Self {
        match v {
            None => {
                self.0.push(0);
                self
            }
            Some(t) => {
                self.0.push(1);
                self.i64(t.0)
            }
        }
    }
    /// Append raw bytes that are already an encoded key.
    pub fn raw(mut self, bytes: &[u8]) -> Self {
        self.0.extend_from_slice(bytes);
        self
    }
    /// The encoded bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
    /// The smallest key greater than every key starting with `self`
    /// (exclusive upper bound of a prefix scan). `None` when unbounded.
    pub fn prefix_end(&self) -> Option<Vec<u8>> {
        let mut end = self.0.clone();
        while let Some(last) = end.pop() {
            if last < 0xff {
                end.push(last + 1);
                return Some(end);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_keep_order_and_never_prefix_each_other() {
        let a = key().str("ab").0;
        let b = key().str("abc").0;
        let c = key().str("ab\0").0;
        assert!(a < b && a < c);
        assert!(!b.starts_with(&a));
        assert!(!c.starts_with(&a));
    }

    #[test]
    fn integers_sort_numerically_including_negatives() {
        let vals = [-5i64, -1, 0, 1, 7, i64::MAX, i64::MIN];
        let mut enc: Vec<_> = vals.iter().map(|v| (key().i64(*v).0, *v)).collect();
        enc.sort();
        let sorted: Vec<i64> = enc.into_iter().map(|(_, v)| v).collect();
        assert_eq!(sorted, vec![i64::MIN, -5, -1, 0, 1, 7, i64::MAX]);
    }

    #[test]
    fn prefix_end_bounds_every_extension() {
        let p = key().str("t");
        let end = p.prefix_end().unwrap();
        let inside = p.clone().i64(i64::MAX).0;
        assert!(inside < end && p.0 < end);
        assert_eq!(Key(vec![0xff, 0xff]).prefix_end(), None);
    }
}
