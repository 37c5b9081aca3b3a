//! Multipath QUIC download server: answers each request (a size in ASCII
//! decimal) with that many pattern bytes, scheduling packets over the paths
//! with tquic's minRTT, round robin or redundant scheduler or the FALCON ONNX
//! model (`--scheduler falcon --model M.onnx [--decision-log L.jsonl]`, or
//! FALCON_MODEL / FALCON_DECISION_LOG).
//!
//! falcon-quic-server [--listen 127.0.0.1:4434] [--scheduler minrtt] [--paths 2]
//!     [--model M.onnx] [--decision-log L.jsonl] [--cc bbr] [--cert C --key K] [--once]
//!     [--log debug] [--log-file LOG]   (tquic's log; FALCON_QUIC_LOG, FALCON_QUIC_LOG_FILE)

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use falcon_quic::*;
use tquic::Config;
use tquic::Connection;
use tquic::Endpoint;
use tquic::MultipathAlgorithm;
use tquic::TlsConfig;
use tquic::TransportHandler;

/// A response in progress.
#[derive(Default)]
struct Response {
    request: Vec<u8>,
    size: Option<u64>,
    written: u64,
}

struct Handler {
    responses: HashMap<(u64, u64), Response>,
    transfer_size: Arc<AtomicU64>,
    closed: Rc<RefCell<u64>>,
    buf: Vec<u8>,
}

impl Handler {
    fn write_more(&mut self, conn: &mut Connection, stream: u64) {
        let key = (conn.index().unwrap_or(0), stream);
        let Some(r) = self.responses.get_mut(&key) else {
            return;
        };
        let Some(size) = r.size else { return };
        loop {
            let n = (size - r.written).min(self.buf.len() as u64) as usize;
            fill_pattern(r.written, &mut self.buf[..n]);
            let fin = r.written + n as u64 == size;
            match conn.stream_write(stream, Bytes::copy_from_slice(&self.buf[..n]), fin) {
                Ok(w) => {
                    r.written += w as u64;
                    if fin && w == n {
                        let _ = conn.stream_want_write(stream, false);
                        return;
                    }
                    if w < n {
                        let _ = conn.stream_want_write(stream, true);
                        return;
                    }
                }
                Err(_) => {
                    let _ = conn.stream_want_write(stream, true);
                    return;
                }
            }
        }
    }
}

impl TransportHandler for Handler {
    fn on_conn_created(&mut self, _conn: &mut Connection) {}
    fn on_conn_established(&mut self, _conn: &mut Connection) {}
    fn on_conn_closed(&mut self, conn: &mut Connection) {
        let index = conn.index().unwrap_or(0);
        self.responses.retain(|k, _| k.0 != index);
        *self.closed.borrow_mut() += 1;
    }
    fn on_stream_created(&mut self, _conn: &mut Connection, _stream: u64) {}
    fn on_stream_readable(&mut self, conn: &mut Connection, stream: u64) {
        let key = (conn.index().unwrap_or(0), stream);
        let mut chunk = [0u8; 256];
        while let Ok((n, fin)) = conn.stream_read(stream, &mut chunk) {
            let r = self.responses.entry(key).or_default();
            r.request.extend_from_slice(&chunk[..n]);
            if fin {
                let size = std::str::from_utf8(&r.request)
                    .ok()
                    .and_then(|s| s.trim().parse::<u64>().ok());
                match size {
                    Some(size) => {
                        r.size = Some(size);
                        self.transfer_size.store(size, Ordering::Relaxed);
                        self.write_more(conn, stream);
                    }
                    None => {
                        let _ = conn.close(true, 1, b"bad request");
                    }
                }
                break;
            }
            if n == 0 {
                break;
            }
        }
    }
    fn on_stream_writable(&mut self, conn: &mut Connection, stream: u64) {
        self.write_more(conn, stream);
    }
    fn on_stream_closed(&mut self, _conn: &mut Connection, _stream: u64) {}
    fn on_new_token(&mut self, _conn: &mut Connection, _token: Vec<u8>) {}
}

/// `name` in the folder of this executable (where `make transport` puts the
/// self-signed test certificate).
fn beside_exe(name: &str) -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join(name)))
        .unwrap_or_else(|| PathBuf::from(name))
        .display()
        .to_string()
}

fn run() -> Result<(), String> {
    let args = Args::parse(&["once"])?;
    init_log(&args, "server")?;
    let listen: SocketAddr = args.parse_or("listen", "127.0.0.1:4434".parse().unwrap())?;
    let algorithm = scheduler(args.get("scheduler").unwrap_or("minrtt"))?;
    let n_paths: usize = args.parse_or("paths", 2)?;
    let transfer_size = Arc::new(AtomicU64::new(0));
    if algorithm == MultipathAlgorithm::External {
        let model = args
            .get("model")
            .map(String::from)
            .or_else(|| std::env::var(falcon_sched::MODEL_ENV).ok())
            .ok_or("--scheduler falcon needs --model or FALCON_MODEL")?;
        let log = args
            .get("decision-log")
            .map(String::from)
            .or_else(|| std::env::var(falcon_sched::LOG_ENV).ok())
            .filter(|s| !s.is_empty());
        falcon_sched::install(
            PathBuf::from(model),
            n_paths,
            log.map(PathBuf::from),
            transfer_size.clone(),
        )?;
    }
    let mut config = Config::new().map_err(|e| format!("config: {e:?}"))?;
    config.enable_multipath(true);
    config.set_multipath_algorithm(algorithm);
    config.set_active_connection_id_limit(8);
    config.set_max_idle_timeout(args.parse_or("idle-timeout-ms", 5000)?);
    if let Some(cc) = args.get("cc") {
        config.set_congestion_control_algorithm(
            cc.parse()
                .map_err(|_| format!("--cc: unknown algorithm {cc:?}"))?,
        );
    }
    let cert = args
        .get("cert")
        .map(String::from)
        .unwrap_or_else(|| beside_exe("falcon-cert.pem"));
    let key = args
        .get("key")
        .map(String::from)
        .unwrap_or_else(|| beside_exe("falcon-key.pem"));
    let tls = TlsConfig::new_server_config(&cert, &key, vec![ALPN.to_vec()], false)
        .map_err(|e| format!("certificate {cert} / key {key}: {e:?}"))?;
    config.set_tls_config(tls);

    let mut poll = mio::Poll::new().map_err(|e| e.to_string())?;
    let sockets = Rc::new(
        Sockets::bind(&[listen], poll.registry()).map_err(|e| format!("bind {listen}: {e}"))?,
    );
    let closed = Rc::new(RefCell::new(0u64));
    let handler = Handler {
        responses: HashMap::new(),
        transfer_size,
        closed: closed.clone(),
        buf: vec![0u8; 1 << 16],
    };
    let mut endpoint = Endpoint::new(Box::new(config), true, Box::new(handler), sockets.clone());
    eprintln!("falcon-quic-server: listening on {listen}");
    let mut events = mio::Events::with_capacity(1024);
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let once = args.flag("once");
    loop {
        endpoint
            .process_connections()
            .map_err(|e| format!("{e:?}"))?;
        if once && *closed.borrow() > 0 {
            break;
        }
        poll.poll(&mut events, endpoint.timeout())
            .map_err(|e| e.to_string())?;
        sockets.deliver(&events, &mut buf, &mut endpoint)?;
    }
    // dropping the endpoint drops the connections and flushes the decision log
    drop(endpoint);
    flush_log();
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        fail(&e);
    }
}
