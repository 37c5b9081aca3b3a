//! Multipath QUIC download client: connects from the first local address,
//! adds one path per further local address, requests `--size` bytes, checks
//! every received byte against the pattern and prints one JSON line: bytes,
//! whether they verified, the download time [s] (request sent to last byte)
//! and the bytes received per path. Exit status 0 iff the download completed
//! and verified.
//!
//! falcon-quic-client --connect 127.0.0.1:4433 --local 127.0.0.2,127.0.0.3
//!     --size 2000000 [--output FILE] [--timeout-s 60] [--scheduler minrtt] [--cc bbr]
//!     [--log debug] [--log-file LOG]   (tquic's log; FALCON_QUIC_LOG, FALCON_QUIC_LOG_FILE)

use std::cell::RefCell;
use std::fs::File;
use std::io::Write;
use std::net::IpAddr;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;
use std::time::Instant;

use bytes::Bytes;
use falcon_quic::*;
use tquic::Config;
use tquic::Connection;
use tquic::Endpoint;
use tquic::TlsConfig;
use tquic::TransportHandler;

/// The download's progress, shared by the handler and the main loop.
#[derive(Default)]
struct Download {
    size: u64,
    received: u64,
    mismatch: Option<u64>,
    requested_at: Option<Instant>,
    finished_at: Option<Instant>,
    closed: bool,
    path_bytes: Vec<(SocketAddr, u64)>,
    error: Option<String>,
}

struct Handler {
    dl: Rc<RefCell<Download>>,
    locals: Vec<SocketAddr>,
    remote: SocketAddr,
    output: Option<File>,
    buf: Vec<u8>,
}

impl TransportHandler for Handler {
    fn on_conn_created(&mut self, _conn: &mut Connection) {}

    fn on_conn_established(&mut self, conn: &mut Connection) {
        for local in &self.locals[1..] {
            if let Err(e) = conn.add_path(*local, self.remote) {
                eprintln!("falcon-quic-client: add path {local}: {e:?}");
            }
        }
        let mut dl = self.dl.borrow_mut();
        let request = Bytes::from(dl.size.to_string());
        match conn.stream_write(0, request, true) {
            Ok(_) => dl.requested_at = Some(Instant::now()),
            Err(e) => dl.error = Some(format!("request: {e:?}")),
        }
    }

    fn on_conn_closed(&mut self, conn: &mut Connection) {
        let mut dl = self.dl.borrow_mut();
        dl.closed = true;
        if dl.finished_at.is_none() && dl.error.is_none() {
            dl.error = Some(format!(
                "connection closed before the download completed (local error {:?}, peer error {:?})",
                conn.local_error(),
                conn.peer_error()
            ));
        }
    }

    fn on_stream_created(&mut self, _conn: &mut Connection, _stream: u64) {}

    fn on_stream_readable(&mut self, conn: &mut Connection, stream: u64) {
        let mut dl = self.dl.borrow_mut();
        while let Ok((n, fin)) = conn.stream_read(stream, &mut self.buf) {
            let data = &self.buf[..n];
            if dl.mismatch.is_none() {
                if let Some(k) = (0..n).find(|&k| data[k] != pattern_byte(dl.received + k as u64)) {
                    dl.mismatch = Some(dl.received + k as u64);
                }
            }
            if let Some(f) = self.output.as_mut() {
                if let Err(e) = f.write_all(data) {
                    dl.error = Some(format!("output: {e}"));
                }
            }
            dl.received += n as u64;
            if fin {
                dl.finished_at = Some(Instant::now());
                let paths: Vec<_> = conn.paths_iter().collect();
                for p in paths {
                    if let Ok(s) = conn.get_path_stats(p.local, p.remote) {
                        dl.path_bytes.push((p.local, s.recv_bytes));
                    }
                }
                let _ = conn.close(true, 0, b"done");
                break;
            }
            if n == 0 {
                break;
            }
        }
    }

    fn on_stream_writable(&mut self, conn: &mut Connection, stream: u64) {
        let _ = conn.stream_want_write(stream, false);
    }

    fn on_stream_closed(&mut self, _conn: &mut Connection, _stream: u64) {}
    fn on_new_token(&mut self, _conn: &mut Connection, _token: Vec<u8>) {}
}

