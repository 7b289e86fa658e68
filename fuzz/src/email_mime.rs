//! Target `email_mime`: raw RFC 5322 mail as a BYO tenant's forwarder
//! posts it to `/channels/email/inbound/{token}` (and as a Primitive event
//! carries it), read by [`InboundEmail::from_mime`].
//!
//! Invariants checked: an accepted mail keeps every promise of
//! `mail::check`; a refusal is one of the documented errors and
//! an empty body is always [`InboundError::Empty`].

use root::email::{InboundEmail, InboundError};

/// Parse one raw message.
pub fn run(data: &[u8]) {
    match InboundEmail::from_mime(data) {
        Ok(mail) => crate::mail::check(&mail),
        Err(InboundError::Json(e)) => panic!("MIME refused as JSON: {e}"),
        Err(_) => {}
    }
    if data.iter().all(u8::is_ascii_whitespace) {
        assert_eq!(InboundEmail::from_mime(data), Err(InboundError::Empty));
    }
}
