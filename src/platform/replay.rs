//! Replay protection for signed inbound webhooks (Slack, email providers,
//! root-int/1-style callbacks): a signature proves who sent a request, not
//! that it is the first delivery. A request whose (timestamp, signature)
//! was already seen inside the skew window is a replay.
//!
//! Entries live for the whole window a timestamp is accepted in — a
//! request stamped `ts` verifies from `ts − skew` to `ts + skew`, so
//! [`ReplayCache::for_signatures`] keeps keys for twice the skew. The cache
//! is bounded: past its capacity moka evicts the least valuable entries,
//! trading a (tiny) replay chance under a flood for bounded memory.

use std::time::Duration;

use moka::sync::Cache;

/// Keys remembered by [`ReplayCache::for_signatures`].
pub const DEFAULT_REPLAY_CAPACITY: u64 = 100_000;

/// Remembers request keys for a fixed time; thread-safe, cheap to clone.
#[derive(Clone)]
pub struct ReplayCache {
    seen: Cache<String, ()>,
}

impl std::fmt::Debug for ReplayCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayCache")
            .field("entries", &self.seen.entry_count())
            .finish()
    }
}

impl ReplayCache {
    /// A cache keeping each key for `ttl`, holding at most `capacity` keys.
    pub fn new(ttl: Duration, capacity: u64) -> Self {
        ReplayCache {
            seen: Cache::builder()
                .max_capacity(capacity)
                .time_to_live(ttl)
                .build(),
        }
    }

    /// For signed requests accepted within `max_skew_secs` of their
    /// timestamp (§7.1 and §8.2: 300 s): keys live twice the skew,
    /// [`DEFAULT_REPLAY_CAPACITY`] of them. The caller passes its protocol's
    /// skew, so this module needs no protocol's constants.
    pub fn for_signatures(max_skew_secs: i64) -> Self {
        Self::new(
            Duration::from_secs(2 * max_skew_secs.unsigned_abs()),
            DEFAULT_REPLAY_CAPACITY,
        )
    }

    /// `true` the first time `key` is offered (within the TTL), `false`
    /// for every repeat. Atomic: of two concurrent offers only one wins —
    /// moka coalesces concurrent `or_insert_with` calls and marks only the
    /// one that ran its init fresh (plain `or_insert` gives no such
    /// guarantee: moka-rs/moka#545, seen here as a doubled claim under load).
    pub fn first_seen(&self, key: &str) -> bool {
        self.seen
            .entry(key.to_string())
            .or_insert_with(|| ())
            .is_fresh()
    }

    /// Release a claim (the work it guarded did not happen — e.g. a mail
    /// that could not be queued — so a redelivery must be let in).
    pub fn forget(&self, key: &str) {
        self.seen.invalidate(key);
    }

    /// The key of a signed request: its timestamp and signature headers.
    pub fn signature_key(timestamp: &str, signature: &str) -> String {
        format!("{}.{}", timestamp.trim(), signature.trim())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_fresh_once_then_a_replay() {
        let cache = ReplayCache::for_signatures(300);
        let key = ReplayCache::signature_key(" 1700000000", "abc123 ");
        assert_eq!(key, "1700000000.abc123");
        assert!(cache.first_seen(&key));
        assert!(!cache.first_seen(&key));
        assert!(!cache.first_seen("1700000000.abc123"));
        // Another signature (or timestamp) is another request.
        assert!(cache.first_seen("1700000000.abc124"));
        assert!(cache.first_seen("1700000001.abc123"));
        // Clones share the memory.
        assert!(!cache.clone().first_seen(&key));
        // A released claim is fresh again.
        cache.forget(&key);
        assert!(cache.first_seen(&key));
    }

    #[test]
    fn concurrent_offers_of_one_key_admit_exactly_one() {
        let cache = ReplayCache::for_signatures(300);
        // Many rounds: a race shows up only now and then.
        for round in 0..200 {
            let key = format!("ts.sig.{round}");
            let start = std::sync::Barrier::new(8);
            let wins: usize = std::thread::scope(|s| {
                let handles: Vec<_> = (0..8)
                    .map(|_| {
                        s.spawn(|| {
                            start.wait();
                            usize::from(cache.first_seen(&key))
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).sum()
            });
            assert_eq!(wins, 1, "round {round}");
        }
    }

    #[test]
    fn the_cache_never_holds_more_than_its_capacity() {
        let cache = ReplayCache::new(Duration::from_secs(600), 100);
        for i in 0..2_000 {
            assert!(cache.first_seen(&format!("key-{i}")));
        }
        cache.seen.run_pending_tasks();
        assert!(
            cache.seen.entry_count() <= 100,
            "{}",
            cache.seen.entry_count()
        );
    }
}
