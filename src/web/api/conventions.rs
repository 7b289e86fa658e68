//! The API's shared conventions (§12.2), one place for each:
//!
//! - **Pagination**: keyset cursors. A list is read in a stable order (its
//!   sort key, then the row id as a tie-break); `next_cursor` is the sort
//!   key of the last item returned, base64url-encoded JSON that clients pass
//!   back untouched as `cursor`. A row inserted meanwhile never shifts a
//!   page, unlike an offset.
//! - **Limits**: a page size outside `1..=max` is a 400 naming the field
//!   (never silently cut).
//! - **Times**: ISO-8601 / RFC 3339 in and out (`Ts` serialises so); a bare
//!   date `YYYY-MM-DD` means its midnight in UTC.
//!
//! Every refusal is [`ApiError::InvalidField`]: `{error: {code:
//! "invalid_field", message, field}}` with status 400.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;
use serde::de::DeserializeOwned;
use storage::Ts;

use crate::web::error::ApiError;

/// A page of a list.
#[derive(Debug, Serialize)]
pub struct Paged<T> {
    /// The items, in the list's order.
    pub items: Vec<T>,
    /// Pass as `cursor` for the next page; `null` on the last one.
    pub next_cursor: Option<String>,
}

/// `key` (the last returned item's sort key) as an opaque cursor.
pub fn encode_cursor<K: Serialize>(key: &K) -> String {
    let json = serde_json::to_vec(key).unwrap_or_default();
    URL_SAFE_NO_PAD.encode(json)
}

/// The sort key inside a client's `cursor` (parameter `field`); `None` when
/// absent. A cursor this server did not make is a 400.
pub fn decode_cursor<K: DeserializeOwned>(
    field: &str,
    raw: Option<&str>,
) -> Result<Option<K>, ApiError> {
    let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(None);
    };
    let bad = || ApiError::field(field, "is not a cursor this API returned");
    let bytes = URL_SAFE_NO_PAD.decode(raw).map_err(|_| bad())?;
    serde_json::from_slice(&bytes).map(Some).map_err(|_| bad())
}

/// A page size: `default` when absent, else within `1..=max`.
pub fn page_limit(
    field: &str,
    value: Option<usize>,
    default: usize,
    max: usize,
) -> Result<usize, ApiError> {
    match value {
        None => Ok(default),
        Some(n) if (1..=max).contains(&n) => Ok(n),
        Some(n) => Err(ApiError::field(
            field,
            format!("must be between 1 and {max} (got {n})"),
        )),
    }
}

/// An ISO-8601 instant (`2026-03-29T01:30:00Z`, an offset, or a bare date
/// meaning its midnight UTC) in parameter `field`.
pub fn parse_time(field: &str, raw: &str) -> Result<Ts, ApiError> {
    let raw = raw.trim();
    if let Ok(t) = raw.parse::<jiff::Timestamp>() {
        return Ok(Ts(t.as_microsecond()));
    }
    if let Ok(d) = raw.parse::<jiff::civil::Date>()
        && let Ok(z) = d.to_zoned(jiff::tz::TimeZone::UTC)
    {
        return Ok(Ts(z.timestamp().as_microsecond()));
    }
    Err(ApiError::field(
        field,
        format!("must be an ISO-8601 time such as 2026-03-29T10:00:00Z (got {raw:?})"),
    ))
}

/// An optional time range `[from, to)`: each bound parsed by [`parse_time`],
/// and `from` not after `to`.
pub fn time_range(
    from: Option<&str>,
    to: Option<&str>,
) -> Result<(Option<Ts>, Option<Ts>), ApiError> {
    let from = from.map(|f| parse_time("from", f)).transpose()?;
    let to = to.map(|t| parse_time("to", t)).transpose()?;
    if let (Some(f), Some(t)) = (from, to)
        && f > t
    {
        return Err(ApiError::field("from", "must not be after `to`"));
    }
    Ok((from, to))
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    #[test]
    fn a_cursor_round_trips_and_a_forged_one_is_a_field_error() {
        let key = (Ts::from_secs(1_700_000_000), Uuid::nil());
        let c = encode_cursor(&key);
        assert_eq!(
            decode_cursor::<(Ts, Uuid)>("cursor", Some(&c)).unwrap(),
            Some(key)
        );
        assert_eq!(decode_cursor::<(Ts, Uuid)>("cursor", None).unwrap(), None);
        for bad in ["%%%", "bm90IGpzb24"] {
            match decode_cursor::<(Ts, Uuid)>("cursor", Some(bad)) {
                Err(ApiError::InvalidField { field, .. }) => assert_eq!(field, "cursor"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn limits_are_validated_not_cut() {
        assert_eq!(page_limit("limit", None, 50, 200).unwrap(), 50);
        assert_eq!(page_limit("limit", Some(200), 50, 200).unwrap(), 200);
        for n in [0, 201] {
            let e = page_limit("limit", Some(n), 50, 200).unwrap_err();
            assert!(matches!(e, ApiError::InvalidField { ref field, .. } if field == "limit"));
        }
    }

    #[test]
    fn times_are_iso_8601_and_ranges_ordered() {
        assert_eq!(
            parse_time("from", "2023-11-14T22:13:20Z").unwrap(),
            Ts::from_secs(1_700_000_000)
        );
        assert_eq!(
            parse_time("from", "2023-11-14T23:13:20+01:00").unwrap(),
            Ts::from_secs(1_700_000_000)
        );
        assert_eq!(
            parse_time("from", "2023-11-14").unwrap(),
            Ts::from_secs(1_699_920_000)
        );
        assert!(matches!(
            parse_time("to", "yesterday"),
            Err(ApiError::InvalidField { ref field, .. }) if field == "to"
        ));
        assert!(time_range(Some("2024-01-02"), Some("2024-01-01")).is_err());
        assert!(time_range(Some("2024-01-01"), None).is_ok());
    }
}
