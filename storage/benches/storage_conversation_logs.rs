//! Criterion benchmark of the storage layer on the `conversation_logs` table,
//! the hottest table of the app (every inbound and outbound message).
//!
//! Every store is a real file, `RedbStore::open(<tempdir>/root.redb)`, so
//! every commit is durable (fsync) exactly as in production. Each store is
//! migrated (`MigrationStore::migrate`) and gets one tenant
//! (`TenantStore::create_tenant(Tenant::new("bench", "Bench"))`).
//!
//! Rows look like Slack traffic: a random v4 id, ~200 chars of
//! `message_text`, a unique `dedupe_key`, a `thread_key` spread over 1000
//! threads (~100 rows each), an `exchange_key` shared by an inbound message
//! and its reply, a strictly increasing `message_at`, the Slack ts as
//! `external_message_id`, and `principal_id = None`. All randomness comes
//! from a fixed-seed xorshift, so every run writes the same data.
//!
//! Benchmarks:
//! - `conversation_logs/insert_many_100k`: 100,000 rows written with
//!   `Store::insert_many` in batches of 1,000 (one durable commit per batch,
//!   100 commits) into a fresh, migrated store. The time is for the whole
//!   100k; the throughput line reports rows/s. Store creation, migration and
//!   row generation are outside the timing.
//! - On one 100k-row dataset (the last load of `insert_many_100k`, or a
//!   fresh load when that benchmark is filtered out), outside the timing:
//!   - `conversation_logs/get_by_pk`: `Store::get` by primary key, random ids.
//!   - `conversation_logs/find_unique_dedupe_key`: `Store::find_unique`
//!     through `conversation_logs_tenant_id_dedupe_key_key`, random keys.
//!   - `conversation_logs/scan_thread_newest_20`: `Store::scan` over
//!     `conversation_logs_thread_key_idx`, newest 20 rows of a random thread
//!     (`.desc().limit(20)`).
//!   - `conversation_logs/insert_one_durable`: `Store::insert` of one row, one
//!     durable commit per row (the fsync cost), appended to the same 100k-row
//!     table (runs last, so the reads above see exactly 100k rows).
//!
//! Run from the workspace root:
//!
//! ```text
//! CARGO_TARGET_DIR=/tmp/bench-target cargo bench -p root-storage --bench storage_conversation_logs
//! ```
//!
//! Runtime is dominated by `insert_many_100k`: criterion needs at least 10
//! samples plus a warm-up run, i.e. 11 loads of 100k rows (15-17 s each on
//! a 2-core VM, so ~3.5 minutes in all). Its "Unable to complete 10 samples
//! in 20.0s" warning is expected there. Add a filter to run a subset, e.g.
//! `... -- get_by_pk` (that one builds its own dataset first). Plots are
//! off; estimates land in `$CARGO_TARGET_DIR/criterion/`. Temp dirs follow
//! `$TMPDIR`; put it on the disk you want to measure (not tmpfs).

use std::cell::{OnceCell, RefCell};
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use storage::{
    Channel, ConversationLog, Direction, Json, MigrationStore, RedbStore, Scan, Store, Tenant,
    TenantStore, Ts, key,
};
use tempfile::TempDir;
use tokio::runtime::Runtime;
use uuid::Uuid;

/// Rows in the dataset and in one `insert_many_100k` iteration.
const ROWS: usize = 100_000;
/// Rows per `insert_many` call (one durable transaction).
const BATCH: usize = 1_000;
/// Distinct `thread_key`s.
const THREADS: usize = 1_000;
/// Slack channels the threads live in.
const CHANNELS: usize = 20;
/// Seed of the dataset generator.
const SEED: u64 = 0x5EED_C0FF_EE00_0001;
/// Seed of the request streams (which id / key / thread to read).
const QUERY_SEED: u64 = 0x5EED_C0FF_EE00_0002;
/// Seed of the rows written by `insert_one_durable`.
const APPEND_SEED: u64 = 0x5EED_C0FF_EE00_0003;
/// First `message_at`: 2023-11-14T22:13:20Z.
const BASE_SECS: i64 = 1_700_000_000;
/// Gap between two consecutive messages (100k rows span ~30 days).
const STEP_MICROS: i64 = 26_000_000;

