//! The one stream reader: SSE bytes of one step, as they arrive, to chunk ops and the step's
//! end. The HTTP provider and `ag-log ingest` both read through it, so a stream is judged the
//! same way whether it came over the network or on stdin.

use super::{reducer, ChunkOp, Reducer, SseEvent, SseParser, StepEnd, StreamError};
use crate::fold::Dialect;

/// Reads one step's stream; feed it bytes with [`StreamReader::push`], then call
/// [`StreamReader::finish`] at the end of the bytes (or once [`StreamReader::is_done`]).
pub(crate) struct StreamReader {
    parser: SseParser,
    reducer: Box<dyn Reducer + Send>,
}

impl StreamReader {
    pub(crate) fn new(dialect: Dialect) -> StreamReader {
        StreamReader {
            parser: SseParser::new(),
            reducer: reducer(dialect),
        }
    }

    /// Consumes `bytes`, handing each op to `sink`. Returns whether they made progress: an op
    /// (content, a tool-call fragment) or a usage report. Keep-alives — SSE comments and
    /// Anthropic's `ping` — are not progress, so a server that only pings still times out.
    /// Stops reading at the stop event; later bytes are ignored.
    pub(crate) fn push(
        &mut self,
        bytes: &[u8],
        sink: &mut dyn FnMut(ChunkOp),
    ) -> Result<bool, StreamError> {
        let mut progress = false;
        if self.reducer.is_done() {
            return Ok(false);
        }
        for ev in self.parser.push(bytes) {
            progress |= self.event(&ev, sink)?;
            // The stop event ends the step; a server that keeps the connection open
            // afterwards must not hold it up.
            if self.reducer.is_done() {
                break;
            }
        }
        Ok(progress)
    }

    /// Whether the stop event has been read.
    pub(crate) fn is_done(&self) -> bool {
        self.reducer.is_done()
    }

    /// The end of the bytes: how the step ended, or why the stream is not a finished answer.
    pub(crate) fn finish(mut self, sink: &mut dyn FnMut(ChunkOp)) -> Result<StepEnd, StreamError> {
        if !self.reducer.is_done() {
            if let Some(ev) = self.parser.flush() {
                self.event(&ev, sink)?;
            }
        }
        self.reducer.finish()
    }

    fn event(&mut self, ev: &SseEvent, sink: &mut dyn FnMut(ChunkOp)) -> Result<bool, StreamError> {
        let ops = self.reducer.event(ev)?;
        let progress = !ops.is_empty() || carries_usage(ev);
        for op in ops {
            sink(op);
        }
        Ok(progress)
    }
}

/// An event with a usage report (Anthropic's `message_start`/`message_delta`, OpenAI's last
/// chunk). Parsed only when the text mentions usage, which deltas rarely do.
fn carries_usage(ev: &SseEvent) -> bool {
    if !ev.data.contains("\"usage\"") {
        return false;
    }
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&ev.data) else {
        return false;
    };
    let usage = |v: &serde_json::Value| v.get("usage").is_some_and(|u| u.is_object());
    usage(&v) || v.get("message").is_some_and(usage)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::StopReason;

    const ANTHROPIC: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"c\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n\
event: ping\ndata: {\"type\": \"ping\"}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n\
event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n\
event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

    #[test]
    fn pings_and_comments_are_not_progress_but_usage_and_content_are() {
        let mut r = StreamReader::new(Dialect::Anthropic);
        let mut ops = Vec::new();
        let mut sink = |op| ops.push(op);
        let events: Vec<&str> = ANTHROPIC.split_inclusive("\n\n").collect();
        assert!(r.push(events[0].as_bytes(), &mut sink).unwrap(), "usage");
        assert!(!r.push(events[1].as_bytes(), &mut sink).unwrap(), "ping");
        assert!(!r.push(b": keep-alive\n\n", &mut sink).unwrap(), "comment");
        for e in &events[2..] {
            r.push(e.as_bytes(), &mut sink).unwrap();
        }
        assert!(r.is_done());
        // Bytes after the stop event are not read.
        assert!(!r.push(b"data: junk\n\n", &mut sink).unwrap());
        let end = r.finish(&mut sink).unwrap();
        assert_eq!(end.stop_reason, StopReason::EndTurn);
        assert_eq!(end.usage.output, 2);
        assert_eq!(ops.len(), 3, "{ops:?}");
    }

    /// The four keep-alive forms seen in the wild: an SSE comment (OpenAI's `: ping`), an
    /// empty chunk, a chunk with an empty delta (also with empty content), Anthropic's `ping`.
    #[test]
    fn each_keep_alive_form_is_not_progress() {
        let mut r = StreamReader::new(Dialect::OpenAi);
        let mut ops = Vec::new();
        let mut sink = |op| ops.push(op);
        let chunk = |v: &str| {
            format!("data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",{v}}}\n\n")
        };
        let keep_alives = [
            ": ping\n\n".to_string(),
            chunk("\"choices\":[]"),
            chunk("\"choices\":[],\"usage\":null"),
            chunk("\"choices\":[{\"index\":0,\"delta\":{}}]"),
            chunk("\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"}}]"),
            chunk(
                "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]",
            ),
        ];
        for k in &keep_alives {
            for _ in 0..3 {
                assert!(!r.push(k.as_bytes(), &mut sink).unwrap(), "{k:?}");
            }
        }
        let text = chunk("\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]");
        assert!(r.push(text.as_bytes(), &mut sink).unwrap(), "content");
        let mut a = StreamReader::new(Dialect::Anthropic);
        let ping = ANTHROPIC.split_inclusive("\n\n").nth(1).unwrap();
        assert!(ping.contains("ping"));
        assert!(
            !a.push(ping.as_bytes(), &mut sink).unwrap(),
            "anthropic ping"
        );
    }

    #[test]
    fn a_stream_cut_short_is_truncated_whatever_the_split() {
        let cut = &ANTHROPIC[..ANTHROPIC.len() - 40];
        for at in [1, 7, 100, cut.len() - 1] {
            let mut r = StreamReader::new(Dialect::Anthropic);
            let mut sink = |_| {};
            r.push(&cut.as_bytes()[..at], &mut sink).unwrap();
            r.push(&cut.as_bytes()[at..], &mut sink).unwrap();
            assert!(r.finish(&mut sink).is_err(), "split at {at}");
        }
    }
}
