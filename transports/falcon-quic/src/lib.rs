//! Shared parts of the download server and client: UDP sockets for the
//! tquic endpoint, the transfer's byte pattern, scheduler names and a small
//! command-line parser.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::net::UdpSocket as StdUdpSocket;

use mio::net::UdpSocket;
use mio::Interest;
use mio::Registry;
use mio::Token;
use tquic::MultipathAlgorithm;
use tquic::PacketInfo;
use tquic::PacketSendHandler;

/// ALPN of the download protocol: the client sends the size in ASCII
/// decimal and a FIN, the server answers with that many pattern bytes.
pub const ALPN: &[u8] = b"falcon-dl";

/// Largest UDP datagram read [bytes].
pub const MAX_DATAGRAM: usize = 65536;

/// Byte `i` of every transfer: a pattern whose period is far longer than a
/// packet, so misplaced data is detected.
pub fn pattern_byte(i: u64) -> u8 {
    (i.wrapping_add(i / 251).wrapping_add(i / 65521) % 256) as u8
}

/// Fill `buf` with the pattern from offset `start`.
pub fn fill_pattern(start: u64, buf: &mut [u8]) {
    for (k, b) in buf.iter_mut().enumerate() {
        *b = pattern_byte(start + k as u64);
    }
}

/// The scheduler named on the command line: tquic's `minrtt`, `roundrobin`
/// or `redundant`, or `falcon` (the ONNX model, tquic's External scheduler).
pub fn scheduler(name: &str) -> Result<MultipathAlgorithm, String> {
    match name.to_ascii_lowercase().as_str() {
        "falcon" => Ok(MultipathAlgorithm::External),
        "minrtt" | "roundrobin" | "redundant" => name
            .parse()
            .map_err(|_| format!("unknown scheduler {name:?}")),
        _ => Err(format!(
            "unknown scheduler {name:?}: choose minrtt, roundrobin, redundant or falcon"
        )),
    }
}

/// One UDP socket per local address, registered with mio (token = index).
pub struct Sockets {
    socks: Vec<UdpSocket>,
    by_addr: HashMap<SocketAddr, usize>,
}

impl Sockets {
    /// Bind one socket per address (port 0: any).
    pub fn bind(addrs: &[SocketAddr], registry: &Registry) -> std::io::Result<Sockets> {
        let mut s = Sockets {
            socks: Vec::new(),
            by_addr: HashMap::new(),
        };
        for addr in addrs {
            let std_sock = StdUdpSocket::bind(addr)?;
            std_sock.set_nonblocking(true)?;
            let mut sock = UdpSocket::from_std(std_sock);
            let index = s.socks.len();
            registry.register(&mut sock, Token(index), Interest::READABLE)?;
            s.by_addr.insert(sock.local_addr()?, index);
            s.socks.push(sock);
        }
        Ok(s)
    }

    /// Local addresses, in binding order.
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.socks
            .iter()
            .filter_map(|s| s.local_addr().ok())
            .collect()
    }

    /// Receive one datagram on socket `token`: (length, local, remote).
    pub fn recv_from(
        &self,
        token: Token,
        buf: &mut [u8],
    ) -> std::io::Result<(usize, SocketAddr, SocketAddr)> {
        let sock = &self.socks[token.0];
        let (len, remote) = sock.recv_from(buf)?;
        Ok((len, sock.local_addr()?, remote))
    }

    /// Hand every datagram waiting on the sockets `events` names to
    /// `endpoint` (until each would block); then let it handle its timers.
    pub fn deliver(
        &self,
        events: &mio::Events,
        buf: &mut [u8],
        endpoint: &mut tquic::Endpoint,
    ) -> Result<(), String> {
        for event in events.iter() {
            loop {
                let (len, local, remote) = match self.recv_from(event.token(), buf) {
                    Ok(v) => v,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(format!("recv: {e}")),
                };
                let info = PacketInfo {
                    src: remote,
                    dst: local,
                    time: std::time::Instant::now(),
                };
                let _ = endpoint.recv(&mut buf[..len], &info);
            }
        }
        endpoint.on_timeout(std::time::Instant::now());
        Ok(())
    }
}

impl PacketSendHandler for Sockets {
    fn on_packets_send(&self, pkts: &[(Vec<u8>, PacketInfo)]) -> tquic::Result<usize> {
        for (count, (pkt, info)) in pkts.iter().enumerate() {
            // a datagram from an address without a socket is dropped
            let Some(&i) = self.by_addr.get(&info.src) else {
                continue;
            };
            if let Err(e) = self.socks[i].send_to(pkt, info.dst) {
                if e.kind() == std::io::ErrorKind::WouldBlock {
                    return Ok(count);
                }
                return Err(tquic::Error::InvalidOperation(format!("send_to: {e}")));
            }
        }
        Ok(pkts.len())
    }
}

