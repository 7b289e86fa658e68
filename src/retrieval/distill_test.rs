use super::*;

fn msg(ts: &str, user: &str, text: &str) -> ThreadMessage {
    ThreadMessage {
        ts: ts.into(),
        user_id: Some(user.into()),
        user_name: Some(format!("name-{user}")),
        text: text.into(),
        permalink: Some(format!("https://x.slack.com/p{ts}")),
    }
}

fn thread(messages: Vec<ThreadMessage>) -> Thread {
    Thread {
        channel_id: "C1".into(),
        channel_name: Some("help".into()),
        thread_ts: "1.000001".into(),
        messages,
    }
}

#[test]
fn threads_under_two_messages_or_150_chars_are_skipped() {
    let long = "x".repeat(149);
    assert!(!worth_distilling(&thread(vec![msg(
        "1.000001",
        "U1",
        &"y".repeat(500)
    )])));
    assert!(!worth_distilling(&thread(vec![
        msg("1.000001", "U1", &long),
        msg("1.000002", "U2", ""),
    ])));
    assert!(worth_distilling(&thread(vec![
        msg("1.000001", "U1", &long),
        msg("1.000002", "U2", "y"),
    ])));
}

#[test]
fn transcripts_keep_head_and_tail_within_24000_chars() {
    let short = thread(vec![
        msg("1.000001", "U1", "how do I deploy?"),
        msg("1.000002", "U2", " use the script "),
    ]);
    assert_eq!(
        transcript(&short),
        "name-U1: how do I deploy?\nname-U2: use the script"
    );
    let big = thread(vec![
        msg(
            "1.000001",
            "U1",
            &format!("QUESTION {}", "a".repeat(20_000)),
        ),
        msg("1.000002", "U2", &format!("{} ANSWER", "b".repeat(20_000))),
    ]);
    let t = transcript(&big);
    assert_eq!(t.chars().count(), 24_000);
    assert!(t.starts_with("name-U1: QUESTION"));
    assert!(t.ends_with("ANSWER"));
    assert!(t.contains("characters omitted"));
}

#[test]
fn digests_are_trimmed_and_keep_six_distinct_topics() {
    let d = ThreadDigest {
        question: " q ".into(),
        summary: "s".into(),
        resolution: Some("  ".into()),
        topics: ["a", "B", "b", "c", "d", "e", "f", "g", " "]
            .iter()
            .map(|t| t.to_string())
            .collect(),
    }
    .normalized();
    assert_eq!(d.question, "q");
    assert_eq!(d.resolution, None);
    assert_eq!(d.topics, vec!["a", "B", "c", "d", "e", "f"]);
}

#[test]
fn thread_documents_carry_channel_question_summary_resolution_topics_participants() {
    let t = thread(vec![
        msg("1.000001", "U1", "q"),
        msg("1.000002", "U2", "a"),
        msg("1.000003", "U1", "thanks"),
    ]);
    let d = ThreadDigest {
        question: "How to deploy?".into(),
        summary: "Use the script.".into(),
        resolution: Some("Ran deploy.sh".into()),
        topics: vec!["deploys".into(), "ci".into()],
    };
    assert_eq!(
        thread_document(&t, &d),
        "#help\nQuestion: How to deploy?\nSummary: Use the script.\n\
         Resolution: Ran deploy.sh\nTopics: deploys, ci\nParticipants: name-U1, name-U2"
    );
    assert_eq!(t.participant_ids(), vec!["U1", "U2"]);
    assert_eq!(
        t.permalink().as_deref(),
        Some("https://x.slack.com/p1.000001")
    );
}

#[test]
fn bursts_are_one_authors_consecutive_runs_of_200_chars() {
    let t = thread(vec![
        msg("1.000001", "U1", "short question"),
        msg("1.000002", "U2", &"a".repeat(120)),
        msg("1.000003", "U2", &"b".repeat(120)),
        msg("1.000004", "U1", &"c".repeat(199)),
        msg("1.000005", "U3", &"d".repeat(200)),
    ]);
    let b = burst_candidates(&t);
    assert_eq!(b.len(), 2, "{b:?}");
    assert_eq!(b[0].burst_ts, "1.000002");
    assert_eq!(b[0].message_count, 2);
    assert_eq!(b[0].text.chars().count(), 241);
    assert_eq!(b[0].author_name, "name-U2");
    assert_eq!(b[1].burst_ts, "1.000005");
    assert_eq!(
        burst_document(&t, "How to deploy?", &b[1]),
        format!("#help — How to deploy? — name-U3\n\n{}", "d".repeat(200))
    );
}

#[test]
fn probes_are_the_six_longest_distinct_tokens_of_the_spec_pattern() {
    assert_eq!(
        probe_tokens("Try Node.js v18. The k8s-operator restarts 42pods; see foo_bar."),
        vec!["k8s-operator", "restarts", "node.js", "foo_bar", "pods"]
    );
    // Ties keep their order; at most six; "abc" is too short.
    assert_eq!(
        probe_tokens("aaaa bbbb cccc dddd eeee ffff gggg abc hhhhh"),
        vec!["hhhhh", "aaaa", "bbbb", "cccc", "dddd", "eeee"]
    );
    // Unicode never splits a token mid-character or panics.
    assert!(probe_tokens("café déjà-vu naïve").is_empty());
}

#[test]
fn rarity_follows_the_corpus_size_rule() {
    // Under 200 documents everything is rare.
    assert!(is_rare(Some(150), 199));
    assert!(is_rare(None, 10));
    // 200–299 documents: the floor of 5 applies.
    assert!(is_rare(Some(4), 200));
    assert!(!is_rare(Some(5), 200));
    // 1000 documents: max(5, 1000/50 = 20).
    assert!(is_rare(Some(19), 1000));
    assert!(!is_rare(Some(20), 1000));
    // A token without lexemes (stop words) is never rare in a big corpus.
    assert!(!is_rare(None, 1000));
}

#[test]
fn slack_ts_sort_numerically() {
    assert!(ts_order("9.5") < ts_order("10.000001"));
    assert!(ts_order("1.000002") < ts_order("1.00001"));
    assert_eq!(ts_order("x"), (u64::MAX, u64::MAX));
}
