//! The `when` of a follow-up: a small grammar the model can write reliably
//! (§5.1 leaves the format open), parsed against an injected "now" in the
//! tenant's time zone, and the recurrence math the sweep reschedules with.
//! Pure functions: no clock, no storage.
//!
//! Grammar (case-insensitive):
//! - one time: an RFC 3339 / ISO 8601 date-time (`2026-03-20T09:00:00Z`,
//!   `…-07:00`, `…[Europe/Berlin]`; without an offset it is wall-clock time in
//!   the tenant zone), an ISO date (`2026-03-20`), `in N minutes|hours|days|
//!   weeks` (`in an hour`), `today|tomorrow [at] <time>`, `[on] [next]
//!   <weekday> [at] <time>`, `at <time>` (the next such time);
//! - recurring: `every day|daily [at] <time>`, `every weekday|weekdays [at]
//!   <time>`, `every <weekday> [at] <time>`, `every [N] minutes|hours|days|
//!   weeks`, `hourly` — never more often than once an hour.
//!
//! `<time>` is `9`, `9am`, `9:30 pm`, `21:15`, `noon` or `midnight`; a day
//! without a time means 09:00. Wall-clock times follow the zone's DST rules:
//! a time skipped by a spring-forward gap runs at the first instant after it
//! (02:30 → 03:30), a repeated fall-back time runs at its first occurrence.
//! Intervals in minutes/hours are exact durations; intervals in days/weeks
//! keep the wall-clock time across DST changes.

use jiff::civil::{Date, DateTime, Time, Weekday};
use jiff::tz::TimeZone;
use jiff::{Span, Timestamp, Zoned};
use serde::{Deserialize, Serialize};
use storage::{ScheduleType, Ts};

/// The shortest recurrence interval, in minutes.
pub const MIN_INTERVAL_MINUTES: i64 = 60;
/// The hour of a day given without a time.
pub const DEFAULT_HOUR: i8 = 9;
/// Examples quoted in errors and in the tool description.
pub const WHEN_EXAMPLES: &str = "\"in 30 minutes\", \"tomorrow at 9am\", \"2026-03-20T09:00\", \
     \"every weekday at 9:00\", \"every monday at 10:00\" or \"every 4 hours\"";

const MICROS_PER_MINUTE: i64 = 60_000_000;
const MICROS_PER_DAY: i64 = 86_400_000_000;

/// A parsed `when`: the first run and, for recurring follow-ups, the rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    /// The first run (`follow_ups.next_run_at`).
    pub next_run_at: Ts,
    /// `None` for a one-time follow-up.
    pub recurrence: Option<Recurrence>,
}

impl Schedule {
    /// `follow_ups.schedule_type`.
    pub fn schedule_type(&self) -> ScheduleType {
        match self.recurrence {
            Some(_) => ScheduleType::Recurring,
            None => ScheduleType::Once,
        }
    }
}

/// A recurrence rule, stored as `follow_ups.recurrence_spec`
/// (`{"kind":"weekly","weekday":"monday","hour":10,"minute":0}`, …).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Recurrence {
    /// Every day at a wall-clock time.
    Daily {
        /// 0–23.
        hour: i8,
        /// 0–59.
        minute: i8,
    },
    /// Monday to Friday at a wall-clock time.
    Weekdays {
        /// 0–23.
        hour: i8,
        /// 0–59.
        minute: i8,
    },
    /// One day a week at a wall-clock time.
    Weekly {
        /// The day.
        weekday: DayName,
        /// 0–23.
        hour: i8,
        /// 0–59.
        minute: i8,
    },
    /// Every `every` units, counted from `anchor` (the first run), so a late
    /// sweep never shifts the series.
    Interval {
        /// How many units apart runs are (≥ 1; ≥ 60 for minutes).
        every: i64,
        /// The unit.
        unit: IntervalUnit,
        /// The first run.
        anchor: Ts,
    },
}

impl Recurrence {
    /// Read a stored `recurrence_spec`.
    pub fn from_spec(spec: &serde_json::Value) -> Option<Recurrence> {
        serde_json::from_value(spec.clone()).ok()
    }

