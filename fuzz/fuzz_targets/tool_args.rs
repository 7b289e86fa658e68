#![no_main]
//! cargo-fuzz entry for [`root_fuzz::tool_args`]; the body lives in the library.

libfuzzer_sys::fuzz_target!(|data: &[u8]| root_fuzz::tool_args::run(data));
