//! Target `postmark`: Postmark's inbound webhook JSON as a BYO tenant's
//! forwarder posts it to `/channels/email/inbound/{token}`, read the way
//! the route reads it (bytes → JSON → [`InboundEmail::from_postmark`]).
//!
//! Invariants checked: an accepted mail keeps every promise of
//! `mail::check`; anything but a JSON object is refused as
//! [`InboundError::Json`].

use root::email::{InboundEmail, InboundError};
use serde_json::Value;

/// Parse one webhook body.
pub fn run(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    match InboundEmail::from_postmark(&value) {
        Ok(mail) => crate::mail::check(&mail),
        Err(InboundError::Json(_)) | Err(InboundError::NoSender) => {}
        Err(e) => panic!("Postmark JSON refused as {e:?}"),
    }
    if !value.is_object() {
        assert!(matches!(
            InboundEmail::from_postmark(&value),
            Err(InboundError::Json(_))
        ));
    }
}
