//! The command line, shared by `inferwire bench ...` (through the Python package) and the
//! standalone `inferwire-bench` binary.
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use clap::{Args, Parser, Subcommand, ValueEnum};
use http::Method;

use crate::duration;
use crate::html;
use crate::listener;
use crate::load::{self, Load};
use crate::payload::{self, ENCODINGS};
use crate::report::{self, Report};
use crate::suite::{self, cells, images, numpy_echo, ray_micro, realtime_rows, seldon_matrix};
use crate::target::{parse_header, Target};

#[derive(Parser)]
#[command(
    name = "inferwire bench",
    about = "Load generator and the source benchmarks as suites, for inferwire or any server speaking the Seldon protocol",
    version
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
// Parsed once per run: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
enum Command {
    /// Send one request over and over and report latency, throughput, errors and CPU.
    Attack(AttackArgs),
    /// Write a source benchmark's request files (bodies, vegeta targets, protobuf).
    Payload(PayloadArgs),
    /// Run a source benchmark and print its table beside the published figures.
    Suite(SuiteArgs),
    /// Open streams (server-sent events, or gRPC ModelStreamInfer) over and over and
    /// report time to first piece, time between pieces, pieces/s and CPU per piece.
    Stream(StreamArgs),
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Json,
    Markdown,
}

fn dur(s: &str) -> Result<Duration, String> {
    duration::parse(s)
}

#[derive(Args)]
struct LoadArgs {
    /// Requests in flight at once (closed loop), or the most workers (open loop). A
    /// comma-separated list runs once per value (throughput against concurrency).
    #[arg(short, long, value_delimiter = ',', default_value = "1")]
    concurrency: Vec<usize>,
    /// HTTP/2 and gRPC connections to spread the workers over (HTTP/1.1: one each).
    #[arg(long)]
    connections: Option<usize>,
    /// Requests per second (open loop); 0 or absent: closed loop.
    #[arg(short, long)]
    rate: Option<f64>,
    /// How long to send (default 10s unless --requests is given).
    #[arg(short = 'z', long, value_parser = dur)]
    duration: Option<Duration>,
    /// How many requests to send.
    #[arg(short = 'n', long)]
    requests: Option<u64>,
    /// A closed-loop run first, not reported.
    #[arg(long, value_parser = dur, default_value = "0s")]
    warmup: Duration,
    /// Give up on a request after this long (it counts as an error).
    #[arg(long, value_parser = dur, default_value = "30s")]
    timeout: Duration,
    /// The server's PID: report its process tree's CPU time per request.
    #[arg(long, conflicts_with_all = ["server_cpu", "server_port"])]
    server_pid: Option<u32>,
    /// Report the CPU time per request of the server listening on the target's port on
    /// this machine: the process tree of whatever holds the listening socket (for
    /// `inferwire serve`, the supervisor and its workers).
    #[arg(long)]
    server_cpu: bool,
    /// --server-cpu for the server listening on this local port, when the target's port
    /// is another's (a proxy in front of the server).
    #[arg(long, conflicts_with = "server_cpu")]
    server_port: Option<u16>,
    /// No progress bar (it is shown only on a terminal anyway).
    #[arg(long)]
    no_progress: bool,
}

/// curl's and ghz's TLS flags, for `https://` and `grpcs://` targets.
#[derive(Args)]
struct TlsArgs {
    /// PEM file of the CA certificates to trust (default: the system's).
    #[arg(long)]
    cacert: Option<PathBuf>,
    /// Client certificate (PEM), for servers that require mutual TLS.
    #[arg(long, requires = "key")]
    cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, requires = "cert")]
    key: Option<PathBuf>,
    /// Accept any server certificate (the connection is still encrypted).
    #[arg(short = 'k', long)]
    insecure: bool,
}

impl TlsArgs {
    fn configure(&self) -> Result<(), String> {
        if self.cacert.is_none() && self.cert.is_none() && !self.insecure {
            return Ok(()); // the system's CAs, loaded when a target needs them
        }
        crate::tls::configure(crate::tls::TlsOptions {
            cacert: self.cacert.clone(),
            cert: self.cert.clone(),
            key: self.key.clone(),
            insecure: self.insecure,
        })
    }
}

