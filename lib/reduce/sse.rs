//! Server-sent events framing: the `text/event-stream` rules (WHATWG HTML §9.2.6) that both
//! providers stream with, applied incrementally because bytes arrive split at arbitrary points.

/// One dispatched event. `event` is the `event:` field (None when the stream gave none, as
/// OpenAI-style streams do); `data` is every `data:` line of the event joined with `\n`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SseEvent {
    pub(crate) event: Option<String>,
    pub(crate) data: String,
}

/// An incremental SSE parser: feed bytes as they arrive, get complete events.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    /// Bytes of the line not yet terminated. Kept as bytes, not text, so a UTF-8 character
    /// split across two reads is decoded whole.
    line: Vec<u8>,
    /// The last read ended on `\r`: a `\n` opening the next read is the rest of that CRLF,
    /// not an empty line (which would dispatch an event early).
    after_cr: bool,
    /// A byte-order mark is only stripped from the very first line of the stream.
    seen_line: bool,
    event: Option<String>,
    data: String,
    /// `data:` with an empty value still makes an event (with empty data), so presence is
    /// tracked apart from the text.
    has_data: bool,
}

impl SseParser {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Consumes `bytes` and returns the events they complete, in order.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        let mut i = 0;
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if bytes[0] == b'\n' {
                i = 1;
            }
        }
        while i < bytes.len() {
            let Some(off) = bytes[i..].iter().position(|&b| b == b'\n' || b == b'\r') else {
                self.line.extend_from_slice(&bytes[i..]);
                break;
            };
            let end = i + off;
            self.line.extend_from_slice(&bytes[i..end]);
            let line = std::mem::take(&mut self.line);
            self.line_done(&line, &mut out);
            i = end + 1;
            if bytes[end] == b'\r' {
                match bytes.get(i) {
                    Some(b'\n') => i += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        out
    }

    /// True while bytes or fields of an event not yet dispatched are held: at end of stream
    /// this means the server stopped mid-event.
    #[cfg(test)]
    pub(crate) fn has_partial(&self) -> bool {
        !self.line.is_empty() || self.has_data || self.event.is_some()
    }

    /// End of stream: dispatches the pending event as if a blank line had followed. The
    /// standard says to drop it, but some proxies close without the final blank line, and
    /// whether that counts is the caller's call (the reducers still demand their stop event).
    pub(crate) fn flush(&mut self) -> Option<SseEvent> {
        let mut out = Vec::new();
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.line_done(&line, &mut out);
        }
        self.line_done(b"", &mut out);
        self.after_cr = false;
        out.pop()
    }

    fn line_done(&mut self, mut line: &[u8], out: &mut Vec<SseEvent>) {
        if !self.seen_line {
            self.seen_line = true;
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if line.is_empty() {
            let event = self.event.take();
            if std::mem::take(&mut self.has_data) {
                out.push(SseEvent {
                    event,
                    data: std::mem::take(&mut self.data),
                });
            }
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(p) => {
                let v = &line[p + 1..];
                (&line[..p], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"event" => {
                let name = String::from_utf8_lossy(value);
                self.event = (!name.is_empty()).then(|| name.into_owned());
            }
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            // `id` and `retry` drive browser reconnection, which a model stream never uses.
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
        }
    }

    const SAMPLE: &str = "event: message_start\r\n\
data: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-sonnet-4-5\"}}\r\n\
\r\n\
: keep-alive comment\n\
event: ping\n\
data: {\"type\": \"ping\"}\n\
\n\
data: first line\n\
data:second line\n\
data: \n\
\n\
event:content_block_delta\r\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"h\u{e9}llo \u{1F600}\"}}\r\
\r\
data: [DONE]\n\n";

    fn sample_events() -> Vec<SseEvent> {
        vec![
            ev(Some("message_start"), r#"{"type":"message_start","message":{"model":"claude-sonnet-4-5"}}"#),
            ev(Some("ping"), r#"{"type": "ping"}"#),
            ev(None, "first line\nsecond line\n"),
            ev(
                Some("content_block_delta"),
                "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"h\u{e9}llo \u{1F600}\"}}",
            ),
            ev(None, "[DONE]"),
        ]
    }

    #[test]
    fn whole_sample() {
        let mut p = SseParser::new();
        assert_eq!(p.push(SAMPLE.as_bytes()), sample_events());
        assert!(!p.has_partial());
    }

    #[test]
    fn split_at_every_position() {
        let bytes = SAMPLE.as_bytes();
        for cut in 0..=bytes.len() {
            let mut p = SseParser::new();
            let mut got = p.push(&bytes[..cut]);
            got.extend(p.push(&bytes[cut..]));
            assert_eq!(got, sample_events(), "split at byte {cut}");
            assert!(!p.has_partial());
        }
    }

    #[test]
    fn byte_by_byte() {
        let mut p = SseParser::new();
        let mut got = Vec::new();
        for b in SAMPLE.as_bytes() {
            got.extend(p.push(std::slice::from_ref(b)));
            // An empty read must not disturb a pending CR.
            got.extend(p.push(&[]));
        }
        assert_eq!(got, sample_events());
    }

    #[test]
    fn crlf_split_between_reads_is_one_line_break() {
        let mut p = SseParser::new();
        assert!(p.push(b"data: a\r").is_empty());
        // Were the `\n` taken as an empty line, "a" would be dispatched here.
        assert!(p.push(b"\ndata: b\r").is_empty());
        assert_eq!(p.push(b"\n\r\n"), vec![ev(None, "a\nb")]);
    }

    #[test]
    fn comments_and_unknown_fields_are_ignored() {
        let mut p = SseParser::new();
        let got =
            p.push(b": OPENROUTER PROCESSING\n\n:\nid: 7\nretry: 1000\nfoo: bar\ndata: x\n\n");
        assert_eq!(got, vec![ev(None, "x")]);
    }

    #[test]
    fn event_without_data_is_not_dispatched_and_its_name_does_not_leak() {
        let mut p = SseParser::new();
        let got = p.push(b"event: ping\n\ndata: {}\n\n");
        assert_eq!(got, vec![ev(None, "{}")]);
    }

    #[test]
    fn field_without_colon_and_value_without_space() {
        let mut p = SseParser::new();
        // A bare `data` line is a data field with an empty value.
        assert_eq!(p.push(b"data\ndata:x\n\n"), vec![ev(None, "\nx")]);
        // Only one leading space is stripped.
        assert_eq!(p.push(b"data:  two\n\n"), vec![ev(None, " two")]);
    }

    #[test]
    fn bom_is_stripped_once() {
        let mut p = SseParser::new();
        let mut got = p.push(b"\xEF\xBB");
        got.extend(p.push(b"\xBFdata: x\n\n"));
        assert_eq!(got, vec![ev(None, "x")]);
    }

    #[test]
    fn partial_and_flush() {
        let mut p = SseParser::new();
        assert!(!p.has_partial());
        assert!(p
            .push(b"event: message_stop\ndata: {\"type\":\"message_stop\"}")
            .is_empty());
        assert!(p.has_partial());
        assert_eq!(
            p.flush(),
            Some(ev(Some("message_stop"), r#"{"type":"message_stop"}"#))
        );
        assert!(!p.has_partial());
        assert_eq!(p.flush(), None);

        let mut p = SseParser::new();
        p.push(b"data: a\n");
        assert!(
            p.has_partial(),
            "a data line without its blank line is still pending"
        );
    }
}