    /// The rule as JSON for `recurrence_spec`.
    pub fn to_spec(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// For people: "every weekday at 09:00", "every 4 hours".
    pub fn describe(&self) -> String {
        match self {
            Recurrence::Daily { hour, minute } => format!("every day at {hour:02}:{minute:02}"),
            Recurrence::Weekdays { hour, minute } => {
                format!("every weekday at {hour:02}:{minute:02}")
            }
            Recurrence::Weekly {
                weekday,
                hour,
                minute,
            } => format!("every {} at {hour:02}:{minute:02}", weekday.as_str()),
            Recurrence::Interval { every, unit, .. } => {
                let unit = unit.as_str();
                if *every == 1 {
                    format!("every {}", unit.trim_end_matches('s'))
                } else {
                    format!("every {every} {unit}")
                }
            }
        }
    }
}

/// Unit of an [`Recurrence::Interval`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntervalUnit {
    /// Exact minutes.
    Minutes,
    /// Exact hours.
    Hours,
    /// Calendar days in the tenant zone (wall-clock time kept).
    Days,
}

impl IntervalUnit {
    fn as_str(self) -> &'static str {
        match self {
            IntervalUnit::Minutes => "minutes",
            IntervalUnit::Hours => "hours",
            IntervalUnit::Days => "days",
        }
    }
}

/// A day of the week, spelled as people write it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum DayName {
    Monday,
    Tuesday,
    Wednesday,
    Thursday,
    Friday,
    Saturday,
    Sunday,
}

impl DayName {
    const ALL: [DayName; 7] = [
        DayName::Monday,
        DayName::Tuesday,
        DayName::Wednesday,
        DayName::Thursday,
        DayName::Friday,
        DayName::Saturday,
        DayName::Sunday,
    ];

    fn as_str(self) -> &'static str {
        match self {
            DayName::Monday => "monday",
            DayName::Tuesday => "tuesday",
            DayName::Wednesday => "wednesday",
            DayName::Thursday => "thursday",
            DayName::Friday => "friday",
            DayName::Saturday => "saturday",
            DayName::Sunday => "sunday",
        }
    }

    fn weekday(self) -> Weekday {
        match self {
            DayName::Monday => Weekday::Monday,
            DayName::Tuesday => Weekday::Tuesday,
            DayName::Wednesday => Weekday::Wednesday,
            DayName::Thursday => Weekday::Thursday,
            DayName::Friday => Weekday::Friday,
            DayName::Saturday => Weekday::Saturday,
            DayName::Sunday => Weekday::Sunday,
        }
    }

    /// `monday`, `mon`, `mondays`.
    fn parse(word: &str) -> Option<DayName> {
        let w = word
            .strip_suffix('s')
            .filter(|w| w.len() > 3)
            .unwrap_or(word);
        DayName::ALL
            .into_iter()
            .find(|d| w == d.as_str() || (w.len() == 3 && d.as_str().starts_with(w)))
    }
}

/// Why a `when` was refused; the message tells the model how to fix it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WhenError {
    /// Not in the grammar.
    #[error("Could not understand when=\"{text}\" — use e.g. {WHEN_EXAMPLES}.")]
    Unparseable {
        /// What was given.
        text: String,
    },
    /// A one-time follow-up at or before now.
    #[error(
        "when=\"{text}\" is in the past ({at}) — give a future time, e.g. \"tomorrow at 9am\" or \"in 2 hours\"."
    )]
    InThePast {
        /// What was given.
        text: String,
        /// The resolved time, in the tenant zone.
        at: String,
    },
    /// A recurrence shorter than [`MIN_INTERVAL_MINUTES`].
    #[error(
        "when=\"{text}\" repeats too often — follow-ups can repeat at most once an hour (e.g. \"every hour\", \"every 4 hours\")."
    )]
    TooFrequent {
        /// What was given.
        text: String,
    },
}

/// The tenant zone by IANA name; an unknown name falls back to UTC (logged).
pub fn zone(name: &str) -> TimeZone {
    TimeZone::get(name).unwrap_or_else(|e| {
        tracing::warn!(timezone = name, error = %e, "unknown tenant time zone, using UTC");
        TimeZone::UTC
    })
}

/// `at` in `tz`, e.g. "Tuesday, March 17, 2026, 9:00 AM PDT".
pub fn format_local(at: Ts, tz: &TimeZone) -> String {
    at.to_jiff()
        .to_zoned(tz.clone())
        .strftime("%A, %B %-d, %Y, %-I:%M %p %Z")
        .to_string()
}

