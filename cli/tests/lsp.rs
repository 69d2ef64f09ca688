//! `cargo-contracts lsp` driven as an editor drives it: JSON-RPC with Content-Length framing
//! over the child's standard input and output, on scratch crates (never built: the analysis
//! reads source only). Every wait has a timeout, so a server that hangs fails the test.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use lsp_types::Url;
use serde_json::{Value, json};

/// How long any answer may take.
const PATIENCE: Duration = Duration::from_secs(60);

/// A running server.
struct Server {
    /// Its process.
    child: Child,
    /// Its input (`None` once closed).
    stdin: Option<ChildStdin>,
    /// What it writes, message by message (`None` once its output ends).
    messages: Receiver<Option<Value>>,
    /// Notifications read while waiting for something else.
    queued: Vec<Value>,
    /// The id of the last request sent.
    next_id: i64,
}

impl Server {
    /// Starts the server and initializes it with `params` (the client's capabilities, its
    /// workspace folders): the `initialize` response's result.
    fn start(params: Value) -> (Server, Value) {
        let mut server = Server::spawn();
        let result = server.request("initialize", params);
        let result = result["result"].clone();
        server.notify("initialized", json!({}));
        (server, result)
    }

    /// Starts the server, not initialized.
    fn spawn() -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_cargo-contracts"))
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the binary runs");
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let (sender, messages) = mpsc::channel();
        std::thread::spawn(move || {
            while let Some(message) = read_message(&mut stdout) {
                if sender.send(Some(message)).is_err() {
                    return;
                }
            }
            let _ = sender.send(None);
        });
        Server {
            child,
            stdin,
            messages,
            queued: Vec::new(),
            next_id: 0,
        }
    }

    /// Writes a message with its Content-Length header.
    fn send(&mut self, message: &Value) {
        let text = message.to_string();
        let stdin = self.stdin.as_mut().expect("the server's input is open");
        write!(stdin, "Content-Length: {}\r\n\r\n{text}", text.len()).unwrap();
        stdin.flush().unwrap();
    }

    /// The next message, within [`PATIENCE`].
    fn next(&mut self) -> Value {
        match self.messages.recv_timeout(PATIENCE) {
            Ok(Some(message)) => message,
            Ok(None) => panic!("the server closed its output"),
            Err(_) => panic!("no message from the server within {PATIENCE:?}"),
        }
    }

    /// Sends a request: the whole response (`result` or `error`).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self.next();
            if message.get("method").is_none() && message["id"] == json!(id) {
                return message;
            }
            self.queued.push(message);
        }
    }

    /// Sends a notification.
    fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The params of the next `method` notification.
    fn notification(&mut self, method: &str) -> Value {
        if let Some(at) = self.queued.iter().position(|m| m["method"] == method) {
            return self.queued.remove(at)["params"].clone();
        }
        loop {
            let message = self.next();
            if message["method"] == method {
                return message["params"].clone();
            }
            self.queued.push(message);
        }
    }

    /// The diagnostics published next for `uri`.
    fn diagnostics(&mut self, uri: &Url) -> Vec<Value> {
        loop {
            let params = self.notification("textDocument/publishDiagnostics");
            if params["uri"] == uri.as_str() {
                return params["diagnostics"].as_array().unwrap().clone();
            }
        }
    }

    /// `didOpen` of `uri` with `text`, version 1.
    fn open(&mut self, uri: &Url, text: &str) {
        let document = json!({"uri": uri, "languageId": "rust", "version": 1, "text": text});
        self.notify("textDocument/didOpen", json!({"textDocument": document}));
    }

    /// `didChange` of `uri` to the whole `text`.
    fn change(&mut self, uri: &Url, version: i32, text: &str) {
        self.notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"text": text}],
            }),
        );
    }

    /// The inlay hints of `uri` from line `from` to line `to` (0-based): each as its line,
    /// its character and its label.
    fn hints(&mut self, uri: &Url, from: u32, to: u32) -> Vec<(u64, u64, String)> {
        let range =
            json!({"start": {"line": from, "character": 0}, "end": {"line": to, "character": 0}});
        let response = self.request(
            "textDocument/inlayHint",
            json!({"textDocument": {"uri": uri}, "range": range}),
        );
        let hints = response["result"].as_array().expect("a list of hints");
        hints
            .iter()
            .map(|hint| {
                let at = &hint["position"];
                let label = hint["label"].as_str().unwrap().to_string();
                (
                    at["line"].as_u64().unwrap(),
                    at["character"].as_u64().unwrap(),
                    label,
                )
            })
            .collect()
    }

    /// The hover's markdown at a position (`None` where there is none).
    fn hover(&mut self, uri: &Url, line: u32, character: u32) -> Option<String> {
        let response = self.request(
            "textDocument/hover",
            json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}),
        );
        let value = response["result"]["contents"]["value"].as_str()?;
        Some(value.to_string())
    }

    /// `shutdown` and `exit`: the exit code.
    fn stop(mut self) -> Option<i32> {
        let response = self.request("shutdown", Value::Null);
        assert_eq!(response["result"], Value::Null, "{response}");
        self.notify("exit", Value::Null);
        self.wait()
    }

    /// The exit code, once the server has ended (`None` if it did not within [`PATIENCE`]).
    fn wait(&mut self) -> Option<i32> {
        let started = Instant::now();
        while started.elapsed() < PATIENCE {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One message of Content-Length framing; `None` at the end of the output.
fn read_message(from: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if from.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(value) = line.strip_prefix("Content-Length: ") {
            length = value.parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    from.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

/// A crate in a fresh directory under the system's temp dir: `Cargo.toml` depending on candle
/// and this project, and `files` (`src/lib.rs`, ...).
fn scratch_crate(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cc-lsp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
             [dependencies]\ncandle-core = \"0.11.1\"\ncandle-nn = \"0.11.1\"\n\
             candle-contracts = \"0.1.0\"\n"
        ),
    )
    .unwrap();
    for (path, text) in files {
        std::fs::write(dir.join(path), text).unwrap();
    }
    dir.canonicalize().unwrap()
}

/// `initialize`'s params for a client with its workspace folder at `root`, offering the
/// position encodings `encodings` (none: UTF-16, LSP's default).
fn initialize(root: &Path, encodings: &[&str]) -> Value {
    let mut capabilities = json!({});
    if !encodings.is_empty() {
        capabilities = json!({"general": {"positionEncodings": encodings}});
    }
    json!({
        "processId": null,
        "rootUri": Url::from_file_path(root).unwrap(),
        "capabilities": capabilities,
    })
}

/// The `file://` URI of a path.
fn uri(path: &Path) -> Url {
    Url::from_file_path(path).unwrap()
}

/// A ViT-style attention block with its sizes in constants and a struct contract: every
/// intermediate's shape is known. The comment before `scores` holds characters of 2, 3 and 4
/// bytes (`𝔼` is two UTF-16 code units), so that its hint's column differs in each encoding.
const ATTENTION: &str = "use candle_contracts::contract;
use candle_core::{D, Result, Tensor};
use candle_nn::{Linear, Module};

/// ViT-B/16 at 224 x 224: 196 patches and the class token, heads of 64.
const TOKENS: usize = 197;
const HEAD_DIM: usize = 64;

#[contract(q_proj: Linear[E -> E], k_proj: Linear[E -> E], v_proj: Linear[E -> E],
           out_proj: Linear[E -> E], n_head = H, E == H * HEAD_DIM)]
