//! Conversation analytics (§12.2 `GET /conversations/analytics`): messages,
//! exchanges, work saved (`conversation_work_saved`) and model spend
//! (`llm_token_usage`) per day, week (Monday first) or month.
//!
//! Buckets are calendar periods in the tenant's time zone
//! (`tenants.timezone`), computed with jiff, so a day is 23 or 25 hours long
//! across a DST change and midnight is always local midnight. The first
//! and last buckets are clipped to `[from, to)`. Rows are counted by their
//! own time: messages by `message_at`, estimates and spend by `created_at`;
//! an exchange counts in the bucket of its first message in range.
//! Token spend has no member column, so a per-member report leaves it null.

use std::collections::HashSet;

use jiff::tz::TimeZone;
use jiff::{ToSpan, Zoned};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use storage::{
    ConversationLog, ConversationWorkSaved, Direction, Key, LlmTokenUsage, RedbStore, Scan, Tenant,
    Ts, key,
};
use uuid::Uuid;

use super::InsightError;

/// Most buckets one report may have (a daily report covers ~2.7 years).
pub const MAX_BUCKETS: usize = 1000;

/// The bucket width.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    /// Local calendar days.
    Day,
    /// ISO weeks, Monday 00:00 local time.
    Week,
    /// Calendar months.
    Month,
}

/// Figures of one bucket (or the whole range).
#[derive(Clone, Debug, Default, PartialEq, Serialize, JsonSchema)]
pub struct Figures {
    /// Logged messages, both directions.
    pub messages: u64,
    /// Member messages.
    pub inbound: u64,
    /// Agent replies.
    pub outbound: u64,
    /// Distinct exchanges (a member message and its reply).
    pub exchanges: u64,
    /// Estimated human minutes saved.
    pub work_saved_minutes: i64,
    /// Exchanges with a work-saved estimate.
    pub work_saved_estimates: u64,
    /// Tokens of every model call (null for a per-member report).
    pub total_tokens: Option<i64>,
    /// Their cost in USD (null for a per-member report).
    pub cost_usd: Option<f64>,
}

/// One period.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Bucket {
    /// `2026-03-29`, `2026-W13` or `2026-03`.
    pub label: String,
    /// Start (local time with offset), clipped to `from`.
    pub start: String,
    /// Exclusive end (local time with offset), clipped to `to`.
    pub end: String,
    /// What happened in it.
    #[serde(flatten)]
    pub figures: Figures,
}

/// A report.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Analytics {
    /// The IANA zone the buckets follow.
    pub timezone: String,
    /// The bucket width.
    pub group_by: GroupBy,
    /// The principal the report is scoped to.
    pub principal_ref: Option<String>,
    /// Oldest first.
    pub buckets: Vec<Bucket>,
    /// The sums over every bucket.
    pub totals: Figures,
}

/// What to report on.
#[derive(Clone, Debug)]
pub struct AnalyticsQuery {
    /// Inclusive start.
    pub from: Ts,
    /// Exclusive end.
    pub to: Ts,
    /// Bucket width.
    pub group_by: GroupBy,
    /// Scope to one member (id, ref).
    pub principal: Option<(Uuid, String)>,
}

/// The tenant's zone; an unknown name falls back to UTC (logged).
pub fn tenant_zone(tenant: &Tenant) -> TimeZone {
    TimeZone::get(&tenant.timezone).unwrap_or_else(|e| {
        tracing::warn!(tenant = %tenant.id, timezone = %tenant.timezone, error = %e, "unknown tenant time zone; analytics in UTC");
        TimeZone::UTC
    })
}

fn zoned(t: Ts, tz: &TimeZone) -> Zoned {
    t.to_jiff().to_zoned(tz.clone())
}

fn stamp(z: &Zoned) -> String {
    z.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string()
}

