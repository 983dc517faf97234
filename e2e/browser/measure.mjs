// How fast the apps become usable, in headless Chromium, against a running demo:
// the portal's first page (the catalog, signed in with a tenant key) and the console's
// fleet page, after registering H100 nodes until the fleet has $NODES (default 1000).
// "Interactive" is when the page's data table has rendered and the main thread has had
// no long task (> 50 ms) since: the later of the two, from navigation start. Prints the
// median and the worst of $RUNS (default 5) cold loads each (a new browser context: no
// cache, no session), and the JavaScript each page transferred.
//
//   NEOCLOUD_URL=http://127.0.0.1:8080 NEOCLOUD_CREDENTIALS=creds.json \
//     CHROMIUM=/usr/bin/chromium node e2e/browser/measure.mjs
import fs from 'node:fs';
import { chromium } from 'playwright-core';

const URL = process.env.NEOCLOUD_URL;
const creds = JSON.parse(fs.readFileSync(process.env.NEOCLOUD_CREDENTIALS, 'utf8'));
const NODES = Number(process.env.NODES ?? 1000);
const RUNS = Number(process.env.RUNS ?? 5);

async function gql(query, variables = {}) {
  const response = await fetch(`${URL}/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${creds.operator_key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  const body = await response.json();
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
}

async function fleetSize() {
  const data = await gql('{ fleetOverview { nodesByState { count } } }');
  return data.fleetOverview.nodesByState.reduce((sum, c) => sum + c.count, 0);
}

async function grow(to) {
  const register = `mutation($i: RegisterNodeInput!) { registerNode(input: $i) { node { id } } }`;
  for (let n = await fleetSize(); n < to; n += 1) {
    const rack = `m${String(Math.floor(n / 8)).padStart(3, '0')}`;
    const host = `load-${String(n).padStart(4, '0')}`;
    const gpus = [...Array(8).keys()].map((i) => ({
      index: i,
      uuid: `GPU-${String(n).padStart(8, '0')}-0000-4000-8000-${String(i).padStart(12, '0')}`,
    }));
    await gql(register, {
      i: { hostname: host, region: 'eu-west', zone: 'eu-west-b', rack, nvlinkDomain: host, gpuModel: 'H100', gpus },
    });
  }
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
});

/** One cold load of `path` after signing in with `key`: milliseconds to interactive. */
async function load(key, path) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${URL}${path}`);
  await page.getByLabel('API key', { exact: true }).fill(key);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.locator('main table tbody tr').first().waitFor({ timeout: 30000 });
  // A second, cold navigation now that the session exists: what a returning user sees.
  await page.addInitScript(() => {
    window.__longTaskEnd = 0;
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.__longTaskEnd = Math.max(window.__longTaskEnd, e.startTime + e.duration);
    }).observe({ type: 'longtask', buffered: true });
  });
  await page.goto(`${URL}${path}`, { waitUntil: 'commit' });
  await page.locator('main table tbody tr').first().waitFor({ timeout: 30000 });
  const rendered = await page.evaluate(() => performance.now());
  await page.waitForTimeout(500);
  const result = await page.evaluate((r) => {
    const js = performance.getEntriesByType('resource').filter((e) => e.name.endsWith('.js'));
    return { ms: Math.max(r, window.__longTaskEnd), js: js.reduce((s, e) => s + e.transferSize, 0) };
  }, rendered);
  await context.close();
  return result;
}

function summary(name, results) {
  const ms = results.map((r) => r.ms).sort((a, b) => a - b);
  const median = ms[Math.floor(ms.length / 2)];
  console.log(`${name}: median ${median.toFixed(0)} ms, worst ${ms.at(-1).toFixed(0)} ms, ` +
    `JavaScript transferred ${results[0].js} B (${RUNS} cold loads)`);
}

await grow(NODES);
console.log(`fleet: ${await fleetSize()} nodes`);
for (const [name, key, path] of [
  ['portal catalog', creds.tenants[0].key, '/portal'],
  ['console fleet', creds.operator_key, '/console'],
]) {
  const results = [];
  for (let i = 0; i < RUNS; i += 1) results.push(await load(key, path));
  summary(name, results);
}
await browser.close();