pub struct Attention {
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    out_proj: Linear,
    n_head: usize,
}

#[contract]
impl Attention {
    #[contract(x: f32[B, TOKENS, E], return: f32[B, TOKENS, E])]
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (b, t, e) = x.dims3()?;
        let q = self.q_proj.forward(x)?;
        let k = self.k_proj.forward(x)?;
        let v = self.v_proj.forward(x)?;
        let q = q.reshape((b, t, self.n_head, HEAD_DIM))?.transpose(1, 2)?;
        let k = k.reshape((b, t, self.n_head, HEAD_DIM))?.transpose(1, 2)?;
        let v = v.reshape((b, t, self.n_head, HEAD_DIM))?.transpose(1, 2)?;
        /* 𝔼[q·kᵀ]/√d */ let scores = (q.matmul(&k.t()?)? / (HEAD_DIM as f64).sqrt())?;
        let probs = candle_nn::ops::softmax(&scores, D::Minus1)?;
        let heads = probs.matmul(&v)?;
        let merged = heads.transpose(1, 2)?.reshape((b, t, e))?;
        self.out_proj.forward(&merged)
    }
}
";

/// The hints of `ATTENTION`, with the column of `scores`'s hint (line 29) in each encoding.
fn attention_hints(scores_column: u64) -> Vec<(u64, u64, String)> {
    [
        (23, 13, ": f32[B, 197, E]"),     // q = self.q_proj.forward(x)?
        (24, 13, ": f32[B, 197, E]"),     // k
        (25, 13, ": f32[B, 197, E]"),     // v
        (26, 13, ": f32[B, H, 197, 64]"), // q, its heads
        (27, 13, ": f32[B, H, 197, 64]"), // k, its heads
        (28, 13, ": f32[B, H, 197, 64]"), // v, its heads
        (29, scores_column, ": f32[B, H, 197, 197]"),
        (30, 17, ": f32[B, H, 197, 197]"), // probs
        (31, 17, ": f32[B, H, 197, 64]"),  // heads
        (32, 18, ": f32[B, 197, E]"),      // merged
    ]
    .into_iter()
    .map(|(line, column, label)| (line, column, label.to_string()))
    .collect()
}

