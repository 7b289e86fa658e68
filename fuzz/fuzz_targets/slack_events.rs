#![no_main]
//! cargo-fuzz entry for [`root_fuzz::slack_events`]; the body lives in the library.

libfuzzer_sys::fuzz_target!(|data: &[u8]| root_fuzz::slack_events::run(data));
