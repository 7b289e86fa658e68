//! Follow-ups (§5.1, §13): scheduled agent work delivered as a private DM
//! to the member who asked. The CRUD tools live in
//! `tools::core::follow_ups`; this module holds what they share with the
//! 60 s sweep: the `when` grammar and recurrence math ([`schedule`]) and the
//! tenant kill switch.

pub mod schedule;

use serde_json::Value;

/// `tenants.settings.runtime.follow_ups_enabled`; anything but an explicit
/// `false` (missing, null, another type) means enabled (§2.1).
pub fn follow_ups_enabled(settings: &Value) -> bool {
    settings
        .pointer("/runtime/follow_ups_enabled")
        .and_then(Value::as_bool)
        .unwrap_or(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn follow_ups_are_enabled_unless_explicitly_false() {
        assert!(follow_ups_enabled(&json!({})));
        assert!(follow_ups_enabled(&json!({"runtime": {}})));
        assert!(follow_ups_enabled(
            &json!({"runtime": {"follow_ups_enabled": true}})
        ));
        assert!(follow_ups_enabled(
            &json!({"runtime": {"follow_ups_enabled": "no"}})
        ));
        assert!(!follow_ups_enabled(
            &json!({"runtime": {"follow_ups_enabled": false}})
        ));
    }
}
