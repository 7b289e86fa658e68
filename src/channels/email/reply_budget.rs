//! The last wall against mail loops (security M-2): at most
//! `email_replies_per_sender_per_hour` replies to one sender and
//! `email_replies_per_thread_per_day` replies in one thread, per tenant,
//! refusals included. Automatic mail and platform addresses are already
//! dropped at ingress; this catches whatever loop those rules miss (two
//! human-looking responders, a forwarder that strips headers).
//!
//! Sliding windows over the injected clock, in memory: the process that
//! owns the data directory is the only one answering mail, and a restart
//! at worst lets one more window's worth through. A job is charged once,
//! however many attempts it takes (its id is remembered in the window).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use storage::Ts;
use uuid::Uuid;

use crate::platform::clock::Clock;

const HOUR_MICROS: i64 = 3_600 * 1_000_000;
const DAY_MICROS: i64 = 24 * HOUR_MICROS;
/// Windows kept at most (senders + threads, all tenants).
const CAPACITY: u64 = 100_000;

type Window = Arc<Mutex<VecDeque<(Ts, String)>>>;

/// Per-sender and per-thread reply windows. Cheap to clone.
#[derive(Clone)]
pub struct ReplyBudget {
    clock: Arc<dyn Clock>,
    windows: moka::sync::Cache<String, Window>,
}

/// One reply to charge.
#[derive(Debug)]
pub struct ReplyCharge<'a> {
    /// The tenant answering.
    pub tenant: Uuid,
    /// The sender (lower-cased address).
    pub sender: &'a str,
    /// The thread's root Message-ID, when the mail has one.
    pub thread: Option<&'a str>,
    /// The `email-inbound` job (a retry is not a second reply).
    pub job_id: &'a str,
}

impl ReplyBudget {
    /// Empty windows on `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> ReplyBudget {
        ReplyBudget {
            clock,
            windows: moka::sync::Cache::builder()
                .max_capacity(CAPACITY)
                .time_to_idle(Duration::from_secs(25 * 3_600))
                .build(),
        }
    }

    fn window(&self, key: String) -> Window {
        self.windows.get_with(key, Window::default)
    }

    /// Charge one reply if the sender's hour and the thread's day both have
    /// room (`per_sender_hour`, `per_thread_day`); otherwise nothing is
    /// charged and the refusal says which limit was reached.
    pub fn take(
        &self,
        c: &ReplyCharge<'_>,
        per_sender_hour: u32,
        per_thread_day: u32,
    ) -> Result<(), String> {
        let now = self.clock.now();
        let sender = self.window(format!("{}:sender:{}", c.tenant, c.sender));
        let thread = c
            .thread
            .map(|t| self.window(format!("{}:thread:{t}", c.tenant)));
        // Always sender first, then thread: one lock order, no deadlock.
        let mut s = sender.lock().unwrap_or_else(|p| p.into_inner());
        let mut t = thread
            .as_ref()
            .map(|w| w.lock().unwrap_or_else(|p| p.into_inner()));
        prune(&mut s, now, HOUR_MICROS);
        if let Some(t) = t.as_mut() {
            prune(t, now, DAY_MICROS);
        }
        if s.iter().any(|(_, j)| j == c.job_id) {
            return Ok(());
        }
        if s.len() >= per_sender_hour as usize {
            return Err(format!(
                "{per_sender_hour} replies to this sender in the last hour"
            ));
        }
        if let Some(t) = t.as_ref()
            && t.len() >= per_thread_day as usize
        {
            return Err(format!(
                "{per_thread_day} replies in this thread in the last 24 hours"
            ));
        }
        s.push_back((now, c.job_id.to_string()));
        if let Some(t) = t.as_mut() {
            t.push_back((now, c.job_id.to_string()));
        }
        Ok(())
    }
}

/// Drop entries older than `span` before `now`.
fn prune(w: &mut VecDeque<(Ts, String)>, now: Ts, span: i64) {
    while w
        .front()
        .is_some_and(|(at, _)| now.micros() - at.micros() >= span)
    {
        w.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::clock::ManualClock;

    #[test]
    fn senders_get_n_an_hour_and_threads_n_a_day_retries_free() {
        let clock = ManualClock::new(Ts::from_secs(1_700_000_000));
        let budget = ReplyBudget::new(Arc::new(clock.clone()));
        let tenant = Uuid::from_u128(7);
        let charge = |sender: &'static str, thread: Option<&'static str>, job: String| {
            budget.take(
                &ReplyCharge {
                    tenant,
                    sender,
                    thread,
                    job_id: &job,
                },
                3,
                4,
            )
        };
        for i in 0..3 {
            charge("a@x.org", Some("<t1>"), format!("j{i}")).unwrap();
        }
        // A retry of a charged job is free; a fourth reply is not.
        charge("a@x.org", Some("<t1>"), "j2".into()).unwrap();
        let err = charge("a@x.org", None, "j3".into()).unwrap_err();
        assert!(err.contains("3 replies to this sender"), "{err}");
        // Another sender in the same thread: one more, then the thread's day is full.
        charge("b@x.org", Some("<t1>"), "j4".into()).unwrap();
        let err = charge("b@x.org", Some("<t1>"), "j5".into()).unwrap_err();
        assert!(err.contains("4 replies in this thread"), "{err}");
        // An hour later the sender has room; the thread still has none.
        clock.advance_ms(3_600 * 1_000);
        charge("a@x.org", None, "j6".into()).unwrap();
        assert!(charge("a@x.org", Some("<t1>"), "j7".into()).is_err());
        clock.advance_ms(23 * 3_600 * 1_000);
        charge("a@x.org", Some("<t1>"), "j8".into()).unwrap();
        // Another tenant is counted apart.
        budget
            .take(
                &ReplyCharge {
                    tenant: Uuid::from_u128(8),
                    sender: "a@x.org",
                    thread: Some("<t1>"),
                    job_id: "k",
                },
                1,
                1,
            )
            .unwrap();
    }
}
