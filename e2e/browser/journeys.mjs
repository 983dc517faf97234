// The portal and the consoles in Debian's Chromium, driven by Playwright, as their users
// would use them against a running `neocloud demo` (e2e/tests/browser_journey.rs starts
// it, with an OpenID Connect provider from oidc-provider.mjs):
//
// - tenant: signs in with its key, orders 8 H100 in one NVLink domain, sees the
//   allocation where it runs, its GPUs' health and their utilization chart, watches its
//   usage grow, switches the usage chart to labels and allocations, downloads the PDF of
//   an invoice, adds a card through Stripe.js (localstripe's), visits its account pages;
// - operator: signs in through single sign-on, drains the node a probe order landed on,
//   and the same order placed again avoids it; opens the fleet's tree down to that node's
//   NVLink domain and the node's page, takes a GPU out of service and marks it repaired;
//   fills a new version of the demo plan, previews it against the tenant's last invoice
//   and creates it; visits tenants, a tenant, ingest health and the audit log; signs out,
//   which signs out at the identity provider too;
// - member: an invited portal user sets a password, lands in the portal, forgets it and
//   sets a new one with a link from the mail (a real SMTP server), sets up a second
//   factor (an authenticator app: the journey computes the codes, RFC 6238), signs out and
//   in again with a one-time code, an admin sees it and issues a password-reset link, and
//   the admin requires a second factor of every member (the member's Security page then
//   keeps it on, and someone newly invited gets only the setup screen) and lifts it again,
//   the member turns the second factor off with a recovery code; the console shows it
//   nothing;
// - provider: the demo's partner signs in to the provider console with its key, opens a
//   node, drains it and returns it to service, registers a new node (a GPU listed twice
//   refused at its line), reads its statements, payouts and agreement, creates a key;
//   invites a colleague on its People page, who opens the link shown once, chooses a
//   password, sets up a second factor on the Security page and signs in again with her
//   email, password and a one-time code; she then requires a second factor of everyone at
//   the provider (her Security page then keeps hers on, and someone she invites gets only
//   the setup screen) and lifts it again; the operator console sends its key to its own
//   console.
//
// The tenant journey also asks for more than one node holds (the nearest alternatives),
// adds a webhook endpoint, sends it a test event and reads its delivery log.
//
// Every page is checked with axe-core (no serious or critical violation) and kept as a
// screenshot in $NEOCLOUD_SCREENSHOTS; a page error or a Content-Security-Policy
// violation fails the journey. Prints "journey <name>: ok" per journey.
import crypto from 'node:crypto';
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

/** axe-core on the page once settled (nothing loading, no list dimmed while it reloads),
 * then a screenshot. */
async function check(page, name) {
  await page.waitForLoadState('networkidle');
  await page.waitForFunction(() => !document.querySelector('[aria-busy="true"]'));
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

/** RFC 4648 base32 (no padding needed) to bytes. */
function base32(text) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  const bytes = [];
  let bits = 0;
  let value = 0;
  for (const c of text.replace(/[\s=]/g, '').toUpperCase()) {
    const i = alphabet.indexOf(c);
    if (i < 0) throw new Error(`not base32: ${text}`);
    value = ((value << 5) | i) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      bytes.push((value >> bits) & 0xff);
    }
  }
  return Buffer.from(bytes);
}

/** The RFC 6238 code of `secret` (base32) for the 30-second `step`: HMAC-SHA1 over the
 * 8-byte big-endian counter, dynamic truncation, 6 digits. */
