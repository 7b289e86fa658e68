//! The keyword lane: BM25 over tantivy, analysed like PostgreSQL's `english`
//! text-search configuration (spec §10.2–§10.3 rank with `ts_rank_cd`; BM25
//! plays that role here).
//!
//! Analysis = split on non-alphanumerics → lowercase → drop PostgreSQL's
//! English stop words (`english.stop`, 127 words) → Snowball English stemmer.
//! tantivy's stock `en_stem` keeps stop words, which measurably hurts ranking
//! on our golden set (a query's "how do I" then matches every page).
//! `tests/pg_parity.rs` checks the analyser against lexemes produced by a real
//! PostgreSQL 15.
//!
//! A custom analyser is not persisted with a tantivy index, so
//! [`KeywordIndex`] registers it on every open.

use std::path::Path;
use std::sync::Mutex;

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{
    Language, LowerCaser, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer, TokenStream,
};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, Term, doc};

/// Name the analyser is registered under.
pub const PG_ENGLISH: &str = "pg_english";

/// PostgreSQL's `tsearch_data/english.stop` (PostgreSQL licence), verbatim.
pub const PG_ENGLISH_STOP_WORDS: &str = include_str!("english.stop");

/// Knowledge keyword-lane query tokens are at least this long (§10.2).
pub const MIN_QUERY_TOKEN_CHARS: usize = 2;

/// Memory budget of one index writer (tantivy's minimum is 15 MB; ingest
/// batches are small, so stay near it on a small VM).
const WRITER_HEAP_BYTES: usize = 20_000_000;

/// Errors of the keyword lane.
#[derive(Debug, thiserror::Error)]
pub enum KeywordError {
    /// tantivy failed (I/O, corrupt index…).
    #[error("keyword index: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
    /// Opening the index directory failed.
    #[error("keyword index directory: {0}")]
    Directory(#[from] tantivy::directory::error::OpenDirectoryError),
}

/// The stop words as a list.
pub fn stop_words() -> Vec<String> {
    PG_ENGLISH_STOP_WORDS
        .lines()
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// The PostgreSQL-`english`-like analyser.
pub fn pg_english_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(LowerCaser)
        .filter(StopWordFilter::remove(stop_words()))
        .filter(Stemmer::new(Language::English))
        .build()
}

thread_local! {
    /// Building the analyser (stop-word set, stemmer) costs more than
    /// analysing a query, so each thread keeps one.
    static ANALYZER: std::cell::RefCell<TextAnalyzer> =
        std::cell::RefCell::new(pg_english_analyzer());
}

/// The lexemes of `text`, in order (duplicates kept).
pub fn analyze(text: &str) -> Vec<String> {
    ANALYZER.with(|a| analyze_with(&mut a.borrow_mut(), text))
}

fn analyze_with(analyzer: &mut TextAnalyzer, text: &str) -> Vec<String> {
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while stream.advance() {
        out.push(stream.token().text.clone());
    }
    out
}

/// §10.2 query tokens: lowercase, strip non-alphanumerics, keep tokens of
/// ≥ 2 chars (they are OR-ed).
pub fn knowledge_query_tokens(query: &str) -> Vec<String> {
    query
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| t.chars().count() >= MIN_QUERY_TOKEN_CHARS)
        .map(str::to_string)
        .collect()
}

/// Most distinct terms one keyword query searches for (knowledge OR-terms,
/// websearch clauses): a pasted essay must not become a query of
/// thousands of clauses.
pub const MAX_QUERY_TERMS: usize = 64;

/// The distinct analysed terms of a §10.2 query, in first-seen order, at
/// most [`MAX_QUERY_TERMS`] (deduplicated with a set: linear in the query).
pub fn knowledge_query_terms(query: &str) -> Vec<String> {
    let mut tokens_seen = std::collections::HashSet::new();
    let mut seen = std::collections::HashSet::new();
    let mut terms = Vec::new();
    let mut analyzer = pg_english_analyzer();
    for token in knowledge_query_tokens(query) {
        if !tokens_seen.insert(token.clone()) {
            continue;
        }
        for lexeme in analyze_with(&mut analyzer, &token) {
            if seen.insert(lexeme.clone()) {
                terms.push(lexeme);
                if terms.len() == MAX_QUERY_TERMS {
                    return terms;
                }
            }
        }
    }
    terms
}

