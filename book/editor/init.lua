-- candle-contracts' language server in Neovim, beside rust-analyzer: the book's chapter "In the
-- editor" shows this file, and cli/tests/editor.rs runs it (with Neovim 0.7, Debian 12's).
--
--   nvim -u book/editor/init.lua src/model.rs     (or put it in ~/.config/nvim/init.lua)
--
-- Diagnostics and their quick fixes, hover (K) and inlay hints. Neovim 0.10 shows inlay hints
-- itself; before 0.10, the hints are requested here and shown at the end of their line.

-- `cargo contracts lsp`, or the binary that $CARGO_CONTRACTS names (the tests' build).
local cmd = { "cargo", "contracts", "lsp" }
if vim.env.CARGO_CONTRACTS then
  cmd = { vim.env.CARGO_CONTRACTS, "lsp" }
end

-- The workspace: the outermost directory above the file whose Cargo.toml has a [workspace],
-- else the nearest one with a Cargo.toml.
local function root_dir(file)
  local nearest, workspace
  local dir = vim.fn.fnamemodify(file, ":p:h")
  while true do
    local manifest = dir .. "/Cargo.toml"
    if vim.fn.filereadable(manifest) == 1 then
      nearest = nearest or dir
      for _, line in ipairs(vim.fn.readfile(manifest)) do
        if line:match("^%[workspace%]") then
          workspace = dir
        end
      end
    end
    local parent = vim.fn.fnamemodify(dir, ":h")
    if parent == dir then
      return workspace or nearest or vim.fn.fnamemodify(file, ":p:h")
    end
    dir = parent
  end
end

local hints = vim.api.nvim_create_namespace("candle-contracts-hints")

-- Before Neovim 0.10: the hints of the whole buffer, each as `name: type` at the end of its
-- line (0.7 has no virtual text inside a line).
local function show_hints(client, bufnr)
  local last = vim.api.nvim_buf_line_count(bufnr)
  local params = {
    textDocument = vim.lsp.util.make_text_document_params(bufnr),
    range = { start = { line = 0, character = 0 }, ["end"] = { line = last, character = 0 } },
  }
  client.request("textDocument/inlayHint", params, function(err, result)
    if err or not vim.api.nvim_buf_is_valid(bufnr) then
      return
    end
    vim.api.nvim_buf_clear_namespace(bufnr, hints, 0, -1)
    local by_line = {}
    for _, hint in ipairs(result or {}) do
      local line = hint.position.line
      local text = vim.api.nvim_buf_get_lines(bufnr, line, line + 1, false)[1] or ""
      -- The hint stands after the name it types: the name is the word that ends there.
      local ok, column = pcall(vim.str_byteindex, text, hint.position.character, true)
      local name = ok and text:sub(1, column):match("[%w_]+$") or ""
      local label = type(hint.label) == "string" and hint.label or ""
      by_line[line] = by_line[line] or {}
      table.insert(by_line[line], name .. label)
    end
    for line, labels in pairs(by_line) do
      vim.api.nvim_buf_set_extmark(bufnr, hints, line, 0, {
        virt_text = { { "  " .. table.concat(labels, "  "), "Comment" } },
        virt_text_pos = "eol",
      })
    end
  end, bufnr)
end

local function on_attach(client, bufnr)
  vim.keymap.set("n", "K", vim.lsp.buf.hover, { buffer = bufnr })
  vim.keymap.set("n", "<leader>a", vim.lsp.buf.code_action, { buffer = bufnr })
  if vim.lsp.inlay_hint then
    vim.lsp.inlay_hint.enable(true)
    return
  end
  show_hints(client, bufnr)
  vim.api.nvim_create_autocmd({ "TextChanged", "InsertLeave", "BufEnter" }, {
    buffer = bufnr,
    callback = function()
      show_hints(client, bufnr)
    end,
  })
end

local clients = {}

vim.api.nvim_create_autocmd("FileType", {
  pattern = "rust",
  callback = function(args)
    local root = root_dir(vim.api.nvim_buf_get_name(args.buf))
    if vim.lsp.start then
      vim.lsp.start({ name = "candle-contracts", cmd = cmd, root_dir = root, on_attach = on_attach })
      return
    end
    -- Neovim 0.7: one client per workspace, attached to each of its Rust buffers.
    clients[root] = clients[root]
      or vim.lsp.start_client({ name = "candle-contracts", cmd = cmd, root_dir = root, on_attach = on_attach })
    vim.lsp.buf_attach_client(args.buf, clients[root])
  end,
})
