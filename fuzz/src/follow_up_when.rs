//! Target `follow_up_when`: the `when` text a model writes for
//! `create_follow_up` / `update_follow_up`, through
//! [`parse_when`] in zones with
//! unusual offsets and DST rules, at instants next to DST changes.
//!
//! Invariants checked: an accepted schedule lies strictly after "now"; a
//! recurrence is the rule that produced that first run, survives its stored
//! form (`recurrence_spec`) and never runs more often than once an hour.

use jiff::tz::TimeZone;
use root::follow_ups::schedule::{MIN_INTERVAL_MINUTES, Recurrence, next_after, parse_when};
use storage::Ts;

/// (zone, "now" in unix seconds): UTC; a US zone at midnight of its 2026
/// spring-forward day; a +05:45 zone; a half-hour-DST zone at noon the day
/// before its 2026 fall-back.
const CASES: [(&str, i64); 4] = [
    ("UTC", 1_773_993_600),
    ("America/Los_Angeles", 1_772_956_800),
    ("Asia/Kathmandu", 1_767_225_600),
    ("Australia/Lord_Howe", 1_775_264_400),
];

const MICROS_PER_MINUTE: i64 = 60_000_000;

/// Parse one `when` text in every case.
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for (zone, now_secs) in CASES {
        let tz = TimeZone::get(zone).expect("the zone is in the bundled tzdb");
        let now = Ts::from_secs(now_secs);
        let Ok(schedule) = parse_when(&text, now, &tz) else {
            continue;
        };
        assert!(schedule.next_run_at > now, "{text:?} runs in the past");
        let Some(rule) = schedule.recurrence else {
            continue;
        };
        assert_eq!(
            next_after(&rule, now, &tz),
            Some(schedule.next_run_at),
            "the first run is the rule's next run"
        );
        assert_eq!(
            Recurrence::from_spec(&rule.to_spec()).as_ref(),
            Some(&rule),
            "the stored recurrence reads back"
        );
        if let Some(second) = next_after(&rule, schedule.next_run_at, &tz) {
            let gap = second.micros() - schedule.next_run_at.micros();
            assert!(
                gap >= MIN_INTERVAL_MINUTES * MICROS_PER_MINUTE,
                "{text:?} recurs after {gap} µs"
            );
        }
    }
}
