//! hyper's `rt::Read`/`rt::Write` over a glommio TCP stream (which speaks futures-io).
//! Every byte moved marks the connection active, which the idle sweep reads.
//!
//! This is the one module of the server with `unsafe`: handing hyper's uninitialised
//! read buffer to futures-io's `poll_read`, which takes `&mut [u8]`.

use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use futures_lite::{AsyncRead, AsyncWrite};
use glommio::net::TcpStream;
use hyper::rt::{Read, ReadBufCursor, Write};

use super::conn::ConnState;

pub struct GlommioIo {
    stream: TcpStream,
    state: Rc<ConnState>,
}

impl GlommioIo {
    pub fn new(stream: TcpStream, state: Rc<ConnState>) -> GlommioIo {
        GlommioIo { stream, state }
    }
}

impl Read for GlommioIo {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, mut buf: ReadBufCursor<'_>) -> Poll<io::Result<()>> {
        // SAFETY: glommio's `poll_read` only writes into the slice (it copies received
        // bytes in, or hands it to recv(2)); it never reads it, so exposing the
        // uninitialised tail as `&mut [u8]` is sound. `advance(n)` then marks exactly the
        // `n` bytes it reported written as initialised.
        let n = unsafe {
            let uninit = buf.as_mut();
            let slice = &mut *(uninit as *mut [std::mem::MaybeUninit<u8>] as *mut [u8]);
            match Pin::new(&mut self.stream).poll_read(cx, slice) {
                Poll::Ready(Ok(n)) => n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        };
        // SAFETY: `poll_read` initialised the first `n` bytes.
        unsafe { buf.advance(n) };
        self.state.touch();
        Poll::Ready(Ok(()))
    }
}

impl Write for GlommioIo {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.stream).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.state.touch();
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_close(cx)
    }
}
