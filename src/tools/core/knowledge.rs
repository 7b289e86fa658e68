//! Knowledge & search tools: `search_knowledge_base`, `search_slack_messages`,
//! `who_knows` (§5.1) over the retrieval engine (§10).

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::agent::ToolResult;
use crate::platform::tool_names as names;
use crate::retrieval::KnowledgeQuery;
use crate::retrieval::params::WHO_KNOWS_MAX_LIMIT;
pub use crate::retrieval::params::{
    SLACK_TOOL_MAX_MATCHES, SLACK_TOOL_MAX_TEXT_CHARS, WHO_KNOWS_DEFAULT_LIMIT,
};
use crate::retrieval::slack::SlackQuery;
use crate::retrieval::slack::StoredPermalinks;
use crate::tools::spec::{TurnContext, TypedTool, internal_failure};

fn cut(s: &str, max_chars: usize) -> String {
    match s.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

fn search_failed(tool: &str, e: impl std::fmt::Display) -> ToolResult {
    internal_failure(tool, "The search could not be completed right now.", e)
}

/// `search_knowledge_base(query)`.
pub struct SearchKnowledgeBase;

/// Arguments of `search_knowledge_base`.
#[derive(Deserialize, JsonSchema)]
pub struct SearchKnowledgeArgs {
    /// What to look for, in the member's words.
    pub query: String,
}

#[async_trait]
impl TypedTool for SearchKnowledgeBase {
    type Args = SearchKnowledgeArgs;
    fn name(&self) -> &'static str {
        names::SEARCH_KNOWLEDGE_BASE
    }
    fn description(&self) -> &'static str {
        "Search the community's knowledge base (policies, guides, FAQs) with hybrid keyword + \
         semantic search. The knowledge base is canon for policy and how-to questions."
    }
    async fn run(&self, args: SearchKnowledgeArgs, ctx: &TurnContext) -> ToolResult {
        let search = ctx
            .services
            .retrieval
            .search_knowledge(KnowledgeQuery {
                query: args.query,
                source_types: ctx.knowledge_source_types.clone(),
                rerank: true,
                ..KnowledgeQuery::default()
            })
            .await;
        match search {
            Ok(s) => {
                let results: Vec<Value> = s
                    .results
                    .iter()
                    .map(|r| {
                        json!({
                            "slug": r.slug,
                            "title": r.title,
                            "public_id": r.public_id,
                            "source_type": r.source_type,
                            "section_heading": r.section_heading,
                            "text": r.text,
                            "neighbors": r.neighbors.iter().map(|n| &n.text).collect::<Vec<_>>(),
                        })
                    })
                    .collect();
                let mut data = json!({"results": results, "count": results.len()});
                // Empty results carry guidance, never "does not exist".
                if let Some(g) = s.guidance {
                    data["guidance"] = json!(g);
                }
                ToolResult::ok(data)
            }
            Err(e) => search_failed(self.name(), e),
        }
    }
}

/// `search_slack_messages(query)`.
pub struct SearchSlackMessages;

/// Arguments of `search_slack_messages`.
#[derive(Deserialize, JsonSchema)]
pub struct SearchSlackArgs {
    /// What to look for; may contain a Slack message permalink.
    pub query: String,
}

#[async_trait]
impl TypedTool for SearchSlackMessages {
    type Args = SearchSlackArgs;
    fn name(&self) -> &'static str {
        names::SEARCH_SLACK_MESSAGES
    }
    fn description(&self) -> &'static str {
        "Search the community's public Slack history (messages and thread summaries). Slack is \
         discussion, not policy: use the knowledge base for official answers."
    }
    async fn run(&self, args: SearchSlackArgs, ctx: &TurnContext) -> ToolResult {
        let permalinks = crate::tools::permalinks::LivePermalinks {
            stored: StoredPermalinks(ctx.services.store.clone()),
            slack: ctx.services.slack.clone(),
        };
        let search = ctx
            .services
            .retrieval
            .search_slack(
                SlackQuery {
                    query: args.query,
                    limit: Some(SLACK_TOOL_MAX_MATCHES),
                    rerank: true,
                },
                &permalinks,
            )
            .await;
        match search {
            Ok(s) => {
                let matches: Vec<Value> = s
                    .matches
                    .iter()
                    .take(SLACK_TOOL_MAX_MATCHES)
                    .map(|m| {
                        json!({
                            "kind": m.kind,
                            "channel_id": m.channel_id,
                            "channel_name": m.channel_name,
                            "user_id": m.user_id,
                            "user_name": m.user_name,
                            "message_ts": m.message_ts,
                            "thread_ts": m.thread_ts,
                            "text": cut(&m.text, SLACK_TOOL_MAX_TEXT_CHARS),
                            "parent_text": m.parent_text,
                            "permalink": m.permalink,
                            "date": m.date,
                        })
                    })
                    .collect();
                ToolResult::ok(json!({"matches": matches, "count": matches.len()}))
            }
            Err(e) => search_failed(self.name(), e),
        }
    }
}

