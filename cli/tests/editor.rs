//! The book's Neovim configuration (`book/editor/init.lua`) driving `cargo-contracts lsp` on the
//! book's sample (`book/editor/attention.rs`), in a headless Neovim: the inlay hints it shows,
//! a hover, a diagnostic after an edit and its quick fix applied. Skipped, with a message, where
//! `nvim` is not on the PATH (`.ci/run` installs Debian's).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// What the headless Neovim does, after `init.lua` has started the server on the file: each
/// step waits (30 s at most) for the server, and the results go to `$EDITOR_OUT` as JSON.
const DRIVE: &str = r#"
local out = {}
local hints = vim.api.nvim_create_namespace("candle-contracts-hints")
-- Each hint as `init.lua` shows it before Neovim 0.10: its line, and `  name: type`.
local function shown()
  local found = {}
  if vim.lsp.inlay_hint then
    -- Neovim 0.10 shows them itself (not run here: Debian's Neovim is 0.7).
    for _, item in ipairs(vim.lsp.inlay_hint.get({ bufnr = 0 })) do
      local at = item.inlay_hint.position
      local text = vim.api.nvim_buf_get_lines(0, at.line, at.line + 1, false)[1]
      local name = text:sub(1, vim.str_byteindex(text, at.character, true)):match("[%w_]+$")
      table.insert(found, { at.line, "  " .. name .. item.inlay_hint.label })
    end
    table.sort(found, function(a, b) return a[1] < b[1] end)
    return found
  end
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(0, hints, 0, -1, { details = true })) do
    table.insert(found, { mark[2], mark[4].virt_text[1][1] })
  end
  return found
end
local function diagnostics()
  local found = {}
  for _, d in ipairs(vim.diagnostic.get(0)) do
    table.insert(found, { d.lnum, d.col, d.end_col, d.source, d.message })
  end
  return found
end
local function request(method, params)
  local responses = vim.lsp.buf_request_sync(0, method, params, 30000) or {}
  for _, response in pairs(responses) do
    if response.result then
      return response.result
    end
  end
end
local document = { uri = vim.uri_from_bufnr(0) }

out.hints_shown = vim.wait(30000, function() return #shown() == 10 end, 20)
out.hints = shown()
-- `probs` in `let heads = probs.matmul(&v)?;`
local hover = request("textDocument/hover", { textDocument = document, position = { line = 31, character = 22 } })
out.hover = hover and hover.contents.value
-- The keys' transpose taken out.
vim.api.nvim_buf_set_lines(0, 29, 30, false, { "        let scores = (q.matmul(&k)? / (HEAD_DIM as f64).sqrt())?;" })
out.diagnosed = vim.wait(30000, function() return #diagnostics() > 0 end, 20)
out.diagnostics = diagnostics()
-- Its quick fix, applied as `vim.lsp.buf.code_action()` applies the one chosen.
local d = vim.diagnostic.get(0)[1]
local range = { start = { line = d.lnum, character = d.col }, ["end"] = { line = d.end_lnum, character = d.end_col } }
local actions = request("textDocument/codeAction", { textDocument = document, range = range, context = { diagnostics = {} } })
out.actions = {}
for _, action in ipairs(actions or {}) do
  table.insert(out.actions, action.title)
end
if actions and actions[1] then
  vim.lsp.util.apply_workspace_edit(actions[1].edit, "utf-16")
end
out.fixed_line = vim.api.nvim_buf_get_lines(0, 29, 30, false)[1]
out.cleared = vim.wait(30000, function() return #diagnostics() == 0 end, 20)
vim.fn.writefile({ vim.fn.json_encode(out) }, vim.env.EDITOR_OUT)
vim.cmd("qa!")
"#;

/// Whether `program` is in a directory of the PATH.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// The book's editor files: the Neovim configuration and the sample.
fn book_editor() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../book/editor")
}

#[test]
fn the_books_neovim_configuration_shows_hints_hover_diagnostics_and_fixes() {
    if !on_path("nvim") {
        println!("skipped: no `nvim` on the PATH (Debian: apt-get install neovim)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("cc-editor-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"vit\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
         [dependencies]\ncandle-core = \"0.11.1\"\ncandle-nn = \"0.11.1\"\n\
         candle-contracts = \"0.1.0\"\n",
    )
    .unwrap();
    std::fs::copy(book_editor().join("attention.rs"), dir.join("src/lib.rs")).unwrap();
    std::fs::write(dir.join("drive.lua"), DRIVE).unwrap();
    let out = dir.join("out.json");
    let mut nvim = Command::new("nvim")
        .args(["--headless", "--noplugin", "-i", "NONE", "-u"])
        .arg(book_editor().join("init.lua"))
        .args(["-c", "luafile drive.lua", "src/lib.rs"])
        .current_dir(&dir)
        .env("CARGO_CONTRACTS", env!("CARGO_BIN_EXE_cargo-contracts"))
        .env("EDITOR_OUT", &out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nvim runs");
    let started = Instant::now();
    while nvim.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(120) {
            let _ = nvim.kill();
            panic!("Neovim did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(out["hints_shown"], true, "{out}");
    assert_eq!(
        out["hints"],
        json!([
            [23, "  q: f32[B, 197, E]"],
            [24, "  k: f32[B, 197, E]"],
            [25, "  v: f32[B, 197, E]"],
            [26, "  q: f32[B, H, 197, 64]"],
            [27, "  k: f32[B, H, 197, 64]"],
            [28, "  v: f32[B, H, 197, 64]"],
            [29, "  scores: f32[B, H, 197, 197]"],
            [30, "  probs: f32[B, H, 197, 197]"],
            [31, "  heads: f32[B, H, 197, 64]"],
            [32, "  merged: f32[B, 197, E]"],
        ])
    );
    assert_eq!(
        out["hover"],
        "```text\nprobs: f32[B, H, 197, 197]\n```\n\nbound at line 31 by `ops::softmax`\n\n\
         - `B`: `x: f32[B, TOKENS, E]`, line 21\n- `H`: `n_head = H`, line 10\n"
    );
    assert_eq!(out["diagnosed"], true, "{out}");
    assert_eq!(
        out["diagnostics"],
        json!([[
            29,
            32,
            33,
            "candle-contracts",
            "`Tensor::matmul` takes `rhs: f32[.., 64, _]`, but `k` is `f32[B, H, 197, 64]` here\n\
             note: dim -2: 197 given, 64 expected\nhelp: transpose it: `&k.t()?`"
        ]])
    );
    assert_eq!(out["actions"], json!(["transpose it: `&k.t()?`"]));
    assert_eq!(
        out["fixed_line"],
        "        let scores = (q.matmul(&k.t()?)? / (HEAD_DIM as f64).sqrt())?;"
    );
    assert_eq!(out["cleared"], true, "{out}");
}