const WORDS: &[&str] = &[
    "the",
    "event",
    "on",
    "thursday",
    "volunteers",
    "please",
    "bring",
    "chairs",
    "and",
    "snacks",
    "for",
    "meetup",
    "garden",
    "we",
    "need",
    "help",
    "with",
    "setup",
    "after",
    "community",
    "schedule",
    "room",
    "booked",
    "thanks",
    "everyone",
    "who",
    "joined",
    "last",
    "week",
    "can",
    "someone",
    "share",
    "the",
    "slides",
    "link",
    "newsletter",
    "draft",
    "is",
    "ready",
    "review",
];

/// xorshift64* — tiny, deterministic, good enough to pick benchmark inputs.
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> Self {
        XorShift(seed.max(1))
    }
    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    fn uuid(&mut self) -> Uuid {
        let bits = (u128::from(self.next_u64()) << 64) | u128::from(self.next_u64());
        uuid::Builder::from_random_bytes(bits.to_le_bytes()).into_uuid()
    }
}

/// Slack-like `conversation_logs` rows; row `i` has `message_at = base + i * STEP`.
struct RowGen {
    rng: XorShift,
    tenant: Uuid,
}

impl RowGen {
    fn new(seed: u64, tenant: Uuid) -> Self {
        RowGen {
            rng: XorShift::new(seed),
            tenant,
        }
    }

    fn slack_channel(c: usize) -> String {
        format!("C{:08X}", 0x0B3A_0000 + c)
    }

    fn slack_ts(at: Ts) -> String {
        format!(
            "{}.{:06}",
            at.0.div_euclid(1_000_000),
            at.0.rem_euclid(1_000_000)
        )
    }

    /// The `thread_key` of thread `t` (`<channel>:<root ts>`).
    fn thread_key(t: usize) -> String {
        let root = Ts::from_secs(BASE_SECS).plus_micros(-(t as i64) * 7_919_000);
        format!(
            "{}:{}",
            Self::slack_channel(t % CHANNELS),
            Self::slack_ts(root)
        )
    }

    fn text(&mut self) -> String {
        let mut s = String::with_capacity(216);
        while s.len() < 200 {
            if !s.is_empty() {
                s.push(' ');
            }
            s.push_str(WORDS[self.rng.below(WORDS.len())]);
        }
        s
    }

    fn row(&mut self, i: usize) -> ConversationLog {
        let at = Ts::from_secs(BASE_SECS).plus_micros(i as i64 * STEP_MICROS);
        let thread = self.rng.below(THREADS);
        let channel = Self::slack_channel(thread % CHANNELS);
        let ts = Self::slack_ts(at);
        let thread_key = Self::thread_key(thread);
        let thread_ts = thread_key[channel.len() + 1..].to_string();
        let inbound = i.is_multiple_of(2);
        let user = format!("U{:08X}", 0x0A00_0000 + self.rng.below(500));
        ConversationLog {
            id: self.rng.uuid(),
            tenant_id: self.tenant,
            principal_id: None,
            dedupe_key: Some(format!("slack_{channel}_{ts}")),
            exchange_key: Some(format!("slack:{channel}:{thread_ts}:{}", i / 2)),
            member_id: None,
            channel: Channel::Slack,
            direction: if inbound {
                Direction::Inbound
            } else {
                Direction::Outbound
            },
            source: "runtime".into(),
            status: "recorded".into(),
            message_text: Some(self.text()),
            subject: None,
            message_at: at,
            external_message_id: Some(ts.clone()),
            thread_key: Some(thread_key),
            slack_user_id: inbound.then_some(user),
            slack_channel_id: Some(channel),
            slack_thread_ts: Some(thread_ts),
            slack_message_ts: Some(ts),
            from_email: None,
            to_email: None,
            cc_emails: Vec::new(),
            in_reply_to: None,
            references: None,
            metadata: Json(serde_json::json!({ "team_id": "T0B3AC4E5", "event_type": "message" })),
            created_at: at,
        }
    }

