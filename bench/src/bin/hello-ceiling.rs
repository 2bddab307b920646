//! `hello-ceiling`: the HTTP/1.1 ceiling reference. A may_minihttp server that answers every
//! request with `200` and `Hello, World!` (TechEmpower plaintext), the fastest HTTP/1.1
//! server known for this machine. Quarry's own HTTP layer is measured against it in the
//! same run (`bench/ceiling.sh`).
//!
//! ```text
//! taskset -c 0 hello-ceiling --listen 127.0.0.1:8081 --workers 1
//! ```

use std::io;
use std::net::SocketAddr;

use anyhow::{Context, Result};
use clap::Parser;
use may_minihttp::{HttpServer, HttpService, Request, Response};

#[derive(Parser, Debug)]
#[command(name = "hello-ceiling", version, about = "may_minihttp hello-world: the HTTP ceiling reference")]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8081")]
    listen: SocketAddr,
    /// may coroutine worker threads.
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// Let may pin its workers to CPUs itself (off: leave placement to `taskset`).
    #[arg(long)]
    may_pin: bool,
    /// Answer with a body of this many bytes instead of `Hello, World!`: the cost of a
    /// response's size alone (a default search answer is ~20 kB).
    #[arg(long)]
    body_bytes: Option<usize>,
}

#[derive(Clone)]
struct Hello(&'static str);

impl HttpService for Hello {
    fn call(&mut self, _req: Request, rsp: &mut Response) -> io::Result<()> {
        rsp.header("Content-Type: text/plain").body(self.0);
        Ok(())
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    may::config().set_workers(args.workers).set_worker_pin(args.may_pin);
    let body: &'static str = match args.body_bytes {
        Some(n) => "x".repeat(n).leak(),
        None => "Hello, World!",
    };
    let server = HttpServer(Hello(body)).start(args.listen).with_context(|| format!("listening on {}", args.listen))?;
    eprintln!("hello-ceiling: listening on http://{} with {} worker(s)", args.listen, args.workers);
    server.join().map_err(|_| anyhow::anyhow!("the server coroutine panicked"))?;
    Ok(())
}