/// `--name value` options and `--flag`s of a command line.
pub struct Args {
    values: HashMap<String, String>,
    flags: Vec<String>,
}

impl Args {
    /// Parse `std::env::args()`; `flags` names the options without a value.
    pub fn parse(flags: &[&str]) -> Result<Args, String> {
        Args::parse_from(std::env::args().skip(1).collect(), flags)
    }

    /// Parse `argv` (without the program name).
    pub fn parse_from(argv: Vec<String>, flags: &[&str]) -> Result<Args, String> {
        let mut args = Args {
            values: HashMap::new(),
            flags: Vec::new(),
        };
        let mut it = argv.into_iter();
        while let Some(a) = it.next() {
            let name = a
                .strip_prefix("--")
                .ok_or_else(|| format!("unexpected argument {a:?}"))?;
            if flags.contains(&name) {
                args.flags.push(name.to_string());
            } else {
                let v = it.next().ok_or_else(|| format!("--{name} needs a value"))?;
                args.values.insert(name.to_string(), v);
            }
        }
        Ok(args)
    }

    pub fn flag(&self, name: &str) -> bool {
        self.flags.iter().any(|f| f == name)
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(|s| s.as_str())
    }

    /// The value of `--name` parsed, or `default`.
    pub fn parse_or<T: std::str::FromStr>(&self, name: &str, default: T) -> Result<T, String> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| format!("--{name}: cannot parse {v:?}")),
        }
    }
}

/// Environment variable naming the level of tquic's log (`error`, `warn`,
/// `info`, `debug`, `trace`; unset or `off`: no log); `--log LEVEL` on either
/// binary overrides it.
pub const LOG_ENV: &str = "FALCON_QUIC_LOG";
/// Environment variable naming the file the log goes to (default stderr;
/// `{role}` in it becomes `server` or `client`, so both ends can share it);
/// `--log-file PATH` overrides it.
pub const LOG_FILE_ENV: &str = "FALCON_QUIC_LOG_FILE";

/// tquic's `log` records, one line each: seconds since the logger started,
/// level, message. Buffered: [`flush_log`] writes out the rest.
struct LineLog {
    start: std::time::Instant,
    out: std::sync::Mutex<std::io::BufWriter<Box<dyn std::io::Write + Send>>>,
}

impl log::Log for LineLog {
    fn enabled(&self, _meta: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        use std::io::Write as _;
        let t = self.start.elapsed().as_secs_f64();
        if let Ok(mut out) = self.out.lock() {
            let _ = writeln!(out, "{t:.6} {} {}", record.level(), record.args());
        }
    }
    fn flush(&self) {
        use std::io::Write as _;
        if let Ok(mut out) = self.out.lock() {
            let _ = out.flush();
        }
    }
}

/// Install the logger at `--log` / `FALCON_QUIC_LOG`'s level, writing to
/// `--log-file` / `FALCON_QUIC_LOG_FILE` (default stderr; `{role}` in the
/// name becomes `role`); returns the level, or None when logging stays off.
pub fn init_log(args: &Args, role: &str) -> Result<Option<log::LevelFilter>, String> {
    let text = match args.get("log") {
        Some(l) => l.to_string(),
        None => std::env::var(LOG_ENV).unwrap_or_default(),
    };
    if text.is_empty() || text.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let filter: log::LevelFilter = text
        .parse()
        .map_err(|_| format!("--log / {LOG_ENV}: unknown level {text:?}"))?;
    let file = args
        .get("log-file")
        .map(String::from)
        .or_else(|| std::env::var(LOG_FILE_ENV).ok())
        .filter(|s| !s.is_empty())
        .map(|s| s.replace("{role}", role));
    let sink: Box<dyn std::io::Write + Send> = match file {
        Some(p) => Box::new(
            std::fs::File::create(&p).map_err(|e| format!("--log-file {p}: {e}"))?,
        ),
        None => Box::new(std::io::stderr()),
    };
    let logger = Box::new(LineLog {
        start: std::time::Instant::now(),
        out: std::sync::Mutex::new(std::io::BufWriter::with_capacity(1 << 20, sink)),
    });
    log::set_boxed_logger(logger).map_err(|e| format!("logger: {e}"))?;
    log::set_max_level(filter);
    Ok(Some(filter))
}

/// Write out what the logger still buffers.
pub fn flush_log() {
    log::logger().flush();
}

/// Print `error: <message>` and exit with status 2.
pub fn fail(message: &str) -> ! {
    flush_log();
    eprintln!("error: {message}");
    std::process::exit(2)
}
