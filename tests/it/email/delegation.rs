//! §8.3 mentor delegation and the authorization gate, end to end: a signed
//! BYO mail → the email job → the turn against the stub integration (whose
//! identity answer says `assistant@example.org` acts for Ada) and the
//! scripted model. What the spec cares about: a delegate's request for a
//! third party is refused **before** the mutation reaches the backend, an
//! own-account request proceeds, escalation always proceeds, and every
//! integration call carries the `email_delegation` block (§7.3).

use serde_json::{Value, json};
use storage::{
    EmailDelegation, HumanIntervention, Principal, ROOT_TENANT_ID, Scan, Store, TenantStore,
};
use testkit::stub::{StubBackend, StubRequest};

use super::flow::{Mail, TOKEN, world};
use crate::support::fake_llm::{completion, tool_calls};

const SECRET: &str = "stub-secret-0123456789";

async fn delegation_world() -> (Mail, StubBackend) {
    let m = world().await;
    m.byo().await;
    m.out.reply("/email-reply", 200, json!({"ok": true}));
    let stub = StubBackend::start(SECRET).await.unwrap();
    let tenant = m
        .app
        .state
        .store
        .tenant_by_id(ROOT_TENANT_ID)
        .await
        .unwrap()
        .unwrap();
    crate::support::register_stub(&m.app, &crate::support::ctx(tenant), &stub, SECRET).await;
    (m, stub)
}

fn mail(from: &str, cc: Option<&str>, id: &str, body: &str) -> Vec<u8> {
    let cc = cc.map(|c| format!("Cc: {c}\r\n")).unwrap_or_default();
    format!(
        "From: {from}\r\nTo: Help <help@acme.example>\r\n{cc}Subject: Rooms\r\n\
         Message-ID: <{id}>\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n"
    )
    .into_bytes()
}

/// The gate's JSON answer, as the model would return it.
fn gate(verdict: &str, refusal: Option<&str>) -> Vec<u8> {
    completion(
        &json!({"verdict": verdict, "reasoning": "checked the body",
                "refusal_message": refusal})
        .to_string(),
    )
}

