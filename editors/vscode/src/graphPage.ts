// The job graph webview: the server's SVG in a view that pans and zooms as
// Flink's web UI does (wheel or pinch to zoom at the pointer, drag to pan,
// a button to fit the whole graph), opened fitted so every task is in sight.
import * as crypto from 'crypto';

// Runs in the webview (a browser), not in the extension host: plain
// JavaScript kept in a string, allowed by the page's nonce.
const SCRIPT = String.raw`
(function () {
  const view = document.getElementById('view');
  const svg = view.querySelector('svg');
  if (!svg) { return; }
  const width = parseFloat(svg.getAttribute('width')) || svg.getBBox().width;
  const height = parseFloat(svg.getAttribute('height')) || svg.getBBox().height;
  const MIN = 0.05, MAX = 8;
  let x = 0, y = 0, k = 1;
  function apply() {
    svg.style.transform = 'translate(' + x + 'px,' + y + 'px) scale(' + k + ')';
    document.body.dataset.scale = k.toFixed(4);
    document.getElementById('scale').textContent = Math.round(k * 100) + '%';
  }
  function zoomAt(factor, px, py) {
    const next = Math.min(MAX, Math.max(MIN, k * factor));
    x = px - (px - x) * (next / k);
    y = py - (py - y) * (next / k);
    k = next;
    apply();
  }
  function fit() {
    const room = view.getBoundingClientRect();
    k = Math.min(1, (room.width - 16) / width, (room.height - 16) / height);
    k = Math.max(MIN, k);
    x = (room.width - width * k) / 2;
    y = Math.max(8, (room.height - height * k) / 2);
    apply();
  }
  function actual() {
    k = 1; x = 8; y = 8; apply();
  }
  view.addEventListener('wheel', (event) => {
    event.preventDefault();
    const room = view.getBoundingClientRect();
    // a trackpad pinch arrives as a wheel event with ctrlKey set
    const step = event.ctrlKey ? 0.01 : 0.0015;
    zoomAt(Math.exp(-event.deltaY * step), event.clientX - room.left, event.clientY - room.top);
  }, { passive: false });
  const pointers = new Map();
  let pinch = 0;
  view.addEventListener('pointerdown', (event) => {
    if (event.target.closest && event.target.closest('button')) { return; }
    view.setPointerCapture(event.pointerId);
    pointers.set(event.pointerId, { x: event.clientX, y: event.clientY });
    view.classList.add('dragging');
  });
  view.addEventListener('pointermove', (event) => {
    const last = pointers.get(event.pointerId);
    if (!last) { return; }
    if (pointers.size === 2) {
      const [a, b] = [...pointers.values()];
      const before = Math.hypot(a.x - b.x, a.y - b.y);
      last.x = event.clientX; last.y = event.clientY;
      const after = Math.hypot(a.x - b.x, a.y - b.y);
      const room = view.getBoundingClientRect();
      if (pinch && before > 0) {
        zoomAt(after / before, (a.x + b.x) / 2 - room.left, (a.y + b.y) / 2 - room.top);
      }
      pinch = 1;
      return;
    }
    x += event.clientX - last.x;
    y += event.clientY - last.y;
    last.x = event.clientX; last.y = event.clientY;
    apply();
  });
  function release(event) {
    pointers.delete(event.pointerId);
    if (pointers.size < 2) { pinch = 0; }
    if (!pointers.size) { view.classList.remove('dragging'); }
  }
  view.addEventListener('pointerup', release);
  view.addEventListener('pointercancel', release);
  function centre(factor) {
    const room = view.getBoundingClientRect();
    zoomAt(factor, room.width / 2, room.height / 2);
  }
  document.getElementById('fit').addEventListener('click', fit);
  document.getElementById('actual').addEventListener('click', actual);
  document.getElementById('in').addEventListener('click', () => centre(1.25));
  document.getElementById('out').addEventListener('click', () => centre(0.8));
  document.addEventListener('keydown', (event) => {
    if (event.key === '0') { fit(); }
    else if (event.key === '1') { actual(); }
    else if (event.key === '+' || event.key === '=') { centre(1.25); }
    else if (event.key === '-') { centre(0.8); }
  });
  window.addEventListener('resize', fit);
  fit();
})();
`;

const STYLE = `html,body{margin:0;height:100%;overflow:hidden;background:var(--vscode-editor-background)}
#view{position:absolute;inset:0;overflow:hidden;cursor:grab;touch-action:none}
#view.dragging{cursor:grabbing}
#view svg{position:absolute;left:0;top:0;transform-origin:0 0;max-width:none}
#tools{position:absolute;right:8px;top:8px;z-index:1;display:flex;gap:4px;align-items:center;
font:12px var(--vscode-font-family,sans-serif);color:var(--vscode-foreground)}
#tools button{font:inherit;min-width:28px;padding:2px 8px;cursor:pointer;border:1px solid var(--vscode-button-border,transparent);
color:var(--vscode-button-secondaryForeground,#fff);background:var(--vscode-button-secondaryBackground,#555);border-radius:2px}
#tools button:hover{background:var(--vscode-button-secondaryHoverBackground,#666)}`;

export function nonce(): string {
  return crypto.randomBytes(16).toString('base64');
}

/** The webview's HTML around the server's SVG; `key` allows the page's one script. */
export function graphPage(svg: string, key: string = nonce()): string {
  return `<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'nonce-${key}';">
<style>${STYLE}</style>
</head><body>
<div id="tools" role="toolbar" aria-label="Job graph view">
<span id="scale"></span>
<button id="out" title="Zoom out (-)">−</button>
<button id="in" title="Zoom in (+)">+</button>
<button id="actual" title="Actual size (1)">1:1</button>
<button id="fit" title="Fit the whole graph (0)">Fit</button>
</div>
<div id="view">${svg}</div>
<script nonce="${key}">${SCRIPT}</script>
</body></html>`;
}
