//! `root eval-retrieval` (§10.6): load a golden set into a fresh temporary
//! data dir (or, with `--api`, into a running server through the REST API),
//! run every query, and print hit@1/5/10 and MRR@10 per surface.
//!
//! Golden file (JSON):
//! - knowledge: `pages: [{slug, title, content_html, source_type?}]`,
//!   `queries: [{query, relevant: [slug…]}]` (the shape of
//!   `data/eval/kb-golden.json`);
//! - Slack (optional): `slack: {messages: [{channel_id, channel_name?,
//!   user_id?, user_name?, ts, thread_ts?, text, age_days?}], queries:
//!   [{query, relevant: ["<channel_id>:<ts>"…]}]}`.
//!
//! Ranks are counted over distinct pages (knowledge) and distinct messages
//! or threads (Slack) in result order, so a page's second chunk does not
//! push other pages down — the page-level view the baselines use. In
//! process, the vector and keyword lanes are also scored alone (page level,
//! same lane limits) to show what fusion adds.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use storage::{IndexCorpus, ProcessedSlackMessage, Tenant, TenantStore};
use uuid::Uuid;

use crate::app::{AppState, open_store};
use crate::config::Config;
use crate::platform::clock::SystemClock;
use crate::platform::tenancy::{self, TenantContext};
use crate::retrieval::exact::StoredVectors;
use crate::retrieval::knowledge::{KNOWLEDGE_KEYWORD_LANE_LIMIT, KNOWLEDGE_VECTOR_LANE_MIN};
use crate::retrieval::slack::{NoPermalinks, SlackQuery};
use crate::retrieval::{KnowledgeQuery, PageUpsert};

/// Per-request timeout of the REST mode.
pub const REST_REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Options of `root eval-retrieval`.
#[derive(Clone, Debug)]
pub struct EvalOptions {
    /// Golden set file.
    pub golden: PathBuf,
    /// Measure the fused order alone.
    pub no_rerank: bool,
    /// Print JSON instead of a table.
    pub json: bool,
    /// Base URL of a running Root (REST mode, knowledge only).
    pub api: Option<String>,
    /// API key for REST mode.
    pub key: Option<String>,
    /// Write each query's first relevant rank per lane to this JSON file.
    pub per_query: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
struct Golden {
    #[serde(default)]
    name: String,
    #[serde(default)]
    pages: Vec<GoldenPage>,
    #[serde(default)]
    queries: Vec<GoldenQuery>,
    #[serde(default)]
    slack: Option<GoldenSlack>,
}

#[derive(Debug, Deserialize, Serialize)]
struct GoldenPage {
    slug: String,
    title: String,
    content_html: String,
    #[serde(default)]
    source_type: Option<String>,
}

#[derive(Debug, Deserialize)]
struct GoldenQuery {
    query: String,
    relevant: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct GoldenSlack {
    messages: Vec<GoldenMessage>,
    queries: Vec<GoldenQuery>,
}

#[derive(Debug, Deserialize)]
struct GoldenMessage {
    channel_id: String,
    #[serde(default)]
    channel_name: Option<String>,
    #[serde(default)]
    user_id: Option<String>,
    #[serde(default)]
    user_name: Option<String>,
    ts: String,
    #[serde(default)]
    thread_ts: Option<String>,
    text: String,
    #[serde(default)]
    age_days: Option<f64>,
}

/// hit@k and MRR@10 of one ranking method.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// Queries measured.
    pub queries: usize,
    /// First relevant rank per query (distinct items, 1-based; `None` = not found).
    #[serde(skip)]
    pub ranks: Vec<Option<usize>>,
    /// Share with a relevant item at rank 1.
    pub hit_at_1: f64,
    /// … in the top 5.
    pub hit_at_5: f64,
    /// … in the top 10.
    pub hit_at_10: f64,
    /// Mean of 1/rank of the first relevant item in the top 10 (0 if none).
    pub mrr_at_10: f64,
}

/// Accumulates first-relevant ranks.
#[derive(Default)]
struct Ranks(Vec<Option<usize>>);

impl Ranks {
    /// Record the 1-based rank of the first relevant item among distinct ids.
    fn add(&mut self, ranked_ids: impl IntoIterator<Item = String>, relevant: &HashSet<String>) {
        let mut seen = HashSet::new();
        let mut rank = None;
        for id in ranked_ids {
            if !seen.insert(id.clone()) {
                continue;
            }
            if relevant.contains(&id) {
                rank = Some(seen.len());
                break;
            }
        }
        self.0.push(rank);
    }

