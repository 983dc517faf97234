// The portal and the console in Debian's Chromium, driven by Playwright, as their users
// would use them against a running `neocloud demo` (e2e/tests/browser_journey.rs starts
// it, with an OpenID Connect provider from oidc-provider.mjs):
//
// - tenant: signs in with its key, orders 8 H100 in one NVLink domain, sees the
//   allocation where it runs, its GPUs' health and their utilization chart, watches its
//   usage grow, switches the usage chart to labels and allocations, downloads the PDF of
//   an invoice, visits its account pages;
// - operator: signs in through single sign-on, drains the node a probe order landed on,
//   and the same order placed again avoids it; opens the fleet's tree down to that node's
//   NVLink domain and the node's page, takes a GPU out of service and marks it repaired;
//   fills a new version of the demo plan, previews it against the tenant's last invoice
//   and creates it; visits tenants, a tenant, ingest health and the audit log;
// - member: an invited portal user sets a password, lands in the portal, and the console
//   shows it nothing.
//
// Every page is checked with axe-core (no serious or critical violation) and kept as a
// screenshot in $NEOCLOUD_SCREENSHOTS; a page error or a Content-Security-Policy
// violation fails the journey. Prints "journey <name>: ok" per journey.
import fs from 'node:fs';
import path from 'node:path';
import axe from 'axe-core';
import { chromium } from 'playwright-core';

const URL = process.env.NEOCLOUD_URL;
const creds = JSON.parse(fs.readFileSync(process.env.NEOCLOUD_CREDENTIALS, 'utf8'));
const SHOTS = process.env.NEOCLOUD_SCREENSHOTS;
fs.mkdirSync(SHOTS, { recursive: true });
const tenant = creds.tenants[0];
const problems = [];
const pages = [];

