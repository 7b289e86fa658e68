#![no_main]
//! cargo-fuzz entry for [`root_fuzz::api_bodies`]; the body lives in the library.

libfuzzer_sys::fuzz_target!(|data: &[u8]| root_fuzz::api_bodies::run(data));