    fn metrics(&self) -> Metrics {
        let n = self.0.len().max(1) as f64;
        let hit = |k: usize| self.0.iter().filter(|r| r.is_some_and(|r| r <= k)).count() as f64 / n;
        Metrics {
            ranks: self.0.clone(),
            queries: self.0.len(),
            hit_at_1: hit(1),
            hit_at_5: hit(5),
            hit_at_10: hit(10),
            mrr_at_10: self
                .0
                .iter()
                .map(|r| match r {
                    Some(r) if *r <= 10 => 1.0 / *r as f64,
                    _ => 0.0,
                })
                .sum::<f64>()
                / n,
        }
    }
}

/// Results of one eval run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EvalReport {
    /// Golden set name.
    pub name: String,
    /// Embedding model used.
    pub model: String,
    /// Whether the LLM rerank was allowed.
    pub rerank: bool,
    /// Knowledge search, fused (what the agent gets).
    pub knowledge: Option<Metrics>,
    /// Vector lane alone (page level).
    pub knowledge_vector: Option<Metrics>,
    /// Keyword lane alone (page level).
    pub knowledge_keyword: Option<Metrics>,
    /// Slack search.
    pub slack: Option<Metrics>,
}

fn load(path: &PathBuf) -> anyhow::Result<Golden> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read golden set {}", path.display()))?;
    let g: Golden = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a golden set", path.display()))?;
    if g.queries.is_empty() && g.slack.is_none() {
        bail!("{} has no queries", path.display());
    }
    Ok(g)
}

/// Run the eval and print the report.
pub async fn run(config: Config, opts: EvalOptions) -> anyhow::Result<EvalReport> {
    let golden = load(&opts.golden)?;
    let report = match &opts.api {
        Some(base) => {
            let key = opts
                .key
                .clone()
                .context("--api needs --key (an rpk_ API key of the tenant to load into)")?;
            run_rest(base, &key, &golden, !opts.no_rerank).await?
        }
        None => run_in_process(config, &golden, !opts.no_rerank).await?,
    };
    if let Some(path) = &opts.per_query {
        let lanes = [
            ("fused", &report.knowledge),
            ("vector", &report.knowledge_vector),
            ("keyword", &report.knowledge_keyword),
        ];
        let rows: Vec<serde_json::Value> = golden
            .queries
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let mut row = serde_json::json!({"query": q.query, "relevant": q.relevant});
                for (name, m) in lanes {
                    row[name] = serde_json::json!(
                        m.as_ref().and_then(|m| m.ranks.get(i).copied().flatten())
                    );
                }
                row
            })
            .collect();
        std::fs::write(path, serde_json::to_string_pretty(&rows)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if opts.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_table(&report);
    }
    Ok(report)
}

fn print_table(r: &EvalReport) {
    println!(
        "golden set {:?} — embeddings {} — rerank {}",
        r.name,
        r.model,
        if r.rerank { "allowed" } else { "off" }
    );
    println!(
        "{:<22} {:>7} {:>7} {:>7} {:>7} {:>7}",
        "surface", "queries", "hit@1", "hit@5", "hit@10", "MRR@10"
    );
    let rows = [
        ("knowledge (fused)", &r.knowledge),
        ("knowledge vector lane", &r.knowledge_vector),
        ("knowledge keyword lane", &r.knowledge_keyword),
        ("slack (fused)", &r.slack),
    ];
    for (label, m) in rows {
        if let Some(m) = m {
            println!(
                "{label:<22} {:>7} {:>7.3} {:>7.3} {:>7.3} {:>7.3}",
                m.queries, m.hit_at_1, m.hit_at_5, m.hit_at_10, m.mrr_at_10
            );
        }
    }
}