#[derive(Args)]
struct AttackArgs {
    /// http(s)://host:port/path, or host:port (grpcs://host:port for TLS) with --call.
    url: String,
    /// gRPC method to call (package.Service/Method): a gRPC attack.
    #[arg(long)]
    call: Option<String>,
    /// HTTP/2 instead of HTTP/1.1: h2c (prior knowledge) on http://, ALPN h2 on https://.
    #[arg(long)]
    http2: bool,
    /// HTTP method (default: POST with a body, GET without).
    #[arg(short = 'X', long)]
    method: Option<String>,
    /// A header ("Name: value"); gRPC metadata with --call. Repeatable.
    #[arg(short = 'H', long = "header")]
    headers: Vec<String>,
    /// The request body.
    #[arg(short, long, conflicts_with = "data_file")]
    data: Option<String>,
    /// The request body from a file (for gRPC: the encoded protobuf message).
    #[arg(short = 'D', long)]
    data_file: Option<PathBuf>,
    /// gRPC: the data is a Seldon JSON message, sent as protobuf `SeldonMessage`.
    #[arg(long)]
    seldon_json: bool,
    /// gRPC: the data is a V2 JSON inference request, sent as protobuf `ModelInferRequest`
    /// with its inputs in `raw_input_contents` (raw) or typed `contents` (typed).
    #[arg(long, value_parser = ["raw", "typed"])]
    v2: Option<String>,
    /// gRPC with --v2: the model to call.
    #[arg(long)]
    model: Option<String>,
    #[command(flatten)]
    load: LoadArgs,
    #[command(flatten)]
    tls: TlsArgs,
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Write the report here instead of stdout.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Also write a self-contained HTML report with charts.
    #[arg(long)]
    html: Option<PathBuf>,
    /// Exit with status 1 when any request failed (as `curl --fail`); without it, only
    /// when every request did.
    #[arg(long)]
    fail: bool,
}

#[derive(Args)]
struct StreamArgs {
    /// http(s)://host:port/path (answered with server-sent events), or host:port
    /// (grpc://, grpcs:// for TLS) with --call.
    url: String,
    /// gRPC streaming method to call (inference.GRPCInferenceService/ModelStreamInfer).
    #[arg(long)]
    call: Option<String>,
    /// Server-sent events over HTTP/2 instead of HTTP/1.1: h2c (prior knowledge) on
    /// http://, ALPN h2 on https://.
    #[arg(long, conflicts_with = "call")]
    http2: bool,
    /// HTTP method (default: POST with a body, GET without).
    #[arg(short = 'X', long, conflicts_with = "call")]
    method: Option<String>,
    /// gRPC: how the server shapes its replies: Triton's ModelStreamInferResponse, or
    /// MLServer's bare ModelInferResponse.
    #[arg(long, value_enum, default_value = "triton")]
    reply: crate::streaming::ReplyShape,
    /// A header ("Name: value"); gRPC metadata with --call. Repeatable.
    #[arg(short = 'H', long = "header")]
    headers: Vec<String>,
    /// The request body; with --call, a V2 JSON inference request (needs --model).
    #[arg(short, long, conflicts_with = "data_file")]
    data: Option<String>,
    /// The request body from a file; with --call, an encoded ModelInferRequest.
    #[arg(short = 'D', long)]
    data_file: Option<PathBuf>,
    /// gRPC with -d: the model to call.
    #[arg(long)]
    model: Option<String>,
    /// gRPC with -d: the inputs as raw_input_contents (raw) or typed contents (typed).
    #[arg(long, value_parser = ["raw", "typed"], default_value = "typed")]
    v2: String,
    #[command(flatten)]
    load: LoadArgs,
    #[command(flatten)]
    tls: TlsArgs,
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Write the report here instead of stdout.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Also write a self-contained HTML report with charts.
    #[arg(long)]
    html: Option<PathBuf>,
    /// Exit with status 1 when any stream failed; without it, only when every one did.
    #[arg(long)]
    fail: bool,
}

#[derive(Args)]
struct PayloadArgs {
    /// The protocol whose messages to write.
    #[arg(long, default_value = "seldon", value_parser = ["seldon"])]
    protocol: String,
    /// ndarray, tensor, tftensor or all.
    #[arg(long, default_value = "all")]
    encoding: String,
    /// Integers per request.
    #[arg(long, default_value_t = 100_000)]
    size: usize,
    /// Folder to write into.
    #[arg(long, default_value = ".")]
    out: PathBuf,
    /// URL written into the vegeta targets.
    #[arg(long, default_value = "http://127.0.0.1:9000/api/v1.0/predictions")]
    url: String,
}

