-- Neovim against `patchgen server`, headless: the editor's own LSP client
-- (not ours) opens a patch config, waits for the server's diagnostics, asks
-- for hover on a patch target and prints what it got. Checks that the setup
-- in docs/editors.md works in a real Neovim.
--
-- usage (from a patchgen project, `patchgen` on PATH, the upstream on PYTHONPATH):
--   CONFIG=path/to/x_gpu_patch_gen_config.py TARGET=ToyRMSNorm.forward \
--     nvim --headless -u NONE -l scripts/nvim-smoke.lua          (Neovim 0.9+)
--   nvim --headless -u NONE -c 'luafile scripts/nvim-smoke.lua'  (0.7, 0.8)
-- env: PATCHGEN (the binary, default `patchgen`), CONFIG, TARGET (a string in the
--      config to hover on), WANT (a diagnostic code to wait for; optional)
-- Prints `diagnostic CODE line:col message` lines, then `hover: …`, then
-- `ok`, and exits 0; exits 1 (with the reason) when anything is missing.

local function fail(why)
  io.stdout:write("FAIL: " .. why .. "\n")
  vim.cmd("cquit! 1")
end

local config = os.getenv("CONFIG") or fail("CONFIG is not set")
local target = os.getenv("TARGET") or fail("TARGET is not set")
local want = os.getenv("WANT")
local bin = os.getenv("PATCHGEN") or "patchgen"

vim.cmd("filetype on")
vim.cmd("edit " .. vim.fn.fnameescape(config))
local bufnr = vim.api.nvim_get_current_buf()
local root = vim.fn.fnamemodify(vim.fn.findfile("pyproject.toml", vim.fn.expand("%:p:h") .. ";"), ":p:h")

-- Count the server's publications (through the editor's own handler).
local published = 0
local default_handler = vim.lsp.handlers["textDocument/publishDiagnostics"]
vim.lsp.handlers["textDocument/publishDiagnostics"] = function(err, result, ctx, cfg)
  published = published + 1
  return default_handler(err, result, ctx, cfg)
end

-- The configuration docs/editors.md gives for Neovim 0.11+ (vim.lsp.config),
-- else its equivalent for older versions (vim.lsp.start, vim.lsp.start_client).
local client_id
if vim.lsp.config and vim.lsp.enable then
  vim.lsp.config("patchgen", {
    cmd = { bin, "server" },
    filetypes = { "python" },
    root_dir = function(b, on_dir)
      if vim.api.nvim_buf_get_name(b):match("_patch_gen_config%.py$") then
        on_dir(root)
      end
    end,
  })
  vim.lsp.enable("patchgen")
  vim.cmd("edit") -- FileType fires again: the client attaches
elseif vim.lsp.start then
  client_id = vim.lsp.start({ name = "patchgen", cmd = { bin, "server" }, root_dir = root })
else
  client_id = vim.lsp.start_client({ name = "patchgen", cmd = { bin, "server" }, root_dir = root })
  vim.lsp.buf_attach_client(bufnr, client_id)
end

local function codes()
  return vim.diagnostic.get(bufnr)
end

local got = vim.wait(30000, function()
  if want == nil then
    return published > 0
  end
  for _, d in ipairs(codes()) do
    if d.code == want then
      return true
    end
  end
  return false
end, 50)
if not got then
  fail(want and ("no " .. want .. " diagnostic within 30 s") or "no diagnostics published within 30 s")
end
for _, d in ipairs(codes()) do
  io.stdout:write(string.format("diagnostic %s %d:%d %s\n", tostring(d.code), d.lnum + 1, d.col + 1,
    (d.message:gsub("\n.*", ""))))
end

-- Hover on the target string.
local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
local row, col
for i, l in ipairs(lines) do
  local at = l:find(target, 1, true)
  if at then
    row, col = i - 1, at
    break
  end
end
if not row then
  fail("`" .. target .. "` is not in " .. config)
end
local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) }, position = { line = row, character = col } }
local responses = vim.lsp.buf_request_sync(bufnr, "textDocument/hover", params, 10000) or {}
local value
for _, r in pairs(responses) do
  if r.result and r.result.contents then
    value = r.result.contents.value
  end
end
if not value then
  fail("no hover on " .. target)
end
io.stdout:write("hover: " .. (value:gsub("\n", " | ")):sub(1, 200) .. "\n")
io.stdout:write("ok\n")
vim.cmd("qall!")
