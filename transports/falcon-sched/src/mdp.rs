//! The two MDPs of `envs/mdp.py` (docs/reference/formats/model_formats.md): the state features
//! a learned scheduler observes, computed from the transport's own path
//! estimates. A port of `envs.mdp` (`observe_into`, `path_estimates`,
//! `predicted_finish`, `completion_features_into`); units: seconds, bytes.

/// RTT unit of the paper MDP [s].
pub const RTT_SCALE_S: f64 = 0.1;
/// Rate unit of the paper MDP's window features [packets per RTT_SCALE_S].
pub const RATE_SCALE_PKTS: f64 = 1000.0;
/// Upper bound of every paper-MDP entry.
pub const OBS_HIGH: f64 = 1e4;
/// Upper bound of the completion MDP's `log_rate`.
pub const COMPLETION_HIGH: f64 = 30.0;
/// Paper MDP: features per path.
pub const PAPER_PER_PATH: usize = 4;
/// Completion MDP: features per path and per connection.
pub const COMPLETION_PER_PATH: usize = 8;
pub const COMPLETION_GLOBAL: usize = 3;

/// Which MDP a model acts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mdp {
    /// FALCON's state, `4 n` inputs, reward `packet_rate`.
    Paper,
    /// The completion-time MDP, `8 n + 3` inputs.
    Completion,
}

impl Mdp {
    /// The MDP whose state has `n_inputs` entries for `n_paths` paths.
    pub fn of_inputs(n_inputs: usize, n_paths: usize) -> Option<Mdp> {
        if n_inputs == Mdp::Paper.n_inputs(n_paths) {
            Some(Mdp::Paper)
        } else if n_inputs == Mdp::Completion.n_inputs(n_paths) {
            Some(Mdp::Completion)
        } else {
            None
        }
    }

    /// Length of the state of `n_paths` paths.
    pub fn n_inputs(self, n_paths: usize) -> usize {
        match self {
            Mdp::Paper => PAPER_PER_PATH * n_paths,
            Mdp::Completion => COMPLETION_PER_PATH * n_paths + COMPLETION_GLOBAL,
        }
    }

    /// The MDP's name in `envs.mdp.mdp_of`: `paper` or `completion`.
    pub fn name(self) -> &'static str {
        match self {
            Mdp::Paper => "paper",
            Mdp::Completion => "completion",
        }
    }

    /// The experience log's reward kind of this MDP.
    pub fn reward(self) -> &'static str {
        match self {
            Mdp::Paper => "packet_rate",
            Mdp::Completion => "completion",
        }
    }
}

/// One path's estimates at a decision (the emulator's `PathSender` view).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PathObs {
    /// Congestion window [bytes].
    pub cwnd: f64,
    /// Bytes in flight [bytes].
    pub bytes_in_flight: f64,
    /// Packet size the window is counted in [bytes] (`cwnd / mss` = packets).
    pub mss: f64,
    /// Smoothed RTT [s].
    pub srtt: f64,
    /// RTT variation [s].
    pub rttvar: f64,
    /// Packets sent / declared lost on the path so far.
    pub packets_sent: f64,
    pub packets_lost: f64,
    /// Whether the path has an RTT sample.
    pub has_rtt_sample: bool,
    /// Whether one more packet fits the window (and pacer) now.
    pub has_room: bool,
    /// Send time of the path's newest packet [s].
    pub last_send: f64,
}

/// The connection's state at a decision.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ConnObs {
    /// Decision time [s].
    pub now: f64,
    /// Payload bytes per packet [bytes].
    pub payload: f64,
    /// Connection flow-control credit [bytes].
    pub send_window: f64,
    /// Application bytes not yet sent [bytes].
    pub pending_bytes: f64,
}

fn clip(x: f64, lo: f64, hi: f64) -> f64 {
    if x < lo {
        lo
    } else if x > hi {
        hi
    } else {
        x
    }
}