/// The bucket starts covering `[from, to)`: the period holding `from`, then
/// one per period up to the first start at or after `to` (the end fence).
pub fn fences(
    from: Ts,
    to: Ts,
    group_by: GroupBy,
    tz: &TimeZone,
) -> Result<Vec<Zoned>, InsightError> {
    let calc = |e: jiff::Error| InsightError::invalid("from", format!("is out of range: {e}"));
    let local = zoned(from, tz).date();
    let first = match group_by {
        GroupBy::Day => local,
        GroupBy::Week => local
            .checked_sub(i64::from(local.weekday().to_monday_zero_offset()).days())
            .map_err(calc)?,
        GroupBy::Month => local.first_of_month(),
    };
    let step = match group_by {
        GroupBy::Day => 1.day(),
        GroupBy::Week => 1.week(),
        GroupBy::Month => 1.month(),
    };
    let mut fences = Vec::new();
    let mut date = first;
    loop {
        let start = date
            .to_zoned(tz.clone())
            .map_err(calc)?
            .start_of_day()
            .map_err(calc)?;
        let done = start.timestamp().as_microsecond() >= to.micros();
        fences.push(start);
        if done {
            return Ok(fences);
        }
        if fences.len() > MAX_BUCKETS {
            return Err(InsightError::invalid(
                "to",
                format!(
                    "the range needs more than {MAX_BUCKETS} buckets; narrow it or group by a longer period"
                ),
            ));
        }
        date = date.checked_add(step).map_err(calc)?;
    }
}

fn label(z: &Zoned, group_by: GroupBy) -> String {
    match group_by {
        GroupBy::Day => z.strftime("%Y-%m-%d").to_string(),
        GroupBy::Week => {
            let w = z.date().iso_week_date();
            format!("{}-W{:02}", w.year(), w.week())
        }
        GroupBy::Month => z.strftime("%Y-%m").to_string(),
    }
}

fn in_range(from: Ts, to: Ts) -> (Option<Key>, Option<Key>) {
    (Some(key().ts(from)), Some(key().ts(to)))
}

