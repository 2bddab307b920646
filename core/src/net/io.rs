//! hyper's `rt::Read`/`rt::Write` over a glommio TCP stream (which speaks futures-io),
//! for the server's connections and for the provider layer's outbound ones. On a
//! served connection every byte moved marks it active, which the idle sweep reads;
//! an outbound connection tracks nothing ([`Untracked`]), its pool watches it.
//!
//! This is the one module of the server with `unsafe`: handing hyper's uninitialised
//! read buffer to futures-io's `poll_read`, which takes `&mut [u8]`.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_lite::{AsyncRead, AsyncWrite};
use glommio::net::TcpStream;
use hyper::rt::{Read, ReadBufCursor, Write};

/// What a connection's traffic marks as active.
pub trait Activity {
    /// Bytes were received.
    fn touch(&self);
    /// Bytes were sent.
    fn sent(&self) {
        self.touch()
    }
}

/// A shared tracker (the server's per-connection state, held by its connection list too).
impl<A: Activity + ?Sized> Activity for std::rc::Rc<A> {
    #[inline]
    fn touch(&self) {
        (**self).touch()
    }

    #[inline]
    fn sent(&self) {
        (**self).sent()
    }
}

/// No activity tracking: an outbound connection.
pub struct Untracked;

impl Activity for Untracked {
    #[inline]
    fn touch(&self) {}
}

pub struct GlommioIo<A: Activity> {
    stream: TcpStream,
    state: A,
}

impl<A: Activity> GlommioIo<A> {
    pub fn new(stream: TcpStream, state: A) -> GlommioIo<A> {
        GlommioIo { stream, state }
    }
}

impl<A: Activity + Unpin> Read for GlommioIo<A> {
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

impl<A: Activity + Unpin> Write for GlommioIo<A> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.stream).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.state.sent();
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