/// Parse `text` as of `now` in the tenant zone `tz`.
pub fn parse_when(text: &str, now: Ts, tz: &TimeZone) -> Result<Schedule, WhenError> {
    let unparseable = || WhenError::Unparseable {
        text: text.to_string(),
    };
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(unparseable());
    }
    let now_z = now.to_jiff().to_zoned(tz.clone());
    let planned = match parse_iso(trimmed, tz) {
        Some(at) => Planned::Once(at),
        None => parse_words(&normalize(trimmed), &now_z).ok_or_else(unparseable)?,
    };
    match planned {
        Planned::Once(at) if at <= now => Err(WhenError::InThePast {
            text: text.to_string(),
            at: format_local(at, tz),
        }),
        Planned::Once(at) => Ok(Schedule {
            next_run_at: at,
            recurrence: None,
        }),
        Planned::Every(rule) => {
            if let Recurrence::Interval { every, unit, .. } = &rule
                && interval_minutes(*every, *unit).is_none_or(|m| m < MIN_INTERVAL_MINUTES)
            {
                return Err(WhenError::TooFrequent {
                    text: text.to_string(),
                });
            }
            let next_run_at = next_after(&rule, now, tz).ok_or_else(unparseable)?;
            Ok(Schedule {
                next_run_at,
                recurrence: Some(rule),
            })
        }
    }
}

/// The first run of `rule` strictly after `after`, in `tz`; `None` when the
/// rule is invalid (a hand-edited spec) or runs past the representable range.
pub fn next_after(rule: &Recurrence, after: Ts, tz: &TimeZone) -> Option<Ts> {
    match *rule {
        Recurrence::Daily { hour, minute } => next_wall_time(after, tz, hour, minute, |_| true),
        Recurrence::Weekdays { hour, minute } => next_wall_time(after, tz, hour, minute, |d| {
            d.weekday().to_monday_zero_offset() < 5
        }),
        Recurrence::Weekly {
            weekday,
            hour,
            minute,
        } => next_wall_time(after, tz, hour, minute, |d| {
            d.weekday() == weekday.weekday()
        }),
        Recurrence::Interval {
            every,
            unit,
            anchor,
        } => next_interval(every, unit, anchor, after, tz),
    }
}

enum Planned {
    Once(Ts),
    Every(Recurrence),
}

fn ts(t: Timestamp) -> Ts {
    Ts(t.as_microsecond())
}

fn at_wall_time(date: Date, time: Time, tz: &TimeZone) -> Option<Ts> {
    Some(ts(date
        .to_datetime(time)
        .to_zoned(tz.clone())
        .ok()?
        .timestamp()))
}

/// RFC 3339 / ISO 8601: with a zone annotation, with an offset, as a naive
/// wall-clock date-time in `tz`, or as a date (at [`DEFAULT_HOUR`]).
fn parse_iso(s: &str, tz: &TimeZone) -> Option<Ts> {
    if !s.as_bytes().first().is_some_and(u8::is_ascii_digit) {
        return None;
    }
    if let Ok(z) = s.parse::<Zoned>() {
        return Some(ts(z.timestamp()));
    }
    if let Ok(t) = s.parse::<Timestamp>() {
        return Some(ts(t));
    }
    if s.contains(':') {
        let dt: DateTime = s.parse().ok()?;
        return Some(ts(dt.to_zoned(tz.clone()).ok()?.timestamp()));
    }
    let d: Date = s.parse().ok()?;
    at_wall_time(d, Time::new(DEFAULT_HOUR, 0, 0, 0).ok()?, tz)
}

/// Lower case, `a.m.` → `am`, single spaces, no trailing punctuation.
fn normalize(s: &str) -> String {
    let lower = s.to_lowercase().replace("a.m.", "am").replace("p.m.", "pm");
    let words: Vec<&str> = lower.split_whitespace().collect();
    words
        .join(" ")
        .trim_end_matches(['.', '!', '?'])
        .to_string()
}

