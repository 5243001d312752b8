-- chainlens language server configuration for Neovim 0.11+ (vim.lsp.config / vim.lsp.enable).
--
--   vim.opt.runtimepath:append('/path/to/chainlens/editors/neovim')
--   vim.lsp.enable('chainlens')
--
-- Override anything with vim.lsp.config('chainlens', { ... }), e.g. the command
-- when chainlens is installed in a virtual environment:
--   vim.lsp.config('chainlens', { cmd = { '/path/to/venv/bin/chainlens', 'lsp' } })
return {
  cmd = { 'chainlens', 'lsp' },
  filetypes = { 'python' },
  root_markers = { 'pyproject.toml', 'chainlens.toml', '.chainlens.toml', '.git' },
  -- Settings use the same names as the VS Code extension, without the prefix.
  -- They are sent at start-up and answered on workspace/configuration.
  settings = { chainlens = {} },
  before_init = function(params, config)
    local settings = (config.settings or {}).chainlens or {}
    params.initializationOptions = { settings = settings }
  end,
  commands = {
    -- the code lens above each execute() runs this client-side command
    ['chainlens.showJobGraph'] = function(command, ctx)
      local uri = command.arguments and command.arguments[1] or nil
      local bufnr = uri and vim.uri_to_bufnr(uri) or ctx.bufnr
      require('chainlens').show_graph({ bufnr = bufnr })
    end,
  },
}
