//! A loaded ensemble: every tree's nodes in one array, checked once at load so that
//! scoring is a plain walk with no bounds surprises and no way to loop.
use std::fmt;

use crate::format::{Aggregate, ForestFile, Link, Split, Task, TreeFile, FORMAT, VERSION};

/// A node's `feature` for leaves.
const LEAF: u32 = u32::MAX;

/// Below this many row × tree visits a call is scored on the calling thread: spreading
/// it would cost more than it saves.
const PARALLEL_FROM: usize = 64 * 1024;

#[derive(Debug, Clone, Copy)]
struct Node {
    threshold: f64,
    feature: u32,
    /// For leaves: the offset of the leaf's values.
    left: u32,
    right: u32,
    missing_left: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError(pub String);

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LoadError {}

/// What a model is, for metadata and for naming outputs.
#[derive(Debug, Clone)]
pub struct Info {
    pub source: String,
    pub task: Task,
    pub n_features: usize,
    pub feature_names: Vec<String>,
    pub classes: Vec<serde_json::Value>,
    /// Values per row that `predict` writes (probabilities per class, or values).
    pub n_outputs: usize,
    pub n_trees: usize,
}

#[derive(Debug)]
pub struct Forest {
    pub info: Info,
    nodes: Vec<Node>,
    roots: Vec<u32>,
    /// Per tree: the raw output it adds to, or `u32::MAX` for all of them.
    targets: Vec<u32>,
    values: Vec<f64>,
    raw_outputs: usize,
    /// How many trees add to each raw output (`mean` divides by it).
    counts: Vec<f64>,
    aggregate: Aggregate,
    base: Vec<f64>,
    link: Link,
    split: Split,
    as_f32: bool,
}

fn err<T>(msg: impl Into<String>) -> Result<T, LoadError> {
    Err(LoadError(msg.into()))
}

impl Forest {
    /// The bytes its arrays hold: what the model costs in memory once loaded.
    pub fn memory_bytes(&self) -> usize {
        use std::mem::size_of;
        self.nodes.capacity() * size_of::<Node>()
            + (self.roots.capacity() + self.targets.capacity()) * size_of::<u32>()
            + (self.values.capacity() + self.counts.capacity() + self.base.capacity())
                * size_of::<f64>()
            + size_of::<Self>()
    }

    /// Reads and checks a model in the inferwire tree format.
    pub fn from_json(text: &[u8]) -> Result<Self, LoadError> {
        let file: ForestFile = serde_json::from_slice(text)
            .map_err(|e| LoadError(format!("not an inferwire tree model: {e}")))?;
        Self::load(file)
    }

    pub fn load(f: ForestFile) -> Result<Self, LoadError> {
        if f.format != FORMAT || f.version != VERSION {
            return err(format!(
                "format {:?} version {}: this server reads {FORMAT:?} version {VERSION}",
                f.format, f.version
            ));
        }
        if f.trees.is_empty() {
            return err("the model has no trees");
        }
        if f.n_outputs == 0 || f.n_features == 0 {
            return err("n_outputs and n_features must be at least 1");
        }
        if !f.feature_names.is_empty() && f.feature_names.len() != f.n_features {
            return err(format!(
                "{} feature names for {} features",
                f.feature_names.len(),
                f.n_features
            ));
        }
        if !f.base.is_empty() && f.base.len() != f.n_outputs {
            return err(format!(
                "base has {} values for {} outputs",
                f.base.len(),
                f.n_outputs
            ));
        }
        let n_outputs = match (f.link, f.n_outputs) {
            (Link::Sigmoid, 1) => 2,
            (Link::Sigmoid, n) => {
                return err(format!("a sigmoid link takes 1 raw output, not {n}"))
            }
            (Link::Softmax, 1) => return err("a softmax link needs 2 or more raw outputs"),
            (_, n) => n,
        };
        if f.task == Task::Classification && !f.classes.is_empty() && f.classes.len() != n_outputs {
            return err(format!(
                "{} classes for {n_outputs} probabilities",
                f.classes.len()
            ));
        }
        let mut forest = Forest {
            info: Info {
                source: f.source,
                task: f.task,
                n_features: f.n_features,
                feature_names: f.feature_names,
                classes: f.classes,
                n_outputs,
                n_trees: f.trees.len(),
            },
            nodes: Vec::new(),
            roots: Vec::with_capacity(f.trees.len()),
            targets: Vec::with_capacity(f.trees.len()),
            values: Vec::new(),
            raw_outputs: f.n_outputs,
            counts: vec![0.0; f.n_outputs],
            aggregate: f.aggregate,
            base: if f.base.is_empty() {
                vec![0.0; f.n_outputs]
            } else {
                f.base
            },
            link: f.link,
            split: f.split,
            as_f32: f.features_as_f32,
        };
        for (t, tree) in f.trees.into_iter().enumerate() {
            forest
                .add_tree(tree)
                .map_err(|LoadError(m)| LoadError(format!("tree {t}: {m}")))?;
        }
        Ok(forest)
    }