async function gql(key, query, variables = {}) {
  const response = await fetch(`${URL}/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  const body = await response.json();
  if (body.errors) throw new Error(`${query}: ${JSON.stringify(body.errors)}`);
  return body.data;
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});

async function newPage() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  pages.push(page);
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && /Content Security Policy/i.test(msg.text())) problems.push(`CSP: ${msg.text()}`);
  });
  return page;
}

/** axe-core on the page as it is, then a screenshot. */
async function check(page, name) {
  await page.waitForLoadState('networkidle');
  await page.evaluate(axe.source);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  const serious = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  if (serious.length) {
    const list = serious.map((v) => `${v.id} (${v.impact}) at ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`);
    throw new Error(`${name}: accessibility violations: ${list.join('; ')}`);
  }
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  console.log(`page ${name}: ok (${result.violations.length} minor findings)`);
}

const heading = (page, name) => page.getByRole('heading', { level: 1, name }).waitFor();

async function signInWithKey(page, app, key) {
  await page.goto(`${URL}/${app}`);
  await heading(page, 'Sign in');
  await page.getByLabel('API key', { exact: true }).fill(key);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
}

async function skuId(name) {
  const data = await gql(tenant.key, '{ catalog { skus { id name } } }');
  return data.catalog.skus.find((s) => s.name === name).id;
}

/** Orders from the catalog's form, which opens the new allocation: where it runs, and
 * each of its GPUs (health included). */
async function order(page, sku, count, nvlink) {
  await page.goto(`${URL}/portal`);
  await heading(page, 'Catalog');
  await page.getByLabel('SKU', { exact: true }).selectOption(sku);
  await page.getByLabel('Count', { exact: true }).fill(String(count));
  if (nvlink) {
    await page.getByLabel('Placement', { exact: true }).selectOption('NVLINK_DOMAIN');
    await page.getByLabel('Fail rather than spread wider').check();
  }
  await page.getByRole('button', { name: 'Place order' }).click();
  await heading(page, /^Allocation /);
  await page.getByText('Order placed').waitFor();
  const where = (term) => page.locator(`dt:text-is("${term}") + dd`).innerText();
  const host = await where('Host');
  const nvlinkDomain = await where('NVLink domain');
  const region = await where('Region');
  const rack = await where('Rack');
  const gpus = page.getByRole('table', { name: 'GPUs of this allocation' }).locator('tbody tr');
  await gpus.first().waitFor();
  return { host, nvlinkDomain, region, rack, gpus: await gpus.allInnerTexts() };
}

async function allocatedHours(page) {
  await page.goto(`${URL}/portal/usage`);
  await heading(page, 'Usage');
  const stat = page.locator('.stat', { has: page.getByText('Allocated', { exact: true }) }).locator('.stat-value');
  await stat.waitFor();
  return Number((await stat.innerText()).replace(/[^0-9.]/g, ''));
}

/** The allocation's utilization: a chart once the node's agent has reported (the demo's
 * simulated agents do every few seconds; the page asks every 15 s), else its empty state;
 * then the 6-hour range and back. */
async function utilization(page) {
  const section = page.getByRole('region', { name: 'Utilization' });
  const chart = section.getByRole('img', { name: /^SM activity per minute, last hour/ });
  await chart.or(section.getByText("No samples yet: the node's agent reports every few seconds.")).first().waitFor();
  const points = chart.locator('circle');
  for (let i = 0; i < 30 && (await points.count()) === 0; i += 1) await page.waitForTimeout(1000);
  const n = await points.count();
  console.log(n ? `utilization: ${n} ${n === 1 ? 'minute' : 'minutes'} with samples` : 'utilization: no samples yet (its empty state)');
  if (n === 0) return;
  await section.getByRole('button', { name: '6 h', exact: true }).click();
  await section.getByRole('img', { name: /^SM activity per minute, last 6 hours/ }).waitFor();
  await section.getByRole('button', { name: '1 h', exact: true }).click();
  await chart.waitFor();
}

/** The usage page's hourly chart, and the stacked chart per day by label and by
 * allocation: the new allocation is unlabeled, and the legend links to allocations. */
async function usageCharts(page) {
  await page.getByRole('img', { name: 'Usage per hour, last 48 hours' }).waitFor();
  const section = page.getByRole('region', { name: 'By SKU, allocation or label' });
  await section.getByRole('img', { name: /^Allocated unit-hours per day by SKU/ }).waitFor();
  await section.getByRole('button', { name: 'Label', exact: true }).click();
  await section.getByRole('img', { name: /^Allocated unit-hours per day by label set/ }).waitFor();
  await section.locator('figcaption').getByText('unlabeled', { exact: true }).waitFor();
  await section.getByRole('button', { name: 'Allocation', exact: true }).click();
  await section.getByRole('img', { name: /^Allocated unit-hours per day by allocation/ }).waitFor();
  const bars = await section.locator('svg .stack rect').count();
  const links = await section.locator('figcaption a').count();
  if (bars === 0 || links === 0) throw new Error(`usage by allocation: ${bars} bars, ${links} allocations in the legend`);
  console.log(`usage by allocation: ${bars} bars, ${links} allocations in the legend`);
}

async function tenantJourney() {
  const page = await newPage();
  await page.goto(`${URL}/portal`);
  await heading(page, 'Sign in');
  await check(page, 'portal-sign-in');
  await signInWithKey(page, 'portal', tenant.key);
  await heading(page, 'Catalog');
  await check(page, 'portal-catalog');

  const placed = await order(page, await skuId('h100-eu-west'), 8, true);
  if (placed.gpus.length !== 8) throw new Error(`8 GPUs expected, saw ${placed.gpus.length}`);
  if (!placed.nvlinkDomain || placed.nvlinkDomain === '—') throw new Error('no NVLink domain shown');
  if (!placed.gpus.every((row) => /\tOK\t/.test(row))) throw new Error(`GPU health: ${placed.gpus.join(' | ')}`);
  await utilization(page);
  await check(page, 'portal-allocation');
  await page.getByRole('link', { name: 'Allocations', exact: true }).click();
  await heading(page, 'Allocations');
  await check(page, 'portal-allocations');

  const before = await allocatedHours(page);
  await usageCharts(page);
  await check(page, 'portal-usage');
  let after = before;
  for (let i = 0; i < 30 && after <= before; i += 1) {
    await page.waitForTimeout(2000);
    after = await allocatedHours(page);
  }
  if (!(after > before)) throw new Error(`usage did not grow: ${before} h, then ${after} h`);
  console.log(`usage grew from ${before} h to ${after} h`);

  // The operator closes the period (through the API), so there is an invoice to download.
  await gql(creds.operator_key, 'mutation($t: ID!) { closeBillingPeriod(tenantId: $t) { number } }', { t: tenant.id });
  await page.goto(`${URL}/portal/invoices`);
  await heading(page, 'Invoices');
  const link = page.getByRole('link', { name: /^Download PDF of invoice / }).first();
  const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
  const file = path.join(SHOTS, 'invoice.pdf');
  await download.saveAs(file);
  if (fs.readFileSync(file).subarray(0, 5).toString() !== '%PDF-') throw new Error('the download is not a PDF');
  await check(page, 'portal-invoices');
  for (const [route, title] of [['keys', 'API keys'], ['people', 'People'], ['budget', 'Budget'], ['webhooks', 'Webhooks']]) {
    await page.goto(`${URL}/portal/account/${route}`);
    await heading(page, title);
    await check(page, `portal-account-${route}`);
  }
  await page.context().close();
  return placed.host;
}

async function operatorJourney() {
  const tenantPage = await newPage();
  await signInWithKey(tenantPage, 'portal', tenant.key);
  await heading(tenantPage, 'Catalog');
  const h100 = await skuId('h100-eu-west');
  const probe = await order(tenantPage, h100, 1, false);
  await tenantPage.getByRole('button', { name: 'Release' }).click();
  await tenantPage.getByRole('button', { name: 'Confirm release' }).click();
  await tenantPage.getByText(/released|ended/i).first().waitFor();

  const page = await newPage();
  await page.goto(`${URL}/console`);
  await heading(page, 'Sign in');
  await check(page, 'console-sign-in');
  await page.getByRole('link', { name: 'Sign in with single sign-on' }).click();
  await page.getByLabel('User name', { exact: true }).fill('ops');
  await page.getByRole('button', { name: 'Continue' }).click();
  await heading(page, 'Fleet');
  await check(page, 'console-fleet');

  const row = page.locator('main table tbody tr', { hasText: probe.host });
  await row.getByRole('button', { name: 'Drain', exact: true }).click();
  await row.getByText(/draining/i).waitFor();

  const again = await order(tenantPage, h100, 1, false);
  if (again.host === probe.host) throw new Error(`the order landed on the drained node ${probe.host}`);
  console.log(`drained ${probe.host}; the next order went to ${again.host}`);

  await topologyToNode(page, probe);
  await repairGpu(page);
  await newPlanVersion(page);

  await page.getByRole('link', { name: 'Tenants' }).click();
  await heading(page, 'Tenants');
  await check(page, 'console-tenants');
  await page.getByRole('link', { name: tenant.name, exact: true }).click();
  await heading(page, `Tenant ${tenant.name}`);
  await check(page, 'console-tenant');
  for (const [route, title] of [['ingest', 'Ingest health'], ['providers', 'Providers']]) {
    await page.goto(`${URL}/console/${route}`);
    await heading(page, title);
    await check(page, `console-${route}`);
  }
  // Finance's view: the ledger balances, and the journal downloads with the session.
  await page.getByRole('link', { name: 'Ledger' }).click();
  await heading(page, 'Ledger');
  await page.getByText('Balanced', { exact: true }).waitFor();
  await check(page, 'console-ledger');
  const journal = await page.request.get(`${URL}/v1/ledger/journal.csv`);
  if (!journal.ok() || !(await journal.text()).startsWith('posted_at,transfer,kind')) {
    throw new Error(`the journal did not download: ${journal.status()}`);
  }
  await page.getByRole('link', { name: 'Audit log' }).click();
  await heading(page, 'Audit log');
  await check(page, 'console-audit-log');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await heading(page, 'Sign in');
  await tenantPage.context().close();
  await page.context().close();
}

/** The fleet's tree, region → rack → NVLink domain, opened down to `node`'s domain; then
 * the node's own page through its link there. */
async function topologyToNode(page, node) {
  const topology = page.getByRole('region', { name: 'Topology' });
  for (const name of [node.region, node.rack, node.nvlinkDomain]) {
    await topology.locator(`summary:has(.tree-name:text-is("${name}"))`).click();
  }
  const link = topology.getByRole('link', { name: node.host, exact: true });
  const item = topology.locator('li.tree-node', { has: page.getByRole('link', { name: node.host, exact: true }) });
  await item.getByText('Draining', { exact: true }).waitFor();
  await item.getByRole('list', { name: `GPUs of ${node.host}` }).getByRole('listitem').first().waitFor();
  await check(page, 'console-fleet-topology');
  await link.click();
  await heading(page, node.host);
  await page.getByRole('img', { name: /^XID events and GPU health/ }).waitFor();
  await page.getByRole('table', { name: 'GPUs of this node' }).locator('tbody tr').first().waitFor();
  await check(page, 'console-node');
}

/** GPU 0 taken out of service with a reason, then marked repaired; the timeline keeps it. */
async function repairGpu(page) {
  const reason = 'reseat after the browser journey';
  const gpu0 = page.getByRole('table', { name: 'GPUs of this node' }).locator('tbody tr').first();
  await page.getByRole('button', { name: 'Take out of service: GPU 0' }).click();
  await page.getByRole('form', { name: 'Take GPU 0 out of service' }).getByLabel('Reason').fill(reason);
  await page.getByRole('button', { name: 'Confirm out of service' }).click();
  await gpu0.getByText('Failed', { exact: true }).waitFor();
  await page.getByRole('button', { name: 'Mark repaired: GPU 0' }).click();
  await gpu0.getByText('OK', { exact: true }).waitFor();
  await page.getByText('Show the events', { exact: true }).click();
  const periods = page.getByRole('table', { name: /^Degraded and failed periods/ });
  await periods.getByRole('row', { name: new RegExp(reason) }).waitFor();
  await check(page, 'console-node-repaired');
  console.log('GPU 0 taken out of service and repaired');
}

/** A new version of the tenant's plan, one unit price changed, previewed against the
 * tenant's last finalized invoice (the tenant journey closed a period), then created. */
async function newPlanVersion(page) {
  const data = await gql(creds.operator_key, 'query($t: ID!) { upcomingInvoice(tenantId: $t) { plan } plans { name versions { version } } }', { t: tenant.id });
  const named = /^(\S+) v\d+/.exec(data.upcomingInvoice.plan)?.[1];
  const { name: plan, versions } = data.plans.find((p) => p.name === named) ?? data.plans[0];
  const created = `${plan} v${Math.max(...versions.map((v) => v.version)) + 1}`;
  await page.getByRole('link', { name: 'Plans' }).click();
  await heading(page, 'Plans');
  const form = page.getByRole('form', { name: 'New plan version' });
  await form.getByLabel('Plan', { exact: true }).selectOption(plan);
  const price = form.getByLabel('Unit price of h100-eu-west, Allocated', { exact: true });
  await price.fill('1.99');
  await form.getByLabel('Tenant', { exact: true }).selectOption(tenant.id);
  await form.getByRole('button', { name: 'Preview', exact: true }).click();
  const shown = form.locator('.preview').or(form.getByRole('alert'));
  await shown.first().waitFor();
  if (await form.locator('.preview').count()) {
    const difference = await form.locator('.delta').innerText();
    if (!/more|less|No change/.test(difference)) throw new Error(`no difference shown: ${difference}`);
    await form.getByRole('table', { name: /under this version$/ }).waitFor();
    console.log(`preview of ${plan} with h100-eu-west at 1.99: ${difference}`);
  } else {
    await form.getByRole('alert').getByText(/finalized invoice/).waitFor();
    console.log('preview: the tenant has no finalized invoice, and the form says so');
  }
  await check(page, 'console-plans');
  await form.getByRole('button', { name: 'Create version', exact: true }).click();
  await form.getByText(new RegExp(`^Created ${created} in `)).waitFor();
  await page.getByRole('region', { name: `Plan ${plan}` }).getByText(created, { exact: true }).waitFor();
  console.log(`created ${created}`);
}

async function memberJourney() {
  const invited = await gql(tenant.key,
    'mutation { inviteUser(email: "mia@acme.example", role: TENANT_MEMBER) { invitationPath } }');
  const page = await newPage();
  await page.goto(`${URL}${invited.inviteUser.invitationPath}`);
  await heading(page, 'Accept your invitation');
  await check(page, 'portal-invitation');
  await page.getByLabel('Password', { exact: true }).fill('a long passphrase, really');
  await page.getByLabel('Password again').fill('a long passphrase, really');
  await page.getByRole('button', { name: 'Set password and sign in' }).click();
  await heading(page, 'Catalog');

  await page.goto(`${URL}/console`);
  await heading(page, 'This console is for operators');
  if (await page.locator('main table').count()) throw new Error('the console shows a tenant member data');
  await check(page, 'console-not-an-operator');
  await page.context().close();
}

try {
  await tenantJourney();
  console.log('journey tenant: ok');
  await operatorJourney();
  console.log('journey operator: ok');
  await memberJourney();
  console.log('journey member: ok');
  if (problems.length) throw new Error(problems.join('\n'));
} catch (err) {
  console.error(err.stack ?? String(err));
  process.exitCode = 1;
  for (const [i, page] of pages.entries()) {
    if (page.isClosed()) continue;
    console.error(`open page ${i} at failure: ${page.url()}`);
    await page.screenshot({ path: path.join(SHOTS, `failure-${i}.png`), fullPage: true }).catch(() => {});
  }
} finally {
  await browser.close();
}
