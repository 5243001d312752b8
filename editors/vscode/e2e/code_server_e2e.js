// End-to-end test of the packaged extension in a real VS Code (code-server),
// driven by Chromium through playwright-core.
//
//   node e2e/code_server_e2e.js --vsix chainlens.vsix --python /venv/bin/python \
//     --workspace /tmp/ws --file pipeline.py --hover reduce --out /tmp/out
//
// Prints one JSON line: {"ok": true, "diagnostics": [...], "hover": "...", "jobGraph": {...}}.
'use strict';
const { spawn, spawnSync } = require('child_process');
const fs = require('fs');
const http = require('http');
const net = require('net');
const path = require('path');

const cache = path.join(__dirname, '..', '.e2e', 'node_modules');
const { chromium } = require(path.join(cache, 'playwright-core'));
const codeServer = path.join(cache, '.bin', 'code-server');

function option(name, fallback) {
  const index = process.argv.indexOf(`--${name}`);
  if (index >= 0 && index + 1 < process.argv.length) {
    return process.argv[index + 1];
  }
  if (fallback === undefined) {
    throw new Error(`missing --${name}`);
  }
  return fallback;
}

const vsix = path.resolve(option('vsix'));
const python = option('python');
const workspace = path.resolve(option('workspace'));
const file = option('file');
const hoverWord = option('hover');
// a second program whose job graph is checked in the webview: every task in view
const graphFile = option('graph-file', '');
// a deployment of the workspace to choose with "chainlens: Choose Deployment"
const deploymentName = option('deployment', '');
const out = path.resolve(option('out'));
const started = Date.now();
const log = (message) => process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(2)}s] ${message}\n`);

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

function waitFor(check, timeoutMs, what) {
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + timeoutMs;
    const tick = async () => {
      try {
        const value = await check();
        if (value) {
          resolve(value);
          return;
        }
      } catch {
        // not yet
      }
      if (Date.now() > deadline) {
        reject(new Error(`timed out waiting for ${what}`));
        return;
      }
      setTimeout(tick, 200);
    };
    tick();
  });
}

function httpUp(port) {
  return new Promise((resolve) => {
    http.get({ host: '127.0.0.1', port, path: '/healthz' }, (res) => {
      res.resume();
      resolve(res.statusCode !== undefined);
    }).on('error', () => resolve(false));
  });
}

function readSeen(seenPath) {
  try {
    return JSON.parse(fs.readFileSync(seenPath, 'utf8'));
  } catch {
    return {};
  }
}

// Quick Open finds files only once the workspace is indexed: retry until it lists ours
async function quickOpen(page, name) {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await page.keyboard.press('Control+P');
      await page.waitForSelector('.quick-input-widget input', { timeout: 10000 });
      await page.keyboard.type(name);
      await page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first().waitFor({ timeout: 10000 });
      await page.keyboard.press('Enter');
      await page.waitForSelector('.monaco-editor .view-lines', { timeout: 15000 });
      return;
    } catch (error) {
      if (attempt >= 4) {
        throw error;
      }
      log(`quick open attempt ${attempt} failed; retrying`);
      await page.keyboard.press('Escape');
      await page.waitForTimeout(1500);
    }
  }
}

async function graphFrame(page, tasks) {
  for (const frame of page.frames()) {
    try {
      if (await frame.locator('svg.chainlens-job-graph g.task').count() === tasks) {
        return frame;
      }
    } catch {
      // a frame of a former page, detached meanwhile
    }
  }
  return undefined;
}

// Which task boxes of the webview lie wholly inside its visible area.
function inView(frame) {
  return frame.evaluate(() => {
    const room = document.getElementById('view').getBoundingClientRect();
    const boxes = [...document.querySelectorAll('svg.chainlens-job-graph g.task rect.box')];
    const visible = boxes.filter((rect) => {
      const r = rect.getBoundingClientRect();
      return r.width > 0 && r.left >= room.left - 0.5 && r.top >= room.top - 0.5
        && r.right <= room.right + 0.5 && r.bottom <= room.bottom + 0.5;
    });
    return { tasks: boxes.length, visible: visible.length, scale: Number(document.body.dataset.scale),
      transform: document.querySelector('svg.chainlens-job-graph').style.transform,
      width: room.width, height: room.height };
  });
}

async function showGraph(page) {
  await page.keyboard.press('F1');
  await page.waitForSelector('.quick-input-widget input', { timeout: 20000 });
  await page.keyboard.type('chainlens: Show Job Graph');
  await page.waitForTimeout(800);
  await page.keyboard.press('Enter');
}

async function main() {
  fs.mkdirSync(out, { recursive: true });
  const home = path.join(out, 'home');
  const userData = path.join(out, 'user-data');
  const extensions = path.join(out, 'extensions');
  const config = path.join(out, 'config.yaml');
  const seenPath = path.join(out, 'seen.json');
  for (const dir of [home, path.join(userData, 'User'), extensions]) {
    fs.mkdirSync(dir, { recursive: true });
  }
  fs.writeFileSync(config, 'auth: none\ncert: false\n');
  fs.writeFileSync(path.join(userData, 'User', 'settings.json'), JSON.stringify({
    'workbench.startupEditor': 'none',
    'security.workspace.trust.enabled': false,
    'extensions.autoUpdate': false,
    'extensions.autoCheckUpdates': false,
    'telemetry.telemetryLevel': 'off',
    'chat.disableAIFeatures': true,
    'workbench.tips.enabled': false,
    'chainlens.interpreter': [python],
  }, null, 1));
  const env = {
    ...process.env,
    HOME: home,
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    CHAINLENS_E2E_OUT: seenPath,
  };
  const common = ['--config', config, '--user-data-dir', userData, '--extensions-dir', extensions];
  log('installing the .vsix');
  const install = spawnSync(codeServer, [...common, '--install-extension', vsix], { env, encoding: 'utf8' });
  if (install.status !== 0) {
    throw new Error(`--install-extension failed: ${install.stdout}${install.stderr}`);
  }
  const port = await freePort();
  log(`starting code-server on ${port}`);
  const server = spawn(codeServer, [
    ...common, '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`, '--disable-telemetry',
    '--disable-update-check', '--disable-workspace-trust', '--disable-getting-started-override',
    '--ignore-last-opened', workspace,
  ], { env, detached: true, stdio: ['ignore', fs.openSync(path.join(out, 'code-server.log'), 'w'), 'pipe'] });
  let serverErr = '';
  server.stderr.on('data', (chunk) => { serverErr += chunk; });
  let browser;
  const result = { ok: false };
  try {
    await waitFor(() => httpUp(port), 60000, 'code-server to listen');
    log('listening; launching chromium');
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking',
        '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
    const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
    await page.waitForSelector('.monaco-workbench', { timeout: 60000 });
    log('workbench loaded');
    await page.waitForTimeout(1500);
    await quickOpen(page, file);
    log('editor open');
    const seen = await waitFor(() => {
      const value = readSeen(seenPath);
      return (value.diagnostics || []).some((d) => d.code === 'CL101') ? value : undefined;
    }, 90000, 'chainlens diagnostics');
    result.diagnostics = seen.diagnostics;
    log(`diagnostics: ${seen.diagnostics.length}`);
    await page.waitForSelector('.monaco-editor .squiggly-warning', { timeout: 30000 });
    result.squiggle = true;
    // the word's screen position: the smallest rendered token holding it
    const spans = page.locator('.monaco-editor .view-line span span', { hasText: hoverWord });
    let best;
    for (let i = 0; i < await spans.count(); i += 1) {
      const text = await spans.nth(i).innerText();
      if (!best || text.length < best.text.length) {
        best = { text, box: await spans.nth(i).boundingBox() };
      }
    }
    if (!best || !best.box) {
      throw new Error(`no rendered token holds ${hoverWord}`);
    }
    const at = best.text.indexOf(hoverWord) + 2;
    await page.mouse.move(best.box.x + (best.box.width * at) / best.text.length, best.box.y + best.box.height / 2);
    const hover = page.locator('.monaco-hover', { hasText: 'Task' });
    await hover.first().waitFor({ timeout: 30000 });
    result.hover = await hover.first().innerText();
    log('hover seen');
    await page.keyboard.press('Escape');
    await showGraph(page);
    const graph = await waitFor(() => readSeen(seenPath).jobGraph, 60000, 'the job graph');
    result.jobGraph = graph;
    result.webviewSvg = await waitFor(async () => {
      for (const frame of page.frames()) {
        if (await frame.locator('svg.chainlens-job-graph').count() > 0) {
          return frame.locator('g.task').count();
        }
      }
      return undefined;
    }, 30000, 'the job graph webview');
    log(`job graph shown: ${result.webviewSvg} tasks in the webview`);
    await page.screenshot({ path: path.join(out, 'screenshot.png') });
    if (graphFile) {
      await page.keyboard.press('Escape');
      await page.keyboard.press('Control+1');  // open it in the first editor group
      await quickOpen(page, graphFile);
      await page.waitForTimeout(1000);
      await showGraph(page);
      const second = await waitFor(() => {
        const value = readSeen(seenPath).jobGraph;
        return value && value.uri.endsWith(graphFile) ? value : undefined;
      }, 60000, `the job graph of ${graphFile}`);
      const frame = await waitFor(() => graphFrame(page, second.tasks), 30000, 'the second graph in the webview');
      await page.waitForTimeout(500);
      const view = { opened: await inView(frame) };
      await page.screenshot({ path: path.join(out, 'graph-fitted.png') });
      // zoom in with the wheel over the graph, pan by dragging, then fit again
      const area = await (await frame.frameElement()).boundingBox();
      const cx = area.x + area.width / 2, cy = area.y + area.height / 2;
      await page.mouse.move(cx, cy);
      await page.mouse.wheel(0, -600);
      await page.waitForTimeout(300);
      view.zoomed = await inView(frame);
      await page.mouse.down();
      await page.mouse.move(cx - 150, cy - 80, { steps: 5 });
      await page.mouse.up();
      await page.waitForTimeout(200);
      view.panned = await inView(frame);
      await page.screenshot({ path: path.join(out, 'graph-zoomed.png') });
      await frame.locator('#fit').click();
      await page.waitForTimeout(300);
      view.fitted = await inView(frame);
      result.graphView = { jobGraph: second, ...view };
      log(`second graph: ${JSON.stringify(view.opened)}`);
    }
    if (deploymentName) {
      await page.keyboard.press('Escape');
      await page.keyboard.press('F1');
      await page.waitForSelector('.quick-input-widget input', { timeout: 20000 });
      await page.keyboard.type('chainlens: Choose Deployment');
      await page.waitForTimeout(800);
      await page.keyboard.press('Enter');
      result.deploymentItems = await waitFor(
        () => readSeen(seenPath).deploymentItems, 60000, 'the deployment quick pick');
      await page.waitForSelector('.quick-input-list .monaco-list-row', { timeout: 20000 });
      result.deploymentRows = await page.locator('.quick-input-list .monaco-list-row .label-name').allInnerTexts();
      await page.keyboard.type(deploymentName);
      await page.waitForTimeout(500);
      await page.keyboard.press('Enter');
      result.deployment = await waitFor(
        () => readSeen(seenPath).deployment, 30000, 'the chosen deployment');
      log(`deployment chosen: ${result.deployment}`);
    }
    result.ok = true;
  } catch (error) {
    result.error = String(error && error.stack || error);
    if (browser) {
      for (const page of browser.contexts().flatMap((c) => c.pages())) {
        await page.screenshot({ path: path.join(out, 'failure.png') }).catch(() => undefined);
      }
    }
    result.codeServerStderr = serverErr.slice(-2000);
  } finally {
    if (browser) {
      await browser.close().catch(() => undefined);
    }
    try {
      process.kill(-server.pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
  result.seconds = (Date.now() - started) / 1000;
  process.stdout.write(JSON.stringify(result) + '\n');
  process.exit(result.ok ? 0 : 1);
}

main().catch((error) => {
  process.stdout.write(JSON.stringify({ ok: false, error: String(error && error.stack || error) }) + '\n');
  process.exit(1);
});