    fn add_tree(&mut self, t: TreeFile) -> Result<(), LoadError> {
        let n = t.feature.len();
        if n == 0 {
            return err("no nodes");
        }
        if [t.threshold.len(), t.left.len(), t.right.len()] != [n; 3]
            || !(t.missing_left.is_empty() || t.missing_left.len() == n)
        {
            return err("feature, threshold, left, right (and missing_left) differ in length");
        }
        let width = match t.output {
            Some(k) if k < self.raw_outputs => 1,
            Some(k) => return err(format!("output {k} of {}", self.raw_outputs)),
            None => self.raw_outputs,
        };
        if t.value.len() != n * width {
            return err(format!(
                "{} values for {n} nodes of {width} each",
                t.value.len()
            ));
        }
        let offset = self.nodes.len() as u32;
        for i in 0..n {
            let leaf = t.feature[i] < 0;
            let node = if leaf {
                let start = self.values.len() as u32;
                self.values
                    .extend_from_slice(&t.value[i * width..(i + 1) * width]);
                Node {
                    threshold: 0.0,
                    feature: LEAF,
                    left: start,
                    right: 0,
                    missing_left: false,
                }
            } else {
                let feature = t.feature[i] as usize;
                if feature >= self.info.n_features {
                    return err(format!(
                        "node {i} splits on feature {feature} of {}",
                        self.info.n_features
                    ));
                }
                // Children after their parent: every walk ends.
                let (l, r) = (t.left[i] as usize, t.right[i] as usize);
                if l <= i || r <= i || l >= n || r >= n {
                    return err(format!(
                        "node {i}: children {l} and {r} must come after it and exist"
                    ));
                }
                Node {
                    threshold: t.threshold[i],
                    feature: feature as u32,
                    left: offset + l as u32,
                    right: offset + r as u32,
                    missing_left: t.missing_left.get(i).copied().unwrap_or(false),
                }
            };
            self.nodes.push(node);
        }
        self.roots.push(offset);
        self.targets.push(t.output.map_or(u32::MAX, |k| k as u32));
        match t.output {
            Some(k) => self.counts[k] += 1.0,
            None => self.counts.iter_mut().for_each(|c| *c += 1.0),
        }
        Ok(())
    }

    /// Scores `rows` rows of `n_features` values each (row-major) into `out`
    /// (`rows × n_outputs`): class probabilities or predicted values. Large calls are
    /// spread over every core.
    pub fn predict(&self, x: &[f64], out: &mut [f64]) -> Result<(), String> {
        let nf = self.info.n_features;
        let no = self.info.n_outputs;
        if !x.len().is_multiple_of(nf) {
            return Err(format!(
                "{} values are not whole rows of {nf} features",
                x.len()
            ));
        }
        let rows = x.len() / nf;
        if out.len() != rows * no {
            return Err(format!("the output needs {} values", rows * no));
        }
        let work = rows.saturating_mul(self.roots.len());
        if work < PARALLEL_FROM || rows < 2 || cores() == 1 {
            self.predict_rows(x, out);
            return Ok(());
        }
        let per = rows.div_ceil(cores());
        std::thread::scope(|s| {
            for (xc, oc) in x.chunks(per * nf).zip(out.chunks_mut(per * no)) {
                s.spawn(move || self.predict_rows(xc, oc));
            }
        });
        Ok(())
    }

    fn predict_rows(&self, x: &[f64], out: &mut [f64]) {
        let nf = self.info.n_features;
        let no = self.info.n_outputs;
        let mut raw = vec![0.0; self.raw_outputs];
        let mut row32 = vec![0.0; nf];
        for (row, o) in x.chunks_exact(nf).zip(out.chunks_exact_mut(no)) {
            let row = if self.as_f32 {
                for (d, &v) in row32.iter_mut().zip(row) {
                    *d = f64::from(v as f32);
                }
                &row32[..]
            } else {
                row
            };
            raw.iter_mut().for_each(|r| *r = 0.0);
            for (&root, &target) in self.roots.iter().zip(&self.targets) {
                let at = self.leaf(root, row) as usize;
                if target == u32::MAX {
                    for (r, v) in raw.iter_mut().zip(&self.values[at..at + self.raw_outputs]) {
                        *r += v;
                    }
                } else {
                    raw[target as usize] += self.values[at];
                }
            }
            self.finish(&mut raw, o);
        }
    }

    #[inline]
    fn leaf(&self, root: u32, row: &[f64]) -> u32 {
        let mut n = self.nodes[root as usize];
        while n.feature != LEAF {
            let v = row[n.feature as usize];
            let left = if v.is_nan() {
                n.missing_left
            } else {
                match self.split {
                    Split::Le => v <= n.threshold,
                    Split::Lt => v < n.threshold,
                }
            };
            n = self.nodes[if left { n.left } else { n.right } as usize];
        }
        n.left
    }