fn parse_words(s: &str, now: &Zoned) -> Option<Planned> {
    if let Some(rest) = s.strip_prefix("every ") {
        return parse_every(rest, now).map(Planned::Every);
    }
    for (alias, rest) in [
        ("daily", "day"),
        ("hourly", "hour"),
        ("weekdays", "weekday"),
        ("on weekdays", "weekday"),
    ] {
        if let Some(tail) = s.strip_prefix(alias)
            && (tail.is_empty() || tail.starts_with(' '))
        {
            return parse_every(&format!("{rest}{tail}"), now).map(Planned::Every);
        }
    }
    if let Some(rest) = s.strip_prefix("in ") {
        return parse_in(rest, now).map(Planned::Once);
    }
    let tz = now.time_zone();
    let today = now.date();
    let after = ts(now.timestamp());
    for (word, days) in [("today", 0), ("tomorrow", 1)] {
        if let Some(tail) = s.strip_prefix(word)
            && (tail.is_empty() || tail.starts_with(' '))
        {
            let time = time_or_default(tail)?;
            let date = today.checked_add(Span::new().try_days(days).ok()?).ok()?;
            return at_wall_time(date, time, tz).map(Planned::Once);
        }
    }
    let day_part = s.strip_prefix("on ").unwrap_or(s);
    let day_part = day_part.strip_prefix("next ").unwrap_or(day_part);
    let (first, tail) = day_part
        .split_once(' ')
        .map_or((day_part, ""), |(a, b)| (a, b));
    if let Some(day) = DayName::parse(first) {
        let time = time_or_default(tail)?;
        let (h, m) = (time.hour(), time.minute());
        return next_wall_time(after, tz, h, m, |d| d.weekday() == day.weekday())
            .map(Planned::Once);
    }
    // A bare time: its next occurrence (today, else tomorrow).
    let time = parse_time(s.strip_prefix("at ").unwrap_or(s))?;
    next_wall_time(after, tz, time.hour(), time.minute(), |_| true).map(Planned::Once)
}

/// After `every `: `day [at] T`, `weekday [at] T`, `monday [at] T`,
/// `[N] minutes|hours|days|weeks` (the first run one interval from now).
fn parse_every(rest: &str, now: &Zoned) -> Option<Recurrence> {
    let (first, tail) = rest.split_once(' ').map_or((rest, ""), |(a, b)| (a, b));
    if first == "day" {
        let t = time_or_default(tail)?;
        return Some(Recurrence::Daily {
            hour: t.hour(),
            minute: t.minute(),
        });
    }
    if first == "weekday" {
        let t = time_or_default(tail)?;
        return Some(Recurrence::Weekdays {
            hour: t.hour(),
            minute: t.minute(),
        });
    }
    if let Some(day) = DayName::parse(first) {
        let t = time_or_default(tail)?;
        return Some(Recurrence::Weekly {
            weekday: day,
            hour: t.hour(),
            minute: t.minute(),
        });
    }
    let (n, unit) = match first.parse::<i64>() {
        Ok(n) => (n, tail),
        Err(_) => (1, rest),
    };
    let (every, unit) = interval(n, unit)?;
    Some(Recurrence::Interval {
        every,
        unit,
        anchor: add_interval(now, every, unit)?,
    })
}

/// `N unit` → (count, unit), weeks as days.
fn interval(n: i64, unit: &str) -> Option<(i64, IntervalUnit)> {
    if n < 1 {
        return None;
    }
    match unit {
        "minute" | "minutes" | "min" | "mins" => Some((n, IntervalUnit::Minutes)),
        "hour" | "hours" | "hr" | "hrs" => Some((n, IntervalUnit::Hours)),
        "day" | "days" => Some((n, IntervalUnit::Days)),
        "week" | "weeks" => Some((n.checked_mul(7)?, IntervalUnit::Days)),
        _ => None,
    }
}

fn interval_minutes(every: i64, unit: IntervalUnit) -> Option<i64> {
    match unit {
        IntervalUnit::Minutes => Some(every),
        IntervalUnit::Hours => every.checked_mul(60),
        IntervalUnit::Days => every.checked_mul(24 * 60),
    }
}

/// After `in `: `N unit` or `a|an|one unit`.
fn parse_in(rest: &str, now: &Zoned) -> Option<Ts> {
    let (count, unit) = rest.split_once(' ')?;
    let n = match count {
        "a" | "an" | "one" => 1,
        c => c.parse::<i64>().ok()?,
    };
    let (n, unit) = interval(n, unit)?;
    add_interval(now, n, unit)
}