#[test]
fn inlay_hints_give_every_tensor_of_an_attention_block_its_type() {
    let dir = scratch_crate("hints", &[("src/lib.rs", ATTENTION)]);
    let lib = uri(&dir.join("src/lib.rs"));
    let (mut server, initialized) = Server::start(initialize(&dir, &[]));
    let capabilities = &initialized["capabilities"];
    assert_eq!(capabilities["positionEncoding"], "utf-16", "{initialized}");
    assert_eq!(capabilities["textDocumentSync"]["change"], 1, "full sync");
    assert_eq!(capabilities["inlayHintProvider"], true);
    assert_eq!(capabilities["hoverProvider"], true);
    assert_eq!(
        capabilities["codeActionProvider"]["codeActionKinds"],
        json!(["quickfix"])
    );
    server.open(&lib, ATTENTION);
    // `scores` ends at column 36 in UTF-16 code units: 8 spaces, the comment's 18 units
    // (`𝔼` counts 2) and `let scores`. The integers `b`, `t`, `e` get none: rust-analyzer
    // shows their `usize`, the hover their dims.
    assert_eq!(server.hints(&lib, 0, 40), attention_hints(36));
    // Only the hints in the range asked for.
    assert_eq!(server.hints(&lib, 29, 31), attention_hints(36)[6..8]);
    assert_eq!(server.stop(), Some(0));

    // A client that offers UTF-8 gets it: the comment is 25 bytes.
    let (mut server, initialized) = Server::start(initialize(&dir, &["utf-16", "utf-8"]));
    assert_eq!(initialized["capabilities"]["positionEncoding"], "utf-8");
    server.open(&lib, ATTENTION);
    assert_eq!(server.hints(&lib, 0, 40), attention_hints(43));
    assert_eq!(server.stop(), Some(0));
}

/// Tensors known in part (a dtype, some dims), not at all, and integers.
const PARTLY_KNOWN: &str = "use candle_contracts::contract;
use candle_core::{Result, Tensor};

fn load() -> Result<Tensor> {
    unimplemented!()
}

#[contract(x: f32[B, T, E])]
pub fn partly(x: &Tensor, w: &Tensor, dims: &[usize]) -> Result<Tensor> {
    let w = w.to_dtype(candle_core::DType::F32)?;
    let y = x.broadcast_matmul(&w)?;
    let z = x.reshape(dims)?;
    let table = load()?;
    let n = x.dim(1)?;
    let ids = Tensor::arange(0u32, 10u32, x.device())?;
    Ok(y)
}
";

#[test]
fn a_tensor_known_in_part_has_unknown_dims_and_runs_and_an_unknown_one_no_hint() {
    let dir = scratch_crate("partly", &[("src/lib.rs", PARTLY_KNOWN)]);
    let lib = uri(&dir.join("src/lib.rs"));
    let (mut server, _) = Server::start(initialize(&dir, &[]));
    server.open(&lib, PARTLY_KNOWN);
    // The integer `n` gets none; `table` is never bound (`load` is `unimplemented!()`):
    // Rust's never type.
    assert_eq!(
        server.hints(&lib, 0, 20),
        [
            (9, 9, ": f32[..]".to_string()),
            (10, 9, ": f32[.., _, T, _]".to_string()),
            (11, 9, ": f32[..]".to_string()),
            (12, 13, ": !".to_string()),
            (14, 11, ": u32[10]".to_string()),
        ]
    );
    assert_eq!(server.stop(), Some(0));
}

