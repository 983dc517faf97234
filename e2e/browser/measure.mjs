// How fast the apps become usable, in headless Chromium, against a running demo:
// the portal's first page (the catalog, signed in with a tenant key) and the console's
// fleet page, after registering H100 nodes until the fleet has $NODES (default 1000).
// "Interactive" is when the page's data table has rendered and the main thread has had
// no long task (> 50 ms) since: the later of the two, from navigation start. Prints the
// median and the worst of $RUNS (default 5) cold loads each (a new browser context with
// an empty cache, signed in beforehand), and the JavaScript each page transferred.
// Then, once, the fleet page with every node loaded ("Load more" until all are, at most
// $MAX_PAGES presses, default 100): how many rows of the node table are in the DOM
// against the nodes loaded, at the top, the middle and the bottom of the page (the table
// is windowed above 200 rows: only the rows near the viewport are rendered).
// Registering the nodes needs the demo's rate limit off:
//
//   NEOCLOUD_LIMITS__REQUESTS_PER_SECOND=0 neocloud demo --credentials-out creds.json &
//   NEOCLOUD_URL=http://127.0.0.1:8080 NEOCLOUD_CREDENTIALS=creds.json \
//     CHROMIUM=/usr/bin/chromium node e2e/browser/measure.mjs
import fs from 'node:fs';
import { chromium } from 'playwright-core';

const URL = process.env.NEOCLOUD_URL;
const creds = JSON.parse(fs.readFileSync(process.env.NEOCLOUD_CREDENTIALS, 'utf8'));
const NODES = Number(process.env.NODES ?? 1000);
const RUNS = Number(process.env.RUNS ?? 5);
const MAX_PAGES = Number(process.env.MAX_PAGES ?? 100);

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

/** One cold load of `path` (empty cache) for a session signed in with `key`:
 * milliseconds to interactive, and the JavaScript bytes that came over the wire. */
async function load(key, path) {
  const context = await browser.newContext();
  // The session cookie lands in the context's cookie jar; the page finds it on load.
  const signedIn = await context.request.post(`${URL}/v1/session`, { data: { apiKey: key } });
  if (!signedIn.ok()) throw new Error(`sign-in: ${signedIn.status()}`);
  const page = await context.newPage();
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

/** The console's fleet page with every node loaded: presses the node list's "Load more"
 * until all are loaded (or MAX_PAGES presses), then counts the node table's rows in the
 * DOM (spacer rows of a windowed table left out) at the top, the middle and the bottom of
 * the page, with every <tr> and element of the document beside them. */
async function fleetDomRows(key) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const signedIn = await context.request.post(`${URL}/v1/session`, { data: { apiKey: key } });
  if (!signedIn.ok()) throw new Error(`sign-in: ${signedIn.status()}`);
  const page = await context.newPage();
  await page.goto(`${URL}/console`);
  const table = page.getByRole('table', { name: 'Registered nodes' });
  await table.locator('tbody tr').first().waitFor({ timeout: 30000 });
  const section = page.getByRole('region', { name: 'Nodes', exact: true });
  const more = section.getByRole('button', { name: 'Load more' });
  const status = section.locator('.load-more [aria-live]');
  const started = performance.now();
  let presses = 0;
  while (presses < MAX_PAGES && (await more.count())) {
    const before = await status.innerText();
    await more.click();
    await page.waitForFunction(([el, text]) => el.textContent !== text, [await status.elementHandle(), before], { timeout: 30000 });
    presses += 1;
  }
  const loadedMs = performance.now() - started;
  const loaded = Number((await status.innerText()).match(/\d+/)?.[0] ?? NaN);
  const count = () =>
    table.evaluate((t) => ({
      rows: t.querySelectorAll('tbody tr:not(.table-gap)').length,
      documentRows: document.querySelectorAll('tr').length,
      elements: document.getElementsByTagName('*').length,
    }));
  const at = {};
  for (const [name, share] of [['top', 0], ['middle', 0.5], ['bottom', 1]]) {
    await page.evaluate((s) => window.scrollTo(0, s * document.documentElement.scrollHeight), share);
    await page.waitForTimeout(300);
    at[name] = await count();
  }
  await context.close();
  return { loaded, presses, loadedMs, at };
}

function summary(name, results) {
  const ms = results.map((r) => r.ms).sort((a, b) => a - b);
  const median = ms[Math.floor(ms.length / 2)];
  console.log(`${name}: median ${median.toFixed(0)} ms, worst ${ms.at(-1).toFixed(0)} ms, ` +
    `JavaScript transferred ${results[0].js} B (${RUNS} cold loads)`);
}

/** Baseline: the page's own data straight from the API (no browser), milliseconds. */
async function apiAlone(key, query) {
  const started = performance.now();
  const response = await fetch(`${URL}/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  await response.json();
  return { ms: performance.now() - started, js: 0 };
}

const PAGES = [
  ['portal catalog', creds.tenants[0].key, '/portal',
    '{ viewer { role tenant { name } } catalog { skus { id name form unit available listPricePerHour pricePerHour spotPricePerHour } } }'],
  ['console fleet', creds.operator_key, '/console',
    '{ fleetOverview { nodesByState { key count } gpusByHealth { key count } capacity { region gpuModel gpus allocatedGpus } } nodes(first: 25) { nodes { id hostname state } } }'],
];

await grow(NODES);
console.log(`fleet: ${await fleetSize()} nodes`);
for (const [name, key, path, query] of PAGES) {
  const page = [];
  const api = [];
  for (let i = 0; i < RUNS; i += 1) {
    page.push(await load(key, path));
    api.push(await apiAlone(key, query));
  }
  summary(name, page);
  summary(`${name}, its data from the API alone (baseline)`, api);
}
const dom = await fleetDomRows(creds.operator_key);
console.log(`console fleet, every node loaded: ${dom.loaded} nodes after ${dom.presses} presses of "Load more" ` +
  `(${dom.loadedMs.toFixed(0)} ms); node table rows in the DOM ` +
  Object.entries(dom.at).map(([where, c]) => `${where} ${c.rows} (document: ${c.documentRows} <tr>, ${c.elements} elements)`).join(', '));
await browser.close();
