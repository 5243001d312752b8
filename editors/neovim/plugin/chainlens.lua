-- :ChainlensGraph [text|svg|dot] — show the JobGraph Flink will build from this buffer.
if vim.g.loaded_chainlens then
  return
end
vim.g.loaded_chainlens = true

vim.api.nvim_create_user_command('ChainlensGraph', function(args)
  local format = args.args ~= '' and args.args or 'text'
  require('chainlens').show_graph({ format = format })
end, {
  nargs = '?',
  complete = function()
    return { 'text', 'svg', 'dot' }
  end,
  desc = 'chainlens: show the job graph of the current buffer',
})
