//! An incremental, synchronous line splitter for newline-delimited streams
//! (root-int/1 NDJSON tool answers, the LLM's Server-Sent Events). Each
//! byte is searched for `\n` once — the scan offset survives between pushes
//! — so a long line arriving in many small chunks costs linear time, and
//! the per-line and whole-stream caps bound memory. Pure: no I/O, no async,
//! so any chunking of the same bytes can be fed to it (tests, fuzzing).

/// A cap that the stream broke.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// A line (terminated or not) is longer than the per-line cap.
    #[error("a line is over {max} bytes")]
    LineTooLong {
        /// The per-line cap.
        max: usize,
    },
    /// More bytes than the whole-stream cap.
    #[error("the stream is over {max} bytes")]
    StreamTooLong {
        /// The whole-stream cap.
        max: u64,
    },
}

/// Splits a byte stream into lines (without the `\n`; a `\r` before it is
/// left for the caller). After an error the splitter should be dropped.
#[derive(Debug)]
pub struct LineSplitter {
    /// The current, unterminated line (never contains `\n`).
    buf: Vec<u8>,
    total: u64,
    max_line: usize,
    max_total: u64,
}

impl LineSplitter {
    /// A splitter refusing lines over `max_line` bytes and streams over
    /// `max_total` bytes.
    pub fn new(max_line: usize, max_total: u64) -> Self {
        LineSplitter {
            buf: Vec::new(),
            total: 0,
            max_line,
            max_total,
        }
    }

    /// Bytes received so far.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Feed the next bytes; returns the lines they complete, in order.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Vec<u8>>, LineError> {
        self.total = self.total.saturating_add(bytes.len() as u64);
        if self.total > self.max_total {
            return Err(LineError::StreamTooLong {
                max: self.max_total,
            });
        }
        let mut lines = Vec::new();
        let mut rest = bytes;
        // Only the new bytes are searched: `buf` holds no `\n`.
        while let Some(nl) = rest.iter().position(|b| *b == b'\n') {
            if self.buf.len() + nl > self.max_line {
                return Err(LineError::LineTooLong { max: self.max_line });
            }
            let mut line = std::mem::take(&mut self.buf);
            line.extend_from_slice(&rest[..nl]);
            lines.push(line);
            rest = &rest[nl + 1..];
        }
        if self.buf.len() + rest.len() > self.max_line {
            return Err(LineError::LineTooLong { max: self.max_line });
        }
        self.buf.extend_from_slice(rest);
        Ok(lines)
    }

    /// The end of the stream: the last line when it had no `\n` (`None`
    /// when the stream ended on a newline or was empty).
    pub fn finish(&mut self) -> Option<Vec<u8>> {
        (!self.buf.is_empty()).then(|| std::mem::take(&mut self.buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_all(
        chunks: &[&[u8]],
        max_line: usize,
        max_total: u64,
    ) -> Result<Vec<Vec<u8>>, LineError> {
        let mut s = LineSplitter::new(max_line, max_total);
        let mut out = Vec::new();
        for c in chunks {
            out.extend(s.push(c)?);
        }
        out.extend(s.finish());
        Ok(out)
    }

    #[test]
    fn every_chunking_of_a_stream_gives_the_same_lines() {
        let stream: &[u8] =
            b"{\"type\":\"progress\",\"message\":\"a\"}\n\n\r\n{\"type\":\"result\",\"success\":true}\nlast";
        let whole = split_all(&[stream], 64, 1 << 20).unwrap();
        assert_eq!(
            whole,
            vec![
                b"{\"type\":\"progress\",\"message\":\"a\"}".to_vec(),
                Vec::new(),
                b"\r".to_vec(),
                b"{\"type\":\"result\",\"success\":true}".to_vec(),
                b"last".to_vec(),
            ]
        );
        // Every split into two and three pieces, and byte by byte.
        for i in 0..=stream.len() {
            assert_eq!(
                split_all(&[&stream[..i], &stream[i..]], 64, 1 << 20).unwrap(),
                whole,
                "split at {i}"
            );
            for j in i..=stream.len() {
                let three = split_all(&[&stream[..i], &stream[i..j], &stream[j..]], 64, 1 << 20);
                assert_eq!(three.unwrap(), whole, "split at {i}, {j}");
            }
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(split_all(&bytes, 64, 1 << 20).unwrap(), whole);
    }

    #[test]
    fn a_line_over_the_cap_fails_whether_terminated_or_still_arriving() {
        let max = 8;
        assert_eq!(
            split_all(&[b"12345678\n"], max, 100).unwrap(),
            vec![b"12345678".to_vec()]
        );
        assert_eq!(
            split_all(&[b"123456789\n"], max, 100),
            Err(LineError::LineTooLong { max })
        );
        // Still arriving: refused before the newline comes.
        let mut s = LineSplitter::new(max, 100);
        assert_eq!(s.push(b"12345").unwrap(), Vec::<Vec<u8>>::new());
        assert_eq!(s.push(b"6789"), Err(LineError::LineTooLong { max }));
        // Split across chunks with the newline later.
        assert_eq!(
            split_all(&[b"ok\n1234", b"56789", b"\n"], max, 100),
            Err(LineError::LineTooLong { max })
        );
    }

    #[test]
    fn a_stream_over_the_total_cap_fails_even_with_short_lines() {
        let mut s = LineSplitter::new(8, 20);
        assert_eq!(s.push(b"a\nb\nc\nd\ne\n").unwrap().len(), 5);
        assert_eq!(s.push(b"f\ng\nh\ni\nj\n").unwrap().len(), 5);
        assert_eq!(s.total(), 20);
        assert_eq!(s.push(b"k"), Err(LineError::StreamTooLong { max: 20 }));
    }

    #[test]
    fn a_long_line_in_tiny_chunks_is_linear() {
        // 1 MiB in 1-byte pushes would take minutes if every push rescanned
        // the buffer from the start; here it is a few million steps.
        let mut s = LineSplitter::new(1 << 20, 2 << 20);
        let byte = [b'x'];
        for _ in 0..(1 << 20) {
            assert!(s.push(&byte).unwrap().is_empty());
        }
        let lines = s.push(b"\n").unwrap();
        assert_eq!(lines[0].len(), 1 << 20);
    }
}
