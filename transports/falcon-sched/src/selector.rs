//! The learned path selector: the exported Q-network schedules every packet
//! (docs/reference/formats/model_formats.md): a path that never sent a packet gets one first,
//! otherwise the path with the highest Q-value, and when that path has no
//! window room the connection sends nothing and asks again (wait).

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use tquic::external_scheduler::ConnInfo;
use tquic::external_scheduler::PathInfo;
use tquic::external_scheduler::PathSelector;
use tquic::external_scheduler::SentInfo;

use crate::log::DecisionLog;
use crate::mdp::ConnObs;
use crate::mdp::Features;
use crate::mdp::PathObs;
use crate::model::argmax;
use crate::model::QModel;

/// QUIC short header + STREAM frame header per packet [bytes]: the
/// emulator's 60 header bytes less the 28 of IP and UDP, which tquic's
/// datagram size does not count. `payload = max_datagram_size - this`.
pub const QUIC_OVERHEAD_BYTES: f64 = 32.0;

/// Decision costs kept for the median (the first ones of a connection).
const MAX_COST_SAMPLES: usize = 1 << 20;

#[derive(Debug, Default, Clone, Copy)]
struct PathCount {
    sent: u64,
    lost: u64,
    last_send: f64,
}

/// One connection's model scheduler.
pub struct ModelSelector {
    model: QModel,
    features: Features,
    t0: Instant,
    /// The response size [bytes] (0: unknown), set by the application.
    transfer_size: Arc<AtomicU64>,
    /// Highest stream offset sent so far [bytes].
    stream_end: u64,
    /// Stream bytes of lost packets not yet sent again [bytes].
    retransmit_bytes: u64,
    counts: HashMap<usize, PathCount>,
    /// In-flight data packets by (path id, packet number): their stream
    /// bytes and the decision that sent them.
    in_flight: HashMap<(usize, u64), (u64, Option<u64>)>,
    /// The latest decision that chose a path with room: (index, path id).
    pending: Option<(u64, usize)>,
    obs: Vec<PathObs>,
    state: Vec<f32>,
    q: Vec<f32>,
    log: Option<DecisionLog>,
    costs_us: Vec<f32>,
    decisions: u64,
    fallbacks: u64,
}

impl ModelSelector {
    /// A selector with `model` (its MDP and path count), logging to `log`.
    pub fn new(
        model: QModel,
        transfer_size: Arc<AtomicU64>,
        mut log: Option<DecisionLog>,
        model_name: &str,
    ) -> ModelSelector {
        let (n, n_in) = (model.n_paths, model.n_inputs);
        if let Some(log) = log.as_mut() {
            log.header(model.mdp.name(), model.mdp.reward(), n, n_in, model_name);
        }
        ModelSelector {
            features: Features::new(model.mdp),
            model,
            t0: Instant::now(),
            transfer_size,
            stream_end: 0,
            retransmit_bytes: 0,
            counts: HashMap::new(),
            in_flight: HashMap::new(),
            pending: None,
            obs: Vec::with_capacity(n),
            state: vec![0.0; n_in],
            q: vec![0.0; n],
            log,
            costs_us: Vec::new(),
            decisions: 0,
            fallbacks: 0,
        }
    }