#[test]
fn hover_gives_a_names_type_its_op_and_line_and_the_clauses_of_its_dims() {
    let dir = scratch_crate("hover", &[("src/lib.rs", ATTENTION)]);
    let lib = uri(&dir.join("src/lib.rs"));
    let (mut server, _) = Server::start(initialize(&dir, &[]));
    server.open(&lib, ATTENTION);
    // `probs` where it is used (`probs.matmul(&v)?`, line 31, column 20).
    let probs = "```text\nprobs: f32[B, H, 197, 197]\n```\n\n\
                 bound at line 31 by `ops::softmax`\n\n\
                 - `B`: `x: f32[B, TOKENS, E]`, line 21\n\
                 - `H`: `n_head = H`, line 10\n";
    assert_eq!(server.hover(&lib, 31, 22).as_deref(), Some(probs));
    // Where it is bound: the same.
    assert_eq!(server.hover(&lib, 30, 13).as_deref(), Some(probs));
    // An integer (`b` in `q.reshape((b, ..))`): its dim.
    assert_eq!(
        server.hover(&lib, 26, 27).as_deref(),
        Some(
            "```text\nb = B\n```\n\nbound at line 23 by `dims3`\n\n- `B`: `x: f32[B, TOKENS, E]`, line 21\n"
        )
    );
    // A parameter (`x.dims3()`): its clause.
    assert_eq!(
        server.hover(&lib, 22, 24).as_deref(),
        Some("```text\nx: f32[B, TOKENS, E]\n```\n\ndeclared by the contract, line 21\n")
    );
    // The call a `let` binds: what it gives.
    let softmax = server.hover(&lib, 30, 38).unwrap();
    assert!(
        softmax.starts_with(
            "```text\nprobs: f32[B, H, 197, 197]\n```\n\n`ops::softmax` binds `probs`, line 31\n"
        ),
        "{softmax}"
    );
    // Nothing known: no hover (rust-analyzer's stands alone). A field, a method not bound by a
    // `let`, a keyword, a place past the end of the text.
    assert_eq!(server.hover(&lib, 23, 22), None, "`q_proj`");
    assert_eq!(server.hover(&lib, 29, 52), None, "`t()`");
    assert_eq!(server.hover(&lib, 23, 8), None, "`let`");
    assert_eq!(server.hover(&lib, 900, 0), None);
    assert_eq!(server.stop(), Some(0));
}

/// A kv cache: `k` is `T` long without it, `P + T` with it.
const CACHED: &str = "use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(k: f32[B, H, T, 16], cache: f32[B, H, P, 16])]
pub fn attend(k: &Tensor, cache: Option<&Tensor>) -> Result<Tensor> {
    let k = match cache {
        None => k.clone(),
        Some(prev) => Tensor::cat(&[prev, k], 2)?,
    };
    Ok(k)
}
";

#[test]
fn hover_says_what_a_size_two_branches_give_is() {
    let dir = scratch_crate("hover-join", &[("src/lib.rs", CACHED)]);
    let lib = uri(&dir.join("src/lib.rs"));
    let (mut server, _) = Server::start(initialize(&dir, &[]));
    server.open(&lib, CACHED);
    let hover = server.hover(&lib, 5, 8).unwrap();
    assert!(
        hover.starts_with("```text\nk: f32[B, H, ?1, 16]\n```\n\nbound at line 6 by `match`\n"),
        "{hover}"
    );
    assert!(
        hover.ends_with("\n`?1` is `T` or `P + T`, by the branch taken\n"),
        "{hover}"
    );
    assert_eq!(server.stop(), Some(0));
}

/// The line of `ATTENTION` with `k.t()` (line 29) without the transpose.
const MISSING_TRANSPOSE: (&str, &str) = ("(q.matmul(&k.t()?)? /", "(q.matmul(&k)? /");

