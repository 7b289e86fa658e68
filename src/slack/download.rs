//! Downloading a file members shared (§8.2 "files/images get LLM
//! summaries"): `GET url_private` with the bot token as a bearer header,
//! through the same client as every Slack call (timeouts, no redirects).
//!
//! Two ways Slack says "no" without an error status are handled here: an
//! answer of `200 text/html` is Slack's sign-in page — the token was not
//! accepted for that file — and is [`SlackError::SignInPage`], never a
//! file; and a file over the caller's cap is refused by its
//! `Content-Length` before any of the body is read, or as soon as the
//! stream passes the cap ([`SlackError::FileTooLarge`]).

use super::api::{SlackApi, SlackError, status_error, transport_error};
use crate::outbound::{BodyError, read_capped};

/// The largest shared file Root downloads (images and text alike).
pub const MAX_DOWNLOAD_BYTES: usize = 10 * 1024 * 1024;

/// What [`SlackError`]s of a download name as their method.
const METHOD: &str = "files.download";

/// A downloaded file.
#[derive(Clone, Debug, PartialEq)]
pub struct DownloadedFile {
    /// The bytes, at most the cap asked for.
    pub bytes: Vec<u8>,
    /// The answer's `Content-Type` without parameters, lower-cased.
    pub content_type: Option<String>,
}

/// `Content-Type` without parameters, lower-cased.
fn media_type(resp: &reqwest::Response) -> Option<String> {
    resp.headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .filter(|v| !v.is_empty())
}

impl SlackApi {
    /// `GET url_private` with the bot token; at most `max_bytes` read.
    /// Retries 429 / 5xx / network failures like [`SlackApi::call`].
    pub async fn download_file(
        &self,
        url_private: &str,
        max_bytes: usize,
    ) -> Result<DownloadedFile, SlackError> {
        self.retrying(METHOD, || self.download_once(url_private, max_bytes))
            .await
    }

    async fn download_once(
        &self,
        url_private: &str,
        max_bytes: usize,
    ) -> Result<DownloadedFile, SlackError> {
        let resp = self
            .http
            .get(url_private)
            .bearer_auth(self.token.expose())
            .send()
            .await
            .map_err(|e| transport_error(METHOD, &e))?;
        if let Some(e) = status_error(METHOD, &resp) {
            return Err(e);
        }
        let content_type = media_type(&resp);
        if content_type.as_deref() == Some("text/html") {
            return Err(SlackError::SignInPage);
        }
        let bytes = read_capped(resp, max_bytes).await.map_err(|e| match e {
            BodyError::TooLarge { .. } => SlackError::FileTooLarge { max_bytes },
            other => SlackError::Transport {
                method: METHOD.into(),
                message: other.to_string(),
            },
        })?;
        Ok(DownloadedFile {
            bytes,
            content_type,
        })
    }
}
