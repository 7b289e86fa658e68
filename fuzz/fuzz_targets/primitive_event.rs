#![no_main]
//! cargo-fuzz entry for [`root_fuzz::primitive_event`]; the body lives in the library.

libfuzzer_sys::fuzz_target!(|data: &[u8]| root_fuzz::primitive_event::run(data));
