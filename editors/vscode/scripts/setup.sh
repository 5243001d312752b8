#!/usr/bin/env bash
# Installs what the VS Code end-to-end test needs, idempotently, on Debian 12 with
# Node 20: Chromium (driven by playwright-core), code-server (VS Code in a
# browser, with the real Node extension host), the extension's own dependencies,
# and the packaged .vsix.  Prints what it did and how long it took.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cache="$here/.e2e"
start=$(date +%s)
sudo_if_needed() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v rg >/dev/null || missing+=(ripgrep)
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: apt-get install ${missing[*]}"
  sudo_if_needed apt-get update -qq
  DEBIAN_FRONTEND=noninteractive sudo_if_needed apt-get install -y -qq "${missing[@]}" >/dev/null
fi

export npm_config_unsafe_perm=true npm_config_yes=true npm_config_audit=false npm_config_fund=false
if [ ! -x "$cache/node_modules/.bin/code-server" ] || [ ! -d "$cache/node_modules/playwright-core" ]; then
  # @vscode/ripgrep downloads rg from GitHub in its postinstall: seed its cache with Debian's
  rg_cache="$(node -p 'require("os").tmpdir()')/vscode-ripgrep-cache-1.15.11"
  mkdir -p "$rg_cache"
  if [ ! -f "$rg_cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" ]; then
    d="$(mktemp -d)"; cp "$(command -v rg)" "$d/rg"
    tar czf "$rg_cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$d" rg
  fi
  mkdir -p "$cache"
  [ -f "$cache/package.json" ] || echo '{"name": "chainlens-e2e", "private": true}' > "$cache/package.json"
  echo "setup: npm install code-server@4.100.3 playwright-core@1.65.1"
  (cd "$cache" && npm install code-server@4.100.3 playwright-core@1.65.1 >/dev/null 2>&1)
fi

cd "$here"
if [ ! -d node_modules/vscode-languageclient ]; then
  echo "setup: npm ci (extension)"
  npm ci >/dev/null 2>&1
fi
npx tsc -p .
npx vsce package --out chainlens.vsix >/dev/null
echo "setup: done in $(( $(date +%s) - start )) s ($here/chainlens.vsix)"