    fn secs(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.t0).as_secs_f64()
    }

    /// Median cost of one decision so far [µs] (NaN before the first).
    pub fn median_cost_us(&self) -> f64 {
        median(&self.costs_us)
    }

    /// Decide among the first `n_paths` active paths; returns the action
    /// (path index) and whether that path has room.
    fn decide(&mut self, paths: &[PathInfo], conn: &ConnInfo) -> (usize, bool) {
        let start = Instant::now();
        let now = self.secs(conn.now);
        self.obs.clear();
        let mut payload = f64::INFINITY;
        for p in paths {
            let c = self.counts.get(&p.path_id).copied().unwrap_or_default();
            let mss = p.max_datagram_size as f64;
            payload = payload.min(mss - QUIC_OVERHEAD_BYTES);
            self.obs.push(PathObs {
                cwnd: p.cwnd as f64,
                bytes_in_flight: p.bytes_in_flight as f64,
                mss,
                srtt: p.srtt.as_secs_f64(),
                rttvar: p.rttvar.as_secs_f64(),
                packets_sent: c.sent as f64,
                packets_lost: c.lost as f64,
                has_rtt_sample: p.has_rtt_sample,
                has_room: p.can_send,
                last_send: c.last_send,
            });
        }
        let total = self.transfer_size.load(Ordering::Relaxed);
        let cobs = ConnObs {
            now,
            payload,
            send_window: conn.flow_credit as f64,
            // the emulator's pending bytes: new data and data to retransmit
            pending_bytes: (total.saturating_sub(self.stream_end) + self.retransmit_bytes) as f64,
        };
        let finish = self.features.write(&self.obs, &cobs, &mut self.state);
        let probe = self
            .obs
            .iter()
            .position(|p| p.packets_sent == 0.0 && p.has_room);
        let action = match probe {
            Some(i) => i,
            None => match self.model.q_values(&self.state, &mut self.q) {
                Ok(()) => argmax(&self.q),
                Err(_) => {
                    // cannot happen with a model that loaded; path 0, logged as NaN
                    self.q.fill(f32::NAN);
                    0
                }
            },
        };
        let room = self.obs[action].has_room;
        let cost_us = start.elapsed().as_secs_f64() * 1e6;
        if self.costs_us.len() < MAX_COST_SAMPLES {
            self.costs_us.push(cost_us as f32);
        }
        if let Some(log) = self.log.as_mut() {
            if probe.is_some() {
                self.q.iter_mut().for_each(|v| *v = f32::NAN);
            }
            log.decision(
                self.decisions,
                &cobs,
                &self.obs,
                finish,
                &self.state,
                &self.q,
                action,
                probe.is_some(),
                room,
                cost_us,
            );
        }
        (action, room)
    }
}

fn median(xs: &[f32]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2] as f64
}

impl PathSelector for ModelSelector {
    fn select(&mut self, paths: &[PathInfo], conn: &ConnInfo) -> Option<usize> {
        let n = self.model.n_paths;
        if paths.len() < n {
            // not all of the model's paths are up yet: minRTT among the others
            self.fallbacks += 1;
            return paths
                .iter()
                .filter(|p| p.can_send)
                .min_by_key(|p| p.srtt)
                .map(|p| p.path_id);
        }
        let paths = &paths[..n];
        let (action, room) = self.decide(paths, conn);
        let index = self.decisions;
        self.decisions += 1;
        if room {
            self.pending = Some((index, paths[action].path_id));
            Some(paths[action].path_id)
        } else {
            self.pending = None;
            None
        }
    }

    fn on_sent(&mut self, sent: &SentInfo) {
        // data packets only, as the emulator's: path validation, ACK-only and
        // PING packets neither count as sent nor can be "lost"
        let (true, Some(end)) = (sent.in_flight, sent.stream_end) else {
            return;
        };
        let t = self.secs(sent.time);
        let c = self.counts.entry(sent.path_id).or_default();
        c.sent += 1;
        c.last_send = t;
        // new data continues the stream from its highest offset; the rest of
        // the packet's stream bytes are retransmissions
        let new_bytes = end.saturating_sub(self.stream_end);
        let resent = sent.stream_bytes.saturating_sub(new_bytes);
        self.retransmit_bytes = self.retransmit_bytes.saturating_sub(resent);
        self.stream_end = self.stream_end.max(end);
        let decision = match self.pending {
            Some((index, pid)) if pid == sent.path_id => {
                self.pending = None;
                if let Some(log) = self.log.as_mut() {
                    log.packet(index, sent.path_id, sent.pkt_num, t);
                }
                Some(index)
            }
            _ => None,
        };
        self.in_flight
            .insert((sent.path_id, sent.pkt_num), (sent.stream_bytes, decision));
    }

    fn on_fate(&mut self, path_id: usize, pkt_num: u64, acked: bool, time: Instant) {
        // the first fate counts: a packet declared lost and acked later stays lost
        let Some((stream_bytes, decision)) = self.in_flight.remove(&(path_id, pkt_num)) else {
            return;
        };
        if !acked {
            self.counts.entry(path_id).or_default().lost += 1;
            self.retransmit_bytes += stream_bytes;
        }
        if let (Some(index), Some(log)) = (decision, self.log.as_mut()) {
            let t = time.saturating_duration_since(self.t0).as_secs_f64();
            log.fate(index, acked, t);
        }
    }
}

impl Drop for ModelSelector {
    fn drop(&mut self) {
        let t = self.secs(Instant::now());
        let (d, f, m) = (self.decisions, self.fallbacks, self.median_cost_us());
        if let Some(log) = self.log.as_mut() {
            log.end(t, d, f, m);
        }
    }
}
