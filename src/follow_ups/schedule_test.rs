//! The `when` grammar and recurrence math, with exact instants. Dates are
//! 2026: Tuesday March 17; US DST starts Sunday March 8 (02:00 → 03:00) and
//! ends Sunday November 1 (02:00 → 01:00); Europe's starts March 29.

use super::*;
use serde_json::json;

fn t(s: &str) -> Ts {
    Ts(s.parse::<Timestamp>().unwrap().as_microsecond())
}

fn la() -> TimeZone {
    TimeZone::get("America/Los_Angeles").unwrap()
}

/// Tuesday, March 17, 2026, 1:00 PM PDT.
fn now() -> Ts {
    t("2026-03-17T20:00:00Z")
}

fn once(text: &str, now: Ts, tz: &TimeZone) -> Ts {
    let s = parse_when(text, now, tz).unwrap_or_else(|e| panic!("{text}: {e}"));
    assert_eq!(s.recurrence, None, "{text}");
    assert_eq!(s.schedule_type(), ScheduleType::Once);
    s.next_run_at
}

fn every(text: &str, now: Ts, tz: &TimeZone) -> (Ts, Recurrence) {
    let s = parse_when(text, now, tz).unwrap_or_else(|e| panic!("{text}: {e}"));
    assert_eq!(s.schedule_type(), ScheduleType::Recurring);
    (s.next_run_at, s.recurrence.unwrap())
}

#[test]
fn iso_date_times_with_offset_zone_or_tenant_wall_clock() {
    let tz = la();
    let n = now();
    assert_eq!(
        once("2026-03-20T16:00:00Z", n, &tz),
        t("2026-03-20T16:00:00Z")
    );
    assert_eq!(
        once("2026-03-20T09:00:00-07:00", n, &tz),
        t("2026-03-20T16:00:00Z")
    );
    // Berlin is still on CET (+01:00) on March 20.
    assert_eq!(
        once("2026-03-20T09:00[Europe/Berlin]", n, &tz),
        t("2026-03-20T08:00:00Z")
    );
    // Naive: wall-clock time in the tenant zone (PDT in March, PST in December).
    assert_eq!(once("2026-03-20T09:00", n, &tz), t("2026-03-20T16:00:00Z"));
    assert_eq!(once("2026-03-20 09:00", n, &tz), t("2026-03-20T16:00:00Z"));
    assert_eq!(
        once("2026-12-01T09:00:00", n, &tz),
        t("2026-12-01T17:00:00Z")
    );
    // A date alone: 09:00 local.
    assert_eq!(once("2026-03-20", n, &tz), t("2026-03-20T16:00:00Z"));
    // The same naive text in another tenant zone is another instant.
    assert_eq!(
        once("2026-03-20T09:00", n, &TimeZone::UTC),
        t("2026-03-20T09:00:00Z")
    );
}

#[test]
fn relative_minutes_and_hours_are_exact_days_keep_the_wall_clock() {
    let tz = la();
    let n = now();
    assert_eq!(once("in 30 minutes", n, &tz), t("2026-03-17T20:30:00Z"));
    assert_eq!(once("in 2 hours", n, &tz), t("2026-03-17T22:00:00Z"));
    assert_eq!(once("In an hour.", n, &tz), t("2026-03-17T21:00:00Z"));
    assert_eq!(once("in 90 mins", n, &tz), t("2026-03-17T21:30:00Z"));
    assert_eq!(once("in 2 weeks", n, &tz), t("2026-03-31T20:00:00Z"));
    // Friday March 6, 09:00 PST: three days later is Monday 09:00 PDT,
    // 71 real hours; "in 72 hours" is exact and lands at 10:00 PDT.
    let before_dst = t("2026-03-06T17:00:00Z");
    assert_eq!(
        once("in 3 days", before_dst, &tz),
        t("2026-03-09T16:00:00Z")
    );
    assert_eq!(
        once("in 72 hours", before_dst, &tz),
        t("2026-03-09T17:00:00Z")
    );
}

#[test]
fn tomorrow_and_today_are_tenant_local_days() {
    let tz = la();
    let n = now();
    assert_eq!(once("tomorrow at 9am", n, &tz), t("2026-03-18T16:00:00Z"));
    assert_eq!(once("tomorrow 09:00", n, &tz), t("2026-03-18T16:00:00Z"));
    assert_eq!(once("tomorrow", n, &tz), t("2026-03-18T16:00:00Z"));
    assert_eq!(
        once("Tomorrow at 5:30 P.M.", n, &tz),
        t("2026-03-19T00:30:00Z")
    );
    assert_eq!(once("tomorrow at noon", n, &tz), t("2026-03-18T19:00:00Z"));
    assert_eq!(once("today at 5pm", n, &tz), t("2026-03-18T00:00:00Z"));
    // 23:30 PDT on the 17th is already the 18th in UTC: "tomorrow" differs.
    let late = t("2026-03-18T06:30:00Z");
    assert_eq!(
        once("tomorrow at 9am", late, &tz),
        t("2026-03-18T16:00:00Z")
    );
    assert_eq!(
        once("tomorrow at 9am", late, &TimeZone::UTC),
        t("2026-03-19T09:00:00Z")
    );
}

