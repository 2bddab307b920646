use super::*;

/// What a connection does: append what the socket gave, let the parser consume, keep the rest.
/// Returns every completed response as (status, keep_alive, bytes it took).
fn drive(parser: &mut ResponseParser, reads: &[&[u8]]) -> Vec<(u16, bool, usize)> {
    let mut buf = Vec::new();
    let mut done = Vec::new();
    let mut taken = 0;
    for read in reads {
        buf.extend_from_slice(read);
        loop {
            match parser.advance(&buf).unwrap() {
                Progress::NeedMore { consumed } => {
                    taken += consumed;
                    buf.drain(..consumed);
                    break;
                }
                Progress::Complete { consumed, status, keep_alive } => {
                    done.push((status, keep_alive, taken + consumed));
                    taken = 0;
                    buf.drain(..consumed);
                }
            }
        }
    }
    done
}

/// Splits `bytes` into reads of `size` bytes.
fn reads_of(bytes: &[u8], size: usize) -> Vec<&[u8]> {
    bytes.chunks(size).collect()
}

const HELLO: &[u8] = b"HTTP/1.1 200 OK\r\nServer: M\r\nContent-Length: 13\r\n\r\nHello, World!";
const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
    7\r\nHello, \r\n6;name=ext\r\nWorld!\r\n0\r\nX-Trailer: t\r\n\r\n";

#[test]
fn content_length_in_one_read() {
    let got = drive(&mut ResponseParser::default(), &[HELLO]);
    assert_eq!(got, [(200, true, HELLO.len())]);
}

#[test]
fn content_length_byte_by_byte() {
    let got = drive(&mut ResponseParser::default(), &reads_of(HELLO, 1));
    assert_eq!(got, [(200, true, HELLO.len())]);
}

#[test]
fn content_length_body_is_consumed_as_it_arrives() {
    let mut p = ResponseParser::default();
    let head_len = HELLO.len() - 13;
    assert_eq!(p.advance(&HELLO[..head_len + 5]), Ok(Progress::NeedMore { consumed: head_len + 5 }));
    assert!(!p.at_start());
    assert_eq!(p.advance(&HELLO[head_len + 5..]), Ok(Progress::Complete { consumed: 8, status: 200, keep_alive: true }));
    assert!(p.at_start());
}

#[test]
fn incomplete_head_consumes_nothing() {
    let mut p = ResponseParser::default();
    assert_eq!(p.advance(&HELLO[..20]), Ok(Progress::NeedMore { consumed: 0 }));
    assert!(p.at_start());
}

#[test]
fn chunked_with_extensions_and_trailers() {
    let got = drive(&mut ResponseParser::default(), &[CHUNKED]);
    assert_eq!(got, [(200, true, CHUNKED.len())]);
}

#[test]
fn chunked_at_every_split_point() {
    for size in 1..CHUNKED.len() {
        let got = drive(&mut ResponseParser::default(), &reads_of(CHUNKED, size));
        assert_eq!(got, [(200, true, CHUNKED.len())], "reads of {size} bytes");
    }
    for split in 1..CHUNKED.len() {
        let got = drive(&mut ResponseParser::default(), &[&CHUNKED[..split], &CHUNKED[split..]]);
        assert_eq!(got, [(200, true, CHUNKED.len())], "split at {split}");
    }
}

#[test]
fn pipelined_responses_in_one_read_leave_the_rest() {
    let mut both = HELLO.to_vec();
    both.extend_from_slice(CHUNKED);
    both.extend_from_slice(&HELLO[..10]);
    let mut p = ResponseParser::default();
    let first = p.advance(&both).unwrap();
    assert_eq!(first, Progress::Complete { consumed: HELLO.len(), status: 200, keep_alive: true });
    let second = p.advance(&both[HELLO.len()..]).unwrap();
    assert_eq!(second, Progress::Complete { consumed: CHUNKED.len(), status: 200, keep_alive: true });
    let third = p.advance(&both[HELLO.len() + CHUNKED.len()..]).unwrap();
    assert_eq!(third, Progress::NeedMore { consumed: 0 });
}

#[test]
fn pipelined_responses_across_odd_reads() {
    let mut stream = Vec::new();
    for _ in 0..3 {
        stream.extend_from_slice(HELLO);
        stream.extend_from_slice(CHUNKED);
    }
    for size in [1, 2, 3, 7, 50, 64, 1000] {
        let got = drive(&mut ResponseParser::default(), &reads_of(&stream, size));
        let lens: Vec<usize> = got.iter().map(|r| r.2).collect();
        assert_eq!(lens, [HELLO.len(), CHUNKED.len()].repeat(3), "reads of {size}");
    }
}

#[test]
fn status_codes_and_connection_semantics() {
    let cases: &[(&[u8], u16, bool)] = &[
        (b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", 404, true),
        (b"HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx", 503, false),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", 200, false),
        (b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok", 200, true),
        (b"HTTP/1.1 204 No Content\r\n\r\n", 204, true),
        (b"HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n", 304, true),
        (b"HTTP/1.1 200 OK\ncontent-length: 1\n\nx", 200, true),
    ];
    for (bytes, status, keep_alive) in cases {
        let got = drive(&mut ResponseParser::default(), &[bytes]);
        assert_eq!(got, [(*status, *keep_alive, bytes.len())], "{}", String::from_utf8_lossy(bytes));
    }
}

#[test]
fn interim_100_continue_is_skipped() {
    let bytes = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(drive(&mut ResponseParser::default(), &[bytes]), [(201, true, bytes.len())]);
}

#[test]
fn head_response_has_no_body() {
    let bytes = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n";
    assert_eq!(drive(&mut ResponseParser::new(false), &[bytes]), [(200, true, bytes.len())]);
}

#[test]
fn body_until_close_completes_on_eof() {
    let mut p = ResponseParser::default();
    let bytes = b"HTTP/1.0 200 OK\r\n\r\nstreamed body";
    assert_eq!(p.advance(bytes), Ok(Progress::NeedMore { consumed: bytes.len() }));
    assert_eq!(p.finish_on_eof(), Ok(Progress::Complete { consumed: 0, status: 200, keep_alive: false }));
}

#[test]
fn eof_mid_response_is_truncated() {
    let mut p = ResponseParser::default();
    p.advance(&HELLO[..HELLO.len() - 3]).unwrap();
    assert_eq!(p.finish_on_eof(), Err(ParseError::Truncated));
}

#[test]
fn malformed_input_is_an_error() {
    let cases: &[(&[u8], ParseError)] = &[
        (b"SSH-2.0-OpenSSH\r\n\r\n", ParseError::StatusLine),
        (b"HTTP/1.1 2x0 OK\r\n\r\n", ParseError::StatusLine),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", ParseError::HeaderLine),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", ParseError::ContentLength),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n", ParseError::ContentLength),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", ParseError::ChunkSize),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nxyz", ParseError::ChunkEnd),
    ];
    for (bytes, want) in cases {
        let got = ResponseParser::default().advance(bytes);
        assert_eq!(got, Err(want.clone()), "{}", String::from_utf8_lossy(bytes));
    }
}

#[test]
fn endless_head_is_refused() {
    let mut bytes = b"HTTP/1.1 200 OK\r\n".to_vec();
    while bytes.len() <= MAX_HEAD + 100 {
        bytes.extend_from_slice(b"X-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
    }
    assert_eq!(ResponseParser::default().advance(&bytes), Err(ParseError::TooLong));
}
