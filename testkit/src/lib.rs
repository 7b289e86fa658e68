//! Test doubles shared by Root's integration tests (`tests/it`) and
//! examples. A separate crate so that no test server is compiled into the
//! production library or binary.

pub mod stub;
