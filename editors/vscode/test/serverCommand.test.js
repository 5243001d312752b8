// Unit tests of the server command line and settings mirroring (node --test, no VS Code).
const test = require('node:test');
const assert = require('node:assert');
const { serverCommand, serverSettings, startFailureMessage } = require('../out/serverCommand.js');

test('path wins and gets lsp appended', () => {
  assert.deepStrictEqual(
    serverCommand({ path: ['/venv/bin/chainlens'], interpreter: ['/usr/bin/python3'], args: ['--tcp'] }),
    { command: '/venv/bin/chainlens', args: ['lsp', '--tcp'] },
  );
});

test('interpreter runs the server module', () => {
  assert.deepStrictEqual(serverCommand({ interpreter: ['/venv/bin/python', '-X', 'utf8'] }), {
    command: '/venv/bin/python',
    args: ['-X', 'utf8', '-P', '-m', 'chainlens.server'],
  });
});

test('the Python extension interpreter, then python3', () => {
  assert.deepStrictEqual(serverCommand({}, ['/env/bin/python']).command, '/env/bin/python');
  assert.deepStrictEqual(serverCommand({ path: [''], interpreter: [] }), {
    command: 'python3',
    args: ['-P', '-m', 'chainlens.server'],
  });
});

test('settings are mirrored with the names the server reads', () => {
  const values = {
    enable: true, defaultParallelism: 4, argv: '--in x', ignore: ['CL106'],
    'codeLens.enable': false, 'inlayHints.enable': undefined,
  };
  const section = { get: (key) => values[key] };
  assert.deepStrictEqual(serverSettings(section), {
    enable: true, defaultParallelism: 4, argv: '--in x', ignore: ['CL106'],
    codeLens: { enable: false }, inlayHints: { enable: true },
  });
});

test('a server that cannot start is explained with the settings to change', () => {
  const message = startFailureMessage('/nope/python', ['-P', '-m', 'chainlens.server'], 'spawn /nope/python ENOENT');
  assert.match(message, /could not start \(\/nope\/python -P -m chainlens\.server\): spawn \/nope\/python ENOENT/);
  assert.match(message, /chainlens\.path/);
  assert.match(message, /chainlens\.interpreter/);
});

test('the deployment setting is mirrored to the server', () => {
  const section = { get: (key) => ({ deployment: 'orders-prod' })[key] };
  assert.strictEqual(serverSettings(section).deployment, 'orders-prod');
});
