// How to start the chainlens language server, from the extension's settings (pure).

export interface ServerSettings {
  path?: readonly string[];
  interpreter?: readonly string[];
  args?: readonly string[];
}

export interface ServerCommand {
  command: string;
  args: string[];
}

/**
 * `chainlens.path` wins (the executable, `lsp` appended); else
 * `chainlens.interpreter` (or the Python extension's interpreter, or python3)
 * runs `-P -m chainlens.server`: `-P` keeps the working folder (the user's
 * workspace) off the import path, so none of its modules can shadow one the
 * server imports. `chainlens.args` is appended either way.
 */
export function serverCommand(settings: ServerSettings, pythonFromExtension?: readonly string[]): ServerCommand {
  const extra = [...(settings.args ?? [])];
  const path = (settings.path ?? []).filter((part) => part.length > 0);
  if (path.length > 0) {
    return { command: path[0], args: [...path.slice(1), 'lsp', ...extra] };
  }
  const configured = (settings.interpreter ?? []).filter((part) => part.length > 0);
  const python = configured.length > 0 ? configured : [...(pythonFromExtension ?? [])];
  if (python.length === 0) {
    python.push('python3');
  }
  return { command: python[0], args: [...python.slice(1), '-P', '-m', 'chainlens.server', ...extra] };
}

/** The settings object the server reads (the `chainlens` section, as plain JSON). */
export function serverSettings(section: { get<T>(key: string): T | undefined }): Record<string, unknown> {
  const keys = [
    'enable', 'defaultParallelism', 'argv', 'select', 'extendSelect', 'ignore',
    'configurationPreference', 'savepointBase', 'flinkVersion', 'upgradeTo', 'deployment',
  ];
  const settings: Record<string, unknown> = {};
  for (const key of keys) {
    const value = section.get<unknown>(key);
    if (value !== undefined) {
      settings[key] = value;
    }
  }
  settings.codeLens = { enable: section.get<boolean>('codeLens.enable') ?? true };
  settings.inlayHints = { enable: section.get<boolean>('inlayHints.enable') ?? true };
  return settings;
}

/** What the user is told when the server cannot start, and which setting to change. */
export function startFailureMessage(command: string, args: readonly string[], reason: string): string {
  const how = [command, ...args].join(' ');
  return `chainlens: the language server could not start (${how}): ${reason}. `
    + 'Install chainlens in the Python environment VS Code uses (pip install chainlens, '
    + 'or pip install . from a checkout), or set chainlens.path to the chainlens '
    + 'executable or chainlens.interpreter to a Python that has it.';
}
