//! Target `primitive_event`: the hosted provider's `email.received` event
//! (§8.3) read the way `/channels/email/inbound/platform` reads it after
//! the signature verified — bytes → [`EmailReceivedEvent::parse`] → the
//! raw MIME when included and matching its digest → [`InboundEmail::from_primitive`]
//! (the MIME parse, each missing field taken from the event's JSON).
//!
//! Invariants checked: included raw MIME is returned only when it decodes
//! (and matches a given SHA-256); an accepted mail keeps every promise of
//! `mail::check`; a refusal is only "no sender".

use root::email::primitive::EmailReceivedEvent;
use root::email::{InboundEmail, InboundError};
use sha2::{Digest, Sha256};

/// Parse one delivery body.
pub fn run(data: &[u8]) {
    let Ok(event) = EmailReceivedEvent::parse(data) else {
        return;
    };
    let raw = &event.email.content.raw;
    if let Some(bytes) = event.raw_mime() {
        assert!(raw.included);
        if let Some(want) = raw.sha256.as_deref() {
            assert!(
                hex::encode(Sha256::digest(&bytes)).eq_ignore_ascii_case(want.trim()),
                "raw MIME returned despite a digest mismatch"
            );
        }
    }
    match InboundEmail::from_primitive(&event) {
        Ok(mail) => {
            crate::mail::check(&mail);
            let id = &event.email.id;
            assert_eq!(
                mail.provider_message_id.as_deref(),
                (!id.is_empty()).then_some(id.as_str())
            );
        }
        Err(InboundError::NoSender) => {}
        Err(e) => panic!("email.received refused as {e:?}"),
    }
}
