-- Drives a real headless Neovim through chainlens: diagnostics, hover, a code action,
-- and :ChainlensGraph. Writes what it saw to $CHAINLENS_E2E_OUT as JSON.
local out_path = assert(os.getenv('CHAINLENS_E2E_OUT'))
local editors = assert(os.getenv('CHAINLENS_NVIM_DIR'))
local seen = { steps = {} }

local function finish(ok, err)
  seen.ok = ok
  seen.error = err
  local file = assert(io.open(out_path, 'w'))
  file:write(vim.json.encode(seen))
  file:close()
  local get = vim.lsp.get_clients or vim.lsp.get_active_clients
  for _, client in ipairs(get()) do
    client:stop(true)
  end
  vim.cmd(ok and 'qall!' or 'cquit 1')
end

local function step(name, ok)
  table.insert(seen.steps, name)
  if not ok then
    error('step failed: ' .. name)
  end
end

-- Neovim's own Python provider probe runs `python3 -c` in the working folder;
-- it is not chainlens's and would trip the hostile workspace's modules
vim.g.loaded_python3_provider = 0
vim.opt.runtimepath:prepend(editors)
-- the shipped lsp/chainlens.lua as it is: `chainlens lsp`, found on PATH
vim.lsp.enable('chainlens')

local function diagnostics(bufnr)
  local list = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(list, { lnum = d.lnum, col = d.col, end_col = d.end_col, code = d.code,
      source = d.source, message = d.message, severity = d.severity })
  end
  return list
end

local function run()
  local bufnr = vim.api.nvim_get_current_buf()
  seen.nvim_version = tostring(vim.version())
  step('attached', vim.wait(30000, function()
    return #vim.lsp.get_clients({ bufnr = bufnr, name = 'chainlens' }) > 0
  end, 20))
  local client = vim.lsp.get_clients({ bufnr = bufnr, name = 'chainlens' })[1]
  seen.offset_encoding = client.offset_encoding
  step('diagnostics', vim.wait(30000, function() return #vim.diagnostic.get(bufnr) > 0 end, 20))
  seen.diagnostics = diagnostics(bufnr)

  local cl101
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.code == 'CL101' then cl101 = d end
  end
  step('cl101', cl101 ~= nil)
  vim.api.nvim_win_set_cursor(0, { cl101.lnum + 1, cl101.col + 2 })
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  local hover = client:request_sync('textDocument/hover', params, 10000, bufnr)
  step('hover', hover and hover.result and hover.result.contents)
  seen.hover = hover.result.contents.value

  vim.api.nvim_win_set_cursor(0, { cl101.lnum + 1, cl101.col })
  vim.lsp.buf.code_action({
    apply = true,
    filter = function(action) return action.isPreferred == true end,
  })
  step('fixed', vim.wait(30000, function()
    local text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n')
    return text:find('.uid("', 1, true) ~= nil and text ~= seen.before
  end, 20))
  seen.after = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n') .. '\n'
  step('cl101 gone', vim.wait(30000, function()
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      if d.code == 'CL101' then return false end
    end
    return #vim.diagnostic.get(bufnr) > 0
  end, 20))
  seen.diagnostics_after = diagnostics(bufnr)

  vim.cmd('ChainlensGraph')
  local graph_buf = vim.api.nvim_get_current_buf()
  step('graph buffer', graph_buf ~= bufnr)
  seen.graph_text = table.concat(vim.api.nvim_buf_get_lines(graph_buf, 0, -1, false), '\n')
  vim.cmd('close')
  local svg_path = require('chainlens').show_graph({ bufnr = bufnr, format = 'svg', no_open = true })
  step('svg', svg_path ~= nil)
  seen.svg = table.concat(vim.fn.readfile(svg_path), '\n')

  -- the deployment commands of the shipped config, against the real server
  local found = require('chainlens').deployments(bufnr)
  step('deployments listed', found ~= nil)
  seen.deployments = #found
  vim.cmd('ChainlensDeployment -')
  local chosen = require('chainlens').choose_deployment('', bufnr)
  step('deployment chosen', chosen ~= nil)
  local name = chosen.deployment
  seen.chosen = (name == nil or name == vim.NIL) and 'none' or name
  finish(true)
end

vim.api.nvim_create_autocmd('VimEnter', {
  callback = function()
    seen.before = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
    vim.schedule(function()
      local ok, err = pcall(run)
      if not ok then finish(false, tostring(err)) end
    end)
  end,
})