#[test]
fn bare_times_and_weekdays_are_the_next_occurrence() {
    let tz = la();
    let n = now();
    assert_eq!(once("at 2pm", n, &tz), t("2026-03-17T21:00:00Z"));
    assert_eq!(once("at 8am", n, &tz), t("2026-03-18T15:00:00Z"));
    assert_eq!(once("17:45", n, &tz), t("2026-03-18T00:45:00Z"));
    assert_eq!(once("monday at 10am", n, &tz), t("2026-03-23T17:00:00Z"));
    assert_eq!(once("next friday", n, &tz), t("2026-03-20T16:00:00Z"));
    // Later today is still "on tuesday".
    assert_eq!(
        once("on tuesday at 14:00", n, &tz),
        t("2026-03-17T21:00:00Z")
    );
    assert_eq!(once("tue at 9", n, &tz), t("2026-03-24T16:00:00Z"));
}

#[test]
fn daily_rules_follow_dst_gaps_and_folds() {
    let tz = la();
    let (first, rule) = every("every day at 9:00", now(), &tz);
    assert_eq!(rule, Recurrence::Daily { hour: 9, minute: 0 });
    assert_eq!(first, t("2026-03-18T16:00:00Z"));
    assert_eq!(
        next_after(&rule, first, &tz),
        Some(t("2026-03-19T16:00:00Z"))
    );
    let (late, _) = every("daily at 21:30", now(), &tz);
    assert_eq!(late, t("2026-03-18T04:30:00Z"), "later today, local");
    // Across spring-forward: 09:00 PST, then 09:00 PDT (23 h later).
    assert_eq!(
        next_after(&rule, t("2026-03-07T17:00:00Z"), &tz),
        Some(t("2026-03-08T16:00:00Z"))
    );
    // 02:30 does not exist on March 8: it runs at 03:30 PDT, then 02:30 again.
    let gap = Recurrence::Daily {
        hour: 2,
        minute: 30,
    };
    let in_gap = next_after(&gap, t("2026-03-07T11:00:00Z"), &tz).unwrap();
    assert_eq!(in_gap, t("2026-03-08T10:30:00Z"));
    assert_eq!(
        next_after(&gap, in_gap, &tz),
        Some(t("2026-03-09T09:30:00Z"))
    );
    // 01:30 happens twice on November 1: it runs once, at the first.
    let fold = Recurrence::Daily {
        hour: 1,
        minute: 30,
    };
    let first_fold = next_after(&fold, t("2026-10-31T09:00:00Z"), &tz).unwrap();
    assert_eq!(first_fold, t("2026-11-01T08:30:00Z"));
    assert_eq!(
        next_after(&fold, first_fold, &tz),
        Some(t("2026-11-02T09:30:00Z"))
    );
    // A naive date-time in the gap resolves the same way.
    assert_eq!(
        once("2026-03-08T02:30", t("2026-03-01T00:00:00Z"), &tz),
        t("2026-03-08T10:30:00Z")
    );
}

#[test]
fn weekday_and_weekly_rules() {
    let tz = la();
    // Friday March 20, 10:00 PDT.
    let friday = t("2026-03-20T17:00:00Z");
    let (first, rule) = every("Every  Weekday at 9AM", friday, &tz);
    assert_eq!(rule, Recurrence::Weekdays { hour: 9, minute: 0 });
    assert_eq!(first, t("2026-03-23T16:00:00Z"), "skips the weekend");
    assert_eq!(
        next_after(&rule, first, &tz),
        Some(t("2026-03-24T16:00:00Z"))
    );
    assert_eq!(every("weekdays at 9am", friday, &tz).1, rule);

    let (first, rule) = every("every monday at 10:00", now(), &tz);
    assert_eq!(
        rule,
        Recurrence::Weekly {
            weekday: DayName::Monday,
            hour: 10,
            minute: 0
        }
    );
    assert_eq!(first, t("2026-03-23T17:00:00Z"));
    // Monday March 2, 10:00 PST → Monday March 9, 10:00 PDT.
    assert_eq!(
        next_after(&rule, t("2026-03-02T18:00:00Z"), &tz),
        Some(t("2026-03-09T17:00:00Z"))
    );
    assert_eq!(
        rule.to_spec(),
        json!({"kind": "weekly", "weekday": "monday", "hour": 10, "minute": 0})
    );
}