/// The model's planning answer: one `book_room` call.
fn book(id: &str, room: &str) -> Vec<u8> {
    tool_calls(
        None,
        &[(id, "book_room", &format!(r#"{{"room":"{room}"}}"#))],
    )
}

fn intent(intent: &str) -> Vec<u8> {
    completion(&json!({"intent": intent, "reasoning": "from the body"}).to_string())
}

impl Mail {
    async fn deliver(&self, body: Vec<u8>) {
        let path = format!("/channels/email/inbound/{TOKEN}");
        let (s, v) = self.post(&path, "message/rfc822", body, None).await;
        assert_eq!(s, 202, "{v}");
        let ran = self.drain().await;
        assert_eq!(ran.len(), 1, "{ran:?}");
    }

    /// The system prompt of the `i`-th model call.
    fn system(&self, i: usize) -> String {
        self.llm.bodies()[i]["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Every tool message the `i`-th model call saw.
    fn tool_messages(&self, i: usize) -> Vec<Value> {
        self.llm.bodies()[i]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
            .collect()
    }

    fn last_reply(&self) -> String {
        let sent = self.out.requests_to("/email-reply");
        sent.last().unwrap().body["text"]
            .as_str()
            .unwrap()
            .to_string()
    }

    async fn delegations(&self) -> Vec<(String, String)> {
        let rows: Vec<EmailDelegation> = self
            .app
            .state
            .store
            .scan(Some(ROOT_TENANT_ID), Scan::all())
            .await
            .unwrap();
        let mut out = Vec::new();
        for r in rows {
            let p: Principal = self
                .app
                .state
                .store
                .get(Some(ROOT_TENANT_ID), storage::key().uuid(r.principal_id))
                .await
                .unwrap()
                .unwrap();
            out.push((r.delegate_email, p.ref_));
        }
        out.sort();
        out
    }
}

fn invokes(stub: &StubBackend, tool: &str) -> Vec<StubRequest> {
    stub.requests_to(&format!("/integration/tools/{tool}"))
}

#[tokio::test]
async fn email_delegate_asking_for_a_third_party_is_refused_before_the_tool_runs() {
    let (m, stub) = delegation_world().await;
    m.llm
        .json(book("c1", "Garden"))
        .json(gate(
            "refuse",
            Some("Hi Alice, I can only book rooms for Ada Lovelace's own account."),
        ))
        .json(completion(
            "Hi Alice, I can only book rooms for Ada Lovelace's own account.",
        ));
    m.deliver(mail(
        "Alice <assistant@example.org>",
        None,
        "d1@x",
        "Please book the Garden room for Albert on Tuesday.",
    ))
    .await;

    // The backend never saw the mutation.
    assert!(invokes(&stub, "book_room").is_empty());
    // The turn ran as Ada, with the delegation in the CONTEXT block.
    let system = m.system(0);
    assert!(
        system.contains(
            "The sender is a delegate of the resolved account (reason: Ada Lovelace copied you \
             on an earlier email to the assistant)"
        ),
        "{system}"
    );
    assert!(system.contains("Resolved account identity (the person your account-bound tools will act for): Ada Lovelace (ada@example.org)"));
    assert!(system.contains("- Email sender: Alice (assistant@example.org)"));
    // The gate ran with the A.5 text and saw the pending call.
    assert!(
        m.system(1)
            .starts_with("You are an authorization gate for the community's email assistant.")
    );
    let gate_input = m.llm.bodies()[1]["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(gate_input.contains("Tool: book_room"), "{gate_input}");
    assert!(gate_input.contains("for Albert on Tuesday"));
    // The model got the blocked result in the spec's shape.
    let results = m.tool_messages(2);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["success"], false);
    assert_eq!(results[0]["data"]["authorization_blocked"], true);
    assert_eq!(results[0]["data"]["verdict"], "refuse");
    assert_eq!(
        results[0]["data"]["suggested_reply"],
        "Hi Alice, I can only book rooms for Ada Lovelace's own account."
    );
    assert!(m.last_reply().contains("Hi Alice"));
    // The integration's acts_for is recorded as a delegation row.
    assert_eq!(
        m.delegations().await,
        [("assistant@example.org".to_string(), "member-1".to_string())]
    );
}

#[tokio::test]
async fn email_delegate_acting_for_the_account_proceeds_and_escalation_is_never_gated() {
    let (m, stub) = delegation_world().await;
    m.llm
        .json(tool_calls(
            None,
            &[
                ("c1", "book_room", r#"{"room":"Library"}"#),
                (
                    "c2",
                    "escalate_to_admin",
                    r#"{"escalation_reason":"Ada asked for a bigger room","user_request_summary":"A bigger room for Ada"}"#,
                ),
            ],
        ))
        .json(gate("proceed", None))
        .json(completion("Done — the Library is booked for Ada."));
    m.deliver(mail(
        "Alice <assistant@example.org>",
        Some("Bob <bob@example.net>"),
        "d2@x",
        "Please book the Library for Ada, and tell the team she needs a bigger room.",
    ))
    .await;

    // Three model calls: plan, one gate call (book_room only), answer.
    assert_eq!(m.llm.bodies().len(), 3);
    let calls = invokes(&stub, "book_room");
    assert_eq!(calls.len(), 1);
    let body = calls[0].json();
    assert_eq!(body["principal"]["ref"], "member-1");
    assert_eq!(
        body["email_delegation"],
        json!({
            "reason": "historical_cc",
            "is_delegate": true,
            "sender_email": "assistant@example.org",
            "sender_name": "Alice",
            "mentor_email": "ada@example.org",
            "mentor_name": "Ada Lovelace",
            "thread_participants": [{"email": "bob@example.net", "name": "Bob"}],
        })
    );
    // The escalation ran (no gate call was spent on it).
    let rows: Vec<HumanIntervention> = m
        .app
        .state
        .store
        .scan(Some(ROOT_TENANT_ID), Scan::all())
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    let results = m.tool_messages(2);
    assert!(results.iter().all(|r| r["success"] == true), "{results:?}");
}

#[tokio::test]
async fn email_owner_mail_is_classified_once_and_people_they_copy_act_for_them_later() {
    let (m, stub) = delegation_world().await;
    // Ada books for herself: the classifier says self_action, no gate call.
    m.llm
        .json(book("c1", "Garden"))
        .json(intent("self_action"))
        .json(book("c2", "Library"))
        .json(completion("Both rooms are booked."));
    m.deliver(mail(
        "Ada Lovelace <ada@example.org>",
        Some("Bob Smith <bob@example.net>"),
        "o1@x",
        "Book the Garden and the Library for me, please. Bob handles my calendar.",
    ))
    .await;
    assert_eq!(m.llm.bodies().len(), 4, "classifier once, no gate calls");
    assert!(m.system(1).starts_with(
        "You classify emails the assistant receives FROM the resolved account owner themselves"
    ));
    let calls = invokes(&stub, "book_room");
    assert_eq!(calls.len(), 2);
    let block = &calls[0].json()["email_delegation"];
    assert_eq!(block["is_delegate"], false);
    assert_eq!(block["reason"], Value::Null);
    assert_eq!(block["sender_email"], "ada@example.org");
    assert_eq!(block["mentor_email"], "ada@example.org");
    // Ada copied Bob: a delegation row.
    assert_eq!(
        m.delegations().await,
        [("bob@example.net".to_string(), "member-1".to_string())]
    );

    // Later Bob (no account of his own) writes alone: he acts for Ada,
    // gated — and a third-party request is refused.
    m.llm
        .json(book("c3", "Garden"))
        .json(gate("clarify", Some("Hi Bob, is this booking for Ada?")))
        .json(completion("Hi Bob, is this booking for Ada?"));
    m.deliver(mail(
        "Bob Smith <bob@example.net>",
        None,
        "o2@x",
        "Can you book the Garden for the visitor?",
    ))
    .await;
    assert_eq!(invokes(&stub, "book_room").len(), 2, "not run");
    assert!(
        m.system(4)
            .contains("reason: Ada Lovelace copied you on an earlier email to the assistant")
    );
    assert_eq!(m.tool_messages(6)[0]["data"]["verdict"], "clarify");
    assert!(m.last_reply().contains("Hi Bob, is this booking for Ada?"));
}

#[tokio::test]
async fn email_owner_asking_for_a_third_party_goes_through_the_gate() {
    let (m, stub) = delegation_world().await;
    m.llm
        .json(book("c1", "Garden"))
        .json(intent("third_party_action"))
        .json(gate(
            "refuse",
            Some("Hi Ada, I can only book rooms on your own account."),
        ))
        .json(completion(
            "Hi Ada, I can only book rooms on your own account.",
        ));
    m.deliver(mail(
        "Ada Lovelace <ada@example.org>",
        None,
        "t1@x",
        "Set up Albert's room booking for Tuesday.",
    ))
    .await;
    assert!(invokes(&stub, "book_room").is_empty());
    assert_eq!(m.tool_messages(3)[0]["data"]["authorization_blocked"], true);
    // A failed gate call blocks (fails closed) with the canned clarify reply.
    m.llm
        .json(book("c2", "Library"))
        .json(intent("unclear"))
        .then(crate::support::fake_llm::error(500))
        .json(completion("Could you confirm the booking is for you?"));
    m.deliver(mail(
        "Ada Lovelace <ada@example.org>",
        None,
        "t2@x",
        "Sort out the Library booking.",
    ))
    .await;
    assert!(invokes(&stub, "book_room").is_empty());
    let last = m.llm.bodies().len() - 1;
    let blocked = &m.tool_messages(last)[0]["data"];
    assert_eq!(blocked["verdict"], "clarify");
    assert!(
        blocked["suggested_reply"]
            .as_str()
            .unwrap()
            .starts_with("Hi Ada Lovelace, I wasn't able to confirm")
    );
}

#[tokio::test]
async fn email_a_stranger_copying_one_member_acts_for_them_under_the_gate() {
    let (m, stub) = delegation_world().await;
    m.llm
        .json(book("c1", "Garden"))
        .json(gate("proceed", None))
        .json(completion("Booked the Garden for Ada."));
    m.deliver(mail(
        "Carol <carol@visitors.example>",
        Some("Ada Lovelace <ada@example.org>"),
        "s1@x",
        "Ada asked me to book the Garden for her.",
    ))
    .await;
    let calls = invokes(&stub, "book_room");
    assert_eq!(calls.len(), 1);
    let body = calls[0].json();
    assert_eq!(body["principal"]["ref"], "member-1");
    assert_eq!(body["email_delegation"]["reason"], "cc");
    assert_eq!(body["email_delegation"]["is_delegate"], true);
    // A mail-only delegation: no row is written for it.
    assert!(m.delegations().await.is_empty());
}
