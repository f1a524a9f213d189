-- Neovim against `patchgen server`, headless: the editor's own LSP client
-- (not ours) opens a patch config, waits for the server's diagnostics, asks
-- for hover on a patch target and prints what it got; with GENERATED, also
-- "go to generated" from that patch into the generated file, definition
-- from a generated line back into the config, and a hand edit of the
-- generated file undone by the server's "Regenerate from the config" action
-- (the buffer equals the file on disk afterwards). Checks that the setup in
-- docs/editors.md works in a real Neovim.
--
-- usage (from a patchgen project, `patchgen` on PATH, the upstream on PYTHONPATH):
--   CONFIG=path/to/x_gpu_patch_gen_config.py TARGET=ToyRMSNorm.forward \
--     nvim --headless -u NONE -l scripts/nvim-smoke.lua          (Neovim 0.9+)
--   nvim --headless -u NONE -c 'luafile scripts/nvim-smoke.lua'  (0.7, 0.8)
-- env: PATCHGEN (the binary, default `patchgen`), CONFIG, TARGET (a string in the
--      config to hover on), WANT (a diagnostic code to wait for; optional),
--      GENERATED (the config's generated .py, up to date; optional)
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
      local name = vim.api.nvim_buf_get_name(b)
      if name:match("_patch_gen_config%.py$") or name:match("/generated/patched_modeling_[^/]*%.py$") then
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

local generated = os.getenv("GENERATED")
if generated then
  local gen_path = vim.fn.fnamemodify(generated, ":p")
  local gen_uri = vim.uri_from_fname(gen_path)
  local function request(buf, method, p)
    local out
    for _, r in pairs(vim.lsp.buf_request_sync(buf, method, p, 10000) or {}) do
      if r.result then
        out = r.result
      end
    end
    return out
  end

  -- Go to generated: from the patch's registration to the regions it made.
  local regions = request(bufnr, "textDocument/implementation", params)
  if not regions or #regions == 0 or regions[1].uri ~= gen_uri then
    fail("no \"go to generated\" from " .. target .. " into " .. generated)
  end
  io.stdout:write(string.format("go to generated: %d region(s), first at line %d\n", #regions,
    regions[1].range.start.line + 1))

  -- The generated file, in the same client.
  vim.cmd("edit " .. vim.fn.fnameescape(gen_path))
  local gen = vim.api.nvim_get_current_buf()
  if client_id then
    if vim.lsp.start then
      vim.lsp.start({ name = "patchgen", cmd = { bin, "server" }, root_dir = root })
    else
      vim.lsp.buf_attach_client(gen, client_id)
    end
  end
  if not vim.wait(30000, function() return #vim.diagnostic.get(gen) > 0 end, 50) then
    fail("no diagnostics on the generated file within 30 s")
  end
  io.stdout:write("generated note: " .. (vim.diagnostic.get(gen)[1].message:gsub("\n.*", "")) .. "\n")

  -- Definition from the patch's first region back into the config.
  local line = regions[1].range.start.line
  local def = request(gen, "textDocument/definition",
    { textDocument = { uri = gen_uri }, position = { line = line, character = 4 } })
  if def and def.uri == nil then
    def = def[1]
  end
  local config_uri = vim.uri_from_bufnr(bufnr)
  if not def or (def.uri or def.targetUri) ~= config_uri then
    fail("definition on generated line " .. (line + 1) .. " does not lead to the config")
  end
  io.stdout:write(string.format("definition: generated line %d -> config line %d\n", line + 1,
    (def.range or def.targetSelectionRange).start.line + 1))

  -- A hand edit, flagged, then undone by the server's action.
  local text = vim.api.nvim_buf_get_lines(gen, line, line + 1, false)[1]
  vim.api.nvim_buf_set_lines(gen, line, line + 1, false, { text .. "  # hand edit" })
  local function warnings()
    return vim.diagnostic.get(gen, { severity = vim.diagnostic.severity.WARN })
  end
  if not vim.wait(30000, function() return #warnings() > 0 end, 50) then
    fail("no hand-edit warning after editing generated line " .. (line + 1))
  end
  io.stdout:write("hand edit: " .. (warnings()[1].message:gsub("\n.*", "")) .. "\n")
  local actions = request(gen, "textDocument/codeAction", {
    textDocument = { uri = gen_uri },
    range = { start = { line = line, character = 0 }, ["end"] = { line = line, character = 0 } },
    context = { diagnostics = {} },
  }) or {}
  local command
  for _, a in ipairs(actions) do
    if a.title:find("Regenerate", 1, true) then
      command = a.command
      if type(command) == "string" then
        command = a
      end
    end
  end
  if not command then
    fail("no \"Regenerate from the config\" action on the hand-edited line")
  end
  request(gen, "workspace/executeCommand", { command = command.command, arguments = command.arguments })
  local disk = table.concat(vim.fn.readfile(gen_path), "\n")
  local same = vim.wait(15000, function()
    return table.concat(vim.api.nvim_buf_get_lines(gen, 0, -1, false), "\n") == disk
  end, 50)
  if not same then
    fail("the buffer does not equal the generated file after \"Regenerate from the config\"")
  end
  io.stdout:write("regenerated: the buffer equals " .. generated .. "\n")
end
io.stdout:write("ok\n")
vim.cmd("qall!")
