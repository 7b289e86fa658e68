#![no_main]
//! cargo-fuzz entry for [`root_fuzz::page_html`]; the body lives in the library.

libfuzzer_sys::fuzz_target!(|data: &[u8]| root_fuzz::page_html::run(data));