#[test]
fn intervals_are_anchored_at_the_first_run() {
    let tz = la();
    let (first, rule) = every("every 4 hours", now(), &tz);
    let anchor = t("2026-03-18T00:00:00Z");
    assert_eq!(first, anchor);
    assert_eq!(
        rule,
        Recurrence::Interval {
            every: 4,
            unit: IntervalUnit::Hours,
            anchor
        }
    );
    assert_eq!(
        rule.to_spec(),
        json!({"kind": "interval", "every": 4, "unit": "hours", "anchor": "2026-03-18T00:00:00Z"})
    );
    assert_eq!(next_after(&rule, now(), &tz), Some(anchor));
    assert_eq!(
        next_after(&rule, anchor, &tz),
        Some(t("2026-03-18T04:00:00Z"))
    );
    // A late sweep keeps the series: 10 h after the anchor → the 12 h slot.
    assert_eq!(
        next_after(&rule, t("2026-03-18T10:00:00Z"), &tz),
        Some(t("2026-03-18T12:00:00Z"))
    );
    assert_eq!(every("hourly", now(), &tz).0, t("2026-03-17T21:00:00Z"));
    assert_eq!(every("every hour", now(), &tz).0, t("2026-03-17T21:00:00Z"));
    assert_eq!(
        every("every 90 minutes", now(), &tz).0,
        t("2026-03-17T21:30:00Z")
    );
    let (_, weekly) = every("every week", now(), &tz);
    assert!(matches!(
        weekly,
        Recurrence::Interval {
            every: 7,
            unit: IntervalUnit::Days,
            ..
        }
    ));

    // Days keep 09:00 local across spring-forward.
    let (first, days) = every("every 2 days", t("2026-03-06T17:00:00Z"), &tz);
    assert_eq!(first, t("2026-03-08T16:00:00Z"));
    assert_eq!(
        next_after(&days, first, &tz),
        Some(t("2026-03-10T16:00:00Z"))
    );
    let daily = Recurrence::Interval {
        every: 1,
        unit: IntervalUnit::Days,
        anchor: t("2026-03-06T17:00:00Z"),
    };
    assert_eq!(
        next_after(&daily, t("2026-03-20T12:00:00Z"), &tz),
        Some(t("2026-03-20T16:00:00Z"))
    );
}

#[test]
fn specs_round_trip_and_describe_themselves() {
    let tz = la();
    for text in [
        "every day at 9:00",
        "every weekday at 9am",
        "every sunday at 18:30",
        "every 4 hours",
        "every 3 days",
    ] {
        let (_, rule) = every(text, now(), &tz);
        assert_eq!(Recurrence::from_spec(&rule.to_spec()), Some(rule.clone()));
    }
    let d = |text: &str| every(text, now(), &tz).1.describe();
    assert_eq!(d("daily at 7am"), "every day at 07:00");
    assert_eq!(d("every weekday"), "every weekday at 09:00");
    assert_eq!(d("every sun at 18:30"), "every sunday at 18:30");
    assert_eq!(d("every 4 hours"), "every 4 hours");
    assert_eq!(d("hourly"), "every hour");
    assert_eq!(Recurrence::from_spec(&json!({"kind": "yearly"})), None);
    // A hand-edited invalid rule never schedules.
    let bad = Recurrence::Daily {
        hour: 25,
        minute: 0,
    };
    assert_eq!(next_after(&bad, now(), &tz), None);
}

#[test]
fn bad_past_and_too_frequent_whens_say_how_to_fix_them() {
    let tz = la();
    let n = now();
    let err = |text: &str| parse_when(text, n, &tz).unwrap_err();
    assert_eq!(
        err("whenever you like").to_string(),
        "Could not understand when=\"whenever you like\" — use e.g. \"in 30 minutes\", \
         \"tomorrow at 9am\", \"2026-03-20T09:00\", \"every weekday at 9:00\", \
         \"every monday at 10:00\" or \"every 4 hours\"."
    );
    for text in [
        "",
        "  ",
        "tomorrow at 25:00",
        "in 0 minutes",
        "in -2 hours",
        "13pm",
        "at 9:5",
        "every 0 hours",
        "every fortnight",
        "2026-02-30T09:00",
    ] {
        assert!(
            matches!(err(text), WhenError::Unparseable { .. }),
            "{text:?}"
        );
    }
    assert_eq!(
        err("today at 8am"),
        WhenError::InThePast {
            text: "today at 8am".into(),
            at: "Tuesday, March 17, 2026, 8:00 AM PDT".into(),
        }
    );
    assert!(matches!(
        err("2020-01-01T00:00:00Z"),
        WhenError::InThePast { .. }
    ));
    assert!(err("today at 8am").to_string().contains("in the past"));
    for text in ["every 30 minutes", "every 59 mins", "every minute"] {
        assert_eq!(
            err(text),
            WhenError::TooFrequent { text: text.into() },
            "{text}"
        );
    }
}

#[test]
fn unknown_zones_fall_back_to_utc() {
    assert_eq!(zone("Mars/Olympus_Mons"), TimeZone::UTC);
    assert_eq!(zone("America/Los_Angeles"), la());
}
