//! Images from tools into the Slack thread (§8.2 "outbound images upload
//! into the thread (grid-stitch multiple images)"): several images become
//! one PNG grid, then Slack's external upload — `files.getUploadURLExternal`
//! (filename, exact length) → POST the bytes to the `upload_url` Slack
//! returned → `files.completeUploadExternal` (`files` as a JSON-array
//! string, `channel_id`, `thread_ts`).
//!
//! Decoding runs on the blocking pool under size limits: a tool's image is
//! untrusted bytes (no decompression bombs, no unbounded canvases).

use std::io::Cursor;

use base64::Engine as _;
use image::{DynamicImage, GenericImageView, ImageFormat, ImageReader, RgbaImage};
use serde_json::json;

use super::api::{Params, SlackApi, SlackError};

/// Images stitched into one grid at most (the rest are dropped, logged).
pub const MAX_GRID_IMAGES: usize = 9;
/// Largest decoded image side accepted, in pixels.
pub const MAX_IMAGE_SIDE: u32 = 8192;
/// Largest allocation the decoder may make.
pub const MAX_DECODE_BYTES: u64 = 256 * 1024 * 1024;
/// One grid cell's side: images are scaled down to fit it.
pub const GRID_CELL: u32 = 800;
/// Space between cells, in pixels (white).
pub const GRID_GAP: u32 = 8;

/// One image a tool produced (`ToolImage`'s payload).
#[derive(Clone, Debug, PartialEq)]
pub struct ImageIn {
    /// File name, when the tool gave one.
    pub name: Option<String>,
    /// Base64 bytes.
    pub base64: String,
}

/// Why images could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// Not base64 / not an image / over the limits.
    #[error("unusable image: {0}")]
    Invalid(String),
}

fn decode(img: &ImageIn) -> Result<DynamicImage, ImageError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(img.base64.trim())
        .map_err(|e| ImageError::Invalid(format!("base64: {e}")))?;
    let mut reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| ImageError::Invalid(e.to_string()))?;
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_IMAGE_SIDE);
    limits.max_image_height = Some(MAX_IMAGE_SIDE);
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    reader.limits(limits);
    reader
        .decode()
        .map_err(|e| ImageError::Invalid(e.to_string()))
}

/// The images as one PNG: a single image as is (re-encoded), several in a
/// grid of `ceil(√n)` columns, each scaled to fit a [`GRID_CELL`] square.
/// Blocking (decode, resize, encode): call it off the async threads.
pub fn stitch_png(images: &[ImageIn]) -> Result<Vec<u8>, ImageError> {
    let decoded: Vec<DynamicImage> = images
        .iter()
        .take(MAX_GRID_IMAGES)
        .map(decode)
        .collect::<Result<_, _>>()?;
    if decoded.is_empty() {
        return Err(ImageError::Invalid("no image".into()));
    }
    let out = if decoded.len() == 1 {
        decoded.into_iter().next().unwrap_or_default()
    } else {
        let n = decoded.len() as u32;
        let cols = (n as f64).sqrt().ceil() as u32;
        let rows = n.div_ceil(cols);
        let width = cols * GRID_CELL + (cols - 1) * GRID_GAP;
        let height = rows * GRID_CELL + (rows - 1) * GRID_GAP;
        let mut canvas = RgbaImage::from_pixel(width, height, image::Rgba([255, 255, 255, 255]));
        for (i, img) in decoded.iter().enumerate() {
            let i = i as u32;
            let (w, h) = img.dimensions();
            let cell = if w > GRID_CELL || h > GRID_CELL {
                img.thumbnail(GRID_CELL, GRID_CELL)
            } else {
                img.clone()
            };
            let (cw, ch) = cell.dimensions();
            let x = (i % cols) * (GRID_CELL + GRID_GAP) + (GRID_CELL - cw) / 2;
            let y = (i / cols) * (GRID_CELL + GRID_GAP) + (GRID_CELL - ch) / 2;
            image::imageops::overlay(&mut canvas, &cell.to_rgba8(), x.into(), y.into());
        }
        DynamicImage::ImageRgba8(canvas)
    };
    let mut png = Vec::new();
    out.write_to(&mut Cursor::new(&mut png), ImageFormat::Png)
        .map_err(|e| ImageError::Invalid(e.to_string()))?;
    Ok(png)
}

