-- chainlens helpers for Neovim: show the JobGraph of the current buffer.
local M = {}

local function client_for(bufnr)
  local get = vim.lsp.get_clients or vim.lsp.get_active_clients
  for _, client in ipairs(get({ bufnr = bufnr, name = 'chainlens' })) do
    return client
  end
  return nil
end

--- Ask the server for the job graph of a buffer.
--- @param opts {bufnr?: integer, format?: 'svg'|'text'|'dot', theme?: 'light'|'dark', timeout?: integer}
--- @return table|nil result, string|nil error
function M.job_graph(opts)
  opts = opts or {}
  local bufnr = opts.bufnr or vim.api.nvim_get_current_buf()
  local client = client_for(bufnr)
  if not client then
    return nil, 'chainlens is not attached to this buffer'
  end
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    format = opts.format or 'text',
    theme = opts.theme or (vim.o.background == 'dark' and 'dark' or 'light'),
  }
  local response = client:request_sync('chainlens/jobGraph', params, opts.timeout or 10000, bufnr)
  if not response then
    return nil, 'chainlens did not answer'
  end
  if response.err then
    return nil, response.err.message
  end
  return response.result, nil
end

--- Show the job graph: as text in a split, or as SVG opened with the system viewer.
--- @param opts {bufnr?: integer, format?: 'svg'|'text'|'dot'}
function M.show_graph(opts)
  opts = opts or {}
  local format = opts.format or 'text'
  local result, err = M.job_graph({ bufnr = opts.bufnr, format = format })
  if not result then
    vim.notify('chainlens: ' .. err, vim.log.levels.ERROR)
    return nil
  end
  if format == 'svg' then
    local path = vim.fn.tempname() .. '.svg'
    vim.fn.writefile(vim.split(result.content, '\n', { plain = true }), path)
    if vim.ui.open and not opts.no_open then
      vim.ui.open(path)
    end
    vim.notify('chainlens: job graph written to ' .. path)
    return path
  end
  vim.cmd('botright new')
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = format == 'dot' and 'dot' or 'chainlens'
  local text = result.content:gsub('\n$', '')
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text, '\n', { plain = true }))
  vim.bo[buf].modifiable = false
  pcall(vim.api.nvim_buf_set_name, buf, 'chainlens://job-graph/' .. buf)
  return buf
end

--- The project's deployments, as the server lists them.
--- @return table|nil deployments, string|nil error
function M.deployments(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local client = client_for(bufnr)
  if not client then
    return nil, 'chainlens is not attached to this buffer'
  end
  local response = client:request_sync('workspace/executeCommand', {
    command = 'chainlens.server.deployments',
    arguments = { vim.uri_from_bufnr(bufnr) },
  }, 10000, bufnr)
  if not response or response.err then
    return nil, response and response.err.message or 'chainlens did not answer'
  end
  return response.result, nil
end

--- Analyse the programs as deployment `name` runs them ('' or nil: the code alone).
function M.choose_deployment(name, bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local client = client_for(bufnr)
  if not client then
    vim.notify('chainlens is not attached to this buffer', vim.log.levels.ERROR)
    return nil
  end
  local response = client:request_sync('workspace/executeCommand', {
    command = 'chainlens.server.chooseDeployment',
    arguments = { name ~= '' and name or vim.NIL, vim.uri_from_bufnr(bufnr) },
  }, 10000, bufnr)
  return response and response.result or nil
end

return M