/// Paper MDP (`envs.mdp.observe_into`): per path cwnd/RTT, inflight/RTT,
/// credit/RTT in 1000 packets per 100 ms and sRTT in 100 ms, clipped to 1e4.
pub fn paper_features(paths: &[PathObs], conn: &ConnObs, out: &mut [f32]) {
    let swnd = conn.send_window / conn.payload;
    for (p, v) in paths.iter().zip(out.chunks_exact_mut(PAPER_PER_PATH)) {
        let rtt = p.srtt / RTT_SCALE_S;
        let c = 1.0 / (rtt * RATE_SCALE_PKTS);
        let packets_in_flight = p.bytes_in_flight / p.mss;
        v[0] = (p.cwnd / p.mss * c).min(OBS_HIGH) as f32;
        v[1] = (packets_in_flight * c).min(OBS_HIGH) as f32;
        v[2] = (swnd * c).min(OBS_HIGH) as f32;
        v[3] = rtt.min(OBS_HIGH) as f32;
    }
}

/// `envs.mdp.path_estimates`: per path sRTT [s] and window-limited rate
/// `cwnd/srtt` [payload bytes/s]; a path without an RTT sample counts as good
/// as the best probed one.
pub fn path_estimates(paths: &[PathObs], payload: f64, srtts: &mut Vec<f64>, rates: &mut Vec<f64>) {
    srtts.clear();
    rates.clear();
    for p in paths {
        srtts.push(p.srtt);
        rates.push(p.cwnd / p.mss * payload / p.srtt);
    }
    let probed = paths.iter().filter(|p| p.has_rtt_sample).count();
    if probed > 0 && probed < paths.len() {
        let mut best_srtt = f64::INFINITY;
        let mut best_rate = f64::NEG_INFINITY;
        for (i, p) in paths.iter().enumerate() {
            if p.has_rtt_sample {
                best_srtt = best_srtt.min(srtts[i]);
                best_rate = best_rate.max(rates[i]);
            }
        }
        for (i, p) in paths.iter().enumerate() {
            if !p.has_rtt_sample {
                srtts[i] = best_srtt;
                rates[i] = best_rate;
            }
        }
    }
}

/// `envs.mdp.predicted_finish`: the fluid prediction of the completion time
/// [s]. Each path delivers new data at its rate, acknowledged sRTT after it is
/// sent; the `unsent` bytes are water-filled over the paths that finish them
/// soonest. At least `now`, and at least `last_send + srtt` of every path with
/// data in flight. `order` is scratch space.
pub fn predicted_finish(
    now: f64,
    unsent: f64,
    paths: &[PathObs],
    srtts: &[f64],
    rates: &[f64],
    order: &mut Vec<usize>,
) -> f64 {
    let mut finish = now;
    for (i, p) in paths.iter().enumerate() {
        if p.bytes_in_flight > 0.0 {
            finish = finish.max(p.last_send + srtts[i]);
        }
    }
    if unsent > 0.0 {
        // Python sorts (srtt, rate) tuples: by sRTT, then by rate
        order.clear();
        order.extend(0..srtts.len());
        order.sort_by(|&a, &b| {
            srtts[a]
                .partial_cmp(&srtts[b])
                .unwrap()
                .then(rates[a].partial_cmp(&rates[b]).unwrap())
        });
        let (mut rate_sum, mut weighted, mut t) = (0.0, 0.0, f64::INFINITY);
        for &i in order.iter() {
            let (d, r) = (srtts[i], rates[i]);
            let start = now + d;
            if start >= t || r <= 0.0 {
                break;
            }
            rate_sum += r;
            weighted += r * start;
            t = (unsent + weighted) / rate_sum;
        }
        if t > finish {
            finish = t;
        }
    }
    finish
}