    /// Rows `from..to`, cut into `insert_many` batches.
    fn batches(&mut self, from: usize, to: usize) -> Vec<Vec<ConversationLog>> {
        (from..to)
            .step_by(BATCH)
            .map(|start| {
                (start..(start + BATCH).min(to))
                    .map(|i| self.row(i))
                    .collect()
            })
            .collect()
    }
}

/// A migrated store on a real file with one tenant; the temp dir goes with it.
struct Fixture {
    store: RedbStore,
    tenant: Uuid,
    _dir: TempDir,
}

async fn fresh_store() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = RedbStore::open(&dir.path().join("root.redb")).expect("open store");
    store.migrate().await.expect("migrate");
    let tenant = store
        .create_tenant(Tenant::new("bench", "Bench"))
        .await
        .expect("create tenant")
        .id;
    Fixture {
        store,
        tenant,
        _dir: dir,
    }
}

/// Write `batches` with `insert_many` (one durable commit each); returns
/// the time of every commit.
async fn insert_batches(store: &RedbStore, batches: Vec<Vec<ConversationLog>>) -> Vec<Duration> {
    let mut times = Vec::with_capacity(batches.len());
    for batch in batches {
        let n = batch.len();
        let start = Instant::now();
        let written = store.insert_many(batch).await.expect("insert_many");
        times.push(start.elapsed());
        assert_eq!(written, n);
    }
    times
}

/// A fresh store loaded with the 100k rows; only the inserts are timed.
async fn load_100k() -> Loaded {
    let fx = fresh_store().await;
    let batches = RowGen::new(SEED, fx.tenant).batches(0, ROWS);
    let start = Instant::now();
    let batch_times = insert_batches(&fx.store, batches).await;
    Loaded {
        total: start.elapsed(),
        batch_times,
        fx,
    }
}

/// One 100k load: the store and how long it took.
struct Loaded {
    fx: Fixture,
    total: Duration,
    batch_times: Vec<Duration>,
}

/// The 100k-row table the read benchmarks run against, plus its keys.
struct Dataset {
    fx: Fixture,
    ids: Vec<Uuid>,
    dedupe_keys: Vec<String>,
    thread_keys: Vec<String>,
}

impl Dataset {
    /// Reuse the last load of `insert_many_100k` (or load now when that
    /// benchmark was filtered out), check it, and collect its keys.
    fn new(rt: &Runtime, last_load: Option<Loaded>) -> Dataset {
        rt.block_on(async {
            let loaded = match last_load {
                Some(l) => l,
                None => load_100k().await,
            };
            let mean = |d: &[Duration]| d.iter().sum::<Duration>() / d.len() as u32;
            let bt = &loaded.batch_times;
            eprintln!(
                "dataset: {ROWS} rows in {:.2?} at {}; insert_many of {BATCH}: \
                 first 10 commits {:.1?} avg, last 10 {:.1?} avg",
                loaded.total,
                loaded.fx.store.path().display(),
                mean(&bt[..10]),
                mean(&bt[bt.len() - 10..]),
            );
            let fx = loaded.fx;
            // Ids and dedupe keys do not depend on the tenant: regenerate them.
            let mut rows = RowGen::new(SEED, fx.tenant);
            let (ids, dedupe_keys) = (0..ROWS)
                .map(|i| {
                    let r = rows.row(i);
                    (r.id, r.dedupe_key.expect("dedupe key"))
                })
                .unzip();
            let t = Some(fx.tenant);
            let count = fx.store.count::<ConversationLog>(t).await.expect("count");
            assert_eq!(count, ROWS as u64);
            // Every thread got rows (~100 each), so a scan returns a full page.
            let thread_keys: Vec<String> = (0..THREADS).map(RowGen::thread_key).collect();
            for thread in [&thread_keys[0], &thread_keys[THREADS - 1]] {
                let page = thread_scan(&fx.store, fx.tenant, thread).await;
                assert_eq!(page.len(), 20);
                assert!(page.windows(2).all(|w| w[0].message_at > w[1].message_at));
            }
            Dataset {
                fx,
                ids,
                dedupe_keys,
                thread_keys,
            }
        })
    }
}

