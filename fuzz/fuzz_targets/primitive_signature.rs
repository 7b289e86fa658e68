#![no_main]
//! cargo-fuzz entry for [`root_fuzz::primitive_signature`]; the body lives in the library.

libfuzzer_sys::fuzz_target!(|input: root_fuzz::primitive_signature::Input| {
    root_fuzz::primitive_signature::run(input)
});
