#![no_main]
//! cargo-fuzz entry for [`root_fuzz::signature`]; the body lives in the library.

libfuzzer_sys::fuzz_target!(|input: root_fuzz::signature::Input| root_fuzz::signature::run(input));
