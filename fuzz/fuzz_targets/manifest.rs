#![no_main]
//! cargo-fuzz entry for [`root_fuzz::manifest`]; the body lives in the library.

libfuzzer_sys::fuzz_target!(|data: &[u8]| root_fuzz::manifest::run(data));
