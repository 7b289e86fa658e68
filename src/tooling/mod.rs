//! Developer tooling that ships in the `root` binary but is not part of the
//! server: `root bench queue|agent|retrieval` (`bench/`) and `root
//! eval-retrieval` (`eval.rs`). Behind the `tooling` cargo feature (on by
//! default); `cargo build --release --no-default-features` builds the lean
//! server without it. Nothing outside `cli` depends on this module.

pub mod bench;
pub mod cli;
pub mod eval;
