//! The learned scheduler outside a connection.
//!
//! falcon-sched-tool bench --model M.onnx [--paths 2] [--iterations 100000]
//!     median and p99 cost of one decision (state features incl. the predicted
//!     finish time + tract inference + argmax) [ns], as one JSON line
//! falcon-sched-tool q --model M.onnx [--paths 2] < states
//!     Q-values of states read one per line (comma-separated floats)

use std::io::BufRead;
use std::path::PathBuf;
use std::time::Instant;

use falcon_quic::*;
use falcon_sched::mdp::ConnObs;
use falcon_sched::mdp::Features;
use falcon_sched::mdp::PathObs;
use falcon_sched::model::argmax;
use falcon_sched::model::QModel;

fn bench(model: &mut QModel, iterations: usize) -> String {
    let n = model.n_paths;
    let mut features = Features::new(model.mdp);
    let mut paths: Vec<PathObs> = (0..n)
        .map(|i| PathObs {
            cwnd: 40_000.0 + 10_000.0 * i as f64,
            mss: 1200.0,
            srtt: 0.02 + 0.03 * i as f64,
            rttvar: 0.005,
            packets_sent: 500.0,
            packets_lost: 3.0,
            has_rtt_sample: true,
            has_room: true,
            ..Default::default()
        })
        .collect();
    let mut state = vec![0f32; model.n_inputs];
    let mut q = vec![0f32; n];
    let mut costs = Vec::with_capacity(iterations);
    let mut chosen = 0usize;
    for k in 0..iterations {
        // vary the inputs so no step can be cached
        let x = (k % 1000) as f64;
        for (i, p) in paths.iter_mut().enumerate() {
            p.bytes_in_flight = (x * 37.0 + 1000.0 * i as f64) % p.cwnd;
            p.last_send = x * 1e-4;
        }
        let conn = ConnObs {
            now: x * 1e-4,
            payload: 1168.0,
            send_window: 1e6 - x * 100.0,
            pending_bytes: 2e6 - x * 1000.0,
        };
        let start = Instant::now();
        features.write(&paths, &conn, &mut state);
        model.q_values(&state, &mut q).expect("inference");
        chosen += argmax(&q);
        costs.push(start.elapsed().as_nanos() as u64);
    }
    costs.sort_unstable();
    let at = |f: f64| costs[((costs.len() - 1) as f64 * f) as usize];
    format!(
        "{{\"mdp\":\"{}\",\"n_inputs\":{},\"iterations\":{iterations},\"median_ns\":{},\
         \"p99_ns\":{},\"min_ns\":{},\"checksum\":{chosen}}}",
        model.mdp.reward(),
        model.n_inputs,
        at(0.5),
        at(0.99),
        costs[0]
    )
}

fn q_values(model: &mut QModel) -> Result<(), String> {
    let mut q = vec![0f32; model.n_paths];
    for (k, line) in std::io::stdin().lock().lines().enumerate() {
        let line = line.map_err(|e| e.to_string())?;
        if line.trim().is_empty() {
            continue;
        }
        let x: Vec<f32> = line
            .split(',')
            .map(|s| s.trim().parse::<f32>())
            .collect::<Result<_, _>>()
            .map_err(|_| format!("state {k}: not a list of numbers"))?;
        if x.len() != model.n_inputs {
            return Err(format!(
                "state {k}: {} values, the model takes {}",
                x.len(),
                model.n_inputs
            ));
        }
        model
            .q_values(&x, &mut q)
            .map_err(|e| format!("state {k}: {e}"))?;
        let text: Vec<String> = q.iter().map(|v| v.to_string()).collect();
        println!("{}", text.join(","));
    }
    Ok(())
}

fn run() -> Result<(), String> {
    let command = std::env::args().nth(1).unwrap_or_default();
    let args = {
        // Args parses from argv[1]: drop the subcommand
        let rest: Vec<String> = std::env::args().skip(2).collect();
        Args::parse_from(rest, &[])?
    };
    let model_path = args
        .get("model")
        .map(String::from)
        .or_else(|| std::env::var(falcon_sched::MODEL_ENV).ok())
        .ok_or("--model or FALCON_MODEL is required")?;
    let n_paths: usize = args.parse_or("paths", 2)?;
    let mut model = QModel::load(&PathBuf::from(model_path), n_paths)?;
    match command.as_str() {
        "bench" => {
            println!(
                "{}",
                bench(&mut model, args.parse_or("iterations", 100_000)?)
            );
            Ok(())
        }
        "q" => q_values(&mut model),
        _ => Err(format!("unknown command {command:?}: bench or q")),
    }
}

fn main() {
    if let Err(e) = run() {
        fail(&e);
    }
}
