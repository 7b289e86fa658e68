//! Delivery of Slack answers (§8.2): Markdown as mrkdwn Block Kit messages
//! (a status line replaced by the first one), the status line's progress
//! updates, and tools' images uploaded into the thread.

use tokio::sync::mpsc;

use super::{PROGRESS_MIN_INTERVAL, SlackChannel};
use crate::slack::{OutgoingMessage, SlackApi, SlackError, files, mrkdwn};

impl SlackChannel {
    /// Tools' images into the reply's thread, stitched into one grid (§8.2).
    /// Best effort: the text answer is already delivered.
    pub(super) async fn upload_images(
        &self,
        api: &SlackApi,
        channel: &str,
        thread_ts: Option<&str>,
        images: &[crate::agent::ToolImage],
    ) {
        let inputs: Vec<files::ImageIn> = images
            .iter()
            .map(|i| files::ImageIn {
                name: i.name.clone(),
                base64: i.base64.clone(),
            })
            .collect();
        if inputs.len() > files::MAX_GRID_IMAGES {
            tracing::warn!(
                count = inputs.len(),
                "more tool images than a grid holds; extra dropped"
            );
        }
        let filename = match (inputs.len(), inputs.first().and_then(|i| i.name.clone())) {
            (1, Some(name)) => format!("{}.png", name.trim_end_matches(".png")),
            _ => "images.png".to_string(),
        };
        let png = match tokio::task::spawn_blocking(move || files::stitch_png(&inputs)).await {
            Ok(Ok(png)) => png,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "tool images not uploaded");
                return;
            }
            Err(e) => {
                tracing::error!(error = %e, "image stitching panicked");
                return;
            }
        };
        let http = self.workspaces.http().clone();
        if let Err(e) = files::upload_png(api, &http, channel, thread_ts, &filename, png).await {
            tracing::warn!(error = %e, "tool images not uploaded to slack");
        }
    }
    /// Deliver `markdown` with its first message replacing the status line
    /// `status_ts` (falling back to a new post when the update fails).
    pub(super) async fn deliver_into(
        &self,
        api: &SlackApi,
        channel: &str,
        status_ts: &str,
        thread_ts: Option<String>,
        markdown: &str,
    ) -> Result<(), SlackError> {
        let mut messages = mrkdwn::to_messages(&mrkdwn::to_mrkdwn(markdown)).into_iter();
        let Some(first) = messages.next() else {
            return Ok(());
        };
        if let Err(e) = api
            .update_message(channel, status_ts, &first.text, &first.blocks)
            .await
        {
            tracing::warn!(error = %e, "slack status line not replaced; posting the answer");
            api.post_message(&OutgoingMessage {
                channel: channel.to_string(),
                text: first.text,
                blocks: first.blocks,
                thread_ts: thread_ts.clone(),
            })
            .await?;
        }
        for m in messages {
            api.post_message(&OutgoingMessage {
                channel: channel.to_string(),
                text: m.text,
                blocks: m.blocks,
                thread_ts: thread_ts.clone(),
            })
            .await?;
        }
        Ok(())
    }
    /// Post `markdown` as mrkdwn Block Kit messages (split at 3000-char
    /// sections / 50 blocks), each with its plain-text fallback.
    pub async fn deliver(
        &self,
        api: &SlackApi,
        channel: &str,
        thread_ts: Option<String>,
        markdown: &str,
    ) -> Result<(), SlackError> {
        let messages = mrkdwn::to_messages(&mrkdwn::to_mrkdwn(markdown));
        for m in messages {
            api.post_message(&OutgoingMessage {
                channel: channel.to_string(),
                text: m.text,
                blocks: m.blocks,
                thread_ts: thread_ts.clone(),
            })
            .await?;
        }
        Ok(())
    }
}

/// Progress messages buffered for the status line (older ones are dropped
/// by the sender when it is full: only the latest matters).
pub const PROGRESS_BUFFER: usize = 16;

/// Show each progress message on the status line `ts` (italic, at most one
/// update per [`PROGRESS_MIN_INTERVAL`]), until every sender is dropped.
pub(super) async fn forward_progress(
    api: SlackApi,
    channel: String,
    ts: String,
    mut rx: mpsc::Receiver<String>,
) {
    let mut last: Option<tokio::time::Instant> = None;
    while let Some(msg) = rx.recv().await {
        if last.is_some_and(|t| t.elapsed() < PROGRESS_MIN_INTERVAL) {
            continue;
        }
        let line = mrkdwn::escape(msg.trim().trim_end_matches('…'));
        let text = format!("_{line}…_");
        match api.update_message(&channel, &ts, &text, &[]).await {
            Ok(()) => last = Some(tokio::time::Instant::now()),
            Err(e) => tracing::debug!(error = %e, "slack progress update failed"),
        }
    }
}