/// `now + n unit`: exact for minutes/hours, calendar days in the zone.
fn add_interval(from: &Zoned, n: i64, unit: IntervalUnit) -> Option<Ts> {
    match unit {
        IntervalUnit::Days => {
            let z = from.checked_add(Span::new().try_days(n).ok()?).ok()?;
            Some(ts(z.timestamp()))
        }
        _ => {
            let micros = interval_minutes(n, unit)?.checked_mul(MICROS_PER_MINUTE)?;
            let t = from.timestamp().as_microsecond().checked_add(micros)?;
            Timestamp::from_microsecond(t).ok().map(ts)
        }
    }
}

/// `""` → the default time; `at T` or `T` → T.
fn time_or_default(tail: &str) -> Option<Time> {
    let tail = tail.trim();
    if tail.is_empty() {
        return Time::new(DEFAULT_HOUR, 0, 0, 0).ok();
    }
    parse_time(tail.strip_prefix("at ").unwrap_or(tail))
}

/// `9`, `9am`, `9 am`, `9:30pm`, `21:15`, `noon`, `midnight`.
fn parse_time(s: &str) -> Option<Time> {
    let s = s.trim();
    match s {
        "noon" | "midday" => return Time::new(12, 0, 0, 0).ok(),
        "midnight" => return Time::new(0, 0, 0, 0).ok(),
        _ => {}
    }
    let (body, pm) = match (s.strip_suffix("am"), s.strip_suffix("pm")) {
        (Some(b), _) => (b.trim_end(), Some(false)),
        (_, Some(b)) => (b.trim_end(), Some(true)),
        _ => (s, None),
    };
    let (h, m) = body.split_once(':').unwrap_or((body, "00"));
    let digits = |x: &str, max_len: usize| {
        !x.is_empty() && x.len() <= max_len && x.bytes().all(|b| b.is_ascii_digit())
    };
    if !digits(h, 2) || !digits(m, 2) || m.len() != 2 {
        return None;
    }
    let (h, m): (i8, i8) = (h.parse().ok()?, m.parse().ok()?);
    let hour = match pm {
        Some(pm) if (1..=12).contains(&h) => h % 12 + if pm { 12 } else { 0 },
        Some(_) => return None,
        None => h,
    };
    Time::new(hour, m, 0, 0).ok()
}

/// The first date from `after`'s local date on that `matches` whose
/// `hour:minute` is strictly after `after`. Eight days cover every rule.
fn next_wall_time(
    after: Ts,
    tz: &TimeZone,
    hour: i8,
    minute: i8,
    matches: impl Fn(Date) -> bool,
) -> Option<Ts> {
    let time = Time::new(hour, minute, 0, 0).ok()?;
    let start = after.to_jiff().to_zoned(tz.clone()).date();
    for offset in 0..=8 {
        let date = start.checked_add(Span::new().try_days(offset).ok()?).ok()?;
        if !matches(date) {
            continue;
        }
        let at = at_wall_time(date, time, tz)?;
        if at > after {
            return Some(at);
        }
    }
    None
}

fn next_interval(
    every: i64,
    unit: IntervalUnit,
    anchor: Ts,
    after: Ts,
    tz: &TimeZone,
) -> Option<Ts> {
    if every < 1 {
        return None;
    }
    if anchor > after {
        return Some(anchor);
    }
    let elapsed = after.0.checked_sub(anchor.0)?;
    match unit {
        IntervalUnit::Days => {
            let start = anchor.to_jiff().to_zoned(tz.clone());
            // Whole days elapsed, one step back for DST slack, then step.
            let first = (elapsed / MICROS_PER_DAY / every - 1).max(0);
            for k in first..first + 4 {
                let days = k.checked_mul(every)?;
                let at = ts(start
                    .checked_add(Span::new().try_days(days).ok()?)
                    .ok()?
                    .timestamp());
                if at > after {
                    return Some(at);
                }
            }
            None
        }
        _ => {
            let step = interval_minutes(every, unit)?.checked_mul(MICROS_PER_MINUTE)?;
            let k = elapsed / step + 1;
            Some(Ts(anchor.0.checked_add(k.checked_mul(step)?)?))
        }
    }
}

#[cfg(test)]
#[path = "schedule_test.rs"]
mod tests;