async fn run_in_process(
    mut config: Config,
    golden: &Golden,
    rerank: bool,
) -> anyhow::Result<EvalReport> {
    let dir = tempfile::tempdir().context("temporary data dir")?;
    config.data_dir = dir.path().join("data");
    let store = open_store(&config).await?;
    let state = AppState::new(config, store.clone(), Arc::new(SystemClock))?;
    let tenant = store
        .create_tenant(Tenant::new(
            format!("eval-{}", &Uuid::new_v4().to_string()[..8]),
            "Eval",
        ))
        .await?;
    let ctx = TenantContext {
        tenant: Arc::new(tenant.clone()),
    };
    let r = state.retrieval.clone();
    let mut report = EvalReport {
        name: golden.name.clone(),
        model: r.embedder().model().to_string(),
        rerank,
        ..Default::default()
    };
    let work = async {
        if !golden.pages.is_empty() {
            let mut last = None;
            // Lane hits carry the page id (their group); map it to the slug.
            let mut slug_of: std::collections::HashMap<String, String> = Default::default();
            for p in &golden.pages {
                let w = r
                    .upsert_page(PageUpsert {
                        slug: p.slug.clone(),
                        title: p.title.clone(),
                        content_html: p.content_html.clone(),
                        source_type: p.source_type.clone().unwrap_or_else(|| "manual".into()),
                        ..Default::default()
                    })
                    .await
                    .with_context(|| format!("loading page {}", p.slug))?;
                if w.unembedded > 0 {
                    bail!(
                        "page {} could not be embedded: is the embeddings endpoint up?",
                        p.slug
                    );
                }
                slug_of.insert(w.page.id.to_string(), w.page.slug.clone());
                last = w.index_seq.or(last);
            }
            r.wait_searchable(IndexCorpus::Knowledge, last).await?;
            let page_slug = |group: &str| slug_of.get(group).cloned().unwrap_or_default();
            let handle = r.registry().get(tenant.id, IndexCorpus::Knowledge).await?;
            let (mut fused, mut vector, mut keyword) =
                (Ranks::default(), Ranks::default(), Ranks::default());
            for q in &golden.queries {
                let relevant: HashSet<String> = q.relevant.iter().cloned().collect();
                let qv = r
                    .embedder()
                    .embed(std::slice::from_ref(&q.query), "eval")
                    .await?
                    .pop()
                    .context("no query vector")?;
                let out = r
                    .search_knowledge(KnowledgeQuery {
                        query: q.query.clone(),
                        rerank,
                        vector: Some(qv.clone()),
                        ..Default::default()
                    })
                    .await?;
                fused.add(out.results.iter().map(|x| x.slug.clone()), &relevant);
                let idx = handle.index.clone();
                let text = q.query.clone();
                let (store, tenant_id) = (store.clone(), tenant.id);
                let model = r.registry().model().to_string();
                let (v, k) = tokio::task::spawn_blocking(move || {
                    let lane =
                        StoredVectors::new(&store, tenant_id, IndexCorpus::Knowledge, &model);
                    Ok::<_, anyhow::Error>((
                        lane.search(&idx, &qv, KNOWLEDGE_VECTOR_LANE_MIN, None)?,
                        idx.keyword_search_any(&text, KNOWLEDGE_KEYWORD_LANE_LIMIT)?,
                    ))
                })
                .await??;
                vector.add(v.iter().map(|h| page_slug(&h.meta.group)), &relevant);
                keyword.add(k.iter().map(|h| page_slug(&h.meta.group)), &relevant);
            }
            report.knowledge = Some(fused.metrics());
            report.knowledge_vector = Some(vector.metrics());
            report.knowledge_keyword = Some(keyword.metrics());
        }
        if let Some(slack) = &golden.slack {
            report.slack = Some(eval_slack(&state, slack, rerank).await?);
        }
        Ok::<_, anyhow::Error>(())
    };
    let result = tenancy::scope(ctx, work).await;
    state.close().await;
    result?;
    Ok(report)
}

async fn eval_slack(
    state: &AppState,
    slack: &GoldenSlack,
    rerank: bool,
) -> anyhow::Result<Metrics> {
    let r = &state.retrieval;
    let now = state.clock.now();
    let mut last = None;
    for m in &slack.messages {
        let age_micros = (m.age_days.unwrap_or(0.0) * 86_400e6) as i64;
        let (_, seq) = r
            .index_slack_message(ProcessedSlackMessage {
                id: Uuid::new_v4(),
                channel_id: m.channel_id.clone(),
                channel_name: m.channel_name.clone(),
                user_id: m.user_id.clone(),
                user_name: m.user_name.clone(),
                message_ts: m.ts.clone(),
                thread_ts: m.thread_ts.clone(),
                message_text: m.text.clone(),
                message_date: now.plus_micros(-age_micros),
                created_at: now,
                ..Default::default()
            })
            .await?;
        last = seq.or(last);
    }
    r.wait_searchable(IndexCorpus::SlackMessages, last).await?;
    let mut ranks = Ranks::default();
    for q in &slack.queries {
        let relevant: HashSet<String> = q.relevant.iter().cloned().collect();
        let out = r
            .search_slack(
                SlackQuery {
                    query: q.query.clone(),
                    limit: None,
                    rerank,
                },
                &NoPermalinks,
            )
            .await?;
        ranks.add(
            out.matches
                .iter()
                .map(|m| format!("{}:{}", m.channel_id, m.message_ts)),
            &relevant,
        );
    }
    Ok(ranks.metrics())
}