/// One alternative of a websearch clause.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum WebTerm {
    /// A bare word: its lexemes (more than one for compounds like
    /// `e-mail`, matched as a phrase, as PostgreSQL does).
    Word(Vec<String>),
    /// A quoted phrase: its lexemes in order.
    Phrase(Vec<String>),
}

/// One clause of a websearch query: the OR of its alternatives, required
/// (or excluded when `negated`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebClause {
    /// `-word` / `-"phrase"`.
    pub negated: bool,
    /// Alternatives joined by `or`.
    pub alternatives: Vec<WebTerm>,
}

/// Parse a query like PostgreSQL's `websearch_to_tsquery('english', q)`:
/// words are AND-ed, `"quoted text"` is a phrase, `or` between two items
/// makes them alternatives, a leading `-` excludes. Items that analyse to
/// nothing (stop words, punctuation) drop out, as in PostgreSQL.
pub fn parse_websearch(query: &str) -> Vec<WebClause> {
    // 1. Raw items: (negated, is_phrase, text) and the bare word `or`.
    enum Item {
        Or,
        Term(bool, bool, String),
    }
    let mut items = Vec::new();
    let mut chars = query.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let negated = c == '-';
        if negated {
            chars.next();
        }
        if chars.peek() == Some(&'"') {
            chars.next();
            let phrase: String = chars.by_ref().take_while(|c| *c != '"').collect();
            items.push(Item::Term(negated, true, phrase));
        } else {
            let mut word = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() || c == '"' {
                    break;
                }
                word.push(c);
                chars.next();
            }
            if !negated && word.eq_ignore_ascii_case("or") {
                items.push(Item::Or);
            } else {
                items.push(Item::Term(negated, false, word));
            }
        }
    }
    // 2. Group alternatives and analyse; a repeated item adds nothing, and
    // at most MAX_QUERY_TERMS clauses are kept.
    let mut clauses: Vec<WebClause> = Vec::new();
    let mut seen: std::collections::HashSet<(bool, WebTerm)> = std::collections::HashSet::new();
    let mut join_next = false;
    for item in items {
        match item {
            Item::Or => join_next = !clauses.is_empty(),
            Item::Term(negated, phrase, text) => {
                let lexemes = analyze(&text);
                if lexemes.is_empty() {
                    continue;
                }
                let term = if phrase {
                    WebTerm::Phrase(lexemes)
                } else {
                    WebTerm::Word(lexemes)
                };
                if !seen.insert((negated, term.clone())) {
                    join_next = false;
                    continue;
                }
                let full = clauses.len() == MAX_QUERY_TERMS;
                match clauses.last_mut() {
                    Some(last) if join_next && !negated && !last.negated => {
                        last.alternatives.push(term)
                    }
                    _ if full => {}
                    _ => clauses.push(WebClause {
                        negated,
                        alternatives: vec![term],
                    }),
                }
                join_next = false;
            }
        }
    }
    clauses
}

/// One per-tenant, per-corpus keyword index. A document is a `u64` key (what
/// searches return), the 128-bit id of the row it was made from (what
/// replacements and deletions match, so a replayed change can never leave a
/// stale copy under an older key), its text, and an auxiliary text field
/// (e.g. Slack channel and user names).
pub struct KeywordIndex {
    index: Index,
    reader: IndexReader,
    writer: Mutex<IndexWriter>,
    id: Field,
    row: Field,
    text: Field,
    aux: Field,
    tag: Field,
}

