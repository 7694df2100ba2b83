//! The models a server serves: the default one (the Seldon protocol's) and, with a model
//! repository, more, each with its own runner (queue, batching, model threads). Models
//! are loaded and unloaded at runtime without stopping the others: a request holds its
//! model while it runs, so an unloaded or replaced model finishes what it has started.
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::error::{Kind, ServeError};
use crate::metrics::Metrics;
use crate::model::Model;
use crate::repository_sync::RepoSync;
use crate::runner::{Runner, RunnerConfig};

/// How long a repository API call waits for the other workers to apply its change.
const SYNC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// How one model is served.
#[derive(Debug, Clone)]
pub struct ModelSpec {
    pub name: String,
    /// Empty: the model has no version on V2 routes.
    pub version: String,
    pub runner: RunnerConfig,
    /// The memory its load measured, in bytes (0: not measured); what counts against
    /// `CacheConfig::budget`.
    pub memory: u64,
}

/// A loaded model.
pub struct Served {
    pub name: String,
    pub version: String,
    pub runner: Runner,
    /// Its slot in the metrics (`model` label).
    pub slot: usize,
    pub memory: u64,
    /// When a request last asked for it (nanoseconds since the process started): the
    /// least recently used is unloaded first.
    last_used: AtomicU64,
    /// The REST routes it serves itself, as (method, path).
    pub custom_routes: Vec<(String, String)>,
    /// Its own configuration (`Model::config`: a Triton repository's `config.pbtxt`).
    pub config: Option<serde_json::Value>,
    /// What that configuration says a request must be, read once; `None`: no check.
    pub contract: Option<crate::model_config::Contract>,
}

/// Repository models loaded when a request first asks for one, and unloaded, least
/// recently used first, once the loaded ones' measured memory passes a budget.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheConfig {
    /// A request for a repository model that is not loaded loads it.
    pub on_request: bool,
    /// Bytes the repository's models may hold together in a worker (their loads'
    /// measurements); None: no budget.
    pub budget: Option<u64>,
}

/// How often a miss may read the repository's list of names again (a request for a name
/// that is not there must not cost a read of the repository each time).
const NAMES_TTL: Duration = Duration::from_secs(1);