#[test]
fn a_missing_transpose_is_a_diagnostic_with_a_quick_fix_until_it_is_fixed() {
    let dir = scratch_crate("transpose", &[("src/lib.rs", ATTENTION)]);
    let lib = uri(&dir.join("src/lib.rs"));
    let (mut server, _) = Server::start(initialize(&dir, &[]));
    server.open(&lib, ATTENTION);
    assert_eq!(server.hints(&lib, 0, 40).len(), 10);
    let (right, wrong) = MISSING_TRANSPOSE;
    server.change(&lib, 2, &ATTENTION.replace(right, wrong));
    let diagnostics = server.diagnostics(&lib);
    // `k`, after 8 spaces, the comment (18 UTF-16 units) and `let scores = (q.matmul(&`.
    let range =
        json!({"start": {"line": 29, "character": 50}, "end": {"line": 29, "character": 51}});
    assert_eq!(
        diagnostics,
        [json!({
            "range": range,
            "severity": 1,
            "source": "candle-contracts",
            "message": "`Tensor::matmul` takes `rhs: f32[.., 64, _]`, but `k` is `f32[B, H, 197, 64]` here\n\
                        note: dim -2: 197 given, 64 expected\n\
                        help: transpose it: `&k.t()?`",
            "relatedInformation": [{
                "location": {
                    "uri": lib,
                    "range": {"start": {"line": 27, "character": 12}, "end": {"line": 27, "character": 13}},
                },
                "message": "`k` is bound here",
            }],
        })]
    );
    // The quick fix: `k` becomes `k.t()?` (the `&` before it stays).
    let response = server.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": lib}, "range": range, "context": {"diagnostics": diagnostics}}),
    );
    let actions = response["result"].as_array().unwrap();
    assert_eq!(actions.len(), 1, "{response}");
    assert_eq!(actions[0]["title"], "transpose it: `&k.t()?`");
    assert_eq!(actions[0]["kind"], "quickfix");
    assert_eq!(actions[0]["diagnostics"], json!(diagnostics));
    assert_eq!(
        actions[0]["edit"],
        json!({"changes": {lib.as_str(): [{"range": range, "newText": "k.t()?"}]}})
    );
    // Elsewhere on the line: no fix.
    let elsewhere =
        json!({"start": {"line": 30, "character": 0}, "end": {"line": 30, "character": 5}});
    let response = server.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": lib}, "range": elsewhere, "context": {"diagnostics": []}}),
    );
    assert_eq!(response["result"], json!([]));
    // The fix applied: the diagnostics go away.
    server.change(&lib, 3, ATTENTION);
    assert_eq!(server.diagnostics(&lib), Vec::<Value>::new());
    assert_eq!(server.stop(), Some(0));
}

#[test]
fn every_file_with_findings_is_published_and_a_closed_file_is_read_from_disk_again() {
    // `src/model.rs`, never opened, has a mismatch on disk; `src/lib.rs` is right on disk.
    let model = "use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(h: f32[N, 128], w: f32[64, 10])]
pub fn head(h: &Tensor, w: &Tensor) -> Result<Tensor> {
    h.matmul(w)
}
";
    let dir = scratch_crate(
        "files",
        &[
            ("src/lib.rs", &format!("mod model;\n{ATTENTION}")),
            ("src/model.rs", model),
        ],
    );
    let lib = uri(&dir.join("src/lib.rs"));
    let model = uri(&dir.join("src/model.rs"));
    let (mut server, _) = Server::start(initialize(&dir, &[]));
    // Published without being opened: the workspace is analysed once initialized.
    let published = server.diagnostics(&model);
    assert_eq!(published.len(), 1);
    assert_eq!(
        published[0]["range"]["start"],
        json!({"line": 5, "character": 13})
    );
    // An unsaved text with a mismatch, then closed unsaved: the disk's text counts again.
    let (right, wrong) = MISSING_TRANSPOSE;
    let text = format!("mod model;\n{ATTENTION}").replace(right, wrong);
    server.open(&lib, &text);
    assert_eq!(server.diagnostics(&lib).len(), 1);
    server.notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": lib}}),
    );
    assert_eq!(server.diagnostics(&lib), Vec::<Value>::new());
    // `model.rs` did not change: nothing published for it again.
    let hints = server.hints(&lib, 0, 40);
    assert_eq!(hints.len(), 10, "the disk's text is analysed: {hints:?}");
    assert!(
        !server
            .queued
            .iter()
            .any(|m| m["params"]["uri"] == model.as_str()),
        "{:?}",
        server.queued
    );
    assert_eq!(server.stop(), Some(0));
}

