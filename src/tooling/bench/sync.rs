//! `root bench sync`: knowledge sync of an api_push source (issue 17's
//! benchmark).
//!
//! Each repetition is a real server over its own temp data dir (redb with
//! durable commits) running the in-process worker runtime (the `serve`
//! configuration, `ROOT_RUN_WORKERS=true`), the offline hashing embedder
//! (`root/hashing-v1`: no provider key is passed), an API key minted for the
//! root tenant and one api_push source created through the API. Then:
//!
//! 1. **first run** — `POST /api/v1/kb/sync` with N generated documents; the
//!    wall time runs from sending the request to the run row reading
//!    `succeeded` (polled through the store every millisecond). A run
//!    succeeds only once its pages are searchable (`KnowledgeSync::apply`
//!    waits for the index), so N / time is documents/s *to searchable*;
//!    a search probe then checks it.
//! 2. **no-change re-run** — the same documents again: every page unchanged
//!    and **no embedding call**. The ingest path embeds a page only inside
//!    `Retrieval::upsert_page`, one `Embedder::embed` call per page, and
//!    every such write replaces the page's chunk rows with fresh ids; the
//!    hashing embedder records no usage rows, so a run's embedding calls are
//!    counted as the pages whose chunk ids changed (every chunk carries a
//!    `root/hashing-v1` vector, so the embedding audit has nothing to redo).
//! 3. **10 % changed** — N/10 documents get a revision paragraph: exactly
//!    those pages update (and re-embed), the rest stay unchanged.
//!
//! Any failed run, wrong counter, unexpected embedding call or failed search
//! probe ends the benchmark with an error (non-zero exit).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};
use storage::{
    KnowledgeChunk, KnowledgePage, KnowledgeSyncRun, Scan, Store, SyncRunStatus, Ts, key,
};
use uuid::Uuid;

use crate::ai::embeddings::HASHING_MODEL;
use crate::app::{App, AppState};
use crate::config::Config;
use crate::platform::api_keys::{self, KeyKind};

/// `root bench sync` options.
#[derive(Clone, Debug)]
pub struct SyncBenchOptions {
    /// Documents per push (at most 250, the per-run cap).
    pub documents: usize,
    /// Approximate HTML bytes per document.
    pub bytes: usize,
    /// Repetitions, each on a fresh data dir.
    pub runs: usize,
}

/// Seed of the document generator (every repetition syncs the same corpus).
pub const SEED: u64 = 0x5eed_2026_0017;
/// The api_push source's key.
const SOURCE_KEY: &str = "bench-handbook";
/// The longest a single sync run may take before the benchmark gives up.
const RUN_DEADLINE: Duration = Duration::from_secs(600);
/// Pause between two reads of the run row.
const POLL_EVERY: Duration = Duration::from_millis(1);

const SUBJECTS: &[&str] = &[
    "Members",
    "The front desk",
    "Volunteers",
    "Mentors",
    "Each cohort",
    "The events team",
    "New founders",
    "Partner organisations",
    "Alumni",
    "Program managers",
    "Resident artists",
    "The operations crew",
];
const VERBS: &[&str] = &[
    "can book",
    "should confirm",
    "usually share",
    "are invited to join",
    "may request",
    "will receive",
    "need to update",
    "often discuss",
    "are asked to review",
    "help organise",
];
const ADJECTIVES: &[&str] = &[
    "quarterly",
    "shared",
    "private",
    "weekly",
    "open",
    "remote",
    "annual",
    "informal",
    "small",
    "detailed",
    "accessible",
    "seasonal",
];
const NOUNS: &[&str] = &[
    "meeting rooms",
    "workshop slots",
    "mentor sessions",
    "parking permits",
    "office hours",
    "demo days",
    "newsletters",
    "grant applications",
    "pitch reviews",
    "storage lockers",
    "guest passes",
    "coffee chats",
    "hiring boards",
    "legal clinics",
    "bike racks",
    "podcast studios",
];
const TAILS: &[&str] = &[
    "before the end of the month",
    "through the member portal",
    "at the main hub",
    "on weekday mornings",
    "with at least two days of notice",
    "during the spring programme",
    "in the east building",
    "after the monthly town hall",
    "via the community workspace",
    "whenever the calendar allows",
    "together with a short written summary",
    "once the facilities team has approved them",
];

