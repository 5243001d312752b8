-- Times edits in a real headless Neovim against the chainlens server: each
-- edit is applied to the buffer (Neovim sends it as an incremental didChange,
-- as it does while typing), and its latency runs until Neovim's own handler
-- has taken the diagnostics of that version (pulled, as Neovim 0.11 does).
-- Reads the plan from $CHAINLENS_BENCH_PLAN, writes what it measured to
-- $CHAINLENS_BENCH_OUT (both JSON).  Driven by bench_nvim_edits.py.
local plan_file = assert(io.open(assert(os.getenv('CHAINLENS_BENCH_PLAN')), 'r'))
local plan = vim.json.decode(plan_file:read('*a'))
plan_file:close()
local out_path = assert(os.getenv('CHAINLENS_BENCH_OUT'))

vim.g.loaded_python3_provider = 0
local arrived, counts, handled = {}, {}, {}

local function finish(result)
  local file = assert(io.open(out_path, 'w'))
  file:write(vim.json.encode(result))
  file:close()
  for _, client in ipairs(vim.lsp.get_clients()) do
    client:stop(true)
  end
  vim.cmd(result.ok and 'qall!' or 'cquit 1')
end

local function run()
  local bufnr = vim.api.nvim_get_current_buf()
  local opened = vim.uv.hrtime()
  vim.lsp.start({
    name = 'chainlens-bench',
    cmd = plan.cmd,
    root_dir = plan.root,
    -- every change sent as it is made: the server's latency, not a debounce
    flags = { debounce_text_changes = 0 },
    handlers = {
      -- Neovim 0.11 pulls diagnostics (textDocument/diagnostic) after each
      -- change; a server that pushes them is timed as well
      ['textDocument/diagnostic'] = function(err, result, ctx)
        local taken = vim.uv.hrtime()
        vim.lsp.diagnostic.on_diagnostic(err, result, ctx)
        if err == nil and result ~= nil then
          local v = ctx.version or vim.lsp.util.buf_versions[ctx.bufnr]
          arrived[v] = vim.uv.hrtime()
          handled[v] = arrived[v] - taken
          counts[v] = result.items and #result.items or counts[v - 1]
        end
      end,
      ['textDocument/publishDiagnostics'] = function(err, result, ctx)
        local taken = vim.uv.hrtime()
        vim.lsp.diagnostic.on_publish_diagnostics(err, result, ctx)
        arrived[result.version or 0] = vim.uv.hrtime()
        handled[result.version or 0] = arrived[result.version or 0] - taken
        counts[result.version or 0] = #result.diagnostics
      end,
    },
  }, { bufnr = bufnr })
  local function version()
    return vim.lsp.util.buf_versions[bufnr] or vim.b[bufnr].changedtick
  end
  local first = version()
  if not vim.wait(tonumber(os.getenv('CHAINLENS_BENCH_WAIT') or '600000'), function() return arrived[first] ~= nil end, 1) then
    return finish({ ok = false, error = 'no diagnostics after opening version ' .. tostring(first) .. '; arrived ' .. vim.inspect(arrived) })
  end
  local result = {
    ok = true,
    nvim_version = tostring(vim.version()),
    offset_encoding = vim.lsp.get_clients({ bufnr = bufnr })[1].offset_encoding,
    open_ms = (arrived[first] - opened) / 1e6,
    open_count = counts[first],
    edits = {},
  }
  for _, edit in ipairs(plan.edits) do
    local sent = vim.uv.hrtime()
    vim.api.nvim_buf_set_lines(bufnr, edit.first, edit.last, true, edit.lines)
    local v = version()
    if not vim.wait(600000, function() return arrived[v] ~= nil end, 1) then
      result.ok = false
      result.error = 'no diagnostics for version ' .. v
      break
    end
    table.insert(result.edits, { kind = edit.kind, ms = (arrived[v] - sent) / 1e6, handler_ms = handled[v] / 1e6, count = counts[v] })
  end
  finish(result)
end

vim.api.nvim_create_autocmd('VimEnter', {
  once = true,
  callback = function()
    vim.schedule(function()
      local ok, err = pcall(run)
      if not ok then finish({ ok = false, error = tostring(err) }) end
    end)
  end,
})