    fn finish(&self, raw: &mut [f64], out: &mut [f64]) {
        if self.aggregate == Aggregate::Mean {
            for (r, n) in raw.iter_mut().zip(&self.counts) {
                *r /= n.max(1.0);
            }
        }
        for (r, b) in raw.iter_mut().zip(&self.base) {
            *r += b;
        }
        match self.link {
            Link::Identity => out.copy_from_slice(raw),
            Link::Sigmoid => {
                let p = 1.0 / (1.0 + (-raw[0]).exp());
                out[0] = 1.0 - p;
                out[1] = p;
            }
            Link::Softmax => {
                let max = raw.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let mut sum = 0.0;
                for (o, &r) in out.iter_mut().zip(raw.iter()) {
                    *o = (r - max).exp();
                    sum += *o;
                }
                out.iter_mut().for_each(|o| *o /= sum);
            }
        }
    }
}

/// The index of the largest value in each row of `probabilities` (`width` per row), as
/// the libraries' `predict` picks a class (the first on ties).
pub fn argmax_rows(probabilities: &[f64], width: usize) -> Vec<usize> {
    probabilities
        .chunks_exact(width)
        .map(|row| {
            row.iter()
                .enumerate()
                .fold((0, f64::NEG_INFINITY), |best, (i, &v)| {
                    if v > best.1 {
                        (i, v)
                    } else {
                        best
                    }
                })
                .0
        })
        .collect()
}

/// The cores a large call is spread over, asked once: `available_parallelism` reads the
/// cgroup's files each time (a dozen system calls), which a small call must not pay.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::TreeFile;

    /// x0 <= 0.5 → leaf [1, 0]; else x1 < NaN-left split → ...
    fn stump(task: Task, link: Link, values: Vec<f64>, n_outputs: usize) -> ForestFile {
        ForestFile {
            format: FORMAT.into(),
            version: VERSION,
            source: "test".into(),
            task,
            n_features: 2,
            feature_names: vec![],
            classes: vec![],
            n_outputs,
            aggregate: Aggregate::Sum,
            base: vec![],
            link,
            split: Split::Le,
            features_as_f32: false,
            trees: vec![TreeFile {
                feature: vec![0, -1, -1],
                threshold: vec![0.5, 0.0, 0.0],
                left: vec![1, 0, 0],
                right: vec![2, 0, 0],
                missing_left: vec![true, false, false],
                value: values,
                output: None,
            }],
        }
    }

    #[test]
    fn scores_and_links() {
        let f = Forest::load(stump(Task::Regression, Link::Identity, vec![0., 1., 2.], 1)).unwrap();
        let mut out = vec![0.0; 3];
        f.predict(&[0.5, 9.0, 0.6, 9.0, f64::NAN, 0.0], &mut out)
            .unwrap();
        assert_eq!(out, vec![1.0, 2.0, 1.0]);
        let f = Forest::load(stump(
            Task::Classification,
            Link::Sigmoid,
            vec![0., 0., 0.],
            1,
        ))
        .unwrap();
        let mut out = vec![0.0; 2];
        f.predict(&[0.0, 0.0], &mut out).unwrap();
        assert_eq!(out, vec![0.5, 0.5]);
        assert_eq!(argmax_rows(&[0.2, 0.8, 0.5, 0.5], 2), vec![1, 0]);
    }

    #[test]
    fn refuses_bad_trees() {
        let mut f = stump(Task::Regression, Link::Identity, vec![0., 1., 2.], 1);
        f.trees[0].left[0] = 0;
        assert!(Forest::load(f)
            .unwrap_err()
            .0
            .contains("must come after it"));
        let mut f = stump(Task::Regression, Link::Identity, vec![0., 1., 2.], 1);
        f.trees[0].feature[0] = 7;
        assert!(Forest::load(f).unwrap_err().0.contains("feature 7 of 2"));
        let f = stump(Task::Regression, Link::Identity, vec![0., 1.], 1);
        assert!(Forest::load(f)
            .unwrap_err()
            .0
            .contains("2 values for 3 nodes"));
        assert!(Forest::from_json(b"{}")
            .unwrap_err()
            .0
            .contains("not an inferwire tree model"));
    }

    #[test]
    fn large_calls_are_split_the_same() {
        let f = Forest::load(stump(Task::Regression, Link::Identity, vec![0., 1., 2.], 1)).unwrap();
        let rows = 100_000;
        let x: Vec<f64> = (0..rows * 2).map(|i| (i % 3) as f64 * 0.4).collect();
        let mut out = vec![0.0; rows];
        f.predict(&x, &mut out).unwrap();
        for (r, o) in out.iter().enumerate() {
            assert_eq!(*o, if x[2 * r] <= 0.5 { 1.0 } else { 2.0 });
        }
    }
}