#[derive(Args)]
struct SuiteArgs {
    /// seldon-matrix (others: see --list).
    #[arg(required_unless_present = "list")]
    name: Option<String>,
    /// List the suites.
    #[arg(long)]
    list: bool,
    /// REST base URL of the server (predict model); https:// for TLS.
    #[arg(long, default_value = "http://127.0.0.1:9000")]
    target: String,
    /// gRPC address of the server (default: the target's host, port 5000; grpcs:// when
    /// the target is https://).
    #[arg(long)]
    grpc_target: Option<String>,
    /// REST base URL of a server running the predict_raw model.
    #[arg(long)]
    raw_target: Option<String>,
    /// gRPC address of a server running the predict_raw model.
    #[arg(long)]
    raw_grpc_target: Option<String>,
    /// PID of the server: its CPU time per request is reported.
    #[arg(long, conflicts_with = "server_cpu")]
    server_pid: Option<u32>,
    /// Report the CPU time per request of the server listening on --target's port on
    /// this machine (and of the one on --raw-target's, or --raw-grpc-target's).
    #[arg(long)]
    server_cpu: bool,
    /// PID of the predict_raw server, when it is another process.
    #[arg(long)]
    raw_pid: Option<u32>,
    /// A second server to run the same suite against, in the same run.
    #[arg(long)]
    vs: Option<String>,
    #[arg(long)]
    vs_grpc: Option<String>,
    #[arg(long)]
    vs_raw: Option<String>,
    #[arg(long)]
    vs_raw_grpc: Option<String>,
    #[arg(long, conflicts_with = "vs_cpu")]
    vs_pid: Option<u32>,
    #[arg(long)]
    vs_raw_pid: Option<u32>,
    /// --server-cpu for the --vs server (and its --vs-raw or --vs-raw-grpc).
    #[arg(long, requires = "vs")]
    vs_cpu: bool,
    /// ray-micro: the seed row the servers were started as, BATCH/CONCURRENT/REPLICAS
    /// (e.g. 1/10000/8), to print its published figure beside ours.
    #[arg(long)]
    config: Option<String>,
    /// images, numpy-echo: requests in flight (default: the seed's, 20 and 100).
    #[arg(long)]
    clients: Option<usize>,
    /// images: which of the seed's sizes (360x640,720x1280,1080x1920; default all).
    #[arg(long, value_delimiter = ',')]
    image_sizes: Vec<String>,
    /// realtime-rows: the route the data frame is sent to.
    #[arg(long, default_value = "/api/v1.0/predictions")]
    path: String,
    /// realtime-rows: the data frame's columns.
    #[arg(long, value_delimiter = ',', default_value = "Age,Number,Start")]
    columns: Vec<String>,
    /// realtime-rows: rows per request.
    #[arg(long, default_value_t = realtime_rows::ROWS)]
    rows: usize,
    /// realtime-rows: a bearer token to send (Authorization: Bearer TOKEN).
    #[arg(long)]
    token: Option<String>,
    /// numpy-echo: the V2 model name for the gRPC cells.
    #[arg(long, default_value = "echo")]
    model: String,
    /// Names for the two servers in the tables.
    #[arg(long, default_value = "target")]
    name_target: String,
    #[arg(long, default_value = "vs")]
    name_vs: String,
    /// Per cell and server (the notebook: 10s).
    #[arg(short = 'z', long, value_parser = dur, default_value = "10s")]
    duration: Duration,
    #[arg(long, value_parser = dur, default_value = "1s")]
    warmup: Duration,
    #[arg(long, value_delimiter = ',', default_value = "100000,1")]
    sizes: Vec<usize>,
    #[arg(long, value_delimiter = ',', default_value = "predict,predict_raw")]
    methods: Vec<String>,
    #[arg(long, value_delimiter = ',', default_value = "rest,grpc")]
    protocols: Vec<String>,
    #[arg(long, value_delimiter = ',', default_value = "ndarray,tensor,tftensor")]
    encodings: Vec<String>,
    #[arg(long, value_enum, default_value = "markdown")]
    format: Format,
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Also write a self-contained HTML report with charts.
    #[arg(long)]
    html: Option<PathBuf>,
    #[arg(long)]
    no_progress: bool,
    #[command(flatten)]
    tls: TlsArgs,
}