#[test]
fn without_a_workspace_folder_each_open_files_package_is_read() {
    let dir = scratch_crate("no-root", &[("src/lib.rs", ATTENTION)]);
    let lib = uri(&dir.join("src/lib.rs"));
    let params = json!({"processId": null, "rootUri": null, "capabilities": {}});
    let (mut server, _) = Server::start(params);
    assert_eq!(server.hints(&lib, 0, 40), []);
    server.open(&lib, ATTENTION);
    assert_eq!(server.hints(&lib, 0, 40), attention_hints(36));
    // A workspace folder without a Cargo.toml: the same.
    let (mut server, _) = Server::start(initialize(&std::env::temp_dir(), &[]));
    server.open(&lib, ATTENTION);
    assert_eq!(server.hints(&lib, 0, 40), attention_hints(36));
}

#[test]
fn what_the_server_does_not_serve_is_an_error_or_ignored_and_it_exits_cleanly() {
    let dir = scratch_crate("protocol", &[("src/lib.rs", ATTENTION)]);
    let lib = uri(&dir.join("src/lib.rs"));
    let (mut server, _) = Server::start(initialize(&dir, &[]));
    // An unknown request: MethodNotFound.
    let response = server.request("textDocument/frobnicate", json!({}));
    assert_eq!(response["error"]["code"], -32601, "{response}");
    // An unknown notification and a notification with malformed params: ignored.
    server.notify("custom/somethingHappened", json!({"what": 1}));
    server.notify("textDocument/didOpen", json!({"textDocument": 7}));
    // Malformed params: InvalidParams.
    let response = server.request("textDocument/hover", json!({"position": "here"}));
    assert_eq!(response["error"]["code"], -32602, "{response}");
    // An unknown file, a range past the end: nothing.
    let elsewhere = uri(&dir.join("src/absent.rs"));
    assert_eq!(server.hints(&elsewhere, 0, 10), []);
    assert_eq!(server.hover(&elsewhere, 0, 0), None);
    server.open(&lib, ATTENTION);
    assert_eq!(server.hints(&lib, 500, 900), []);
    assert_eq!(server.hints(&lib, 0, u32::MAX).len(), 10);
    let response = server.request(
        "textDocument/codeAction",
        json!({
            "textDocument": {"uri": lib},
            "range": {"start": {"line": 900, "character": 0}, "end": {"line": 901, "character": 0}},
            "context": {"diagnostics": []},
        }),
    );
    assert_eq!(response["result"], json!([]));
    // Still serving.
    assert_eq!(server.hints(&lib, 0, 40).len(), 10);
    assert_eq!(server.stop(), Some(0));

    // `exit` without `shutdown`: exit code 1, as LSP says.
    let (mut server, _) = Server::start(initialize(&dir, &[]));
    server.notify("exit", Value::Null);
    assert_eq!(server.wait(), Some(1));

    // A request before `initialize`: an error, and `initialize` still works.
    let mut server = Server::spawn();
    let response = server.request("textDocument/hover", json!({}));
    assert_eq!(response["error"]["code"], -32002, "{response}");
    let response = server.request("initialize", initialize(&dir, &[]));
    assert!(response["result"]["capabilities"].is_object(), "{response}");
    server.notify("initialized", json!({}));
    assert_eq!(server.stop(), Some(0));

    // Its input closed at once: it ends, with 1 and not a panic's 101.
    let mut server = Server::spawn();
    server.stdin = None;
    assert_eq!(server.wait(), Some(1));
}