function totp(secret, step) {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const mac = crypto.createHmac('sha1', base32(secret)).update(counter).digest();
  const offset = mac[mac.length - 1] & 0x0f;
  return String((mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000).padStart(6, '0');
}

const totpStep = () => Math.floor(Date.now() / 30_000);

// The RFC 6238 test vector (SHA-1, T = 59 s), cut to six digits.
if (totp('GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ', 1) !== '287082') throw new Error('the TOTP of the journey is wrong');

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
 * each GPU's line and row; then the 6-hour range and back. */
async function utilization(page) {
  const section = page.getByRole('region', { name: 'Utilization' });
  const chart = section.getByRole('img', { name: /^SM activity per minute, last hour/ });
  await chart.or(section.getByText("No samples yet: the node's agent reports every few seconds.")).first().waitFor();
  const points = chart.locator('circle');
  for (let i = 0; i < 30 && (await points.count()) === 0; i += 1) await page.waitForTimeout(1000);
  const n = await points.count();
  console.log(n ? `utilization: ${n} ${n === 1 ? 'minute' : 'minutes'} with samples` : 'utilization: no samples yet (its empty state)');
  if (n === 0) return;
  // Eight GPUs: a line each in the per-GPU chart, a row each in its table.
  await section.getByRole('img', { name: /^SM activity per GPU, last hour/ }).waitFor();
  const rows = section.getByRole('table', { name: /^Each GPU's latest minute with samples, last hour/ }).locator('tbody tr');
  if ((await rows.count()) !== 8) throw new Error(`the per-GPU table lists ${await rows.count()} GPUs, not 8`);
  await section.getByRole('button', { name: '6 h', exact: true }).click();
  await section.getByRole('img', { name: /^SM activity per minute, last 6 hours/ }).waitFor();
  await section.getByRole('button', { name: '1 h', exact: true }).click();
  await chart.waitFor();
}

/** The usage page's hourly chart, and the stacked chart per day by label and by
 * allocation: the new allocation is unlabeled, and the legend links to allocations;
 * then the same by allocation in cost, and the month's usage cost. */
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
  await section.getByRole('button', { name: 'Cost', exact: true }).click();
  await section.getByRole('img', { name: /^Cost per day by allocation/ }).waitFor();
  const costBars = await section.locator('svg .stack rect').count();
  if (costBars === 0) throw new Error('usage cost by allocation: no bars');
  const cost = page.locator('.stat', { has: page.getByText('Usage cost', { exact: true }) }).locator('.stat-value');
  await cost.waitFor();
  console.log(`usage cost by allocation: ${costBars} bars; the month's usage cost ${await cost.innerText()}`);
}

async function tenantJourney() {
  const page = await newPage();
  await page.goto(`${URL}/portal`);
  await heading(page, 'Sign in');
  await check(page, 'portal-sign-in');
  await signInWithKey(page, 'portal', tenant.key);
  await heading(page, 'Catalog');
  await check(page, 'portal-catalog');
  await alternatives(page, await skuId('h100-eu-west'));

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
  await addCard(page);
  for (const [route, title] of [['keys', 'API keys'], ['people', 'People'], ['budget', 'Budget'], ['webhooks', 'Webhooks']]) {
    await page.goto(`${URL}/portal/account/${route}`);
    await heading(page, title);
    await check(page, `portal-account-${route}`);
  }
  // A key has no second factor, and the page says so.
  await page.goto(`${URL}/portal/account/security`);
  await heading(page, 'Security');
  await page.getByText('The second factor is for people who sign in with a password').waitFor();
  await check(page, 'portal-account-security-api-key');
  await webhookDeliveries(page);
  await page.context().close();
  return placed.host;
}

/** The admin adds a card on the billing section: Stripe's card form (localstripe's
 * Stripe.js here, loaded from the URL the demo was given) opens in the page, the card is
 * confirmed with Stripe from the browser, and the default payment method shows it; then
 * removes it. */
async function addCard(page) {
  const form = page.getByRole('form', { name: 'Add a card' });
  await form.getByRole('button', { name: 'Add a card' }).click();
  const fields = form.getByRole('group', { name: 'Card details' });
  await fields.getByPlaceholder('number').fill('4242424242424242');
  await fields.getByPlaceholder('exp_month').fill('12');
  await fields.getByPlaceholder('exp_year').fill('30');
  await fields.getByPlaceholder('cvc').fill('123');
  await fields.getByPlaceholder('postal_code').fill('10115');
  await form.getByRole('button', { name: 'Save card' }).click();
  await form.getByText('Visa •••• 4242, expires 12/2030 is now the default payment method.').waitFor();
  await page.getByText('Visa •••• 4242, expires 12/2030', { exact: true }).first().waitFor();
  await form.getByRole('button', { name: 'Replace the card' }).waitFor();
  await check(page, 'portal-billing-card-added');
  console.log('card added through Stripe.js and shown as the default payment method');
  // Removed again, after a confirmation: nothing is on file, and a card can be added.
  await page.getByRole('button', { name: 'Remove the card Visa •••• 4242, expires 12/2030' }).click();
  await page.getByRole('button', { name: 'Confirm removal' }).click();
  await form.getByRole('button', { name: 'Add a card' }).waitFor();
  await page.getByText('Visa •••• 4242, expires 12/2030', { exact: true }).waitFor({ state: 'detached' });
  console.log('card removed; the account has no payment method');
}

/** 9 H100 held to one node (a node has 8) cannot be placed: the form lists what would be
 * placed now, and "Use this" fills the form with the first of them. */
async function alternatives(page, sku) {
  await page.getByLabel('SKU', { exact: true }).selectOption(sku);
  await page.getByLabel('Count', { exact: true }).fill('9');
  await page.getByLabel('Placement', { exact: true }).selectOption('NODE');
  await page.getByRole('button', { name: 'Place order' }).click();
  const offered = page.getByRole('group', { name: 'Would fit now:' }).getByRole('listitem');
  await offered.first().or(page.getByText('Nothing similar would fit now either')).first().waitFor();
  const sentences = await offered.allInnerTexts();
  console.log(`9 × H100 on one node refused; would fit now: ${sentences.map((t) => t.split('\n')[0]).join(' | ') || 'nothing'}`);
  if (sentences.length) {
    const count = /^(\d+) ×/.exec(sentences[0])[1];
    await check(page, 'portal-catalog-alternatives');
    await offered.first().getByRole('button', { name: /^Use this/ }).click();
    if ((await page.getByLabel('Count', { exact: true }).inputValue()) !== count) throw new Error(`"Use this" did not fill the count ${count}`);
    await page.getByText('Would fit now:').waitFor({ state: 'detached' });
  }
  await page.getByLabel('Placement', { exact: true }).selectOption('');
}

/** An endpoint added in the form (its host does not resolve: each attempt fails), a test
 * event sent to it, its delivery log opened, and every event since an hour ago sent again. */
async function webhookDeliveries(page) {
  const url = 'https://hooks.example.invalid/neocloud';
  await page.goto(`${URL}/portal/account/webhooks`);
  await heading(page, 'Webhooks');
  const form = page.getByRole('form', { name: 'Add a webhook endpoint' });
  await form.getByLabel('URL', { exact: true }).fill(url);
  await form.getByRole('button', { name: 'Add endpoint' }).click();
  await page.getByRole('button', { name: 'I have copied it' }).click();
  await page.getByRole('button', { name: `Send test to ${url}` }).click();
  await page.getByText(/^Test event \S+ sent to /).waitFor();
  await page.locator('summary', { hasText: `Deliveries to ${url}` }).click();
  const rows = page.getByRole('table', { name: `Deliveries to ${url}` }).locator('tbody tr');
  const refresh = page.getByRole('button', { name: `Refresh deliveries to ${url}` });
  for (let i = 0; i < 20 && (await rows.count()) === 0; i += 1) {
    await page.waitForTimeout(1000);
    await refresh.click();
  }
  await rows.first().waitFor();
  await page.getByRole('button', { name: `Redeliver since… to ${url}` }).click();
  const since = page.getByLabel('Send again every event since');
  await since.fill(await since.evaluate(() => {
    const d = new Date(Date.now() - 3600_000);
    const p = (n) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
  }));
  await page.getByRole('button', { name: 'Redeliver', exact: true }).click();
  const note = page.getByText(/ queued again for |nothing was queued/);
  await note.waitFor();
  console.log(`delivery log: ${await rows.count()} deliveries; ${await note.innerText()}`);
  await check(page, 'portal-account-webhooks-deliveries');
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
  // The partner's statements and payouts: closing ended months answers how many it closed.
  await page.getByRole('link', { name: 'Statements and payouts of atlantic-gpu →' }).click();
  await heading(page, 'Provider atlantic-gpu');
  await page.getByRole('button', { name: 'Close ended months' }).click();
  await page.getByText(/^Closed \d+ statements?/).waitFor();
  await check(page, 'console-provider');
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
  // Signing out signs out at the identity provider too, which sends the browser back;
  // the next single sign-on asks for the user again.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await heading(page, 'Sign out of the identity provider?');
  await page.getByRole('button', { name: 'Yes, sign me out' }).click();
  await heading(page, 'Sign in');
  if (!page.url().startsWith(`${URL}/console`)) throw new Error(`signed out to ${page.url()}`);
  await page.getByRole('link', { name: 'Sign in with single sign-on' }).click();
  await page.getByLabel('User name', { exact: true }).waitFor();
  console.log('signing out of the console signed out at the identity provider');
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

/** A new version of the tenant's plan, one rate made graduated (two tiers), previewed
 * against the tenant's last finalized invoice (the tenant journey closed a period), then
 * created and read back. */
async function newPlanVersion(page) {
  const data = await gql(creds.operator_key, 'query($t: ID!) { tenant(id: $t) { currency } upcomingInvoice(tenantId: $t) { plan } plans { name versions { version } } }', { t: tenant.id });
  const named = /^(\S+) v\d+/.exec(data.upcomingInvoice.plan)?.[1];
  const { name: plan, versions } = data.plans.find((p) => p.name === named) ?? data.plans[0];
  const created = `${plan} v${Math.max(...versions.map((v) => v.version)) + 1}`;
  await page.getByRole('link', { name: 'Plans' }).click();
  await heading(page, 'Plans');
  const form = page.getByRole('form', { name: 'New plan version' });
  await form.getByLabel('Plan', { exact: true }).selectOption(plan);
  const price = form.getByLabel('Unit price of h100-eu-west, Allocated', { exact: true });
  await price.fill('1.99');
  // Graduated: the first 100 GPU-hours at 1.99 (the price just typed), then 1.79.
  const what = 'h100-eu-west, Allocated';
  await form.getByLabel(`Pricing of ${what}`, { exact: true }).selectOption({ label: 'Graduated' });
  await form.getByRole('button', { name: `Add tier to ${what}, after tier 1` }).click();
  await form.getByLabel(`Up to, tier 1 of ${what}`, { exact: true }).fill('100');
  await form.getByLabel(`Unit price (USD), tier 2 of ${what}`, { exact: true }).fill('1.79');
  // The tenant picker searches by name: type it, then choose the match.
  await form.getByRole('combobox', { name: 'Tenant', exact: true }).fill(tenant.name);
  await form.getByRole('option', { name: `${tenant.name} (${data.tenant.currency})`, exact: true }).click();
  await form.getByText(`Chosen: ${tenant.name} (${data.tenant.currency}).`).waitFor();
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
  const stored = await gql(creds.operator_key, '{ plans { name versions { version rates { sku metric tiersMode tiers { upTo unitPrice } } } } }');
  const version = stored.plans.find((p) => p.name === plan).versions.find((v) => `${plan} v${v.version}` === created);
  const h100 = await skuId('h100-eu-west');
  const rate = version.rates.find((r) => r.sku === h100 && r.metric === 'ALLOCATED');
  const tiers = JSON.stringify(rate?.tiers);
  if (rate?.tiersMode !== 'GRADUATED' || tiers !== JSON.stringify([{ upTo: '100', unitPrice: '1.99' }, { upTo: null, unitPrice: '1.79' }])) {
    throw new Error(`the new version's h100 rate is ${rate?.tiersMode} ${tiers}`);
  }
  console.log(`created ${created}, h100-eu-west graduated: ${tiers}`);
}

/** The mails in the maildir addressed to `to`, raw, quoted-printable soft breaks undone. */
function mailsTo(to) {
  const dir = path.join(process.env.NEOCLOUD_MAILDIR, 'new');
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir)
    .map((name) => fs.readFileSync(path.join(dir, name), 'utf8'))
    .filter((mail) => mail.split(/\r?\n/).some((line) => line.toLowerCase() === `to: ${to}`))
    .map((mail) => mail.replace(/=\r?\n/g, '').replace(/=3D/g, '='));
}

/** Mia forgets her password: she asks for a link on the sign-in page, finds it in her
 * mail, and chooses a new password with it. */
async function forgotPassword(page) {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await heading(page, 'Sign in');
  await page.getByRole('button', { name: 'Email', exact: true }).click();
  await page.getByRole('button', { name: 'Forgot your password?' }).click();
  await page.getByLabel('Email', { exact: true }).fill(MIA.email);
  const before = mailsTo(MIA.email).filter((m) => m.includes('Subject: Set a new password')).length;
  await page.getByRole('button', { name: 'Send me a link' }).click();
  await page.getByText(`If ${MIA.email} belongs to an account`, { exact: false }).waitFor();
  await check(page, 'portal-forgot-password');
  let resets = [];
  for (let i = 0; i < 100 && resets.length <= before; i += 1) {
    await page.waitForTimeout(200);
    resets = mailsTo(MIA.email).filter((m) => m.includes('Subject: Set a new password'));
  }
  const link = resets.at(-1)?.match(/https?:\/\/\S+\/portal\/invitation#[0-9a-f]{64}/)?.[0];
  if (!link) throw new Error(`no password-reset mail to ${MIA.email}`);
  await page.goto(link);
  await heading(page, 'Choose your password');
  MIA.password = 'a new and even longer passphrase';
  await page.getByLabel('Password', { exact: true }).fill(MIA.password);
  await page.getByLabel('Password again').fill(MIA.password);
  await page.getByRole('button', { name: 'Set password and sign in' }).click();
  await heading(page, 'Catalog');
  console.log('forgot the password: a link by mail, a new password');
}

async function memberJourney() {
  const invited = await gql(tenant.key,
    'mutation { inviteUser(email: "mia@acme.example", role: TENANT_MEMBER) { invitationPath } }');
  const page = await newPage();
  await page.goto(`${URL}${invited.inviteUser.invitationPath}`);
  await heading(page, 'Choose your password');
  await check(page, 'portal-invitation');
  await page.getByLabel('Password', { exact: true }).fill(MIA.password);
  await page.getByLabel('Password again').fill(MIA.password);
  await page.getByRole('button', { name: 'Set password and sign in' }).click();
  await heading(page, 'Catalog');
  await forgotPassword(page);
  await secondFactor(page);

  await page.goto(`${URL}/console`);
  await heading(page, 'This console is for operators');
  if (await page.locator('main table').count()) throw new Error('the console shows a tenant member data');
  await check(page, 'console-not-an-operator');
  await page.context().close();
}

const MIA = { email: 'mia@acme.example', password: 'a long passphrase, really' };

/** The member turns on a second factor, signs in with a code, and turns it off with a
 * recovery code; an admin meanwhile sees it and issues a password-reset link. */
async function secondFactor(page) {
  await page.getByRole('link', { name: 'Account' }).click();
  await page.getByRole('link', { name: 'Security' }).click();
  await heading(page, 'Security');
  await page.getByText('Signing in needs your password only.', { exact: true }).waitFor();
  await page.getByRole('button', { name: 'Set up', exact: true }).click();
  const key = (await page.locator('.setup-key').innerText()).replace(/\s+/g, '');
  const uri = await page.getByRole('link', { name: 'Open this key in your authenticator app' }).getAttribute('href');
  if (!uri.startsWith('otpauth://totp/') || !uri.includes(`secret=${key}`)) throw new Error(`otpauth link: ${uri}`);
  await check(page, 'portal-account-security-setup');
  const step = totpStep();
  await page.getByLabel('Code from the app').fill(totp(key, step));
  await page.getByRole('button', { name: 'Turn on', exact: true }).click();
  const codes = page.getByRole('list', { name: 'Recovery codes' }).getByRole('listitem');
  await codes.first().waitFor();
  const recovery = await codes.allInnerTexts();
  if (recovery.length !== 10 || !recovery.every((c) => /^[0-9a-f]{4}(-[0-9a-f]{4}){3}$/.test(c))) throw new Error(`recovery codes: ${recovery}`);
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download as .txt' }).click()]);
  const file = path.join(SHOTS, 'recovery-codes.txt');
  await download.saveAs(file);
  if (!recovery.every((c) => fs.readFileSync(file, 'utf8').includes(c))) throw new Error('the downloaded file lacks the recovery codes');
  await check(page, 'portal-account-security');
  await page.getByRole('button', { name: 'I have stored them' }).click();
  await page.getByText('The second factor is on', { exact: false }).waitFor();
  await page.getByText(/^since /).waitFor();
  console.log('second factor on, with 10 recovery codes');

  await page.getByRole('button', { name: 'Sign out' }).click();
  await heading(page, 'Sign in');
  await page.getByRole('button', { name: 'Email', exact: true }).click();
  await page.getByLabel('Email', { exact: true }).fill(MIA.email);
  await page.getByLabel('Password', { exact: true }).fill(MIA.password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  const code = page.getByLabel('One-time code', { exact: true });
  await code.waitFor();
  // A wrong code is refused at the field (the right ones of these steps are avoided).
  const wrong = ['000000', '111111'].find((c) => ![-1, 0, 1, 2].some((d) => totp(key, step + d) === c));
  await code.fill(wrong);
  await page.getByRole('button', { name: 'Verify and sign in' }).click();
  await page.locator('.field-error', { hasText: 'That code was not accepted' }).waitFor();
  await check(page, 'portal-sign-in-code');
  // The step that confirmed cannot be used again; the next one is within the drift allowed.
  await code.fill(totp(key, step + 1));
  await page.getByRole('button', { name: 'Verify and sign in' }).click();
  await heading(page, 'Security');
  await page.getByText(/^since /).waitFor();
  console.log('signed in again with email, password and a one-time code');

  await adminSeesSecondFactor(page);

  await page.getByRole('button', { name: 'Turn off', exact: true }).click();
  await page.getByLabel('Code from the app or a recovery code').fill(recovery[0]);
  await page.getByRole('button', { name: 'Turn off', exact: true }).click();
  await page.getByText('The second factor is off', { exact: false }).first().waitFor();
  await page.getByText('Signing in needs your password only.', { exact: true }).waitFor();
  console.log('second factor turned off with a recovery code');
}

/** The tenant's admin sees the member's "2FA" and issues a password-reset link (shown
 * once, valid 24 hours); the link is not used. Then it requires a second factor of
 * every member, and lifts that again. */
async function adminSeesSecondFactor(member) {
  const admin = await newPage();
  await signInWithKey(admin, 'portal', tenant.key);
  await heading(admin, 'Catalog');
  await admin.goto(`${URL}/portal/account/people`);
  await heading(admin, 'People');
  const row = admin.getByRole('row', { name: new RegExp(MIA.email) });
  await row.getByText('2FA', { exact: true }).waitFor();
  await row.getByRole('button', { name: `Reset second factor ${MIA.email}` }).waitFor();
  await row.getByRole('button', { name: `Reset password of ${MIA.email}` }).click();
  const link = admin.getByLabel(`Password reset link for ${MIA.email}`);
  if (!/\/portal\/invitation#\S+$/.test(await link.inputValue())) throw new Error('no reset link shown');
  await admin.getByText('valid for 24 hours', { exact: false }).waitFor();
  await check(admin, 'portal-account-people-reset');
  await admin.getByRole('button', { name: 'I have copied it' }).click();
  await requireSecondFactor(admin, member);
  await admin.context().close();
}

/** The admin turns "Require a second factor of every member" on: the member (who has
 * one) may no longer turn it off, and someone invited now gets only the setup screen;
 * then the admin turns it off again. */
async function requireSecondFactor(admin, member) {
  const required = admin.getByLabel('Require a second factor of every member');
  if (await required.isChecked()) throw new Error('a second factor is required from the start');
  await required.check();
  await admin.getByText('A second factor is now required of every member.').waitFor();
  if (!(await required.isChecked())) throw new Error('the switch does not show the requirement');
  await check(admin, 'portal-account-people-second-factor-required');

  await member.reload();
  await heading(member, 'Security');
  await member.getByText('so it stays on', { exact: false }).waitFor();
  if (await member.getByRole('button', { name: 'Turn off', exact: true }).count()) throw new Error('"Turn off" offered while required');
  await check(member, 'portal-account-security-required');

  const invited = await gql(tenant.key, 'mutation { inviteUser(email: "noa@acme.example", role: TENANT_MEMBER) { invitationPath } }');
  const noa = await newPage();
  await noa.goto(`${URL}${invited.inviteUser.invitationPath}`);
  await heading(noa, 'Choose your password');
  await noa.getByLabel('Password', { exact: true }).fill('another long passphrase');
  await noa.getByLabel('Password again').fill('another long passphrase');
  await noa.getByRole('button', { name: 'Set password and sign in' }).click();
  await heading(noa, 'Set up a second factor');
  await noa.getByText('Your organisation requires a second factor for every member.', { exact: false }).waitFor();
  if (await noa.getByRole('navigation', { name: 'Main' }).count()) throw new Error('the setup screen offers the navigation');
  await check(noa, 'portal-second-factor-required');
  await noa.getByRole('button', { name: 'Sign out', exact: true }).click();
  await heading(noa, 'Sign in');
  await noa.context().close();
  console.log('second factor required: the switch shows it, the member keeps it, a newcomer only sets one up');

  await required.uncheck();
  await admin.getByText('A second factor is no longer required.').waitFor();
  await member.reload();
  await heading(member, 'Security');
  await member.getByRole('button', { name: 'Turn off', exact: true }).waitFor();
}

/** The provider registers a node in its console: a GPU listed twice is refused at its
 * line, then the node is registered, its agent token shown once, and it waits for its
 * agent (pending). */
async function registerNode(page) {
  await page.goto(`${URL}/provider`);
  await page.getByRole('link', { name: 'Register a node' }).click();
  await heading(page, 'Register a node');
  const form = page.getByRole('form', { name: 'Register a node' });
  for (const [label, value] of [['Hostname', 'partner-new-1'], ['Region', 'us-east'], ['Zone', 'us-east-a'], ['Rack', 'r09']]) {
    await form.getByLabel(label, { exact: true }).fill(value);
  }
  await form.getByLabel('GPU model').selectOption('H100');
  const uuids = form.getByLabel('GPU UUIDs');
  await uuids.fill('GPU-partner-new-1-0\nGPU-partner-new-1-0');
  await form.getByRole('button', { name: 'Register node' }).click();
  await form.getByText('Line 2: appears twice').waitFor();
  await check(page, 'provider-register-node-refused');
  await uuids.fill('GPU-partner-new-1-0\nGPU-partner-new-1-1');
  await form.getByRole('button', { name: 'Register node' }).click();
  await heading(page, 'Register a node');
  await page.getByRole('heading', { name: 'partner-new-1 is registered' }).waitFor();
  if (!(await page.getByLabel('Agent token').inputValue()).startsWith('nca_')) throw new Error('no agent token shown');
  await check(page, 'provider-register-node');
  await page.getByRole('link', { name: 'Open partner-new-1' }).click();
  await heading(page, 'partner-new-1');
  await page.getByText('Pending', { exact: true }).first().waitFor();
  console.log('provider registered partner-new-1: pending until its agent reports');
}

const LENA = { email: 'lena@provider.example', password: 'a provider passphrase, long enough' };

/** The provider invites Lena on its People page (the link shown once); in a browser of her
 * own she opens it, chooses a password and lands in the console, sets up a second factor
 * on the Security page, signs out and in again with her email, password and a one-time
 * code, and sees the nodes; the provider sees her second factor on. Then she requires a
 * second factor of everyone, and lifts that again. */
async function providerPeople(page) {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'People', exact: true }).click();
  await heading(page, 'People');
  await check(page, 'provider-people');
  const form = page.getByRole('form', { name: 'Invite someone' });
  await form.getByLabel('Email', { exact: true }).fill(LENA.email);
  await form.getByRole('button', { name: 'Invite', exact: true }).click();
  const link = await page.getByLabel(`Invitation link for ${LENA.email}`).inputValue();
  if (!/^https?:\/\/[^/]+\/provider\/invitation#\S+$/.test(link)) throw new Error(`invitation link: ${link}`);
  await page.getByText('valid for 7 days', { exact: false }).waitFor();
  await page.getByRole('row', { name: new RegExp(LENA.email) }).getByText('Invited', { exact: true }).waitFor();
  await check(page, 'provider-people-invited');
  await page.getByRole('button', { name: 'I have copied it' }).click();

  const lena = await newPage();
  await lena.goto(link);
  await heading(lena, 'Choose your password');
  await check(lena, 'provider-invitation');
  await lena.getByLabel('Password', { exact: true }).fill(LENA.password);
  await lena.getByLabel('Password again').fill(LENA.password);
  await lena.getByRole('button', { name: 'Set password and sign in' }).click();
  await heading(lena, 'Nodes');
  await lena.locator('.whoami', { hasText: LENA.email }).waitFor();
  console.log(`${LENA.email} accepted the invitation: signed in to the provider console`);

  await lena.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Security', exact: true }).click();
  await heading(lena, 'Security');
  await lena.getByText('Signing in needs your password only.', { exact: true }).waitFor();
  await check(lena, 'provider-security');
  await lena.getByRole('button', { name: 'Set up', exact: true }).click();
  const key = (await lena.locator('.setup-key').innerText()).replace(/\s+/g, '');
  await check(lena, 'provider-security-setup');
  const step = totpStep();
  await lena.getByLabel('Code from the app').fill(totp(key, step));
  await lena.getByRole('button', { name: 'Turn on', exact: true }).click();
  const codes = lena.getByRole('list', { name: 'Recovery codes' }).getByRole('listitem');
  await codes.first().waitFor();
  if ((await codes.count()) !== 10) throw new Error(`recovery codes: ${await codes.allInnerTexts()}`);
  await check(lena, 'provider-security-recovery-codes');
  await lena.getByRole('button', { name: 'I have stored them' }).click();
  await lena.getByText('The second factor is on', { exact: false }).waitFor();
  await lena.getByText(/^since /).waitFor();

  await lena.getByRole('button', { name: 'Sign out' }).click();
  await heading(lena, 'Sign in');
  await lena.getByRole('button', { name: 'Email', exact: true }).click();
  await lena.getByLabel('Email', { exact: true }).fill(LENA.email);
  await lena.getByLabel('Password', { exact: true }).fill(LENA.password);
  await lena.getByRole('button', { name: 'Sign in', exact: true }).click();
  const code = lena.getByLabel('One-time code', { exact: true });
  await code.waitFor();
  await check(lena, 'provider-sign-in-code');
  // The step that confirmed cannot be used again; the next one is within the drift allowed.
  await code.fill(totp(key, step + 1));
  await lena.getByRole('button', { name: 'Verify and sign in' }).click();
  await heading(lena, 'Security');
  await lena.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Nodes', exact: true }).click();
  await heading(lena, 'Nodes');
  await lena.getByRole('table', { name: 'Your nodes' }).waitFor();
  await check(lena, 'provider-nodes-person');
  console.log(`${LENA.email} signed in again with email, password and a one-time code`);

  await page.reload();
  await heading(page, 'People');
  await page.getByRole('row', { name: new RegExp(LENA.email) }).getByText('On', { exact: true }).waitFor();
  await check(page, 'provider-people-second-factor');

  await providerRequiresSecondFactor(lena);
  await lena.context().close();
}

const NOAH = { email: 'noah@provider.example', password: 'another provider passphrase' };

/** Lena (who has a second factor) turns "Require a second factor of everyone at …" on: her
 * Security page keeps hers on, and Noah, whom she invites, gets only the setup screen once
 * he has chosen a password; then she turns it off again. */
async function providerRequiresSecondFactor(lena) {
  const main = lena.getByRole('navigation', { name: 'Main' });
  await main.getByRole('link', { name: 'People', exact: true }).click();
  await heading(lena, 'People');
  const provider = creds.providers[0].name;
  const required = lena.getByLabel(`Require a second factor of everyone at ${provider}`);
  if (await required.isChecked()) throw new Error('the provider requires a second factor from the start');
  await required.check();
  await lena.getByText(`A second factor is now required of everyone at ${provider}.`).waitFor();
  if (!(await required.isChecked())) throw new Error('the switch does not show the requirement');
  await check(lena, 'provider-people-second-factor-required');

  await main.getByRole('link', { name: 'Security', exact: true }).click();
  await heading(lena, 'Security');
  await lena.getByText('so it stays on', { exact: false }).waitFor();
  if (await lena.getByRole('button', { name: 'Turn off', exact: true }).count()) throw new Error('"Turn off" offered while the provider requires it');
  await check(lena, 'provider-security-required');

  await main.getByRole('link', { name: 'People', exact: true }).click();
  await heading(lena, 'People');
  // Read again (the page opened anew): still required.
  if (!(await required.isChecked())) throw new Error('the People page does not say a second factor is required');
  const form = lena.getByRole('form', { name: 'Invite someone' });
  await form.getByLabel('Email', { exact: true }).fill(NOAH.email);
  await form.getByRole('button', { name: 'Invite', exact: true }).click();
  const link = await lena.getByLabel(`Invitation link for ${NOAH.email}`).inputValue();
  if (!/^https?:\/\/[^/]+\/provider\/invitation#\S+$/.test(link)) throw new Error(`invitation link: ${link}`);
  await lena.getByRole('row', { name: new RegExp(NOAH.email) }).getByText('must set one up to use the console', { exact: true }).waitFor();
  await lena.getByRole('button', { name: 'I have copied it' }).click();

  const noah = await newPage();
  await noah.goto(link);
  await heading(noah, 'Choose your password');
  await noah.getByLabel('Password', { exact: true }).fill(NOAH.password);
  await noah.getByLabel('Password again').fill(NOAH.password);
  await noah.getByRole('button', { name: 'Set password and sign in' }).click();
  await heading(noah, 'Set up a second factor');
  await noah.getByText('Your provider requires a second factor for everyone', { exact: false }).waitFor();
  if (await noah.getByRole('navigation', { name: 'Main' }).count()) throw new Error('the setup screen offers the navigation');
  await check(noah, 'provider-second-factor-required');
  await noah.getByRole('button', { name: 'Sign out', exact: true }).click();
  await heading(noah, 'Sign in');
  await noah.context().close();
  console.log('provider requires a second factor: the switch shows it, Lena keeps hers, a newcomer only sets one up');

  await required.uncheck();
  await lena.getByText('A second factor is no longer required.').waitFor();
  if (await required.isChecked()) throw new Error('the switch still shows the requirement');
}

/** A hardware provider signs in to its console with its key: its nodes, one node (drained
 * and returned to service), its statements, payouts, agreement and keys (a new one shown
 * once), its people (a colleague invited, who signs in with a password and a second
 * factor, and requires one of everyone for a while); the operator console refuses its key. */
async function providerJourney() {
  const page = await newPage();
  await signInWithKey(page, 'provider', creds.providers[0].key);
  await heading(page, 'Nodes');
  await check(page, 'provider-nodes');
  const first = page.getByRole('table', { name: 'Your nodes' }).getByRole('link').first();
  const host = await first.innerText();
  await first.click();
  await heading(page, host);
  await page.getByRole('button', { name: 'Drain', exact: true }).click();
  await page.getByRole('button', { name: 'Return to service' }).click();
  await page.getByRole('button', { name: 'Drain', exact: true }).waitFor();
  await check(page, 'provider-node');
  console.log(`provider node ${host} drained and returned to service`);
  await registerNode(page);
  for (const [route, title] of [['statements', 'Statements'], ['payouts', 'Payouts'], ['agreement', 'Agreement'], ['keys', 'API keys']]) {
    await page.goto(`${URL}/provider/${route}`);
    await heading(page, title);
    await check(page, `provider-${route}`);
  }
  const form = page.getByRole('form', { name: 'Create a provider key' });
  await form.getByLabel('Label').fill('journey-scripts');
  await form.getByRole('button', { name: 'Create key' }).click();
  const secret = await page.getByLabel('New provider key').inputValue();
  const made = await gql(secret, '{ viewer { role } provider { name } }');
  if (made.viewer.role !== 'PROVIDER' || made.provider.name !== creds.providers[0].name) throw new Error('the key shown once is not a key of the provider');
  await check(page, 'provider-key-created');
  await providerPeople(page);
  await page.goto(`${URL}/console`);
  await heading(page, 'This console is for operators');
  await page.getByRole('link', { name: 'Go to the provider console' }).waitFor();
  await page.context().close();
}

try {
  await tenantJourney();
  console.log('journey tenant: ok');
  await operatorJourney();
  console.log('journey operator: ok');
  await memberJourney();
  console.log('journey member: ok');
  await providerJourney();
  console.log('journey provider: ok');
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