/// Runs the command line `args` (the first is the program name); returns the exit status.
pub fn main(args: Vec<String>) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    let result = match cli.command {
        Command::Attack(a) => attack(a),
        Command::Payload(p) => write_payload(p),
        Command::Suite(s) => run_suite(s),
        Command::Stream(s) => stream(s),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("inferwire bench: {e}");
            1
        }
    }
}

fn load_of(a: &LoadArgs, concurrency: usize, server_pids: &[u32]) -> Load {
    Load {
        concurrency: concurrency.max(1),
        connections: a.connections,
        rate: a.rate,
        duration: a.duration,
        requests: a.requests,
        warmup: a.warmup,
        timeout: a.timeout,
        server_pids: server_pids.to_vec(),
        progress: !a.no_progress,
    }
}

fn write_file(p: &PathBuf, text: &str) -> Result<(), String> {
    std::fs::write(p, text).map_err(|e| format!("{}: {e}", p.display()))
}

fn emit(text: &str, output: &Option<PathBuf>) -> Result<(), String> {
    match output {
        Some(p) => write_file(p, text),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

fn attack(a: AttackArgs) -> Result<(), String> {
    a.tls.configure()?;
    let body: Bytes = match (&a.data, &a.data_file) {
        (Some(d), _) => d.clone().into(),
        (None, Some(f)) => std::fs::read(f)
            .map_err(|e| format!("{}: {e}", f.display()))?
            .into(),
        (None, None) => Bytes::new(),
    };
    let headers = a
        .headers
        .iter()
        .map(|h| parse_header(h))
        .collect::<Result<Vec<_>, _>>()?;
    let target = match &a.call {
        Some(call) => {
            let message = if a.seldon_json {
                payload::seldon_json_to_protobuf(&body)?
            } else if let Some(contents) = &a.v2 {
                let model = a
                    .model
                    .as_deref()
                    .ok_or("--v2 needs --model NAME (the model_name of the request)")?;
                payload::v2_json_to_protobuf(&body, model, contents == "raw")?
            } else {
                body.to_vec()
            };
            Target::grpc(&a.url, call, &headers, &message)?
        }
        None => {
            let method = http_method(a.method.as_deref(), &body)?;
            Target::http(&a.url, method, &headers, body, a.http2)?
        }
    };
    let server_pids = server_pids(&a.load, &target.authority)?;
    let mut reports = Vec::new();
    for &c in &a.load.concurrency {
        reports.push(load::run(&target, &load_of(&a.load, c, &server_pids))?);
    }
    if let Some(path) = &a.html {
        write_file(path, &html::attack_page(&reports))?;
    }
    let text = rendered(
        &reports,
        a.format,
        Report::text,
        Report::json,
        report::markdown_table,
    );
    emit(&text, &a.output)?;
    verdict(&reports, a.fail)
}

/// `GET` without a body, `POST` with one, unless `-X` names the method.
fn http_method(given: Option<&str>, body: &[u8]) -> Result<Method, String> {
    match given {
        Some(m) => Method::from_bytes(m.to_uppercase().as_bytes())
            .map_err(|e| format!("method {m:?}: {e}")),
        None if body.is_empty() => Ok(Method::GET),
        None => Ok(Method::POST),
    }
}

/// Runs' reports in the asked form: text one after another; JSON, one run's report or a
/// list of them; markdown, a row per run.
fn rendered<R: serde::Serialize>(
    reports: &[R],
    format: Format,
    text: fn(&R) -> String,
    json: fn(&R) -> String,
    markdown: fn(&[R]) -> String,
) -> String {
    match format {
        Format::Text => reports.iter().map(text).collect::<Vec<_>>().join("\n"),
        Format::Json if reports.len() == 1 => json(&reports[0]) + "\n",
        Format::Json => serde_json::to_string_pretty(reports).unwrap_or_default() + "\n",
        Format::Markdown => markdown(reports),
    }
}

/// The processes whose CPU time the report gives (`--server-pid`, `--server-port`,
/// `--server-cpu`); none without those options.
fn server_pids(load: &LoadArgs, authority: &str) -> Result<Vec<u32>, String> {
    Ok(match (load.server_pid, load.server_port) {
        (Some(pid), _) => vec![pid],
        (None, Some(port)) => listener::on_port(port, "--server-port")?,
        (None, None) if load.server_cpu => listener::server_of(authority, "--server-cpu")?,
        (None, None) => Vec::new(),
    })
}

/// The attack's exit status, once its report is out: an error when no request succeeded
/// (a wrong body or URL should not pass for a benchmark), or with `fail` when any failed.
fn verdict(reports: &[Report], fail: bool) -> Result<(), String> {
    let requests: u64 = reports.iter().map(|r| r.requests).sum();
    let failed = requests - reports.iter().map(|r| r.ok).sum::<u64>();
    let first = || {
        reports
            .iter()
            .find_map(|r| r.errors.first().cloned())
            .unwrap_or_default()
    };
    if requests > 0 && failed == requests {
        Err(format!(
            "every request failed ({failed} of {requests}): {}",
            first()
        ))
    } else if fail && failed > 0 {
        Err(format!(
            "{failed} of {requests} requests failed (--fail): {}",
            first()
        ))
    } else {
        Ok(())
    }
}

fn stream(a: StreamArgs) -> Result<(), String> {
    use crate::streaming::{self, StreamReport, StreamTarget};
    a.tls.configure()?;
    let body: Bytes = match (&a.data, &a.data_file) {
        (Some(d), _) => d.clone().into(),
        (None, Some(f)) => std::fs::read(f)
            .map_err(|e| format!("{}: {e}", f.display()))?
            .into(),
        (None, None) => Bytes::new(),
    };
    let mut headers = a
        .headers
        .iter()
        .map(|h| parse_header(h))
        .collect::<Result<Vec<_>, _>>()?;
    let target = match &a.call {
        Some(call) => {
            let message = match &a.data {
                Some(_) => {
                    let model = a.model.as_deref().ok_or(
                        "--call with -d needs --model NAME (the data is a V2 JSON request; -D takes an encoded ModelInferRequest)",
                    )?;
                    payload::v2_json_to_protobuf(&body, model, a.v2 == "raw")?
                }
                None => body.to_vec(),
            };
            Target::grpc(&a.url, call, &headers, &message)?
        }
        None => {
            if !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("accept"))
            {
                headers.push(("accept".into(), "text/event-stream".into()));
            }
            let method = http_method(a.method.as_deref(), &body)?;
            Target::http(&a.url, method, &headers, body, a.http2)?
        }
    };
    let server_pids = server_pids(&a.load, &target.authority)?;
    let target = StreamTarget {
        target,
        shape: a.reply,
    };
    let mut reports = Vec::new();
    for &c in &a.load.concurrency {
        reports.push(streaming::run(&target, &load_of(&a.load, c, &server_pids))?);
    }
    if let Some(path) = &a.html {
        write_file(path, &streaming::stream_page(&reports))?;
    }
    let text = rendered(
        &reports,
        a.format,
        StreamReport::text,
        StreamReport::json,
        streaming::markdown_table,
    );
    emit(&text, &a.output)?;
    let streams: u64 = reports.iter().map(|r| r.streams).sum();
    let failed: u64 = reports.iter().map(|r| r.failed).sum();
    let first = || {
        reports
            .iter()
            .find_map(|r| r.errors.first().cloned())
            .unwrap_or_default()
    };
    if streams > 0 && failed == streams {
        Err(format!(
            "every stream failed ({failed} of {streams}): {}",
            first()
        ))
    } else if a.fail && failed > 0 {
        Err(format!(
            "{failed} of {streams} streams failed (--fail): {}",
            first()
        ))
    } else {
        Ok(())
    }
}

/// The processes whose CPU a suite measures for one server: `pid` as given, else with
/// `cpu` (`flag`) the server listening on `addr`'s port.
fn suite_pids(
    pid: Option<u32>,
    cpu: bool,
    addr: Option<&str>,
    flag: &str,
) -> Result<Vec<u32>, String> {
    match (pid, addr) {
        (Some(pid), _) => Ok(vec![pid]),
        (None, Some(addr)) if cpu => listener::server_of(addr, flag),
        _ => Ok(Vec::new()),
    }
}

/// The predict_raw server's address, REST or gRPC, whichever was given.
fn raw_addr<'a>(rest: &'a Option<String>, grpc: &'a Option<String>) -> Option<&'a str> {
    rest.as_deref().or(grpc.as_deref())
}

fn write_payload(p: PayloadArgs) -> Result<(), String> {
    let encodings = if p.encoding == "all" {
        ENCODINGS.to_vec()
    } else {
        vec![payload::encoding_named(&p.encoding)?]
    };
    for f in payload::write_notebook_files(&p.out, &encodings, p.size, &p.url)? {
        println!("{}", f.display());
    }
    Ok(())
}

/// `host:5000` for a REST base URL on `host` (`grpcs://host:5000` for an https:// one).
fn default_grpc(rest: &str) -> String {
    let (scheme, rest) = match rest.strip_prefix("https://") {
        Some(r) => ("grpcs://", r),
        None => ("", rest.trim_start_matches("http://")),
    };
    let host = rest.split(['/', ':']).next().unwrap_or("127.0.0.1");
    format!("{scheme}{host}:5000")
}

fn run_suite(s: SuiteArgs) -> Result<(), String> {
    if s.list {
        for (name, source, missing) in suite::SUITES {
            let state =
                missing.map_or("ready".to_string(), |m| format!("not there yet: needs {m}"));
            println!("{name:<14} {source} [{state}]");
        }
        return Ok(());
    }
    s.tls.configure()?;
    let name = s.name.clone().unwrap_or_default();
    match suite::SUITES.iter().find(|x| x.0 == name) {
        None => return Err(format!("unknown suite {name:?}; --list shows them")),
        Some((_, _, Some(missing))) => {
            return Err(format!("suite {name}: not there yet; it needs {missing}"))
        }
        Some(_) => {}
    }
    if name == "images" || name == "numpy-echo" || name == "realtime-rows" {
        return run_cells(&name, &s);
    }
    if name == "ray-micro" {
        return run_ray_micro(&s);
    }
    let encodings = s
        .encodings
        .iter()
        .map(|e| payload::encoding_named(e))
        .collect::<Result<Vec<_>, _>>()?;
    let ours = seldon_matrix::Endpoints {
        name: s.name_target.clone(),
        grpc: s
            .grpc_target
            .clone()
            .unwrap_or_else(|| default_grpc(&s.target)),
        rest: s.target.clone(),
        raw_rest: s.raw_target.clone(),
        raw_grpc: s.raw_grpc_target.clone(),
        server_pids: suite_pids(s.server_pid, s.server_cpu, Some(&s.target), "--server-cpu")?,
        raw_pids: suite_pids(
            s.raw_pid,
            s.server_cpu,
            raw_addr(&s.raw_target, &s.raw_grpc_target),
            "--server-cpu",
        )?,
    };
    let vs = match &s.vs {
        None => None,
        Some(v) => Some(seldon_matrix::Endpoints {
            name: s.name_vs.clone(),
            grpc: s.vs_grpc.clone().unwrap_or_else(|| default_grpc(v)),
            rest: v.clone(),
            raw_rest: s.vs_raw.clone(),
            raw_grpc: s.vs_raw_grpc.clone(),
            server_pids: suite_pids(s.vs_pid, s.vs_cpu, Some(v), "--vs-cpu")?,
            raw_pids: suite_pids(
                s.vs_raw_pid,
                s.vs_cpu,
                raw_addr(&s.vs_raw, &s.vs_raw_grpc),
                "--vs-cpu",
            )?,
        }),
    };
    let opts = seldon_matrix::Options {
        ours,
        vs,
        methods: s.methods.clone(),
        protocols: s.protocols.clone(),
        encodings,
        sizes: s.sizes.clone(),
        duration: s.duration,
        warmup: s.warmup,
        progress: !s.no_progress,
    };
    let cells = seldon_matrix::run(&opts)?;
    if let Some(path) = &s.html {
        write_file(path, &seldon_matrix::html(&opts, &cells))?;
    }
    let text = match s.format {
        Format::Json => serde_json::to_string_pretty(&cells).unwrap_or_default() + "\n",
        _ => seldon_matrix::markdown(&opts, &cells),
    };
    emit(&text, &s.output)
}

/// The suites measured as a grid of requests against each server (`suite::cells`).
fn run_cells(name: &str, s: &SuiteArgs) -> Result<(), String> {
    let mut servers = vec![cells::Server {
        name: s.name_target.clone(),
        grpc: s
            .grpc_target
            .clone()
            .unwrap_or_else(|| default_grpc(&s.target)),
        rest: s.target.clone(),
        pids: suite_pids(s.server_pid, s.server_cpu, Some(&s.target), "--server-cpu")?,
    }];
    if let Some(vs) = &s.vs {
        servers.push(cells::Server {
            name: s.name_vs.clone(),
            grpc: s.vs_grpc.clone().unwrap_or_else(|| default_grpc(vs)),
            rest: vs.clone(),
            pids: suite_pids(s.vs_pid, s.vs_cpu, Some(vs), "--vs-cpu")?,
        });
    }
    let default_clients = match name {
        "images" => images::CLIENTS,
        "realtime-rows" => realtime_rows::CLIENTS,
        _ => numpy_echo::CLIENTS,
    };
    let opts = cells::Options {
        servers,
        clients: s.clients.unwrap_or(default_clients),
        duration: s.duration,
        warmup: s.warmup,
        progress: !s.no_progress,
    };
    let rows = realtime_rows::Request {
        path: s.path.clone(),
        columns: s.columns.clone(),
        rows: s.rows,
        token: s.token.clone(),
    };
    let measured = match name {
        "images" => images::run(&opts, &images::parse_sizes(&s.image_sizes)?)?,
        "realtime-rows" => realtime_rows::run(&opts, &rows)?,
        _ => numpy_echo::run(&opts, &s.model)?,
    };
    if let Some(path) = &s.html {
        let source = suite::SUITES
            .iter()
            .find(|x| x.0 == name)
            .map_or("", |x| x.1);
        let title = format!("inferwire bench suite {name}");
        write_file(path, &cells::html(&title, source, &opts, &measured))?;
    }
    let text = match (s.format, name) {
        (Format::Json, _) => serde_json::to_string_pretty(&measured).unwrap_or_default() + "\n",
        (_, "images") => images::markdown(&opts, &measured),
        (_, "realtime-rows") => realtime_rows::markdown(&opts, &rows, &measured),
        _ => numpy_echo::markdown(&opts, &measured),
    };
    emit(&text, &s.output)
}

fn run_ray_micro(s: &SuiteArgs) -> Result<(), String> {
    let mut servers = vec![ray_micro::Server {
        name: s.name_target.clone(),
        url: s.target.clone(),
        pids: suite_pids(s.server_pid, s.server_cpu, Some(&s.target), "--server-cpu")?,
    }];
    if let Some(vs) = &s.vs {
        servers.push(ray_micro::Server {
            name: s.name_vs.clone(),
            url: vs.clone(),
            pids: suite_pids(s.vs_pid, s.vs_cpu, Some(vs), "--vs-cpu")?,
        });
    }
    let opts = ray_micro::Options {
        servers,
        config: s
            .config
            .as_deref()
            .map(ray_micro::parse_config)
            .transpose()?,
        duration: s.duration,
        warmup: s.warmup,
        progress: !s.no_progress,
    };
    let rows = ray_micro::run(&opts)?;
    if let Some(path) = &s.html {
        // The same page as the grid suites: one cell per client count.
        let grid = cells::Options {
            servers: opts
                .servers
                .iter()
                .map(|x| cells::Server {
                    name: x.name.clone(),
                    rest: x.url.clone(),
                    grpc: String::new(),
                    pids: x.pids.clone(),
                })
                .collect(),
            clients: 0,
            duration: opts.duration,
            warmup: opts.warmup,
            progress: false,
        };
        let measured: Vec<cells::Measured> = rows
            .iter()
            .map(|r| cells::Measured {
                key: format!(
                    "{} client{}",
                    r.clients,
                    if r.clients == 1 { "" } else { "s" }
                ),
                reports: r.reports.clone(),
            })
            .collect();
        let intro = "Seed 004, Ray Serve's microbenchmark: small data, 1 and 8 clients.";
        write_file(
            path,
            &cells::html("inferwire bench suite ray-micro", intro, &grid, &measured),
        )?;
    }
    let text = match s.format {
        Format::Json => serde_json::to_string_pretty(&rows).unwrap_or_default() + "\n",
        _ => ray_micro::markdown(&opts, &rows),
    };
    emit(&text, &s.output)
}
