//! Server-sent events (the WHATWG `text/event-stream` format), parsed as the body arrives
//! in pieces of any size: lines end in CRLF, LF or CR (a CRLF may be split across two
//! reads); the `data` lines of one event join with "\n"; a line starting with `:` is a
//! comment; a blank line ends the event. An event without a `data` field is not
//! dispatched, and an unfinished event at the end of the body is dropped, as browsers do.

/// The largest line or event data kept: a bigger one fails the stream instead of
/// growing the generator's memory without bound.
pub const MAX_EVENT: usize = 16 << 20;

/// One dispatched event.
pub struct Event<'a> {
    /// The `event` field, "message" when absent.
    pub event: &'a str,
    pub data: &'a [u8],
}

#[derive(Default)]
pub struct Parser {
    /// The start of a line whose end has not arrived yet.
    line: Vec<u8>,
    data: Vec<u8>,
    /// A `data` field was seen: `data:` alone is an event with empty data.
    has_data: bool,
    event: String,
    /// The last piece ended in CR: an LF starting the next one ends the same line.
    after_cr: bool,
}

impl Parser {
    /// Parses `chunk`, calling `on_event` for each complete event; `Ok(false)` when
    /// `on_event` returned false (the caller wants no more).
    pub fn feed(
        &mut self,
        mut chunk: &[u8],
        on_event: &mut dyn FnMut(Event<'_>) -> bool,
    ) -> Result<bool, String> {
        if std::mem::take(&mut self.after_cr) && chunk.first() == Some(&b'\n') {
            chunk = &chunk[1..];
        }
        while let Some(i) = chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
            let mut rest = &chunk[i + 1..];
            if chunk[i] == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
            let go_on = if self.line.is_empty() {
                self.line_done(&chunk[..i], on_event)?
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&chunk[..i]);
                let r = self.line_done(&line, on_event);
                line.clear();
                self.line = line; // keeps its allocation for the next split line
                r?
            };
            if !go_on {
                return Ok(false);
            }
            chunk = rest;
        }
        if self.line.len() + chunk.len() > MAX_EVENT {
            return Err(format!("an event line longer than {MAX_EVENT} bytes"));
        }
        self.line.extend_from_slice(chunk);
        Ok(true)
    }

    fn line_done(
        &mut self,
        line: &[u8],
        on_event: &mut dyn FnMut(Event<'_>) -> bool,
    ) -> Result<bool, String> {
        if line.is_empty() {
            let go_on = !self.has_data
                || on_event(Event {
                    event: if self.event.is_empty() {
                        "message"
                    } else {
                        &self.event
                    },
                    data: &self.data,
                });
            self.data.clear();
            self.has_data = false;
            self.event.clear();
            return Ok(go_on);
        }
        if line[0] == b':' {
            return Ok(true); // a comment (servers send them to keep the connection up)
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(c) => {
                let v = &line[c + 1..];
                (&line[..c], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.data.len() + value.len() + 1 > MAX_EVENT {
                    return Err(format!("an event's data longer than {MAX_EVENT} bytes"));
                }
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            _ => {} // id, retry and unknown fields say nothing about pieces
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events of `body` fed `step` bytes at a time, as (event, data).
    fn events(body: &[u8], step: usize) -> Vec<(String, String)> {
        let mut p = Parser::default();
        let mut out = Vec::new();
        for piece in body.chunks(step) {
            let go_on = p
                .feed(piece, &mut |e| {
                    out.push((
                        e.event.to_string(),
                        String::from_utf8_lossy(e.data).into_owned(),
                    ));
                    true
                })
                .unwrap();
            assert!(go_on);
        }
        out
    }

    #[test]
    fn fields_comments_and_line_ends_in_pieces_of_any_size() {
        let body = b": keep-alive\n\ndata: {\"a\":1}\n\n\
            event: update\r\ndata: line one\r\ndata:line two\r\n\r\n\
            id: 7\rdata:  two spaces\r\rdata\n\nretry: 10\nx\n\ndata: cut";
        let want = vec![
            ("message".to_string(), "{\"a\":1}".to_string()),
            ("update".to_string(), "line one\nline two".to_string()),
            ("message".to_string(), " two spaces".to_string()),
            ("message".to_string(), String::new()),
        ];
        for step in [1, 2, 3, 7, body.len()] {
            assert_eq!(events(body, step), want, "fed {step} bytes at a time");
        }
    }

    /// The standard's algorithm on a whole body, written the plain way: a reference for
    /// the incremental parser.
    fn reference(body: &[u8]) -> Vec<(String, String)> {
        let text = String::from_utf8_lossy(body)
            .replace("\r\n", "\n")
            .replace('\r', "\n");
        let mut lines: Vec<&str> = text.split('\n').collect();
        lines.pop(); // the unfinished last line
        let (mut out, mut data, mut event) = (Vec::new(), None::<String>, String::new());
        for line in lines {
            if line.is_empty() {
                if let Some(d) = data.take() {
                    let name = if event.is_empty() { "message" } else { &event };
                    out.push((name.to_string(), d));
                }
                event.clear();
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "data" => match &mut data {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(value);
                    }
                    None => data = Some(value.to_string()),
                },
                "event" => event = value.to_string(),
                _ => {}
            }
        }
        out
    }

    #[test]
    fn random_bodies_in_random_pieces_match_the_reference() {
        let tokens: [&[u8]; 12] = [
            b"data: x",
            b"data:",
            b"data:  y",
            b"event: e",
            b"event:",
            b": c",
            b"id: 1",
            b"zz",
            b"\n",
            b"\r\n",
            b"\r",
            b"\n\n",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..500 {
            let body: Vec<u8> = (0..next(40))
                .flat_map(|_| tokens[next(tokens.len())].iter().copied())
                .collect();
            let mut p = Parser::default();
            let mut got = Vec::new();
            let mut rest = &body[..];
            while !rest.is_empty() {
                let (piece, after) = rest.split_at(1 + next(rest.len()));
                p.feed(piece, &mut |e| {
                    got.push((e.event.to_string(), String::from_utf8_lossy(e.data).into()));
                    true
                })
                .unwrap();
                rest = after;
            }
            assert_eq!(
                got,
                reference(&body),
                "{:?}",
                String::from_utf8_lossy(&body)
            );
        }
    }

    #[test]
    fn the_callback_can_stop_and_sizes_are_bounded() {
        let mut p = Parser::default();
        let mut seen = 0;
        let go_on = p
            .feed(b"data: 1\n\ndata: 2\n\ndata: 3\n\n", &mut |_| {
                seen += 1;
                seen < 2
            })
            .unwrap();
        assert!(!go_on);
        assert_eq!(seen, 2);
        let mut p = Parser::default();
        let big = vec![b'x'; MAX_EVENT];
        let e = p
            .feed(b"data: ", &mut |_| true)
            .and_then(|_| p.feed(&big, &mut |_| true));
        assert!(e.unwrap_err().contains("longer than"));
    }
}