async fn thread_scan(store: &RedbStore, tenant: Uuid, thread: &str) -> Vec<ConversationLog> {
    store
        .scan::<ConversationLog>(
            Some(tenant),
            Scan::index(ConversationLog::THREAD_KEY_IDX, key().str(thread))
                .desc()
                .limit(20),
        )
        .await
        .expect("scan")
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn bench_conversation_logs(c: &mut Criterion) {
    let rt = runtime();
    // The last load of benchmark 1 becomes the dataset of 2–5 (saves a load).
    let last_load: RefCell<Option<Loaded>> = RefCell::new(None);
    let dataset: OnceCell<Dataset> = OnceCell::new();
    let dataset = || dataset.get_or_init(|| Dataset::new(&rt, last_load.take()));

    // 1. 100k rows through `insert_many`, 1000 rows per durable commit; one
    //    iteration = one whole 100k load into a fresh store.
    let mut group = c.benchmark_group("conversation_logs");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(20))
        .throughput(Throughput::Elements(ROWS as u64));
    group.bench_function("insert_many_100k", |b| {
        let slot = &last_load;
        b.to_async(&rt).iter_custom(|iters| async move {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                let loaded = load_100k().await;
                timed += loaded.total;
                // Keep the newest load; the previous one is dropped untimed.
                drop(slot.replace(Some(loaded)));
            }
            timed
        });
    });
    group.finish();

    // 2–5. On the 100k-row dataset: point reads and a thread scan with
    //      random (fixed-seed) inputs, then single durable inserts into it.
    let mut group = c.benchmark_group("conversation_logs");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));

    let mut rng = XorShift::new(QUERY_SEED);
    group.bench_function("get_by_pk", |b| {
        let ds = dataset();
        let (store, tenant) = (&ds.fx.store, Some(ds.fx.tenant));
        b.to_async(&rt).iter(|| {
            let id = ds.ids[rng.below(ds.ids.len())];
            async move {
                let row = store
                    .get::<ConversationLog>(tenant, key().uuid(id))
                    .await
                    .expect("get");
                black_box(row.expect("row exists"))
            }
        });
    });

    group.bench_function("find_unique_dedupe_key", |b| {
        let ds = dataset();
        let (store, tenant) = (&ds.fx.store, Some(ds.fx.tenant));
        b.to_async(&rt).iter(|| {
            let dedupe = &ds.dedupe_keys[rng.below(ds.dedupe_keys.len())];
            async move {
                let row = store
                    .find_unique::<ConversationLog>(
                        tenant,
                        ConversationLog::DEDUPE_KEY,
                        key().str(dedupe),
                    )
                    .await
                    .expect("find_unique");
                black_box(row.expect("row exists"))
            }
        });
    });

    group.bench_function("scan_thread_newest_20", |b| {
        let ds = dataset();
        let (store, tenant) = (&ds.fx.store, ds.fx.tenant);
        b.to_async(&rt).iter(|| {
            let thread = &ds.thread_keys[rng.below(ds.thread_keys.len())];
            async move {
                let page = thread_scan(store, tenant, thread).await;
                debug_assert_eq!(page.len(), 20);
                black_box(page)
            }
        });
    });

    // Criterion calls this closure several times (warm-up, samples): the row
    // source lives outside it so every inserted row is new.
    let mut appender: Option<(RowGen, usize)> = None;
    group.bench_function("insert_one_durable", |b| {
        let ds = dataset();
        let store = &ds.fx.store;
        let (rows, next) =
            appender.get_or_insert_with(|| (RowGen::new(APPEND_SEED, ds.fx.tenant), ROWS));
        b.to_async(&rt).iter_batched(
            || {
                let row = rows.row(*next);
                *next += 1;
                row
            },
            |row| async move { black_box(store.insert(row).await.expect("insert")) },
            BatchSize::SmallInput,
        );
    });

    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = bench_conversation_logs
}
criterion_main!(benches);