fn schema() -> Schema {
    let mut b = Schema::builder();
    b.add_u64_field("id", INDEXED | FAST);
    b.add_bytes_field("row", INDEXED);
    let analysed = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(PG_ENGLISH)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    b.add_text_field("text", analysed.clone());
    b.add_text_field("aux", analysed);
    b.add_text_field("tag", STRING);
    b.build()
}

impl KeywordIndex {
    /// An in-memory index (tests, benches).
    pub fn create_in_ram() -> Result<Self, KeywordError> {
        Self::from_index(Index::create_in_ram(schema()))
    }

    /// Open the index in `dir`, creating it when absent.
    pub fn open_or_create(dir: &Path) -> Result<Self, KeywordError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| tantivy::TantivyError::IoError(std::sync::Arc::new(e)))?;
        let mmap = tantivy::directory::MmapDirectory::open(dir)?;
        Self::from_index(Index::open_or_create(mmap, schema())?)
    }

    fn from_index(index: Index) -> Result<Self, KeywordError> {
        index
            .tokenizers()
            .register(PG_ENGLISH, pg_english_analyzer());
        let schema = index.schema();
        let id = schema.get_field("id")?;
        let row = schema.get_field("row")?;
        let text = schema.get_field("text")?;
        let aux = schema.get_field("aux")?;
        let tag = schema.get_field("tag")?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let writer = index.writer(WRITER_HEAP_BYTES)?;
        Ok(KeywordIndex {
            index,
            reader,
            writer: Mutex::new(writer),
            id,
            row,
            text,
            aux,
            tag,
        })
    }

    /// Add or replace document `id` whose row is `id` itself (tests, tools).
    pub fn upsert(&self, id: u64, text: &str) -> Result<(), KeywordError> {
        self.upsert_row(id, u128::from(id), text, "", "")
    }

    /// Add or replace the document of `row` under key `id` (visible after
    /// [`commit`](Self::commit)). Any earlier document of `row` goes, whatever
    /// its key. `tag` is an exact-match filter value (e.g. a page's source type).
    pub fn upsert_row(
        &self,
        id: u64,
        row: u128,
        text: &str,
        aux: &str,
        tag: &str,
    ) -> Result<(), KeywordError> {
        let w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let row_bytes = row.to_be_bytes();
        w.delete_term(Term::from_field_bytes(self.row, &row_bytes));
        w.add_document(doc!(
            self.id => id,
            self.row => row_bytes.as_slice(),
            self.text => text,
            self.aux => aux,
            self.tag => tag,
        ))?;
        Ok(())
    }

    /// Remove document `id` (after the next commit).
    pub fn delete(&self, id: u64) {
        let w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        w.delete_term(Term::from_field_u64(self.id, id));
    }

    /// Remove the document of `row` (after the next commit).
    pub fn delete_row(&self, row: u128) {
        let w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        w.delete_term(Term::from_field_bytes(self.row, &row.to_be_bytes()));
    }

    /// Remove every document (after the next commit).
    pub fn delete_all(&self) -> Result<(), KeywordError> {
        let w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        w.delete_all_documents()?;
        Ok(())
    }

    /// Make pending changes durable and visible to searches.
    pub fn commit(&self) -> Result<(), KeywordError> {
        self.commit_with_payload(None)
    }

    /// Commit and store `payload` with the commit (e.g. the outbox watermark
    /// the commit covers); read back with [`payload`](Self::payload).
    pub fn commit_with_payload(&self, payload: Option<String>) -> Result<(), KeywordError> {
        let mut w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let mut prepared = w.prepare_commit()?;
        if let Some(p) = payload {
            prepared.set_payload(&p);
        }
        prepared.commit()?;
        drop(w);
        self.reader.reload()?;
        Ok(())
    }

    /// The payload of the last commit, if any.
    pub fn payload(&self) -> Result<Option<String>, KeywordError> {
        Ok(self.index.load_metas()?.payload)
    }

    /// Number of searchable documents.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// How many live documents contain every lexeme of `text` (analysed
    /// like the documents) — a term's document frequency for §10.4's rare
    /// term gate. `None` when `text` has no lexeme (stop words only).
    pub fn doc_count_all(&self, text: &str) -> Result<Option<u64>, KeywordError> {
        let lexemes = analyze(text);
        if lexemes.is_empty() {
            return Ok(None);
        }
        let clauses: Vec<(Occur, Box<dyn Query>)> = lexemes
            .iter()
            .map(|t| {
                let q: Box<dyn Query> = Box::new(TermQuery::new(
                    Term::from_field_text(self.text, t),
                    IndexRecordOption::Basic,
                ));
                (Occur::Must, q)
            })
            .collect();
        let n = self
            .reader
            .searcher()
            .search(&BooleanQuery::new(clauses), &tantivy::collector::Count)?;
        Ok(Some(n as u64))
    }

    /// §10.2 knowledge keyword lane: the OR of the query's tokens (≥ 2 chars,
    /// analysed like the documents), BM25-ranked, best first.
    pub fn search_any(&self, query: &str, limit: usize) -> Result<Vec<(u64, f32)>, KeywordError> {
        self.search_any_tagged(query, limit, None)
    }

    /// [`search_any`](Self::search_any) restricted to documents whose tag is
    /// one of `tags` (`None` = no restriction; an empty list matches nothing).
    pub fn search_any_tagged(
        &self,
        query: &str,
        limit: usize,
        tags: Option<&[String]>,
    ) -> Result<Vec<(u64, f32)>, KeywordError> {
        let terms = knowledge_query_terms(query);
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .map(|t| {
                let q: Box<dyn Query> = Box::new(TermQuery::new(
                    Term::from_field_text(self.text, t),
                    IndexRecordOption::WithFreqs,
                ));
                (Occur::Should, q)
            })
            .collect();
        let any: Box<dyn Query> = Box::new(BooleanQuery::new(clauses));
        match tags {
            None => self.run(any.as_ref(), limit),
            Some([]) => Ok(Vec::new()),
            Some(tags) => {
                let allowed: Vec<(Occur, Box<dyn Query>)> = tags
                    .iter()
                    .map(|t| {
                        let q: Box<dyn Query> = Box::new(TermQuery::new(
                            Term::from_field_text(self.tag, t),
                            IndexRecordOption::Basic,
                        ));
                        (Occur::Should, q)
                    })
                    .collect();
                // The tag clause filters without scoring (boost 0), so ranks
                // are the text query's own.
                let filter: Box<dyn Query> = Box::new(tantivy::query::BoostQuery::new(
                    Box::new(BooleanQuery::new(allowed)),
                    0.0,
                ));
                let q = BooleanQuery::new(vec![(Occur::Must, any), (Occur::Must, filter)]);
                self.run(&q, limit)
            }
        }
    }

    /// Slack text lane (§10.3): `websearch_to_tsquery` semantics (see
    /// [`parse_websearch`]), BM25-ranked, best first. A query with no
    /// required clause matches nothing.
    pub fn search_websearch(
        &self,
        query: &str,
        limit: usize,
    ) -> Result<Vec<(u64, f32)>, KeywordError> {
        let clauses = parse_websearch(query);
        if limit == 0 || !clauses.iter().any(|c| !c.negated) {
            return Ok(Vec::new());
        }
        let term_query = |lexemes: &[String]| -> Box<dyn Query> {
            if lexemes.len() == 1 {
                Box::new(TermQuery::new(
                    Term::from_field_text(self.text, &lexemes[0]),
                    IndexRecordOption::WithFreqsAndPositions,
                ))
            } else {
                Box::new(tantivy::query::PhraseQuery::new(
                    lexemes
                        .iter()
                        .map(|l| Term::from_field_text(self.text, l))
                        .collect(),
                ))
            }
        };
        let parts: Vec<(Occur, Box<dyn Query>)> = clauses
            .iter()
            .map(|c| {
                let alts: Vec<(Occur, Box<dyn Query>)> = c
                    .alternatives
                    .iter()
                    .map(|t| match t {
                        WebTerm::Word(l) | WebTerm::Phrase(l) => (Occur::Should, term_query(l)),
                    })
                    .collect();
                let q: Box<dyn Query> = Box::new(BooleanQuery::new(alts));
                (
                    if c.negated {
                        Occur::MustNot
                    } else {
                        Occur::Must
                    },
                    q,
                )
            })
            .collect();
        self.run(&BooleanQuery::new(parts), limit)
    }

    fn run(&self, query: &dyn Query, limit: usize) -> Result<Vec<(u64, f32)>, KeywordError> {
        let searcher = self.reader.searcher();
        let top = searcher.search(query, &TopDocs::with_limit(limit).order_by_score())?;
        let mut out = Vec::with_capacity(top.len());
        // Keys come from the fast-field column (no stored-document decode).
        for (score, addr) in top {
            let column = searcher
                .segment_reader(addr.segment_ord)
                .fast_fields()
                .u64("id")?;
            if let Some(id) = column.first(addr.doc_id) {
                out.push((id, score));
            }
        }
        Ok(out)
    }

    /// The underlying tantivy index (for maintenance tools).
    pub fn tantivy(&self) -> &Index {
        &self.index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stop_list_is_postgresqls_127_words() {
        let words = stop_words();
        assert_eq!(words.len(), 127);
        for w in [
            "i", "the", "and", "how", "do", "s", "t", "don", "should", "now",
        ] {
            assert!(words.iter().any(|x| x == w), "{w}");
        }
    }

    #[test]
    fn analysis_drops_stop_words_and_stems() {
        assert_eq!(
            analyze("How do I iterate over the Dictionaries?"),
            vec!["iter", "dictionari"]
        );
        assert_eq!(analyze("Connections connected"), vec!["connect", "connect"]);
    }

    #[test]
    fn query_tokens_are_lowercase_alphanumeric_and_at_least_two_chars() {
        assert_eq!(
            knowledge_query_tokens("What's a C-level API? (x, y)"),
            vec!["what", "level", "api"]
        );
    }

    #[test]
    fn query_terms_are_deduplicated_and_capped_at_sixty_four() {
        let repeated = vec!["deployment"; 500].join(" ");
        assert_eq!(knowledge_query_terms(&repeated), vec!["deploy".to_string()]);
        let distinct: String = (0..500).map(|i| format!("word{i} ")).collect();
        let terms = knowledge_query_terms(&distinct);
        assert_eq!(terms.len(), MAX_QUERY_TERMS);
        assert_eq!(terms[0], "word0");
        let unique: std::collections::HashSet<_> = terms.iter().collect();
        assert_eq!(unique.len(), 64);
        // The websearch lane: repeats collapse, clauses stop at 64.
        assert_eq!(parse_websearch(&repeated).len(), 1);
        assert_eq!(parse_websearch(&distinct).len(), MAX_QUERY_TERMS);
    }

    #[test]
    fn bm25_or_query_ranks_the_page_that_matches_more_terms_first() {
        let idx = KeywordIndex::create_in_ram().unwrap();
        idx.upsert(
            1,
            "Use the reversed() built-in function to iterate in reverse",
        )
        .unwrap();
        idx.upsert(2, "Lists are mutable sequences").unwrap();
        idx.upsert(3, "How to reverse a string").unwrap();
        idx.commit().unwrap();
        let hits = idx
            .search_any("How do I iterate over a sequence in reverse order?", 10)
            .unwrap();
        assert_eq!(hits[0].0, 1, "{hits:?}");
        assert!(hits.iter().any(|(id, _)| *id == 3));
        assert!(
            idx.search_any("the and of", 10).unwrap().is_empty(),
            "stop words alone match nothing"
        );
    }

    #[test]
    fn websearch_parsing_follows_postgresql() {
        let c = parse_websearch(r#"deploy "rolling restart" or reboot -staging the"#);
        assert_eq!(
            c,
            vec![
                WebClause {
                    negated: false,
                    alternatives: vec![WebTerm::Word(vec!["deploy".into()])]
                },
                WebClause {
                    negated: false,
                    alternatives: vec![
                        WebTerm::Phrase(vec!["roll".into(), "restart".into()]),
                        WebTerm::Word(vec!["reboot".into()]),
                    ]
                },
                WebClause {
                    negated: true,
                    alternatives: vec![WebTerm::Word(vec!["stage".into()])]
                },
            ]
        );
        assert!(parse_websearch("the and of").is_empty());
        assert!(parse_websearch("\"unterminated phrase").len() == 1);
    }

    #[test]
    fn websearch_requires_every_word_and_honours_phrases_and_exclusions() {
        let idx = KeywordIndex::create_in_ram().unwrap();
        idx.upsert(1, "we deploy with a rolling restart").unwrap();
        idx.upsert(2, "deploy then restart rolling back").unwrap();
        idx.upsert(3, "deploy to staging").unwrap();
        idx.upsert(4, "reboot the deploy box").unwrap();
        idx.commit().unwrap();
        let ids = |q: &str| {
            let mut v: Vec<u64> = idx
                .search_websearch(q, 10)
                .unwrap()
                .iter()
                .map(|h| h.0)
                .collect();
            v.sort();
            v
        };
        assert_eq!(ids("deploy restart"), vec![1, 2]);
        assert_eq!(ids("\"rolling restart\""), vec![1]);
        assert_eq!(ids("deploy -staging"), vec![1, 2, 4]);
        assert_eq!(ids("\"rolling restart\" or reboot"), vec![1, 4]);
        assert!(ids("-deploy").is_empty());
    }

    #[test]
    fn upsert_replaces_and_delete_removes() {
        let idx = KeywordIndex::create_in_ram().unwrap();
        idx.upsert(7, "alpha").unwrap();
        idx.commit().unwrap();
        idx.upsert(7, "beta").unwrap();
        idx.commit().unwrap();
        assert_eq!(idx.num_docs(), 1);
        assert!(idx.search_any("alpha", 5).unwrap().is_empty());
        assert_eq!(idx.search_any("beta", 5).unwrap()[0].0, 7);
        idx.delete(7);
        idx.commit().unwrap();
        assert_eq!(idx.num_docs(), 0);
    }

    #[test]
    fn document_frequency_counts_live_documents_with_every_lexeme() {
        let idx = KeywordIndex::create_in_ram().unwrap();
        idx.upsert(1, "the kubernetes operator restarts pods")
            .unwrap();
        idx.upsert(2, "kubernetes operators are fun").unwrap();
        idx.upsert(3, "node.js streams").unwrap();
        idx.commit().unwrap();
        assert_eq!(idx.doc_count_all("kubernetes").unwrap(), Some(2));
        // Stemmed like the documents: "operators" counts "operator".
        assert_eq!(idx.doc_count_all("operators").unwrap(), Some(2));
        // A dotted token is every one of its lexemes.
        assert_eq!(idx.doc_count_all("node.js").unwrap(), Some(1));
        assert_eq!(idx.doc_count_all("zeppelin").unwrap(), Some(0));
        assert_eq!(idx.doc_count_all("with").unwrap(), None);
        idx.delete(2);
        idx.commit().unwrap();
        assert_eq!(idx.doc_count_all("kubernetes").unwrap(), Some(1));
    }

    #[test]
    fn the_analyser_survives_a_reopen() {
        let dir = std::env::temp_dir().join(format!("kw-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        {
            let idx = KeywordIndex::open_or_create(&dir).unwrap();
            idx.upsert(1, "Decorators wrap functions").unwrap();
            idx.commit().unwrap();
        }
        let idx = KeywordIndex::open_or_create(&dir).unwrap();
        assert_eq!(
            idx.search_any("decorator", 5).unwrap()[0].0,
            1,
            "stemmed query hits after reopen"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