/// Completion MDP (`envs.mdp.completion_features_into`) with the predicted
/// finish time `finish` [s].
pub fn completion_features(paths: &[PathObs], conn: &ConnObs, finish: f64, out: &mut [f32]) {
    let now = conn.now;
    let mut k = 0;
    for p in paths {
        let srtt = p.srtt;
        let v = &mut out[k..k + COMPLETION_PER_PATH];
        v[0] = (p.cwnd / p.mss / srtt / 100.0).ln_1p().min(COMPLETION_HIGH) as f32;
        v[1] = clip(p.bytes_in_flight / p.cwnd, 0.0, 2.0) as f32;
        v[2] = if p.has_room { 1.0 } else { 0.0 };
        v[3] = clip(srtt / 0.1, 0.0, 10.0) as f32;
        v[4] = clip(p.rttvar / srtt, 0.0, 3.0) as f32;
        v[5] = (p.packets_lost / (p.packets_sent + 1.0)) as f32;
        v[6] = clip((now + srtt - finish) / 0.1, -10.0, 10.0) as f32;
        v[7] = if p.has_rtt_sample { 1.0 } else { 0.0 };
        k += COMPLETION_PER_PATH;
    }
    out[k] = clip((finish - now) / 0.1, 0.0, 30.0) as f32;
    out[k + 1] = (conn.pending_bytes / 1e5).ln_1p() as f32;
    out[k + 2] = clip(conn.send_window / 1e6, 0.0, 10.0) as f32;
}

/// Scratch buffers and the state writer of one MDP.
#[derive(Debug, Clone)]
pub struct Features {
    pub mdp: Mdp,
    srtts: Vec<f64>,
    rates: Vec<f64>,
    order: Vec<usize>,
}

impl Features {
    pub fn new(mdp: Mdp) -> Features {
        Features {
            mdp,
            srtts: Vec::new(),
            rates: Vec::new(),
            order: Vec::new(),
        }
    }

    /// Write the state into `out`; returns the predicted finish time [s]
    /// (completion MDP) or NaN (paper MDP).
    pub fn write(&mut self, paths: &[PathObs], conn: &ConnObs, out: &mut [f32]) -> f64 {
        match self.mdp {
            Mdp::Paper => {
                paper_features(paths, conn, out);
                f64::NAN
            }
            Mdp::Completion => {
                path_estimates(paths, conn.payload, &mut self.srtts, &mut self.rates);
                let finish = predicted_finish(
                    conn.now,
                    conn.pending_bytes,
                    paths,
                    &self.srtts,
                    &self.rates,
                    &mut self.order,
                );
                completion_features(paths, conn, finish, out);
                finish
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(cwnd: f64, srtt: f64, has_sample: bool) -> PathObs {
        PathObs {
            cwnd,
            mss: 1200.0,
            srtt,
            rttvar: srtt / 2.0,
            has_rtt_sample: has_sample,
            has_room: true,
            ..Default::default()
        }
    }

    #[test]
    fn water_filling_uses_only_useful_paths() {
        // 12 kB/s after 0.1 s and 1.2 kB/s after 10 s: 1.2 kB finishes on the
        // fast path alone at 0.2 s
        let paths = [path(1200.0, 0.1, true), path(1200.0, 1.0, true)];
        let (mut s, mut r, mut o) = (vec![], vec![], vec![]);
        path_estimates(&paths, 1200.0, &mut s, &mut r);
        let f = predicted_finish(0.0, 1200.0, &paths, &s, &r, &mut o);
        assert!((f - 0.2).abs() < 1e-12);
    }

    #[test]
    fn unprobed_path_counts_as_best() {
        let paths = [path(2400.0, 0.1, true), path(1200.0, 0.333, false)];
        let (mut s, mut r) = (vec![], vec![]);
        path_estimates(&paths, 1200.0, &mut s, &mut r);
        assert_eq!(s, vec![0.1, 0.1]);
        assert_eq!(r[0], r[1]);
    }

    #[test]
    fn widths() {
        assert_eq!(Mdp::of_inputs(19, 2), Some(Mdp::Completion));
        assert_eq!(Mdp::of_inputs(8, 2), Some(Mdp::Paper));
        assert_eq!(Mdp::of_inputs(12, 2), None);
    }
}