/// `who_knows(topic, limit=5)`.
pub struct WhoKnows;

/// Arguments of `who_knows`.
#[derive(Deserialize, JsonSchema)]
pub struct WhoKnowsArgs {
    /// The topic to find knowledgeable members for.
    pub topic: String,
    /// How many people (default 5).
    pub limit: Option<usize>,
}

#[async_trait]
impl TypedTool for WhoKnows {
    type Args = WhoKnowsArgs;
    fn name(&self) -> &'static str {
        names::WHO_KNOWS
    }
    fn description(&self) -> &'static str {
        "Find community members who have discussed a topic in public Slack, ranked by how much \
         and how relevantly they talked about it, with evidence links."
    }
    async fn run(&self, args: WhoKnowsArgs, ctx: &TurnContext) -> ToolResult {
        let limit = args
            .limit
            .unwrap_or(WHO_KNOWS_DEFAULT_LIMIT)
            .clamp(1, WHO_KNOWS_MAX_LIMIT);
        match ctx
            .services
            .retrieval
            .who_knows(&args.topic, Some(limit))
            .await
        {
            Ok(experts) => {
                let count = experts.len();
                ToolResult::ok(json!({"experts": experts, "count": count}))
            }
            Err(e) => search_failed(self.name(), e),
        }
    }
}

/// `search_current_events(query?, recency?)`.
pub struct SearchCurrentEvents;

/// How recent the web results should be.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Recency {
    /// The last hour.
    Hour,
    /// The last day.
    Day,
    /// The last week.
    Week,
    /// The last month.
    Month,
    /// The last year.
    Year,
}

impl Recency {
    /// The spec's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Recency::Hour => "hour",
            Recency::Day => "day",
            Recency::Week => "week",
            Recency::Month => "month",
            Recency::Year => "year",
        }
    }
}

/// Arguments of `search_current_events`.
#[derive(Deserialize, JsonSchema)]
pub struct CurrentEventsArgs {
    /// What to research; defaults to the member's current message.
    pub query: Option<String>,
    /// Restrict to recent sources.
    pub recency: Option<Recency>,
}

/// Instruction for the web-research model.
pub const CURRENT_EVENTS_SYSTEM: &str = "You are a web research assistant. Answer the question \
with current, factual information from the web. Be concise, name your sources with their URLs, \
and say plainly when you could not find reliable information.";

#[async_trait]
impl TypedTool for SearchCurrentEvents {
    type Args = CurrentEventsArgs;
    fn name(&self) -> &'static str {
        names::SEARCH_CURRENT_EVENTS
    }
    fn description(&self) -> &'static str {
        "Live web research for news and current events outside the community's own knowledge. \
         Defaults to the member's current message when no query is given."
    }
    async fn run(&self, a: CurrentEventsArgs, ctx: &TurnContext) -> ToolResult {
        let query = a
            .query
            .filter(|q| !q.trim().is_empty())
            .unwrap_or_else(|| ctx.user_message.clone());
        if query.trim().is_empty() {
            return ToolResult::failed("Nothing to research: give a query.");
        }
        let user = match a.recency {
            Some(r) => format!("{query}\n\nOnly use sources from the last {}.", r.as_str()),
            None => query.clone(),
        };
        let opts = crate::ai::chat::ChatOptions {
            role: Some(crate::ai::chat::ModelRole::WebResearch),
            ..Default::default()
        };
        match ctx
            .services
            .llm
            .chat_text(
                "tools.search_current_events",
                CURRENT_EVENTS_SYSTEM,
                &user,
                &opts,
            )
            .await
        {
            Ok(text) if !text.trim().is_empty() => {
                ToolResult::ok(json!({"query": query, "answer": text}))
            }
            Ok(_) => ToolResult::ok(json!({"query": query, "answer": "", "isEmpty": true})),
            Err(e) => {
                tracing::warn!(error = %e, "web research failed");
                ToolResult {
                    success: false,
                    error: Some("Web research is unavailable right now.".into()),
                    error_detail: Some(e.to_string()),
                    ..ToolResult::default()
                }
            }
        }
    }
}
