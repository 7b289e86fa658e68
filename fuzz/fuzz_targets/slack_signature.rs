#![no_main]
//! cargo-fuzz entry for [`root_fuzz::slack_signature`]; the body lives in the library.

libfuzzer_sys::fuzz_target!(|input: root_fuzz::slack_signature::Input| {
    root_fuzz::slack_signature::run(input)
});
