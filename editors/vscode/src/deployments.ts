// Choosing the deployment programs are analysed for: the server lists the
// project's deployments (chainlens.server.deployments), the user picks one in
// a quick pick, the choice is the workspace setting chainlens.deployment.

export interface DeploymentEntry {
  name: string;
  kind: string;
  origin: string;
  program: string | null;
  chosen: boolean;
}

export interface PickItem {
  label: string;
  description: string;
  detail?: string;
  picked: boolean;
  // the value of chainlens.deployment this item sets ("" for the code alone)
  value: string;
}

export function pickItems(entries: DeploymentEntry[], current: string): PickItem[] {
  const items: PickItem[] = [{
    label: 'No deployment',
    description: 'analyse the code alone',
    picked: current === '',
    value: '',
  }];
  for (const entry of entries) {
    items.push({
      label: entry.name,
      description: `${entry.kind}, ${entry.origin}`,
      detail: entry.program ?? 'its program is not in the repository',
      picked: entry.name === current,
      value: entry.name,
    });
  }
  return items;
}
