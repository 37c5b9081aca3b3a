//! The exported Q-network (docs/reference/formats/model_formats.md, "ONNX model"): input
//! `state` `[batch, n_inputs]`, output `q_values` `[batch, n_paths]`, the
//! normalisation inside the graph; evaluated with tract for one state.

use std::path::Path;
use std::sync::Arc;

use tract_onnx::prelude::*;
use tract_onnx::tract_hir::infer::Factoid;

use crate::mdp::Mdp;

/// A loaded Q-network, ready to evaluate one state at a time.
pub struct QModel {
    /// The MDP the input width names.
    pub mdp: Mdp,
    /// Input width (state length) and output width (paths).
    pub n_inputs: usize,
    pub n_paths: usize,
    plan: Arc<TypedRunnableModel>,
    state: TypedSimpleState,
}

impl std::fmt::Debug for QModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "QModel({:?}, {} inputs, {} paths)",
            self.mdp, self.n_inputs, self.n_paths
        )
    }
}

impl QModel {
    /// Load `path` for a connection of `n_paths` paths. Every failure is one
    /// line naming the file: unreadable or malformed ONNX, an input width that
    /// is neither MDP's for `n_paths` paths, or an output width other than
    /// `n_paths`.
    pub fn load(path: &Path, n_paths: usize) -> Result<QModel, String> {
        let name = path.display();
        if !path.is_file() {
            return Err(format!("model {name}: no such file"));
        }
        let one_line = |e: TractError| {
            let text = format!("{e:#}");
            format!(
                "model {name}: not a readable ONNX model ({})",
                text.replace('\n', " ")
            )
        };
        let model = tract_onnx::onnx().model_for_path(path).map_err(one_line)?;
        let fact = model.input_fact(0).map_err(one_line)?.clone();
        let n_inputs = fact
            .shape
            .dims()
            .nth(1)
            .and_then(|x| x.concretize())
            .and_then(|x| x.to_i64().ok())
            .ok_or_else(|| format!("model {name}: input is not [batch, n_inputs]"))?
            as usize;
        let mdp = Mdp::of_inputs(n_inputs, n_paths).ok_or_else(|| {
            format!(
                "model {name}: {n_inputs} inputs fit neither MDP for {n_paths} paths \
                 (paper: {}, completion: {})",
                Mdp::Paper.n_inputs(n_paths),
                Mdp::Completion.n_inputs(n_paths)
            )
        })?;
        let typed = model
            .with_input_fact(0, f32::fact([1, n_inputs]).into())
            .and_then(|m| m.into_optimized())
            .map_err(one_line)?;
        let out_fact = typed.output_fact(0).map_err(one_line)?;
        let n_out = out_fact
            .shape
            .as_concrete()
            .filter(|s| s.len() == 2 && s[0] == 1)
            .map(|s| s[1])
            .ok_or_else(|| format!("model {name}: output is not [batch, n_paths]"))?;
        if n_out != n_paths {
            return Err(format!(
                "model {name}: {n_out} outputs (Q-values), the connection has {n_paths} paths"
            ));
        }
        let plan = typed.into_runnable().map_err(one_line)?;
        let state = plan.spawn().map_err(one_line)?;
        Ok(QModel {
            mdp,
            n_inputs,
            n_paths,
            plan,
            state,
        })
    }

    /// Another evaluator of the same loaded network (its own state).
    pub fn fresh(&self) -> TractResult<QModel> {
        Ok(QModel {
            mdp: self.mdp,
            n_inputs: self.n_inputs,
            n_paths: self.n_paths,
            plan: self.plan.clone(),
            state: self.plan.spawn()?,
        })
    }

    /// Q-values of one state (`n_inputs` floats) into `q` (`n_paths` floats).
    pub fn q_values(&mut self, x: &[f32], q: &mut [f32]) -> TractResult<()> {
        let input = Tensor::from_shape(&[1, self.n_inputs], x)?;
        let out = self.state.run(tvec!(input.into_tvalue()))?;
        let view = out[0].to_plain_array_view::<f32>()?;
        for (dst, src) in q.iter_mut().zip(view.iter()) {
            *dst = *src;
        }
        Ok(())
    }
}

/// The greedy action: the index of the highest Q-value, the lowest on ties.
pub fn argmax(q: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in q.iter().enumerate() {
        if v > q[best] {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::argmax;

    #[test]
    fn argmax_takes_the_lowest_index_on_ties() {
        assert_eq!(argmax(&[1.0, 3.0, 3.0]), 1);
        assert_eq!(argmax(&[2.0, 2.0]), 0);
        assert_eq!(argmax(&[-1.0, -0.5]), 1);
    }
}