fn report(dl: &Download) -> String {
    let seconds = match (dl.requested_at, dl.finished_at) {
        (Some(a), Some(b)) => format!("{}", (b - a).as_secs_f64()),
        _ => "null".into(),
    };
    let paths: Vec<String> = dl
        .path_bytes
        .iter()
        .map(|(a, b)| format!("\"{a}\":{b}"))
        .collect();
    format!(
        "{{\"bytes\":{},\"size\":{},\"verified\":{},\"seconds\":{},\"path_recv_bytes\":{{{}}}}}",
        dl.received,
        dl.size,
        dl.received == dl.size && dl.mismatch.is_none() && dl.finished_at.is_some(),
        seconds,
        paths.join(",")
    )
}

fn run() -> Result<bool, String> {
    let args = Args::parse(&[])?;
    init_log(&args, "client")?;
    let remote: SocketAddr = args.parse_or("connect", "127.0.0.1:4433".parse().unwrap())?;
    let size: u64 = args.parse_or("size", 2_000_000)?;
    let timeout = Duration::from_secs_f64(args.parse_or("timeout-s", 60.0)?);
    let locals: Vec<SocketAddr> = args
        .get("local")
        .unwrap_or("127.0.0.2,127.0.0.3")
        .split(',')
        .map(|s| {
            s.parse::<IpAddr>()
                .map(|ip| SocketAddr::new(ip, 0))
                .map_err(|_| format!("--local: not an IP address: {s:?}"))
        })
        .collect::<Result<_, _>>()?;
    let output = match args.get("output") {
        Some(p) => Some(File::create(p).map_err(|e| format!("--output {p}: {e}"))?),
        None => None,
    };
    let mut config = Config::new().map_err(|e| format!("config: {e:?}"))?;
    config.enable_multipath(true);
    config.set_multipath_algorithm(scheduler(args.get("scheduler").unwrap_or("minrtt"))?);
    config.set_active_connection_id_limit(8);
    config.set_max_idle_timeout(args.parse_or("idle-timeout-ms", 5000)?);
    if let Some(cc) = args.get("cc") {
        config.set_congestion_control_algorithm(
            cc.parse()
                .map_err(|_| format!("--cc: unknown algorithm {cc:?}"))?,
        );
    }
    let mut tls = TlsConfig::new_client_config(vec![ALPN.to_vec()], false)
        .map_err(|e| format!("tls: {e:?}"))?;
    tls.set_verify(false); // the server's certificate is self-signed
    config.set_tls_config(tls);

    let mut poll = mio::Poll::new().map_err(|e| e.to_string())?;
    let sockets = Rc::new(
        Sockets::bind(&locals, poll.registry()).map_err(|e| format!("bind {locals:?}: {e}"))?,
    );
    let bound = sockets.local_addrs();
    let dl = Rc::new(RefCell::new(Download {
        size,
        ..Default::default()
    }));
    let handler = Handler {
        dl: dl.clone(),
        locals: bound.clone(),
        remote,
        output,
        buf: vec![0u8; 1 << 16],
    };
    let mut endpoint = Endpoint::new(Box::new(config), false, Box::new(handler), sockets.clone());
    endpoint
        .connect(bound[0], remote, Some("falcon"), None, None, None)
        .map_err(|e| format!("connect: {e:?}"))?;
    let deadline = Instant::now() + timeout;
    let mut events = mio::Events::with_capacity(1024);
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        endpoint
            .process_connections()
            .map_err(|e| format!("{e:?}"))?;
        if dl.borrow().closed {
            break;
        }
        let now = Instant::now();
        if now >= deadline {
            dl.borrow_mut().error = Some(format!("timeout after {timeout:?}"));
            break;
        }
        let wait = endpoint
            .timeout()
            .map_or(deadline - now, |t| t.min(deadline - now));
        poll.poll(&mut events, Some(wait))
            .map_err(|e| e.to_string())?;
        sockets.deliver(&events, &mut buf, &mut endpoint)?;
    }
    let dl = dl.borrow();
    println!("{}", report(&dl));
    if let Some(e) = &dl.error {
        eprintln!("error: {e}");
    }
    Ok(dl.error.is_none() && dl.received == size && dl.mismatch.is_none())
}

fn main() {
    let result = run();
    flush_log();
    match result {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => fail(&e),
    }
}
