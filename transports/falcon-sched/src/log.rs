//! The decision log: one JSON object per line (JSONL), appended while the
//! connection runs, read by `python -m falcon.deploy.experience`.
//!
//! Lines, by `kind`: `header` (one per connection: MDP, widths, model), then
//! `decision` (time [s since the connection's scheduler started], state,
//! Q-values (null for a probe: the model is not asked), action = path index
//! in MDP order, whether the path had room (`sent`) or the decision waits,
//! the decision's cost [µs], and the raw estimates the state was computed
//! from), `packet` (the packet a decision sent: path id, packet number, send
//! time [s]), `fate` (acked or lost, time [s]) and `end` (counters and the
//! median decision cost [µs]).

use std::fmt::Write as _;
use std::fs::File;
use std::fs::OpenOptions;
use std::io::BufWriter;
use std::io::Write;
use std::path::Path;

use crate::mdp::ConnObs;
use crate::mdp::PathObs;

/// An open decision log.
pub struct DecisionLog {
    out: BufWriter<File>,
    line: String,
}

/// A JSON list of floats, in the shortest text that reads back to the same
/// f32; `null` for NaN (the Q-values of a probe, which skips the model).
fn list(line: &mut String, xs: &[f32]) {
    line.push('[');
    for (i, x) in xs.iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        if x.is_finite() {
            let _ = write!(line, "{x}");
        } else {
            line.push_str("null");
        }
    }
    line.push(']');
}

impl DecisionLog {
    /// Open `path` for appending.
    pub fn open(path: &Path) -> std::io::Result<DecisionLog> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(DecisionLog {
            out: BufWriter::with_capacity(1 << 16, file),
            line: String::with_capacity(1024),
        })
    }

    fn emit(&mut self) {
        self.line.push('\n');
        // a full disk must not stop the transfer: the log is best effort
        let _ = self.out.write_all(self.line.as_bytes());
        self.line.clear();
    }

    /// The connection's header line.
    pub fn header(
        &mut self,
        mdp: &str,
        reward: &str,
        n_paths: usize,
        n_inputs: usize,
        model: &str,
    ) {
        let model = model.replace('\\', "\\\\").replace('"', "\\\"");
        let _ = write!(
            self.line,
            "{{\"kind\":\"header\",\"format\":\"falcon-decision-log\",\"version\":1,\
             \"mdp\":\"{mdp}\",\"reward\":\"{reward}\",\"n_paths\":{n_paths},\
             \"n_inputs\":{n_inputs},\"model\":\"{model}\"}}"
        );
        self.emit();
    }

    /// One decision.
    #[allow(clippy::too_many_arguments)]
    pub fn decision(
        &mut self,
        index: u64,
        conn: &ConnObs,
        paths: &[PathObs],
        finish: f64,
        state: &[f32],
        q: &[f32],
        action: usize,
        probe: bool,
        sent: bool,
        cost_us: f64,
    ) {
        let l = &mut self.line;
        let _ = write!(
            l,
            "{{\"kind\":\"decision\",\"i\":{index},\"t\":{},\"state\":",
            conn.now
        );
        list(l, state);
        l.push_str(",\"q\":");
        list(l, q);
        let _ = write!(
            l,
            ",\"action\":{action},\"probe\":{probe},\"sent\":{sent},\"cost_us\":{cost_us:.3},\
             \"raw\":{{\"payload\":{},\"send_window\":{},\"pending_bytes\":{}",
            conn.payload, conn.send_window, conn.pending_bytes
        );
        if finish.is_finite() {
            let _ = write!(l, ",\"finish\":{finish}");
        }
        l.push_str(",\"paths\":[");
        for (i, p) in paths.iter().enumerate() {
            if i > 0 {
                l.push(',');
            }
            let _ = write!(
                l,
                "{{\"cwnd\":{},\"bytes_in_flight\":{},\"mss\":{},\"srtt\":{},\"rttvar\":{},\
                 \"packets_sent\":{},\"packets_lost\":{},\"has_rtt_sample\":{},\
                 \"has_room\":{},\"last_send\":{}}}",
                p.cwnd,
                p.bytes_in_flight,
                p.mss,
                p.srtt,
                p.rttvar,
                p.packets_sent,
                p.packets_lost,
                p.has_rtt_sample,
                p.has_room,
                p.last_send
            );
        }
        l.push_str("]}}");
        self.emit();
    }

    /// The packet decision `index` sent.
    pub fn packet(&mut self, index: u64, path_id: usize, pkt_num: u64, time: f64) {
        let _ = write!(
            self.line,
            "{{\"kind\":\"packet\",\"i\":{index},\"path\":{path_id},\"pkt\":{pkt_num},\"t\":{time}}}"
        );
        self.emit();
    }

    /// The fate of decision `index`'s packet.
    pub fn fate(&mut self, index: u64, acked: bool, time: f64) {
        let _ = write!(
            self.line,
            "{{\"kind\":\"fate\",\"i\":{index},\"acked\":{acked},\"t\":{time}}}"
        );
        self.emit();
    }

    /// The connection's last line.
    pub fn end(&mut self, time: f64, decisions: u64, fallbacks: u64, median_cost_us: f64) {
        let _ = write!(
            self.line,
            "{{\"kind\":\"end\",\"t\":{time},\"decisions\":{decisions},\
             \"fallbacks\":{fallbacks},\"cost_us_median\":{median_cost_us:.3}}}"
        );
        self.emit();
        let _ = self.out.flush();
    }
}
