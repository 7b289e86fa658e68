//! Log lines written while a test runs, for asserting what is (and is not)
//! logged. The subscriber is the thread's default, so the test must run on
//! one thread (`#[tokio::test(flavor = "current_thread")]`).

use std::sync::{Arc, Mutex};

use tracing::subscriber::DefaultGuard;

/// The captured output (a `MakeWriter` for `tracing_subscriber::fmt`).
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// Everything logged so far.
    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

/// Capture this thread's log lines at `level` and up until the guard drops.
pub fn capture(level: tracing::Level) -> (Captured, DefaultGuard) {
    let out = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(out.clone())
        .with_max_level(level)
        .with_ansi(false)
        .finish();
    (out, tracing::subscriber::set_default(subscriber))
}