/// SplitMix64: a tiny deterministic generator (stable across crate
/// versions, unlike `rand`'s `StdRng`).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn pick<'a>(&mut self, list: &[&'a str]) -> &'a str {
        list[(self.next() % list.len() as u64) as usize]
    }

    fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }
}

fn sentence(rng: &mut SplitMix64) -> String {
    format!(
        "{} {} {} {} {}.",
        rng.pick(SUBJECTS),
        rng.pick(VERBS),
        rng.pick(ADJECTIVES),
        rng.pick(NOUNS),
        rng.pick(TAILS)
    )
}

fn paragraph(rng: &mut SplitMix64) -> String {
    let n = rng.between(3, 5);
    (0..n).map(|_| sentence(rng)).collect::<Vec<_>>().join(" ")
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// One generated document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BenchDocument {
    /// `doc-0042`.
    pub external_id: String,
    /// `handbook-0042`.
    pub slug: String,
    /// `Handbook 0042: …` (the 4-digit code is the document's unique word).
    pub title: String,
    /// `<h2>` sections of `<p>` paragraphs, about `bytes` long.
    pub html: String,
}

impl BenchDocument {
    /// The document as `POST /kb/sync` takes it.
    pub fn to_json(&self) -> Value {
        json!({"external_id": self.external_id, "slug": self.slug, "title": self.title,
               "content_html": self.html, "author_name": "Bench Author"})
    }
}

/// Document `index` of the corpus of `seed`: distinct paragraphs of
/// community-handbook prose until the HTML is at least `bytes` long.
/// Revision 0 is the original; a later revision is the same document with
/// a "Revision note" paragraph appended (its own sentences).
pub fn generate_document(seed: u64, index: usize, bytes: usize, revision: u32) -> BenchDocument {
    let mut rng = SplitMix64(seed ^ (index as u64).wrapping_mul(0xa076_1d64_78bd_642f));
    let code = format!("{index:04}");
    let title = format!(
        "Handbook {code}: {} {} and {}",
        capitalized(rng.pick(ADJECTIVES)),
        rng.pick(NOUNS),
        rng.pick(NOUNS)
    );
    let mut html = String::with_capacity(bytes + 800);
    let mut section = 0;
    while html.len() < bytes {
        if section % 2 == 0 {
            html.push_str(&format!(
                "<h2>{} {}</h2>",
                capitalized(rng.pick(ADJECTIVES)),
                rng.pick(NOUNS)
            ));
        }
        html.push_str(&format!("<p>{}</p>", paragraph(&mut rng)));
        section += 1;
    }
    if revision > 0 {
        let mut rev =
            SplitMix64(rng.next() ^ u64::from(revision).wrapping_mul(0xe703_7ed1_a0b4_28db));
        html.push_str(&format!(
            "<p>Revision note {revision} for handbook {code}: {} {}</p>",
            sentence(&mut rev),
            sentence(&mut rev)
        ));
    }
    BenchDocument {
        external_id: format!("doc-{code}"),
        slug: format!("handbook-{code}"),
        title,
        html,
    }
}

