-- :ChainlensGraph [text|svg|dot] — show the JobGraph Flink will build from this buffer.
-- :ChainlensDeployment [NAME] — analyse the programs as deployment NAME runs them
-- (without NAME: choose one of the project's; '-' for the code alone).
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

vim.api.nvim_create_user_command('ChainlensDeployment', function(args)
  local chainlens = require('chainlens')
  if args.args ~= '' then
    chainlens.choose_deployment(args.args == '-' and '' or args.args)
    return
  end
  local found, err = chainlens.deployments()
  if not found then
    vim.notify('chainlens: ' .. err, vim.log.levels.ERROR)
    return
  end
  local names = { '-' }
  for _, deployment in ipairs(found) do
    table.insert(names, deployment.name)
  end
  vim.ui.select(names, { prompt = 'chainlens deployment (- for the code alone)' }, function(choice)
    if choice then
      chainlens.choose_deployment(choice == '-' and '' or choice)
    end
  end)
end, {
  nargs = '?',
  desc = 'chainlens: analyse the programs as a deployment runs them',
})