fn since_start() -> u64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    u64::try_from(START.get_or_init(Instant::now).elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// One load of one model, which every request for it waits on.
type LoadOnce = Arc<tokio::sync::OnceCell<Result<(), String>>>;

/// A model a repository built, with how to serve it.
pub type Built = (Arc<dyn Model>, ModelSpec);

/// Where models beyond the default come from (a folder of model settings files, read by
/// the Python side). Both methods block: they are called off the I/O threads.
pub trait Repository: Send + Sync + 'static {
    /// Every model the repository has, loaded or not.
    fn names(&self) -> Result<Vec<String>, String>;
    /// Why models it lists could not be built, by name, as far as it knows (a Triton
    /// repository's models that failed at start); the index shows them UNAVAILABLE.
    fn failures(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// What changed in the repository since the last call (the first call only notes
    /// what is there): each model added or changed with its versions built (newest first;
    /// `Err`: why they could not be), each model removed with `None`.
    fn poll(&self) -> Result<Polled, String> {
        Ok(Vec::new())
    }
    /// Builds model `name` from its settings (its newest version).
    fn load(&self, name: &str) -> Result<(Arc<dyn Model>, ModelSpec), String>;
    /// Builds every version of model `name`, the newest first (a repository whose models
    /// have one version each: `load`).
    fn load_versions(&self, name: &str) -> Result<Vec<Built>, String> {
        self.load(name).map(|built| vec![built])
    }
    /// `load_versions` with the load call's parameters (a JSON object; Triton's `config`
    /// and `file:` overrides): the versions built, and what the other workers pass to
    /// `reload` to build the same (null: a plain `load_versions`). A repository that takes
    /// none refuses any.
    fn load_with(&self, name: &str, parameters: &Value) -> Result<(Vec<Built>, Value), String> {
        match parameters.as_object() {
            Some(p) if !p.is_empty() => {
                let names: Vec<&str> = p.keys().map(String::as_str).collect();
                Err(format!(
                    "this repository's models load from their own files; it takes no load \
                     parameters (got {})",
                    names.join(", ")
                ))
            }
            _ => self.load_versions(name).map(|built| (built, Value::Null)),
        }
    }
    /// Builds what another worker's `load_with` built, from the `replay` it returned.
    fn reload(&self, name: &str, replay: &Value) -> Result<Vec<Built>, String> {
        let _ = replay;
        self.load_versions(name)
    }
    /// Stores an uploaded model file as `name` at `version` (validated and converted
    /// first) and builds it.
    fn publish(
        &self,
        _name: &str,
        _version: &str,
        _data: &[u8],
        _filename: &str,
    ) -> Result<(Arc<dyn Model>, ModelSpec), String> {
        Err("this repository does not take published models".into())
    }
    /// Removes a published version; returns the model that serves now, if any is left.
    fn delete(&self, _name: &str, _version: &str) -> Result<Option<Built>, String> {
        Err("this repository does not take published models".into())
    }
    /// Published models and their versions, as JSON.
    fn published(&self) -> Result<Value, String> {
        Ok(Value::Array(Vec::new()))
    }
}

/// How a failed load's message starts, before the reason (a dialect may reword it:
/// `Dialect::load_failed`).
pub fn load_failed(name: &str) -> String {
    format!("model {name:?} could not be loaded")
}

/// A repository poll's changes: each model's name, and its versions built (or why not),
/// or `None` for a model removed.
pub type Polled = Vec<(String, Option<Result<Vec<Built>, String>>)>;

pub struct Models {
    /// Each model's newest version (the one a request without a version gets).
    loaded: RwLock<HashMap<String, Arc<Served>>>,
    /// Each model's other versions, served side by side (MLServer's versions).
    side: RwLock<HashMap<String, Vec<Arc<Served>>>>,
    default: String,
    repository: Option<Arc<dyn Repository>>,
    /// Why the last load of a model failed, for the repository index.
    failures: Mutex<BTreeMap<String, String>>,
    /// With several workers: how API changes reach the others.
    sync: Option<RepoSync>,
    metrics: Metrics,
    cache: CacheConfig,
    /// Loads under way for requests, by name.
    loading: Mutex<HashMap<String, LoadOnce>>,
    /// The repository's names, read at most every `NAMES_TTL`.
    names: Mutex<Option<(Instant, Arc<HashSet<String>>)>>,
    /// The default model only stands in for none (an empty or budgeted repository's
    /// server): it is not listed.
    placeholder: bool,
}

impl Models {
    pub fn new(
        default: Served,
        others: Vec<Served>,
        repository: Option<Arc<dyn Repository>>,
        sync: Option<RepoSync>,
        metrics: Metrics,
        cache: CacheConfig,
    ) -> Self {
        let name = default.name.clone();
        let mut loaded: HashMap<String, Arc<Served>> = HashMap::new();
        let mut side: HashMap<String, Vec<Arc<Served>>> = HashMap::new();
        // The first of a name (its newest version) serves requests without a version.
        for s in std::iter::once(default).chain(others) {
            match loaded.entry(s.name.clone()) {
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(Arc::new(s));
                }
                std::collections::hash_map::Entry::Occupied(_) => {
                    side.entry(s.name.clone()).or_default().push(Arc::new(s));
                }
            }
        }
        metrics.set_model_budget(cache.budget.unwrap_or(0));
        let models = Self {
            loaded: RwLock::new(loaded),
            side: RwLock::new(side),
            default: name,
            repository,
            failures: Mutex::new(BTreeMap::new()),
            sync,
            metrics,
            cache,
            loading: Mutex::new(HashMap::new()),
            names: Mutex::new(None),
            placeholder: false,
        };
        models.count_held();
        models
    }

    pub fn with_placeholder_default(mut self, placeholder: bool) -> Self {
        self.placeholder = placeholder;
        self
    }

    /// The names of the models served, for messages and the index.
    fn listed<'a>(&self, loaded: &'a HashMap<String, Arc<Served>>) -> Vec<&'a str> {
        let mut names: Vec<&str> = loaded
            .keys()
            .map(String::as_str)
            .filter(|n| !(self.placeholder && *n == self.default))
            .collect();
        names.sort_unstable();
        names
    }

    pub fn build(
        model: Arc<dyn Model>,
        spec: ModelSpec,
        metrics: Metrics,
    ) -> std::io::Result<Served> {
        let slot = metrics.model_slot(&spec.name);
        let config = model.config();
        Ok(Served {
            custom_routes: model.custom_routes(),
            contract: config
                .as_ref()
                .and_then(crate::model_config::Contract::read),
            config,
            runner: Runner::new(model, &spec.runner, metrics.for_model(slot))?,
            slot,
            name: spec.name,
            version: spec.version,
            memory: spec.memory,
            last_used: AtomicU64::new(since_start()),
        })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Arc<Served>>> {
        self.loaded.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The model the Seldon protocol's routes call.
    pub fn default_model(&self) -> Result<Arc<Served>, ServeError> {
        self.read().get(&self.default).cloned().ok_or_else(|| {
            ServeError::new(
                Kind::NotFound,
                format!("the default model {:?} is not loaded", self.default),
            )
        })
    }

    pub fn default_name(&self) -> &str {
        &self.default
    }

    /// The loaded model that serves `method path` itself (`Served::custom_routes`).
    pub fn custom_route(&self, method: &str, path: &str) -> Option<Arc<Served>> {
        self.read()
            .values()
            .find(|m| {
                m.custom_routes
                    .iter()
                    .any(|(v, p)| v == method && p == path)
            })
            .cloned()
    }

    /// Model `name` (at `version`, if not empty), or 404 / NOT_FOUND saying what is served.
    pub fn get(&self, name: &str, version: &str) -> Result<Arc<Served>, ServeError> {
        let loaded = self.read();
        let Some(m) = loaded.get(name) else {
            let names = self.listed(&loaded);
            return Err(ServeError::new(
                Kind::NotFound,
                format!("no model named {name:?} (serving: {})", names.join(", ")),
            ));
        };
        if !version.is_empty() && version != m.version {
            if let Some(v) = self.side_version(name, version) {
                v.last_used.store(since_start(), Relaxed);
                return Ok(v);
            }
            let served = if m.version.is_empty() {
                "it has no versions".to_string()
            } else {
                format!("it serves version {:?}", m.version)
            };
            return Err(ServeError::new(
                Kind::NotFound,
                format!("model {name:?} has no version {version:?}: {served}"),
            ));
        }
        m.last_used.store(since_start(), Relaxed);
        Ok(m.clone())
    }

    fn side_version(&self, name: &str, version: &str) -> Option<Arc<Served>> {
        let side = self.side.read().unwrap_or_else(|e| e.into_inner());
        side.get(name)?
            .iter()
            .find(|m| m.version == version)
            .cloned()
    }

    /// Installs `name`'s other versions, and retires those they replace.
    fn replace_side(&self, name: &str, versions: Vec<Arc<Served>>) {
        let mut side = self.side.write().unwrap_or_else(|e| e.into_inner());
        let old = if versions.is_empty() {
            side.remove(name)
        } else {
            side.insert(name.to_owned(), versions)
        };
        drop(side);
        for m in old.into_iter().flatten() {
            retire(Some(m));
        }
    }

    /// `get`, and with `CacheConfig::on_request` a repository model that is not loaded is
    /// loaded first: once, however many requests ask for it meanwhile; a failed load is
    /// the request's error (500, with the reason).
    pub async fn get_or_load(&self, name: &str, version: &str) -> Result<Arc<Served>, ServeError> {
        let missing = match self.get(name, version) {
            Ok(m) => {
                if self.cache.on_request && name != self.default {
                    self.metrics.model_cache(true);
                }
                return Ok(m);
            }
            Err(e) => e,
        };
        if !self.cache.on_request || self.read().contains_key(name) || !self.known(name).await {
            return Err(missing);
        }
        self.metrics.model_cache(false);
        let once = {
            let mut loading = self.loading.lock().unwrap_or_else(|e| e.into_inner());
            loading.entry(name.to_owned()).or_default().clone()
        };
        let outcome = once
            .get_or_init(|| async {
                let result = self.load_here(name).await.map_err(|e| e.message);
                // Later requests find the model loaded (or try again after a failure).
                self.loading
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(name);
                result
            })
            .await
            .clone();
        outcome.map_err(|reason| ServeError::new(Kind::Model, reason))?;
        self.get(name, version)
    }

    /// Ok when model `name` answers requests: loaded, or (loading on request) in the
    /// repository; else `get`'s 404.
    pub async fn servable(&self, name: &str, version: &str) -> Result<(), ServeError> {
        let Err(e) = self.get(name, version) else {
            return Ok(());
        };
        // A repository model that loads when asked for is servable too.
        let loads = self.cache.on_request && !self.read().contains_key(name);
        if loads && self.known(name).await {
            return Ok(());
        }
        Err(e)
    }

    /// Whether `name` is the default model standing in for none (not listed).
    pub fn is_placeholder(&self, name: &str) -> bool {
        self.placeholder && name == self.default
    }

    /// Whether some version of model `name` is loaded.
    /// Whether the server has a model repository.
    pub fn has_repository(&self) -> bool {
        self.repository.is_some()
    }

    pub fn is_loaded(&self, name: &str) -> bool {
        self.read().contains_key(name)
    }

    /// Whether the repository has a model `name` (its list read at most every
    /// `NAMES_TTL`).
    pub async fn known(&self, name: &str) -> bool {
        if let Some((at, set)) = &*self.names.lock().unwrap_or_else(|e| e.into_inner()) {
            if set.contains(name) || at.elapsed() < NAMES_TTL {
                return set.contains(name);
            }
        }
        let Some(repo) = self.repository.clone() else {
            return false;
        };
        let Ok(Ok(list)) = tokio::task::spawn_blocking(move || repo.names()).await else {
            return false;
        };
        let set: Arc<HashSet<String>> = Arc::new(list.into_iter().collect());
        let found = set.contains(name);
        *self.names.lock().unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), set));
        found
    }

    /// Whether the repository has a model `name` now (read afresh).
    pub async fn in_repository(&self, name: &str) -> bool {
        let Some(repo) = self.repository.clone() else {
            return false;
        };
        let owned = name.to_owned();
        matches!(
            tokio::task::spawn_blocking(move || repo.names()).await,
            Ok(Ok(names)) if names.contains(&owned)
        )
    }

    /// Loads `name` in this worker only (a request's load: every worker loads what its
    /// own requests ask for), then unloads the least recently used models while the
    /// loaded ones' memory is over the budget.
    async fn load_here(&self, name: &str) -> Result<(), ServeError> {
        let Some(served) = self.build_from_repository(name, None).await?.0.pop() else {
            return Err(ServeError::new(
                Kind::Internal,
                format!("the repository built no model {name:?}"),
            ));
        };
        let memory = served.memory;
        self.replace(name, Some(served));
        tracing::info!("model {name:?} loaded for a request ({memory} bytes measured)");
        self.make_room(name);
        Ok(())
    }

    /// Unloads the least recently used repository models (never `keep`, nor the default
    /// model) until the loaded ones' memory is within the budget.
    fn make_room(&self, keep: &str) {
        if let Some(budget) = self.cache.budget {
            let mut evicted = Vec::new();
            {
                let mut loaded = self.loaded.write().unwrap_or_else(|e| e.into_inner());
                let mut held: u64 = loaded
                    .values()
                    .filter(|m| m.name != self.default)
                    .map(|m| m.memory)
                    .sum();
                while held > budget {
                    let Some(victim) = loaded
                        .values()
                        .filter(|m| m.name != self.default && m.name != keep)
                        .min_by_key(|m| m.last_used.load(Relaxed))
                        .map(|m| m.name.clone())
                    else {
                        tracing::warn!(
                            "model {keep:?} alone measures more than the memory budget \
                             ({held} > {budget} bytes)"
                        );
                        break;
                    };
                    if let Some(m) = loaded.remove(&victim) {
                        held -= m.memory;
                        evicted.push(m);
                    }
                }
            }
            for m in evicted {
                tracing::info!(
                    "model {:?} unloaded to keep within the memory budget",
                    m.name
                );
                self.replace_side(&m.name, Vec::new());
                self.metrics.model_evicted();
                retire(Some(m));
            }
        }
        self.count_held();
    }

    /// The gauges of this worker's repository models.
    fn count_held(&self) {
        let loaded = self.read();
        let others = loaded.values().filter(|m| m.name != self.default);
        let (count, bytes) = others.fold((0, 0), |(n, b), m| (n + 1, b + m.memory));
        self.metrics.models_held(count, bytes);
    }

    fn repository(&self) -> Result<Arc<dyn Repository>, ServeError> {
        self.repository.clone().ok_or_else(|| {
            ServeError::new(
                Kind::NotFound,
                "this server has no model repository (see --model-repository)",
            )
        })
    }

    /// Loads (or reloads) `name` from the repository. The new model takes requests once
    /// it is ready; a model it replaces finishes the requests it already has. A failed
    /// load leaves whatever was serving in place.
    pub async fn load(&self, name: &str, parameters: Value) -> Result<(), ServeError> {
        let (versions, replay) = self.build_from_repository(name, Some(parameters)).await?;
        let mut versions = versions.into_iter();
        let Some(served) = versions.next() else {
            return Err(ServeError::new(
                Kind::Internal,
                format!("the repository built no model {name:?}"),
            ));
        };
        self.replace_side(name, versions.map(Arc::new).collect());
        self.replace(name, Some(served));
        tracing::info!("model {name:?} loaded");
        self.make_room(name);
        self.propagate(name, true, replay).await
    }

    /// Builds `name` from the repository (off the I/O threads): its newest version, or
    /// with a load call's `parameters` all of them, the newest first (and what the other
    /// workers replay); counting the load and its time. A failure is remembered for the
    /// index.
    async fn build_from_repository(
        &self,
        name: &str,
        parameters: Option<Value>,
    ) -> Result<(Vec<Served>, Value), ServeError> {
        let repo = self.repository()?;
        let owned = name.to_string();
        let metrics = self.metrics;
        let start = Instant::now();
        let built = tokio::task::spawn_blocking(move || {
            let (built, replay) = match parameters {
                Some(p) => repo.load_with(&owned, &p)?,
                None => (vec![repo.load(&owned)?], Value::Null),
            };
            let served = built
                .into_iter()
                .map(|(model, spec)| {
                    if spec.name != owned {
                        return Err(format!(
                            "its settings name it {:?}, not {owned:?}",
                            spec.name
                        ));
                    }
                    Models::build(model, spec, metrics).map_err(|e| e.to_string())
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok::<_, String>((served, replay))
        })
        .await
        .map_err(|e| ServeError::new(Kind::Internal, e.to_string()))?;
        self.metrics.model_loaded(built.is_ok(), start.elapsed());
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        match built {
            Ok(served) => {
                failures.remove(name);
                Ok(served)
            }
            Err(reason) => {
                remember_failure(&mut failures, name, &reason);
                Err(ServeError::new(
                    Kind::BadRequest,
                    format!("{}: {reason}", load_failed(name)),
                ))
            }
        }
    }

    /// Stores and serves an uploaded model as `name` `version`, replacing the version that
    /// served. A model that fails validation leaves everything as it was.
    pub async fn publish(
        &self,
        name: &str,
        version: &str,
        data: bytes::Bytes,
        filename: String,
    ) -> Result<(), ServeError> {
        let repo = self.repository()?;
        let (owned, ver) = (name.to_string(), version.to_string());
        let metrics = self.metrics;
        let built = tokio::task::spawn_blocking(move || {
            let (model, spec) = repo.publish(&owned, &ver, &data, &filename)?;
            Models::build(model, spec, metrics).map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| ServeError::new(Kind::Internal, e.to_string()))?
        .map_err(|reason| {
            ServeError::new(
                Kind::BadRequest,
                format!("model {name:?} version {version:?} was not published: {reason}"),
            )
        })?;
        self.replace(name, Some(built));
        tracing::info!("model {name:?} version {version:?} published and serving");
        self.propagate(name, true, Value::Null).await
    }

    /// Removes a published version; the newest one left serves (or none: when that was
    /// the default model, the Seldon routes then answer 404 until one is published).
    pub async fn delete_version(&self, name: &str, version: &str) -> Result<(), ServeError> {
        let repo = self.repository()?;
        let (owned, ver) = (name.to_string(), version.to_string());
        let metrics = self.metrics;
        let now = tokio::task::spawn_blocking(move || {
            repo.delete(&owned, &ver)?
                .map(|(model, spec)| Models::build(model, spec, metrics).map_err(|e| e.to_string()))
                .transpose()
        })
        .await
        .map_err(|e| ServeError::new(Kind::Internal, e.to_string()))?
        .map_err(|e| ServeError::new(Kind::NotFound, e))?;
        let serving = now.is_some();
        self.replace(name, now);
        tracing::info!("model {name:?} version {version:?} deleted");
        self.propagate(name, serving, Value::Null).await
    }

    /// Published models and their versions.
    pub async fn published(&self) -> Result<Value, ServeError> {
        let repo = self.repository()?;
        tokio::task::spawn_blocking(move || repo.published())
            .await
            .map_err(|e| ServeError::new(Kind::Internal, e.to_string()))?
            .map_err(|e| ServeError::new(Kind::Internal, e))
    }

    fn replace(&self, name: &str, with: Option<Served>) {
        self.replace_arc(name, with.map(Arc::new));
    }

    fn replace_arc(&self, name: &str, with: Option<Arc<Served>>) {
        let mut loaded = self.loaded.write().unwrap_or_else(|e| e.into_inner());
        let old = match with {
            Some(served) => loaded.insert(name.to_string(), served),
            None => loaded.remove(name),
        };
        drop(loaded);
        retire(old);
        self.count_held();
    }

    /// Stops serving `name`; requests it already has finish.
    /// The default model (the Seldon protocol's) only with `default_too` (MLServer's
    /// dialect, where every model may go: the Seldon routes then answer that it is not
    /// loaded).
    pub async fn unload(&self, name: &str, default_too: bool) -> Result<(), ServeError> {
        self.repository()?;
        if name == self.default && !default_too {
            return Err(ServeError::new(
                Kind::BadRequest,
                format!(
                    "{name:?} is the default model (the Seldon protocol's): it cannot be unloaded"
                ),
            ));
        }
        let old = self
            .loaded
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name);
        if old.is_none() {
            return Err(ServeError::new(
                Kind::NotFound,
                format!("model {name:?} is not loaded"),
            ));
        }
        retire(old);
        self.replace_side(name, Vec::new());
        self.count_held();
        tracing::info!("model {name:?} unloaded");
        self.propagate(name, false, Value::Null).await
    }

    /// With several workers: records a change this worker made and waits until every
    /// worker has made it too.
    async fn propagate(&self, name: &str, serving: bool, replay: Value) -> Result<(), ServeError> {
        let Some(sync) = &self.sync else {
            return Ok(());
        };
        let failed = |e: String| {
            ServeError::new(
                Kind::Internal,
                format!("model {name:?} changed in this worker, but {e}"),
            )
        };
        let generation = sync.record(name, serving, replay).map_err(failed)?;
        sync.wait_for_all(generation, name, SYNC_TIMEOUT)
            .await
            .map_err(failed)
    }

    /// Applies the changes other workers recorded (blocking: loads run here). Called
    /// every `repository_sync::POLL` by the worker's sync thread.
    pub fn apply_pending(&self) {
        let (Some(sync), Some(repo)) = (&self.sync, &self.repository) else {
            return;
        };
        let (generation, changes) = match sync.pending() {
            Ok(Some(p)) => p,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!("repository changes from other workers: {e}");
                return;
            }
        };
        let mut failed = BTreeMap::new();
        for (name, change) in changes {
            if !change.serving {
                self.replace(&name, None);
                self.replace_side(&name, Vec::new());
                tracing::info!("model {name:?} unloaded (changed through another worker)");
                continue;
            }
            let built = if change.replay.is_null() {
                repo.load_versions(&name)
            } else {
                repo.reload(&name, &change.replay)
            };
            if let Err(reason) = self.serve_built(&name, built, "changed through another worker") {
                failed.insert(name, reason);
            }
        }
        if let Err(e) = sync.acknowledge(generation, failed) {
            tracing::warn!("repository changes from other workers: {e}");
        }
    }

    /// Serves the versions a repository built for `name` (the newest first) in this
    /// worker, or remembers why there are none for the index (`Err`: that reason).
    /// `why`: what the log says caused the load.
    fn serve_built(
        &self,
        name: &str,
        built: Result<Vec<Built>, String>,
        why: &str,
    ) -> Result<(), String> {
        let built = built.and_then(|versions| {
            versions
                .into_iter()
                .map(|(m, spec)| {
                    Models::build(m, spec, self.metrics)
                        .map(Arc::new)
                        .map_err(|e| e.to_string())
                })
                .collect::<Result<Vec<_>, _>>()
        });
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        match built {
            Ok(mut versions) if !versions.is_empty() => {
                failures.remove(name);
                drop(failures);
                let newest = versions.remove(0);
                self.replace_side(name, versions);
                self.replace_arc(name, Some(newest));
                tracing::info!("model {name:?} loaded ({why})");
                Ok(())
            }
            Ok(_) => {
                let reason = "the repository built no model".to_owned();
                remember_failure(&mut failures, name, &reason);
                Err(reason)
            }
            Err(reason) => {
                remember_failure(&mut failures, name, &reason);
                Err(reason)
            }
        }
    }

    /// Reads the repository for models added, changed or removed and serves what it
    /// finds, in this worker only (each worker polls on its own; blocking: loads run
    /// here). Called every `repository_poll` by the worker's poll thread.
    pub fn poll_repository(&self) {
        let Some(repo) = &self.repository else {
            return;
        };
        let changes = match repo.poll() {
            Ok(changes) => changes,
            Err(e) => {
                tracing::warn!("polling the model repository: {e}");
                return;
            }
        };
        for (name, change) in changes {
            let Some(built) = change else {
                self.replace(&name, None);
                self.replace_side(&name, Vec::new());
                tracing::info!("model {name:?} unloaded (gone from the repository)");
                continue;
            };
            if let Err(reason) = self.serve_built(&name, built, "changed in the repository") {
                tracing::warn!("model {name:?} changed in the repository: {reason}");
            }
        }
        self.count_held();
    }

    /// The repository's models with their state: READY, UNAVAILABLE (with the reason a
    /// load failed), or UNLOADED.
    pub async fn index(&self) -> Result<Vec<Value>, ServeError> {
        let repo = self.repository()?;
        let (names, known) =
            tokio::task::spawn_blocking(move || repo.names().map(|names| (names, repo.failures())))
                .await
                .map_err(|e| ServeError::new(Kind::Internal, e.to_string()))?
                .map_err(|e| ServeError::new(Kind::Internal, e))?;
        let loaded = self.read();
        let mut failures = self
            .failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for (name, reason) in known {
            failures.entry(name).or_insert(reason);
        }
        let mut all: Vec<&str> = names.iter().map(String::as_str).collect();
        all.extend(self.listed(&loaded));
        all.sort_unstable();
        all.dedup();
        let side = self.side.read().unwrap_or_else(|e| e.into_inner());
        let ready = |m: &Served| json!({"name": m.name, "version": m.version, "state": "READY", "reason": ""});
        let others = |name: &str| -> Vec<Value> {
            side.get(name)
                .map(|v| v.iter().map(|m| ready(m)).collect())
                .unwrap_or_default()
        };
        Ok(all
            .into_iter()
            .flat_map(|name| match (loaded.get(name), failures.get(name)) {
                (Some(m), _) => {
                    let mut versions = vec![ready(m)];
                    versions.extend(others(name));
                    versions
                }
                (None, Some(reason)) => {
                    vec![json!({"name": name, "state": "UNAVAILABLE", "reason": reason})]
                }
                // Triton's and MLServer's words for a model not loaded.
                (None, None) => {
                    vec![json!({"name": name, "state": "UNAVAILABLE", "reason": "unloaded"})]
                }
            })
            .collect())
    }

    /// Every loaded model, for shutdown.
    pub fn all(&self) -> Vec<Arc<Served>> {
        let mut all: Vec<Arc<Served>> = self.read().values().cloned().collect();
        let side = self.side.read().unwrap_or_else(|e| e.into_inner());
        all.extend(side.values().flatten().cloned());
        all
    }
}