/// Documents changed in the third run: every tenth (at least one).
pub fn changed_indexes(documents: usize) -> Vec<usize> {
    let k = (documents / 10).max(1);
    (0..k).map(|j| j * documents / k).collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// What one repetition measured.
#[derive(Clone, Debug)]
struct Figures {
    first: Duration,
    first_ack: Duration,
    chunks: usize,
    rerun: Duration,
    /// The re-run's split: request → 202, queued → started, started → finished.
    rerun_split: [Duration; 3],
    changed: Duration,
    updated: usize,
    changed_embeds: usize,
}

/// A server with its API key, tenant and stop handle.
struct Bench {
    state: AppState,
    base: String,
    key: String,
    tenant: Uuid,
    client: reqwest::Client,
}

impl Bench {
    async fn send(&self, path: &str, body: Vec<u8>) -> anyhow::Result<(u16, Value)> {
        let resp = self
            .client
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.key)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .with_context(|| format!("POST {path}"))?;
        let status = resp.status().as_u16();
        Ok((status, resp.json().await.unwrap_or(Value::Null)))
    }

    /// Push `docs` and wait for the run to end: (request → `succeeded`,
    /// request → 202, the run row). A run that fails is an error.
    async fn sync(
        &self,
        what: &str,
        docs: &[BenchDocument],
    ) -> anyhow::Result<(Duration, Duration, KnowledgeSyncRun)> {
        let body = serde_json::to_vec(&json!({
            "source": {"key": SOURCE_KEY},
            "documents": docs.iter().map(BenchDocument::to_json).collect::<Vec<_>>(),
        }))?;
        let started = Instant::now();
        let (status, v) = self.send("/api/v1/kb/sync", body).await?;
        let ack = started.elapsed();
        ensure!(
            status == 202,
            "{what}: POST /api/v1/kb/sync answered {status}: {v}"
        );
        let id = v["run"]["id"]
            .as_str()
            .and_then(|s| Uuid::parse_str(s).ok())
            .with_context(|| format!("{what}: no run id in {v}"))?;
        loop {
            let run: KnowledgeSyncRun = self
                .state
                .store
                .get(Some(self.tenant), key().uuid(id))
                .await?
                .with_context(|| format!("{what}: run {id} vanished"))?;
            match run.status {
                SyncRunStatus::Succeeded => return Ok((started.elapsed(), ack, run)),
                SyncRunStatus::Failed | SyncRunStatus::Triggered => bail!(
                    "{what}: run {id} ended {}: {}",
                    run.status.as_str(),
                    run.error.as_deref().unwrap_or("(no error recorded)")
                ),
                SyncRunStatus::Queued | SyncRunStatus::Running => {}
            }
            if started.elapsed() > RUN_DEADLINE {
                bail!(
                    "{what}: run {id} still {} after {} s",
                    run.status.as_str(),
                    RUN_DEADLINE.as_secs()
                );
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }

    /// Chunk id → page id; every chunk must carry a hashing-embedder vector.
    async fn chunks(&self) -> anyhow::Result<HashMap<Uuid, Uuid>> {
        let rows: Vec<KnowledgeChunk> = self
            .state
            .store
            .scan(Some(self.tenant), Scan::all())
            .await?;
        let unembedded = rows
            .iter()
            .filter(|c| {
                c.embedding
                    .as_ref()
                    .is_none_or(|e| e.model != HASHING_MODEL)
            })
            .count();
        ensure!(
            unembedded == 0,
            "{unembedded} of {} chunks lack a {HASHING_MODEL} vector",
            rows.len()
        );
        Ok(rows
            .into_iter()
            .map(|c| (c.id, c.knowledge_page_id))
            .collect())
    }

    /// Page id → external id.
    async fn pages(&self) -> anyhow::Result<HashMap<Uuid, String>> {
        let rows: Vec<KnowledgePage> = self
            .state
            .store
            .scan(Some(self.tenant), Scan::all())
            .await?;
        Ok(rows
            .into_iter()
            .map(|p| (p.id, p.external_id.unwrap_or_default()))
            .collect())
    }

    /// Search `query`; the results as (slug, chunk id).
    async fn search(&self, query: &str) -> anyhow::Result<Vec<(String, Uuid)>> {
        let body = serde_json::to_vec(&json!({"query": query, "limit": 10}))?;
        let (status, v) = self.send("/api/v1/kb/search", body).await?;
        ensure!(status == 200, "search {query:?} answered {status}: {v}");
        Ok(v["results"]
            .as_array()
            .map(|rs| {
                rs.iter()
                    .filter_map(|r| {
                        Some((
                            r["slug"].as_str()?.to_string(),
                            Uuid::parse_str(r["chunk_id"].as_str()?).ok()?,
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default())
    }
}

/// Pages that got fresh chunk rows between two snapshots: one embedding
/// call each (see the module docs).
fn embedded_pages(before: &HashMap<Uuid, Uuid>, after: &HashMap<Uuid, Uuid>) -> HashSet<Uuid> {
    after
        .iter()
        .filter(|(chunk, _)| !before.contains_key(chunk))
        .map(|(_, page)| *page)
        .collect()
}

fn check_counters(what: &str, run: &KnowledgeSyncRun, expect: [usize; 4]) -> anyhow::Result<()> {
    let got = [
        run.documents_received,
        run.pages_created,
        run.pages_updated,
        run.pages_unchanged,
    ]
    .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    ensure!(
        got == expect && run.pages_deleted == 0,
        "{what}: counters (received, created, updated, unchanged, deleted) = \
         ({}, {}, {}, {}, {}), expected ({}, {}, {}, {}, 0)",
        got[0],
        got[1],
        got[2],
        got[3],
        run.pages_deleted,
        expect[0],
        expect[1],
        expect[2],
        expect[3]
    );
    let errors = &run.metadata.0["document_errors"];
    ensure!(
        errors.as_array().is_none_or(Vec::is_empty),
        "{what}: document errors {errors}"
    );
    Ok(())
}

async fn start(
    dir: &std::path::Path,
) -> anyhow::Result<(
    Bench,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<anyhow::Result<()>>,
)> {
    let vars: Vec<(String, String)> = [
        ("PORT", "0"),
        ("ROOT_BIND", "127.0.0.1"),
        ("ROOT_DATA_DIR", &dir.join("data").display().to_string()),
        ("ROOT_RUN_WORKERS", "true"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let app = App::build(Config::from_vars(vars)?).await?;
    let state = app.state().clone();
    let model = state.retrieval.embedder().model().to_string();
    ensure!(
        model == HASHING_MODEL,
        "the embedder is {model}, not the offline {HASHING_MODEL}"
    );
    let (tenant, minted) =
        api_keys::mint_for_slug(&state.store, "root", "bench-sync", KeyKind::Live).await?;
    let base = format!("http://{}", app.local_addr());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until(async {
        let _ = stop_rx.await;
    }));
    let bench = Bench {
        state,
        base,
        key: minted.raw,
        tenant: tenant.id,
        client: reqwest::Client::builder().build()?,
    };
    Ok((bench, stop_tx, server))
}

async fn repetition(opts: &SyncBenchOptions, docs: &[BenchDocument]) -> anyhow::Result<Figures> {
    let dir = tempfile::tempdir()?;
    let (bench, stop, server) = start(dir.path()).await?;
    let out = measure(&bench, opts, docs).await;
    let _ = stop.send(());
    server.await??;
    out
}

async fn measure(
    bench: &Bench,
    opts: &SyncBenchOptions,
    docs: &[BenchDocument],
) -> anyhow::Result<Figures> {
    let n = docs.len();
    let source = serde_json::to_vec(&json!({"source_key": SOURCE_KEY,
        "name": "Bench handbook", "source_kind": "api_push"}))?;
    let (status, v) = bench.send("/api/v1/kb/sources", source).await?;
    ensure!(
        status == 201,
        "creating the api_push source answered {status}: {v}"
    );

    // 1. First run: every page created, chunked, embedded, searchable.
    let (first, first_ack, run) = bench.sync("first run", docs).await?;
    check_counters("first run", &run, [n, n, 0, 0])?;
    let chunks = bench.chunks().await?;
    let pages = bench.pages().await?;
    ensure!(
        pages.len() == n,
        "first run: {} pages, expected {n}",
        pages.len()
    );
    let pages_with_chunks: HashSet<Uuid> = chunks.values().copied().collect();
    ensure!(
        pages_with_chunks.len() == n,
        "first run: {} of {n} pages have chunks",
        pages_with_chunks.len()
    );
    for i in [0, n / 2, n - 1] {
        let hits = bench.search(&docs[i].title).await?;
        ensure!(
            hits.iter()
                .any(|(slug, chunk)| *slug == docs[i].slug && chunks.contains_key(chunk)),
            "first run: searching {:?} does not find {} ({hits:?})",
            docs[i].title,
            docs[i].slug
        );
    }

    // 2. The same documents: all unchanged, no embedding call.
    let (rerun, rerun_ack, run) = bench.sync("no-change re-run", docs).await?;
    check_counters("no-change re-run", &run, [n, 0, 0, n])?;
    let span = |from: Option<Ts>, to: Option<Ts>| match (from, to) {
        (Some(a), Some(b)) => {
            Duration::from_micros(u64::try_from(b.micros() - a.micros()).unwrap_or(0))
        }
        _ => Duration::ZERO,
    };
    let rerun_split = [
        rerun_ack,
        span(Some(run.created_at), run.started_at),
        span(run.started_at, run.finished_at),
    ];
    let after = bench.chunks().await?;
    let embeds = embedded_pages(&chunks, &after).len();
    ensure!(
        embeds == 0 && after.len() == chunks.len(),
        "no-change re-run: {embeds} embedding call(s); chunks {} → {}",
        chunks.len(),
        after.len()
    );

    // 3. 10 % changed: exactly those pages update and re-embed.
    let changed_at = changed_indexes(n);
    let mut changed_docs = docs.to_vec();
    for &i in &changed_at {
        changed_docs[i] = generate_document(SEED, i, opts.bytes, 1);
    }
    let k = changed_at.len();
    let (changed, _, run) = bench.sync("10% changed run", &changed_docs).await?;
    check_counters("10% changed run", &run, [n, 0, k, n - k])?;
    let last = bench.chunks().await?;
    let embedded: HashSet<String> = embedded_pages(&after, &last)
        .into_iter()
        .map(|p| pages.get(&p).cloned().unwrap_or_default())
        .collect();
    let expected: HashSet<String> = changed_at
        .iter()
        .map(|&i| docs[i].external_id.clone())
        .collect();
    ensure!(
        embedded == expected,
        "10% changed run: pages re-embedded {embedded:?}, expected {expected:?}"
    );
    let probe = &changed_docs[changed_at[0]];
    let code = &probe.external_id["doc-".len()..];
    let hits = bench
        .search(&format!("revision note handbook {code}"))
        .await?;
    ensure!(
        hits.iter().any(|(slug, chunk)| *slug == probe.slug
            && last.contains_key(chunk)
            && !after.contains_key(chunk)),
        "10% changed run: the revision of {} is not searchable ({hits:?})",
        probe.slug
    );
    Ok(Figures {
        first,
        first_ack,
        chunks: chunks.len(),
        rerun,
        rerun_split,
        changed,
        updated: k,
        changed_embeds: embedded.len(),
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Run the benchmark and print its figures.
pub async fn run_sync_bench(opts: SyncBenchOptions) -> anyhow::Result<()> {
    let max = crate::knowledge::fetch::MAX_DOCUMENTS_PER_RUN;
    ensure!(
        (1..=max).contains(&opts.documents),
        "--documents must be 1..={max} (one run takes at most {max})"
    );
    ensure!(opts.runs >= 1, "--runs must be at least 1");
    let docs: Vec<BenchDocument> = (0..opts.documents)
        .map(|i| generate_document(SEED, i, opts.bytes, 0))
        .collect();
    let mean_bytes = docs.iter().map(|d| d.html.len()).sum::<usize>() / docs.len();
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    println!(
        "root bench sync — api_push of {} documents (mean {mean_bytes} B of HTML), {} run(s) on \
         fresh data dirs, embedder {HASHING_MODEL}, in-process worker runtime, {cpus} CPU(s); {}",
        opts.documents,
        opts.runs,
        super::retrieval::load_snapshot()
    );
    let mut all = Vec::with_capacity(opts.runs);
    for r in 1..=opts.runs {
        let f = repetition(&opts, &docs)
            .await
            .with_context(|| format!("repetition {r}"))?;
        println!(
            "run {r}: first {:.0} ms ({:.1} docs/s to searchable; 202 after {:.1} ms; {} chunks) · \
             no-change re-run {:.1} ms (202 after {:.1} ms; queued→started {:.1} ms; \
             started→finished {:.1} ms), \
             0 embedding calls (first/re-run {:.1}×) · \
             {} changed: {} updated in {:.0} ms, {} embedding calls · {}",
            ms(f.first),
            opts.documents as f64 / f.first.as_secs_f64(),
            ms(f.first_ack),
            f.chunks,
            ms(f.rerun),
            ms(f.rerun_split[0]),
            ms(f.rerun_split[1]),
            ms(f.rerun_split[2]),
            f.first.as_secs_f64() / f.rerun.as_secs_f64(),
            f.updated,
            f.updated,
            ms(f.changed),
            f.changed_embeds,
            super::retrieval::load_snapshot()
        );
        all.push(f);
    }
    let med = |g: fn(&Figures) -> f64| median(all.iter().map(g).collect());
    let first = med(|f| ms(f.first));
    let rerun = med(|f| ms(f.rerun));
    let ratio = med(|f| f.first.as_secs_f64() / f.rerun.as_secs_f64());
    println!(
        "medians over {} run(s): first run {first:.0} ms = {:.1} docs/s to searchable · \
         no-change re-run {rerun:.1} ms (0 embedding calls) · first/re-run {ratio:.1}× \
         (target ≥ 20×: {}) · 10% changed ({} docs) {:.0} ms",
        all.len(),
        opts.documents as f64 / (first / 1e3),
        if ratio >= 20.0 { "met" } else { "NOT met" },
        all.first().map_or(0, |f| f.updated),
        med(|f| ms(f.changed)),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_deterministic_distinct_and_about_the_asked_size() {
        let a = generate_document(SEED, 7, 3000, 0);
        assert_eq!(a, generate_document(SEED, 7, 3000, 0));
        assert_eq!(
            (a.external_id.as_str(), a.slug.as_str()),
            ("doc-0007", "handbook-0007")
        );
        assert!(a.title.starts_with("Handbook 0007: "), "{}", a.title);
        assert!((3000..3800).contains(&a.html.len()), "{}", a.html.len());
        assert!(a.html.starts_with("<h2>") && a.html.ends_with("</p>"));
        // Distinct paragraphs across a whole corpus.
        let docs: Vec<_> = (0..250)
            .map(|i| generate_document(SEED, i, 3000, 0))
            .collect();
        let mut paragraphs = HashSet::new();
        let mut total = 0;
        for d in &docs {
            for p in d.html.split("<p>").skip(1) {
                total += 1;
                paragraphs.insert(p.to_string());
            }
        }
        assert!(total > 250 * 5, "{total}");
        assert_eq!(paragraphs.len(), total, "a paragraph repeats");
        // A revision keeps the identity and the original text, adds a note.
        let b = generate_document(SEED, 7, 3000, 1);
        assert_eq!(
            (&b.external_id, &b.slug, &b.title),
            (&a.external_id, &a.slug, &a.title)
        );
        assert!(b.html.starts_with(&a.html) && b.html.len() > a.html.len());
        assert!(b.html.contains("Revision note 1 for handbook 0007: "));
        assert_ne!(generate_document(SEED + 1, 7, 3000, 0), a);
    }

    #[test]
    fn a_tenth_of_the_documents_change() {
        assert_eq!(changed_indexes(250).len(), 25);
        assert_eq!(changed_indexes(250)[..3], [0, 10, 20]);
        assert_eq!(changed_indexes(5), vec![0]);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
