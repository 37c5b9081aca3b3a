//! FALCON's learned multipath scheduler for tquic: the state features of
//! `envs/mdp.py` ([`mdp`]), the exported ONNX Q-network evaluated with tract
//! ([`model`]), the decision log ([`log`]) and the path selector that the
//! patched tquic's `External` scheduler calls ([`selector`]).

pub mod log;
pub mod mdp;
pub mod model;
pub mod selector;

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::sync::Mutex;

use tquic::external_scheduler::set_selector_factory;
use tquic::external_scheduler::PathSelector;

/// Environment variable naming the ONNX model when no option does.
pub const MODEL_ENV: &str = "FALCON_MODEL";
/// Environment variable naming the decision log when no option does.
pub const LOG_ENV: &str = "FALCON_DECISION_LOG";

/// Load `model` (checked against `n_paths`; one-line error otherwise) and
/// make it the path selector of every connection created from now on with
/// `MultipathAlgorithm::External`. `transfer_size` [bytes] is the size of the
/// response being sent (for the unsent-bytes feature); `log` is appended to.
pub fn install(
    model: PathBuf,
    n_paths: usize,
    log: Option<PathBuf>,
    transfer_size: Arc<AtomicU64>,
) -> Result<(), String> {
    let q = model::QModel::load(&model, n_paths)?;
    if let Some(log) = &log {
        log::DecisionLog::open(log).map_err(|e| format!("decision log {}: {e}", log.display()))?;
    }
    // loaded once: a connection gets its own evaluator of the same network
    let template = Mutex::new(q);
    let name = model.display().to_string();
    let factory = move || -> Box<dyn PathSelector> {
        let q = template
            .lock()
            .unwrap()
            .fresh()
            .expect("a loaded model spawns");
        let log = log.as_ref().and_then(|p| log::DecisionLog::open(p).ok());
        Box::new(selector::ModelSelector::new(
            q,
            transfer_size.clone(),
            log,
            &name,
        ))
    };
    set_selector_factory(Some(Arc::new(factory)));
    Ok(())
}
