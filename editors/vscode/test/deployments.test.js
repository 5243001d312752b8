// Unit tests of the deployment quick pick's items (node --test, no VS Code).
const test = require('node:test');
const assert = require('node:assert');
const { pickItems } = require('../out/deployments.js');

const entries = [
  { name: 'orders-prod', kind: 'FlinkDeployment', origin: 'k8s/prod.yaml:1', program: '/repo/jobs/orders.py', chosen: true },
  { name: 'scripts/submit.sh:3', kind: 'flink run', origin: 'scripts/submit.sh:3', program: null, chosen: false },
];

test('one item per deployment, after the code alone; the current one picked', () => {
  const items = pickItems(entries, 'orders-prod');
  assert.deepStrictEqual(items.map((i) => [i.label, i.value, i.picked]), [
    ['No deployment', '', false],
    ['orders-prod', 'orders-prod', true],
    ['scripts/submit.sh:3', 'scripts/submit.sh:3', false],
  ]);
  assert.strictEqual(items[1].description, 'FlinkDeployment, k8s/prod.yaml:1');
  assert.strictEqual(items[2].detail, 'its program is not in the repository');
});

test('without a deployment the code alone is picked', () => {
  assert.strictEqual(pickItems([], '')[0].picked, true);
});
