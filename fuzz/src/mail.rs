//! What every normalized inbound mail promises, whichever parser made it
//! (shared by the `email_mime`, `postmark` and `primitive_event` targets).

use root::email::inbound::JOB_ID_PREFIX;
use root::email::{InboundEmail, Mailbox, content_identity, job_id, strip_quoted_reply};

/// RFC 5322's line limit, the longest message id kept.
const MAX_ID_LEN: usize = 998;

fn check_mailbox(m: &Mailbox) {
    let (local, domain) = m
        .email
        .rsplit_once('@')
        .unwrap_or_else(|| panic!("{:?} has no @", m.email));
    assert!(!local.is_empty() && !domain.is_empty(), "{m:?}");
    assert!(
        !m.email
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '<' | '>' | ',' | ';')),
        "{m:?}"
    );
    if let Some(name) = &m.name {
        assert!(!name.is_empty() && name.trim() == name, "{m:?}");
    }
}

fn check_id(id: &str) {
    assert!(
        id.len() <= MAX_ID_LEN
            && id.starts_with('<')
            && id.ends_with('>')
            && id.contains('@')
            && id[1..id.len() - 1]
                .bytes()
                .all(|b| b.is_ascii_graphic() && b != b'<' && b != b'>'),
        "bad message id {id:?}"
    );
}

fn unique<T: PartialEq>(items: &[T]) -> bool {
    items
        .iter()
        .enumerate()
        .all(|(i, a)| !items[..i].contains(a))
}

/// Assert the normalized mail's promises: valid, de-duplicated addresses
/// and ids, a trimmed subject, a stable job id, a lossless JSON round trip
/// (the `email-inbound` job stores it) and a quote stripper that copes.
pub fn check(mail: &InboundEmail) {
    check_mailbox(&mail.from);
    for m in mail.reply_to.iter().chain(&mail.to).chain(&mail.cc) {
        check_mailbox(m);
    }
    let emails = |list: &[Mailbox]| list.iter().map(|m| m.email.clone()).collect::<Vec<_>>();
    assert!(unique(&emails(&mail.to)), "{:?}", mail.to);
    assert!(unique(&emails(&mail.cc)), "{:?}", mail.cc);
    for id in mail
        .message_id
        .iter()
        .chain(&mail.in_reply_to)
        .chain(&mail.references)
    {
        check_id(id);
    }
    assert!(unique(&mail.references), "{:?}", mail.references);
    assert_eq!(mail.subject.trim(), mail.subject);
    let job = job_id(mail);
    let hash = job.strip_prefix(JOB_ID_PREFIX).expect("job id prefix");
    assert!(hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(job, job_id(mail), "the job id is deterministic");
    assert_eq!(content_identity(mail).len(), 64);
    let json = serde_json::to_string(mail).expect("a mail serializes");
    let back: InboundEmail = serde_json::from_str(&json).expect("and reads back");
    assert_eq!(&back, mail);
    let stripped = strip_quoted_reply(&mail.text);
    assert!(stripped.len() <= mail.text.len(), "{stripped:?}");
}
