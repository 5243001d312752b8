// Unit tests of the job graph page (node --test, no VS Code); its pan and zoom
// run in a real webview in e2e/code_server_e2e.js.
const test = require('node:test');
const assert = require('node:assert');
const { graphPage, nonce } = require('../out/graphPage.js');

test('the page holds the SVG and allows only its own script', () => {
  const html = graphPage('<svg class="chainlens-job-graph" width="10" height="10"></svg>', 'k3y');
  assert.match(html, /<div id="view"><svg class="chainlens-job-graph"/);
  assert.match(html, /script-src 'nonce-k3y'/);
  assert.match(html, /default-src 'none'/);
  assert.strictEqual((html.match(/<script/g) || []).length, 1);
  assert.match(html, /<script nonce="k3y">/);
  for (const id of ['fit', 'in', 'out', 'actual']) {
    assert.match(html, new RegExp(`<button id="${id}"`));
  }
});

test('each page gets a fresh nonce', () => {
  assert.notStrictEqual(nonce(), nonce());
  assert.ok(nonce().length >= 16);
});