/// Two checkouts of one package (`app`) in one session: a call into `app` from either may be
/// to either library, so nothing about it is certain (the newer checkout's correct call was
/// reported against the older one's contract).
#[test]
fn two_packages_of_one_name_are_not_mistaken_for_each_other() {
    let library = |width: u32| {
        format!(
            "use candle_contracts::contract;\nuse candle_core::{{Result, Tensor}};\n\n\
             #[contract(x: f32[N, {width}], return: f32[N])]\n\
             pub fn head(x: &Tensor) -> Result<Tensor> {{\n    x.sum(1)\n}}\n"
        )
    };
    let main = "use candle_core::{DType, Device, Result, Tensor};\n\nfn main() -> Result<()> {\n    \
                let x = Tensor::zeros((2, 64), DType::F32, &Device::Cpu)?;\n    \
                let y = app::head(&x)?;\n    println!(\"{y}\");\n    Ok(())\n}\n";
    let checkout = |dir: &str, width: u32| {
        let root = std::env::temp_dir().join(format!("cc-lsp-{dir}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(
            root.join("Cargo.toml"),
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
             [dependencies]\ncandle-core = \"0.11.1\"\ncandle-contracts = \"0.1.0\"\n",
        )
        .unwrap();
        std::fs::write(root.join("src/lib.rs"), library(width)).unwrap();
        std::fs::write(root.join("src/main.rs"), main).unwrap();
        root.canonicalize().unwrap()
    };
    let (new, old) = (checkout("app-new", 64), checkout("app-old", 128));
    let folders: Vec<Value> = [&new, &old]
        .iter()
        .map(|dir| json!({"uri": uri(dir), "name": dir.file_name().unwrap().to_string_lossy()}))
        .collect();
    let params = json!({"processId": null, "rootUri": null, "workspaceFolders": folders, "capabilities": {}});
    let (mut server, _) = Server::start(params);
    let new_main = uri(&new.join("src/main.rs"));
    // Answered after the analysis: whatever it published came before.
    assert_eq!(server.hints(&new_main, 0, 10), []);
    let published: Vec<&Value> = server
        .queued
        .iter()
        .filter(|m| m["method"] == "textDocument/publishDiagnostics")
        .filter(|m| !m["params"]["diagnostics"].as_array().unwrap().is_empty())
        .collect();
    assert!(published.is_empty(), "{published:#?}");
    assert_eq!(server.stop(), Some(0));
}

/// Each quick fix is code that compiles in place of its range: a dereference parenthesised,
/// a comment inside the argument kept where it was, `DType` named by a path in scope.
#[test]
fn quick_fixes_are_code_that_compiles_in_place() {
    let source = "use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(q: f32[N, 64], k: f32[32, 64])]
pub fn deref(q: &Tensor, k: &Tensor) -> Result<Tensor> {
    q.matmul(&*k)
}

#[contract(q: f32[N, 64], k: f32[32, 64])]
pub fn comment(q: &Tensor, k: &Tensor) -> Result<Tensor> {
    q.matmul(&k // the keys
        .contiguous()?)
}

#[contract(logits: f32[B, C], target: f32[B])]
pub fn loss(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    candle_nn::loss::cross_entropy(logits, target)
}
";
    let dir = scratch_crate("fixes", &[("src/lib.rs", source)]);
    let lib = uri(&dir.join("src/lib.rs"));
    let (mut server, _) = Server::start(initialize(&dir, &["utf-8"]));
    server.open(&lib, source);
    let diagnostics = server.diagnostics(&lib);
    assert_eq!(diagnostics.len(), 3, "{diagnostics:#?}");
    let mut fixes = Vec::new();
    for diagnostic in &diagnostics {
        let response = server.request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": lib}, "range": diagnostic["range"], "context": {"diagnostics": [diagnostic]}}),
        );
        let edit = &response["result"][0]["edit"]["changes"][lib.as_str()][0];
        fixes.push((
            edit["range"]["start"]["line"].clone(),
            edit["newText"].clone(),
        ));
    }
    assert_eq!(
        fixes,
        [
            (json!(5), json!("(*k).t()?")),
            (
                json!(10),
                json!("k // the keys\n        .contiguous()?.t()?")
            ),
            (
                json!(16),
                json!("&target.to_dtype(candle_core::DType::U32)?")
            ),
        ]
    );
    assert_eq!(server.stop(), Some(0));
}

