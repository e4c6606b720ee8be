//! Server-sent events (the `text/event-stream` format, as the HTML standard
//! defines it) for MCP's Streamable HTTP transport: reading the events an
//! upstream server sends, and writing the ones gavel sends its client.
//! Only `data` matters to MCP (one JSON-RPC message per event); `event`
//! names other than `message` are skipped, `id` and `retry` are kept for
//! nobody (gavel does not resume streams).

use std::io::BufRead;

/// The most bytes one event may carry before the stream is refused.
pub const MAX_EVENT_BYTES: usize = 64 * 1024 * 1024;

/// Why a stream could not be read on.
#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("cannot read the event stream: {0}")]
    Read(#[from] std::io::Error),
    #[error("an event of the stream is too large")]
    TooLarge,
}

/// Reads the `data` of each `message` event of a stream, in order.
pub struct Events<R> {
    reader: R,
    done: bool,
    limit: usize,
}

impl<R: BufRead> Events<R> {
    pub fn new(reader: R) -> Self {
        Self {
            reader,
            done: false,
            limit: MAX_EVENT_BYTES,
        }
    }

    /// At most `limit` bytes per event.
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }
}

impl<R: BufRead> Iterator for Events<R> {
    type Item = Result<String, SseError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mut data: Option<String> = None;
        let mut event = String::new();
        let mut size = 0usize;
        loop {
            let mut line = Vec::new();
            match self.reader.read_until(b'\n', &mut line) {
                Err(err) => {
                    self.done = true;
                    return Some(Err(err.into()));
                }
                // The stream ended: an event not closed by a blank line is
                // dropped, as the standard says.
                Ok(0) => {
                    self.done = true;
                    return None;
                }
                Ok(n) => size += n,
            }
            if size > self.limit {
                self.done = true;
                return Some(Err(SseError::TooLarge));
            }
            while line.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line);
            if line.is_empty() {
                match data.take() {
                    Some(data) if event.is_empty() || event == "message" => return Some(Ok(data)),
                    _ => {
                        event.clear();
                        size = 0;
                        continue;
                    }
                }
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                None => (line.as_ref(), ""),
            };
            match field {
                "data" => match &mut data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => data = Some(value.to_owned()),
                },
                "event" => event = value.to_owned(),
                _ => {}
            }
        }
    }
}

/// One `message` event carrying `data` (each of its lines a `data` line).
pub fn event(data: &str) -> String {
    let mut out = String::from("event: message\n");
    for line in data.split('\n') {
        out.push_str("data: ");
        out.push_str(line.strip_suffix('\r').unwrap_or(line));
        out.push('\n');
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(text: &str) -> Vec<String> {
        Events::new(text.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap()
    }

    #[test]
    fn data_lines_make_one_message_per_blank_line() {
        let stream =
            "event: message\nid: 1\ndata: {\"a\":1}\n\n: a comment\ndata:{\"b\"\ndata: :2}\n\n";
        assert_eq!(events(stream), ["{\"a\":1}", "{\"b\"\n:2}"]);
    }

    #[test]
    fn crlf_other_events_and_an_unfinished_event() {
        let stream = "event: ping\r\ndata: x\r\n\r\nretry: 5\r\ndata: y\r\n\r\ndata: cut";
        assert_eq!(events(stream), ["y"]);
        assert!(events("").is_empty());
        assert!(events("\n\n\n").is_empty());
    }

    #[test]
    fn what_is_written_reads_back() {
        for data in ["{}", "a\nb", "", "x\r\ny"] {
            let read = events(&event(data));
            assert_eq!(read, [data.replace('\r', "")], "{data:?}");
        }
    }

    #[test]
    fn an_oversized_event_is_an_error_not_a_hang() {
        let big = format!("data: {}\n", "x".repeat(200));
        let mut events = Events::new(big.as_bytes()).with_limit(100);
        assert!(matches!(events.next(), Some(Err(SseError::TooLarge))));
        assert!(events.next().is_none());
    }
}