/// The report for `query` in `tenant`'s zone.
pub async fn report(
    store: &RedbStore,
    tenant: &Tenant,
    query: AnalyticsQuery,
) -> Result<Analytics, InsightError> {
    if query.from >= query.to {
        return Err(InsightError::invalid("to", "must be after `from`"));
    }
    let tz = tenant_zone(tenant);
    let fences = fences(query.from, query.to, query.group_by, &tz)?;
    let starts: Vec<i64> = fences
        .iter()
        .map(|z| z.timestamp().as_microsecond())
        .collect();
    let n = fences.len() - 1;
    let bucket_of = move |t: Ts| {
        starts
            .partition_point(|s| *s <= t.micros())
            .saturating_sub(1)
    };
    let tenant_id = tenant.id;
    let principal = query.principal.as_ref().map(|(id, _)| *id);
    let (from, to) = (query.from, query.to);
    let mut figures = store
        .snapshot(move |s| {
            let mut figs = vec![Figures::default(); n];
            let (lo, hi) = in_range(from, to);
            let (index, prefix) = match principal {
                Some(p) => (ConversationLog::PRINCIPAL_MESSAGE_AT_IDX, key().uuid(p)),
                None => (ConversationLog::MESSAGE_AT_IDX, key()),
            };
            let mut seen = HashSet::new();
            s.scan_filtered::<ConversationLog>(
                Some(tenant_id),
                &Scan::index(index, prefix).between(lo.clone(), hi.clone()),
                |r| {
                    let f = &mut figs[bucket_of(r.message_at)];
                    f.messages += 1;
                    match r.direction {
                        Direction::Inbound => f.inbound += 1,
                        Direction::Outbound => f.outbound += 1,
                    }
                    if let Some(x) = &r.exchange_key
                        && seen.insert(x.clone())
                    {
                        f.exchanges += 1;
                    }
                    false
                },
            )?;
            s.scan_filtered::<ConversationWorkSaved>(
                Some(tenant_id),
                &Scan::index(ConversationWorkSaved::CREATED_AT_IDX, key())
                    .between(lo.clone(), hi.clone()),
                |w| {
                    if principal.is_none() || w.principal_id == principal {
                        let f = &mut figs[bucket_of(w.created_at)];
                        f.work_saved_minutes += i64::from(w.estimated_minutes);
                        f.work_saved_estimates += 1;
                    }
                    false
                },
            )?;
            if principal.is_none() {
                for f in figs.iter_mut() {
                    f.total_tokens = Some(0);
                    f.cost_usd = Some(0.0);
                }
                s.scan_filtered::<LlmTokenUsage>(
                    Some(tenant_id),
                    &Scan::index(LlmTokenUsage::CREATED_AT_IDX, key()).between(lo, hi),
                    |u| {
                        let f = &mut figs[bucket_of(u.created_at)];
                        f.total_tokens = f.total_tokens.map(|t| t + u.total_tokens);
                        f.cost_usd = f.cost_usd.map(|c| c + u.cost_usd.unwrap_or(0.0));
                        false
                    },
                )?;
            }
            Ok(figs)
        })
        .await?;
    let mut totals = Figures {
        total_tokens: principal.is_none().then_some(0),
        cost_usd: principal.is_none().then_some(0.0),
        ..Figures::default()
    };
    let buckets = figures
        .drain(..)
        .enumerate()
        .map(|(i, f)| {
            totals.messages += f.messages;
            totals.inbound += f.inbound;
            totals.outbound += f.outbound;
            totals.exchanges += f.exchanges;
            totals.work_saved_minutes += f.work_saved_minutes;
            totals.work_saved_estimates += f.work_saved_estimates;
            totals.total_tokens = totals.total_tokens.zip(f.total_tokens).map(|(a, b)| a + b);
            totals.cost_usd = totals.cost_usd.zip(f.cost_usd).map(|(a, b)| a + b);
            let start = if i == 0 {
                zoned(from, &tz)
            } else {
                fences[i].clone()
            };
            let end = if i + 1 == n {
                zoned(to, &tz)
            } else {
                fences[i + 1].clone()
            };
            Bucket {
                label: label(&fences[i], query.group_by),
                start: stamp(&start),
                end: stamp(&end),
                figures: f,
            }
        })
        .collect();
    Ok(Analytics {
        timezone: tz.iana_name().unwrap_or("UTC").to_string(),
        group_by: query.group_by,
        principal_ref: query.principal.map(|(_, r)| r),
        buckets,
        totals,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Ts {
        Ts(s.parse::<jiff::Timestamp>().unwrap().as_microsecond())
    }

    #[test]
    fn berlin_days_around_the_spring_change_are_local_midnights() {
        let tz = TimeZone::get("Europe/Berlin").unwrap();
        let f = fences(
            ts("2026-03-28T10:00:00Z"),
            ts("2026-03-30T10:00:00Z"),
            GroupBy::Day,
            &tz,
        )
        .unwrap();
        let utc: Vec<String> = f.iter().map(|z| z.timestamp().to_string()).collect();
        assert_eq!(
            utc,
            [
                "2026-03-27T23:00:00Z",
                "2026-03-28T23:00:00Z",
                "2026-03-29T22:00:00Z",
                "2026-03-30T22:00:00Z"
            ]
        );
    }

    #[test]
    fn weeks_start_on_monday_and_months_on_the_first() {
        let tz = TimeZone::UTC;
        let w = fences(
            ts("2026-04-01T00:00:00Z"),
            ts("2026-04-02T00:00:00Z"),
            GroupBy::Week,
            &tz,
        )
        .unwrap();
        assert_eq!(w[0].timestamp().to_string(), "2026-03-30T00:00:00Z");
        assert_eq!(label(&w[0], GroupBy::Week), "2026-W14");
        let m = fences(
            ts("2026-02-10T00:00:00Z"),
            ts("2026-03-02T00:00:00Z"),
            GroupBy::Month,
            &tz,
        )
        .unwrap();
        let starts: Vec<String> = m.iter().map(|z| z.timestamp().to_string()).collect();
        assert_eq!(
            starts,
            [
                "2026-02-01T00:00:00Z",
                "2026-03-01T00:00:00Z",
                "2026-04-01T00:00:00Z"
            ]
        );
    }

    #[test]
    fn too_many_buckets_names_to() {
        let e = fences(
            ts("2020-01-01T00:00:00Z"),
            ts("2026-01-01T00:00:00Z"),
            GroupBy::Day,
            &TimeZone::UTC,
        )
        .unwrap_err();
        assert!(matches!(e, InsightError::Invalid { field: "to", .. }));
    }
}