/// The editor's texts count where the disk has none or another: a module only in the editor
/// (`:e src/model.rs` after `mod model;`), a package below the folder that is no member of
/// its workspace, and a file changed on disk (a checkout) that the client reports.
#[test]
fn unsaved_modules_nested_packages_and_disk_changes_are_read() {
    let model = "use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(h: f32[N, 128], w: f32[64, 10])]
pub fn head(h: &Tensor, w: &Tensor) -> Result<Tensor> {
    h.matmul(w)
}
";
    let dir = scratch_crate("unsaved", &[("src/lib.rs", "mod model;\n")]);
    let path = dir.join("src/model.rs");
    let _ = std::fs::remove_file(&path);
    let model_uri = uri(&path);
    let (mut server, _) = Server::start(initialize(&dir, &[]));
    server.open(&model_uri, model);
    assert_eq!(server.diagnostics(&model_uri).len(), 1);
    assert_eq!(server.stop(), Some(0));
    // A package below the folder, outside the folder's own package.
    let inner = dir.join("tools/inner");
    std::fs::create_dir_all(inner.join("src")).unwrap();
    std::fs::write(
        inner.join("Cargo.toml"),
        "[package]\nname = \"inner\"\nversion = \"0.1.0\"\nedition = \"2024\"\n",
    )
    .unwrap();
    std::fs::write(inner.join("src/lib.rs"), model).unwrap();
    let inner_uri = uri(&inner.join("src/lib.rs"));
    let (mut server, _) = Server::start(initialize(&dir, &[]));
    server.open(&inner_uri, model);
    assert_eq!(server.diagnostics(&inner_uri).len(), 1);
    assert_eq!(server.stop(), Some(0));
    // Fixed on disk, not in the editor: the client's report of the change is enough.
    std::fs::write(&path, model).unwrap();
    let (mut server, _) = Server::start(initialize(&dir, &[]));
    assert_eq!(server.diagnostics(&model_uri).len(), 1);
    let fixed = model.replace("w: f32[64, 10]", "w: f32[128, 10]");
    std::fs::write(&path, fixed).unwrap();
    server.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": model_uri, "type": 2}]}),
    );
    assert_eq!(server.diagnostics(&model_uri), Vec::<Value>::new());
    assert_eq!(server.stop(), Some(0));
}

/// An `initialize` the server cannot read is answered with an error before it exits.
#[test]
fn a_bad_initialize_is_answered_before_the_server_exits() {
    let mut server = Server::spawn();
    let response = server.request("initialize", json!({"processId": null, "rootUri": null}));
    assert_eq!(response["error"]["code"], -32602, "{response}");
    assert_eq!(server.wait(), Some(1));
}

/// A file no crate reaches (the book's sample beside a package, a file not yet in a `mod`)
/// is read alone, as `check FILE` reads it.
#[test]
fn an_open_file_no_crate_reaches_is_read_alone() {
    let dir = scratch_crate("alone", &[("src/lib.rs", "")]);
    std::fs::create_dir_all(dir.join("samples")).unwrap();
    std::fs::write(dir.join("samples/attention.rs"), ATTENTION).unwrap();
    let sample = uri(&dir.join("samples/attention.rs"));
    let (mut server, _) = Server::start(initialize(&dir, &[]));
    server.open(&sample, ATTENTION);
    assert_eq!(server.hints(&sample, 0, 40), attention_hints(36));
    assert_eq!(server.stop(), Some(0));
}

/// A `let` whose shape is not fully known says, on hover, where it lost it (as `shapes` does
/// under its table).
#[test]
fn hover_says_where_a_shape_was_lost() {
    const SOURCE: &str = "use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[B, T, E])]
pub fn reduce(x: &Tensor, axis: usize) -> Result<Tensor> {
    let summed = x.sum_keepdim(axis)?;
    Ok(summed)
}
";
    let dir = scratch_crate("hover-why", &[("src/lib.rs", SOURCE)]);
    let lib = uri(&dir.join("src/lib.rs"));
    let (mut server, _) = Server::start(initialize(&dir, &[]));
    server.open(&lib, SOURCE);
    let hover = server.hover(&lib, 5, 8).unwrap();
    assert!(
        hover.ends_with(
            "\nnot fully known: `axis` (`{axis}`) is no number the check knows: `sum_keepdim` \
             on `f32[B, T, E]` gives a size it cannot name\n"
        ),
        "{hover}"
    );
    assert_eq!(server.stop(), Some(0));
}