/// Times a REST eval request is retried after a 429 (the server's KB
/// rate limits) before giving up.
const RATE_LIMIT_RETRIES: usize = 20;

/// Send a request, waiting out 429 answers for their `Retry-After` (at most
/// 60 s each, [`RATE_LIMIT_RETRIES`] times): a large golden set against a
/// server runs at the server's KB rate instead of failing.
async fn send_within_rate_limits(
    build: impl Fn() -> reqwest::RequestBuilder,
) -> anyhow::Result<reqwest::Response> {
    let mut attempt = 0;
    loop {
        let resp = build().send().await?;
        if resp.status() != reqwest::StatusCode::TOO_MANY_REQUESTS || attempt == RATE_LIMIT_RETRIES
        {
            return Ok(resp);
        }
        attempt += 1;
        let wait = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(1)
            .clamp(1, 60);
        tracing::info!(wait_secs = wait, "server rate limit reached; waiting");
        tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
    }
}

async fn run_rest(
    base: &str,
    key: &str,
    golden: &Golden,
    rerank: bool,
) -> anyhow::Result<EvalReport> {
    // A page write waits until it is searchable (≤ 30 s server-side), so
    // allow a little more per request; a dead server fails fast on connect.
    let client = reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(10))
        .timeout(REST_REQUEST_TIMEOUT)
        .build()
        .context("HTTP client")?;
    let base = base.trim_end_matches('/');
    for p in &golden.pages {
        let resp = send_within_rate_limits(|| {
            client
                .post(format!("{base}/api/v1/kb/pages"))
                .bearer_auth(key)
                .json(&serde_json::json!({
                    "slug": p.slug, "title": p.title, "content_html": p.content_html,
                    "source_type": p.source_type.clone().unwrap_or_else(|| "manual".into()),
                }))
        })
        .await?;
        if !resp.status().is_success() {
            bail!(
                "POST /api/v1/kb/pages {} → {}: {}",
                p.slug,
                resp.status(),
                resp.text().await.unwrap_or_default()
            );
        }
    }
    let mut fused = Ranks::default();
    for q in &golden.queries {
        let relevant: HashSet<String> = q.relevant.iter().cloned().collect();
        let resp = send_within_rate_limits(|| {
            client
                .post(format!("{base}/api/v1/kb/search"))
                .bearer_auth(key)
                .json(&serde_json::json!({"query": q.query}))
        })
        .await?;
        if !resp.status().is_success() {
            bail!("POST /api/v1/kb/search → {}", resp.status());
        }
        let v: serde_json::Value = resp.json().await?;
        let slugs = v["results"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|r| r["slug"].as_str().map(str::to_string))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        fused.add(slugs, &relevant);
    }
    Ok(EvalReport {
        name: golden.name.clone(),
        model: "(server's)".into(),
        rerank,
        knowledge: Some(fused.metrics()),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_count_distinct_items_and_mrr_stops_at_10() {
        let mut r = Ranks::default();
        let rel: HashSet<String> = ["b".to_string()].into();
        // a, a, b → b is the 2nd distinct page.
        r.add(["a", "a", "b"].map(String::from), &rel);
        r.add(["b"].map(String::from), &rel);
        r.add(["x"].map(String::from), &rel);
        let eleventh: Vec<String> = (0..10)
            .map(|i| format!("p{i}"))
            .chain(["b".into()])
            .collect();
        r.add(eleventh, &rel);
        let m = r.metrics();
        assert_eq!(m.queries, 4);
        assert_eq!(m.hit_at_1, 0.25);
        assert_eq!(m.hit_at_5, 0.5);
        assert_eq!(m.hit_at_10, 0.5);
        assert!((m.mrr_at_10 - (0.5 + 1.0) / 4.0).abs() < 1e-12);
    }
}
