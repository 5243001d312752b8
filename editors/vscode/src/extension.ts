// chainlens for VS Code: starts `chainlens lsp` and shows the job graph it draws.
import * as fs from 'fs';
import * as vscode from 'vscode';
import { LanguageClient, LanguageClientOptions, ServerOptions } from 'vscode-languageclient/node';
import { DeploymentEntry, pickItems } from './deployments';
import { graphPage } from './graphPage';
import { serverCommand, serverSettings, startFailureMessage } from './serverCommand';

let client: LanguageClient | undefined;
let output: vscode.LogOutputChannel;
let panel: vscode.WebviewPanel | undefined;
let panelUri: string | undefined;
const e2eOut = process.env.CHAINLENS_E2E_OUT;
const e2eSeen: Record<string, unknown> = {};

interface JobGraphResult {
  uri: string;
  version: number;
  format: string;
  content: string;
  jobs: { name: string; tasks: number; operators: number; shuffles: number }[];
}

function record(key: string, value: unknown): void {
  if (!e2eOut) {
    return;
  }
  e2eSeen[key] = value;
  fs.writeFileSync(e2eOut, JSON.stringify(e2eSeen, null, 1));
}

async function pythonFromExtension(): Promise<string[] | undefined> {
  const python = vscode.extensions.getExtension('ms-python.python');
  if (!python) {
    return undefined;
  }
  try {
    const api = python.isActive ? python.exports : await python.activate();
    const details = api?.settings?.getExecutionDetails?.(vscode.workspace.workspaceFolders?.[0]?.uri);
    return details?.execCommand;
  } catch {
    return undefined;
  }
}

async function startClient(): Promise<void> {
  const config = vscode.workspace.getConfiguration('chainlens');
  const { command, args } = serverCommand(
    {
      path: config.get<string[]>('path'),
      interpreter: config.get<string[]>('interpreter'),
      args: config.get<string[]>('args'),
    },
    await pythonFromExtension(),
  );
  output.info(`starting: ${command} ${args.join(' ')}`);
  // also for the `chainlens` executable: none of the server's Python children
  // may import from the workspace folder either
  const serverOptions: ServerOptions = {
    command, args, options: { env: { ...process.env, PYTHONSAFEPATH: '1' } },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: 'file', language: 'python' },
      { scheme: 'untitled', language: 'python' },
      // deployment descriptors: restore-breaking changes on their own lines
      { scheme: 'file', language: 'yaml' },
    ],
    outputChannel: output,
    initializationOptions: { settings: serverSettings(config) },
    synchronize: {
      configurationSection: 'chainlens',
      fileEvents: vscode.workspace.createFileSystemWatcher('**/{pyproject.toml,chainlens.toml,.chainlens.toml}'),
    },
  };
  client = new LanguageClient('chainlens', 'chainlens', serverOptions, clientOptions);
  try {
    await client.start();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    const message = startFailureMessage(command, args, reason);
    output.error(message);
    record('startError', message);
    client = undefined;
    const choice = await vscode.window.showErrorMessage(message, 'Open Settings', 'Show Output');
    if (choice === 'Open Settings') {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'chainlens.');
    } else if (choice === 'Show Output') {
      output.show();
    }
  }
}

async function jobGraph(uri: string): Promise<JobGraphResult | undefined> {
  if (!client) {
    return undefined;
  }
  const dark = vscode.window.activeColorTheme.kind === vscode.ColorThemeKind.Dark
    || vscode.window.activeColorTheme.kind === vscode.ColorThemeKind.HighContrast;
  return client.sendRequest<JobGraphResult>('chainlens/jobGraph', {
    textDocument: { uri },
    format: 'svg',
    theme: dark ? 'dark' : 'light',
  });
}

async function showJobGraph(target?: string | vscode.Uri): Promise<void> {
  const uri = typeof target === 'string' ? target
    : target instanceof vscode.Uri ? target.toString()
    : vscode.window.activeTextEditor?.document.uri.toString();
  if (!uri) {
    void vscode.window.showInformationMessage('chainlens: open a PyFlink program first');
    return;
  }
  const result = await jobGraph(uri);
  if (!result) {
    return;
  }
  if (!panel) {
    panel = vscode.window.createWebviewPanel('chainlens.jobGraph', 'Job Graph', vscode.ViewColumn.Beside, {
      // the page's one script (pan, zoom, fit) runs under a nonce; nothing is loaded
      enableScripts: true,
      localResourceRoots: [],
    });
    panel.onDidDispose(() => {
      panel = undefined;
      panelUri = undefined;
    });
  } else if (!panel.visible) {
    // the pane sits behind an editor of its group: bring it back beside the program
    panel.reveal(vscode.ViewColumn.Beside, true);
  }
  panelUri = uri;
  panel.title = `Job Graph: ${vscode.Uri.parse(uri).path.split('/').pop()}`;
  panel.webview.html = graphPage(result.content);
  record('jobGraph', {
    uri: result.uri,
    format: result.format,
    startsWithSvg: result.content.trimStart().startsWith('<svg'),
    tasks: (result.content.match(/class="task"/g) ?? []).length,
    jobs: result.jobs,
  });
}

async function chooseDeployment(): Promise<void> {
  if (!client) {
    return;
  }
  const uri = vscode.window.activeTextEditor?.document.uri.toString()
    ?? vscode.workspace.workspaceFolders?.[0]?.uri.toString();
  const entries = await client.sendRequest<DeploymentEntry[]>('workspace/executeCommand', {
    command: 'chainlens.server.deployments',
    arguments: [uri],
  });
  const config = vscode.workspace.getConfiguration('chainlens');
  const items = pickItems(entries ?? [], config.get<string>('deployment') ?? '');
  record('deploymentItems', items.map((item) => item.label));
  const picked = await vscode.window.showQuickPick(items, {
    title: 'chainlens: analyse the programs as deployed by',
    placeHolder: 'a deployment of this project',
  });
  if (!picked) {
    return;
  }
  await config.update('deployment', picked.value, vscode.ConfigurationTarget.Workspace);
  record('deployment', picked.value);
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel('chainlens', { log: true });
  context.subscriptions.push(
    output,
    vscode.commands.registerCommand('chainlens.showJobGraph', showJobGraph),
    vscode.commands.registerCommand('chainlens.showOutput', () => output.show()),
    vscode.commands.registerCommand('chainlens.chooseDeployment', chooseDeployment),
    vscode.commands.registerCommand('chainlens.restartServer', async () => {
      await client?.stop();
      await startClient();
    }),
    vscode.workspace.onDidSaveTextDocument(async (document) => {
      if (panel && panelUri === document.uri.toString()) {
        await showJobGraph(panelUri);
      }
    }),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration('chainlens.path') || event.affectsConfiguration('chainlens.interpreter')
        || event.affectsConfiguration('chainlens.args')) {
        await client?.stop();
        await startClient();
      }
    }),
  );
  if (e2eOut) {
    context.subscriptions.push(vscode.languages.onDidChangeDiagnostics(() => {
      const found: unknown[] = [];
      for (const [uri, diagnostics] of vscode.languages.getDiagnostics()) {
        for (const d of diagnostics) {
          if (d.source === 'chainlens') {
            const code = typeof d.code === 'object' ? d.code.value : d.code;
            found.push({ uri: uri.toString(), line: d.range.start.line, character: d.range.start.character, code, message: d.message });
          }
        }
      }
      record('diagnostics', found);
    }));
  }
  await startClient();
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