/// Failed loads remembered for the index at most: a client that asks to load name after
/// made-up name must not grow the table without bound.
const MAX_FAILURES: usize = 1024;
/// The longest reason kept for one (a model's own error message can be anything).
const MAX_REASON: usize = 4096;

fn remember_failure(failures: &mut BTreeMap<String, String>, name: &str, reason: &str) {
    if failures.len() >= MAX_FAILURES && !failures.contains_key(name) {
        failures.pop_first();
    }
    let mut cut = reason.len().min(MAX_REASON);
    while !reason.is_char_boundary(cut) {
        cut -= 1;
    }
    failures.insert(name.to_owned(), reason[..cut].to_owned());
}

/// A replaced or unloaded model is dropped off the I/O threads: dropping a runner waits
/// for its model threads to finish their queue.
fn retire(old: Option<Arc<Served>>) {
    if let Some(old) = old {
        std::thread::spawn(move || drop(old));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_loads_are_remembered_within_bounds() {
        let mut failures = BTreeMap::new();
        for i in 0..MAX_FAILURES + 500 {
            remember_failure(&mut failures, &format!("m{i}"), &"é".repeat(5000));
        }
        assert_eq!(failures.len(), MAX_FAILURES);
        assert!(failures.values().all(|r| r.len() <= MAX_REASON));
        // The newest is kept.
        assert!(failures.contains_key(&format!("m{}", MAX_FAILURES + 499)));
    }
}