/// Upload `png` into `channel` (threaded under `thread_ts`) as `filename`.
pub async fn upload_png(
    api: &SlackApi,
    http: &reqwest::Client,
    channel: &str,
    thread_ts: Option<&str>,
    filename: &str,
    png: Vec<u8>,
) -> Result<String, SlackError> {
    let length = png.len().to_string();
    let ticket = api
        .call(
            "files.getUploadURLExternal",
            Params::form([("filename", filename), ("length", &length)]),
        )
        .await?;
    let (Some(upload_url), Some(file_id)) =
        (ticket["upload_url"].as_str(), ticket["file_id"].as_str())
    else {
        return Err(SlackError::InvalidResponse {
            method: "files.getUploadURLExternal".into(),
            message: "no upload_url / file_id".into(),
        });
    };
    let sent = http
        .post(upload_url)
        .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
        .body(png)
        .send()
        .await
        .map_err(|e| SlackError::Transport {
            method: "upload".into(),
            message: crate::outbound::error_chain(&e),
        })?;
    if !sent.status().is_success() {
        return Err(SlackError::Http {
            method: "upload".into(),
            status: sent.status().as_u16(),
        });
    }
    let files = json!([{"id": file_id, "title": filename}]).to_string();
    let mut params = vec![
        ("files".to_string(), files),
        ("channel_id".to_string(), channel.to_string()),
    ];
    if let Some(ts) = thread_ts {
        params.push(("thread_ts".to_string(), ts.to_string()));
    }
    api.call("files.completeUploadExternal", Params::Form(params))
        .await?;
    Ok(file_id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(w: u32, h: u32, rgb: [u8; 3]) -> ImageIn {
        let img = RgbaImage::from_pixel(w, h, image::Rgba([rgb[0], rgb[1], rgb[2], 255]));
        let mut bytes = Vec::new();
        DynamicImage::ImageRgba8(img)
            .write_to(&mut Cursor::new(&mut bytes), ImageFormat::Png)
            .unwrap();
        ImageIn {
            name: None,
            base64: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }

    fn dims(bytes: &[u8]) -> (u32, u32) {
        image::load_from_memory(bytes).unwrap().dimensions()
    }

    #[test]
    fn one_image_stays_itself_and_several_make_a_grid() {
        assert_eq!(
            dims(&stitch_png(&[png(40, 30, [255, 0, 0])]).unwrap()),
            (40, 30)
        );
        // 3 images → 2 columns × 2 rows of 800 px cells, 8 px gaps.
        let three = [
            png(40, 30, [255, 0, 0]),
            png(2000, 100, [0, 255, 0]),
            png(10, 10, [0, 0, 255]),
        ];
        assert_eq!(dims(&stitch_png(&three).unwrap()), (1608, 1608));
        // 5 images → 3 columns × 2 rows.
        let five: Vec<ImageIn> = (0..5).map(|_| png(20, 20, [9, 9, 9])).collect();
        assert_eq!(dims(&stitch_png(&five).unwrap()), (2416, 1608));
    }

    #[test]
    fn garbage_and_oversized_images_are_refused() {
        let junk = ImageIn {
            name: None,
            base64: "bm90IGFuIGltYWdl".into(),
        };
        assert!(stitch_png(&[junk]).is_err());
        let not_b64 = ImageIn {
            name: None,
            base64: "%%%".into(),
        };
        assert!(stitch_png(&[not_b64]).is_err());
        assert!(stitch_png(&[png(MAX_IMAGE_SIDE + 1, 1, [0, 0, 0])]).is_err());
        assert!(stitch_png(&[]).is_err());
    }
}
