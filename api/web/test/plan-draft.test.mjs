import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const p = await load('src/console/planDraft.ts');

const version = {
  version: 2,
  currency: 'USD',
  minimumBillableSeconds: 60,
  commitment: null,
  rates: [
    { sku: 'h100', metric: 'ALLOCATED', tiersMode: 'PER_UNIT', unitPrice: '2.49', spotUnitPrice: '0.996', packageSize: null, packagePrice: null, tiers: [] },
    { sku: 'h100', metric: 'SLA_CREDIT', tiersMode: 'PER_UNIT', unitPrice: '0.249', spotUnitPrice: null, packageSize: null, packagePrice: null, tiers: [] },
    {
      sku: 'mig',
      metric: 'ALLOCATED',
      tiersMode: 'GRADUATED',
      unitPrice: null,
      spotUnitPrice: null,
      packageSize: null,
      packagePrice: null,
      tiers: [
        { upTo: '100', unitPrice: '0.5', flatFee: '0' },
        { upTo: null, unitPrice: '0.425', flatFee: null },
      ],
    },
    { sku: 'egress', metric: 'METERED', tiersMode: 'PACKAGE', unitPrice: null, spotUnitPrice: null, packageSize: '1000', packagePrice: '5.00', tiers: [] },
  ],
};

test('a draft from the latest version converts to the same rates', () => {
  const d = p.draftFrom('standard', version, '2026-06-01T00:00');
  assert.deepEqual(p.toInput(d), {
    plan: 'standard',
    currency: 'USD',
    effectiveFrom: '2026-06-01T00:00:00Z',
    minimumBillableSeconds: 60,
    rates: [
      { sku: 'h100', metric: 'ALLOCATED', tiersMode: 'PER_UNIT', unitPrice: '2.49', spotUnitPrice: '0.996' },
      { sku: 'h100', metric: 'SLA_CREDIT', tiersMode: 'PER_UNIT', unitPrice: '0.249' },
      {
        sku: 'mig',
        metric: 'ALLOCATED',
        tiersMode: 'GRADUATED',
        tiers: [
          { upTo: '100', unitPrice: '0.5', flatFee: '0' },
          { upTo: null, unitPrice: '0.425', flatFee: null },
        ],
      },
      { sku: 'egress', metric: 'METERED', tiersMode: 'PACKAGE', packageSize: '1000', packagePrice: '5.00' },
    ],
  });
});

test('edited prices are trimmed strings; an emptied spot price is left out', () => {
  const d = p.draftFrom('standard', version, '2026-06-01T00:00:30');
  d.rates[0] = { ...d.rates[0], unitPrice: ' 2.10 ', spotUnitPrice: '' };
  d.monthlyMinimum = '1000.00';
  d.newPlan = 'ignored';
  const input = p.toInput(d);
  assert.equal(input.effectiveFrom, '2026-06-01T00:00:30Z');
  assert.deepEqual(input.rates[0], { sku: 'h100', metric: 'ALLOCATED', tiersMode: 'PER_UNIT', unitPrice: '2.10' });
  assert.deepEqual(input.commitment, { monthlyMinimum: '1000.00', discountPct: '0' });
});

test('a new plan takes the typed name and starts empty', () => {
  const d = p.draftFrom(p.NEW_PLAN, null, '2026-06-01T00:00');
  d.newPlan = ' gpu-reserved ';
  d.rates.push(p.perUnitRate('h100', 'ALLOCATED', ' 1.99', ''));
  const input = p.toInput(d);
  assert.equal(input.plan, 'gpu-reserved');
  assert.equal(input.currency, 'USD');
  assert.equal(input.commitment, undefined);
  assert.deepEqual(input.rates, [{ sku: 'h100', metric: 'ALLOCATED', tiersMode: 'PER_UNIT', unitPrice: '1.99' }]);
});

test('latest version, next hour and rate fields', () => {
  assert.equal(p.latestVersion([{ version: 1 }, { version: 3 }, { version: 2 }]).version, 3);
  assert.equal(p.latestVersion([]), null);
  assert.equal(p.nextHourUtc(new Date('2026-05-03T14:05:09Z')), '2026-05-03T15:00');
  assert.equal(p.nextHourUtc(new Date('2026-05-03T23:00:00Z')), '2026-05-04T00:00');
  assert.deepEqual(p.rateField('rates[2].unitPrice'), [2, 'unitPrice']);
  assert.deepEqual(p.rateField('input.rates[0].tiers[1].upTo'), [0, 'tiers[1].upTo']);
  assert.deepEqual(p.rateField('rates[4]'), [4, '']);
  assert.deepEqual(p.rateField('rates'), [-1, '']);
  assert.equal(p.rateField('currency'), null);
  assert.deepEqual(p.metricsFor('METERED', ['ALLOCATED', 'METERED']), ['METERED']);
  assert.deepEqual(p.metricsFor('WHOLE_GPU', ['ALLOCATED', 'ENERGY', 'METERED']), ['ALLOCATED', 'ENERGY']);
});

const ratesOf = (d) => p.toInput(d).rates;

test('a carried-over GRADUATED rate round-trips unchanged, draft tiers as text', () => {
  const d = p.draftFrom('standard', version, '2026-06-01T00:00');
  assert.deepEqual(d.rates[2].tiers, [
    { upTo: '100', unitPrice: '0.5', flatFee: '0' },
    { upTo: '', unitPrice: '0.425', flatFee: '' },
  ]);
  assert.deepEqual(p.rateInput(d.rates[2]), {
    sku: 'mig',
    metric: 'ALLOCATED',
    tiersMode: 'GRADUATED',
    tiers: [
      { upTo: '100', unitPrice: '0.5', flatFee: '0' },
      { upTo: null, unitPrice: '0.425', flatFee: null },
    ],
  });
  assert.deepEqual(p.rateProblems(d.rates), {});
});

test('a VOLUME rate edited: tiers added, typed values trimmed, the last bound dropped, empty fees null', () => {
  let r = p.withMode(p.draftFrom('standard', version, '2026-06-01T00:00').rates[2], 'VOLUME');
  r = p.editTier(r, 0, { upTo: ' 50 ', unitPrice: '0.50 ' });
  r = p.addTier(r);
  r = p.editTier(r, 1, { upTo: '200', flatFee: ' 12.5' });
  r = p.editTier(r, 2, { upTo: '999', unitPrice: '0.40', flatFee: '  ' });
  assert.deepEqual(p.rateProblems([r]), {});
  assert.deepEqual(p.rateInput(r), {
    sku: 'mig',
    metric: 'ALLOCATED',
    tiersMode: 'VOLUME',
    tiers: [
      { upTo: '50', unitPrice: '0.50', flatFee: '0' },
      { upTo: '200', unitPrice: '0.425', flatFee: '12.5' },
      { upTo: null, unitPrice: '0.40', flatFee: null },
    ],
  });
  const removed = p.removeTier(r, 1);
  assert.deepEqual(p.rateInput(removed).tiers.map((t) => t.upTo), ['50', null]);
});

test('switching modes keeps what was typed; only the mode fields are sent', () => {
  const d = p.draftFrom('standard', version, '2026-06-01T00:00');
  const graduated = p.withMode(d.rates[0], 'GRADUATED');
  assert.deepEqual(graduated.tiers, [{ upTo: '', unitPrice: '2.49', flatFee: '' }]);
  assert.deepEqual(p.rateInput(graduated), { sku: 'h100', metric: 'ALLOCATED', tiersMode: 'GRADUATED', tiers: [{ upTo: null, unitPrice: '2.49', flatFee: null }] });
  const back = p.withMode(graduated, 'PER_UNIT');
  assert.deepEqual(p.rateInput(back), ratesOf(d)[0]);
  const pkg = p.withMode(d.rates[3], 'PER_UNIT');
  assert.deepEqual(p.rateInput(p.withMode(pkg, 'PACKAGE')), ratesOf(d)[3]);
});

test('a PACKAGE rate: size and price trimmed; size above 0 and price checked', () => {
  const r = { ...p.emptyRate('egress', 'METERED', 'PACKAGE'), packageSize: ' 1000 ', packagePrice: '5.00 ' };
  assert.deepEqual(p.rateInput(r), { sku: 'egress', metric: 'METERED', tiersMode: 'PACKAGE', packageSize: '1000', packagePrice: '5.00' });
  assert.deepEqual(p.rateProblems([r]), {});
  assert.deepEqual(Object.keys(p.rateProblems([p.emptyRate('egress', 'METERED', 'PACKAGE')])), ['rates[0].packageSize', 'rates[0].packagePrice']);
  for (const size of ['0', '0.000', '-5', '1e3', '.5', 'ten']) {
    assert.ok(p.rateProblems([{ ...r, packageSize: size }])['rates[0].packageSize'], size);
  }
  assert.deepEqual(p.rateProblems([{ ...r, packageSize: '0.5', packagePrice: '0' }]), {});
  assert.ok(p.rateProblems([{ ...r, packagePrice: '5,00' }])['rates[0].packagePrice']);
});

test('a new tiered rate starts with one unbounded tier to fill in', () => {
  const r = p.emptyRate('h100', 'ACTIVE', 'GRADUATED');
  assert.deepEqual(r.tiers, [{ upTo: '', unitPrice: '', flatFee: '' }]);
  assert.deepEqual(p.rateProblems([r]), { 'rates[0].tiers[0].unitPrice': 'A price, 0 or more, such as 0.5.' });
  assert.deepEqual(p.rateProblems([{ ...r, tiers: [] }]), { 'rates[0].tiers': 'Add at least one tier.' });
});

test('tier checks: bounds present and increasing from above 0, prices and fees decimal', () => {
  const tiered = (tiers) => ({ ...p.emptyRate('mig', 'ALLOCATED', 'VOLUME'), tiers });
  const t = (upTo, unitPrice = '1', flatFee = '') => ({ upTo, unitPrice, flatFee });
  // The last tier's bound is not used, whatever it holds.
  assert.deepEqual(p.rateProblems([tiered([t('10'), t('20'), t('junk')])]), {});
  assert.deepEqual(p.rateProblems([tiered([t(''), t('')])]), { 'rates[0].tiers[0].upTo': 'A number of units, such as 100.' });
  assert.deepEqual(p.rateProblems([tiered([t('0'), t('')])]), { 'rates[0].tiers[0].upTo': 'Above 0.' });
  assert.deepEqual(p.rateProblems([tiered([t('100'), t('100.0'), t('')])]), { 'rates[0].tiers[1].upTo': 'Above 100, the bound of the tier before.' });
  // Compared as decimals, not as text: 9 < 10.5 < 100.
  assert.deepEqual(p.rateProblems([tiered([t('9'), t('10.5'), t('100'), t('')])]), {});
  // An invalid bound is skipped when checking the next against the one before.
  assert.deepEqual(Object.keys(p.rateProblems([tiered([t('50'), t('x'), t('40'), t('')])])), ['rates[0].tiers[1].upTo', 'rates[0].tiers[2].upTo']);
  assert.deepEqual(p.rateProblems([tiered([t('5', ''), t('', '-1', 'abc')])]), {
    'rates[0].tiers[0].unitPrice': 'A price, 0 or more, such as 0.5.',
    'rates[0].tiers[1].unitPrice': 'A price, 0 or more, such as 0.5.',
    'rates[0].tiers[1].flatFee': 'A fee, 0 or more, or empty for none.',
  });
  const many = Array.from({ length: p.MAX_TIERS + 1 }, (_, j) => t(String(j + 1)));
  assert.equal(p.rateProblems([tiered(many)])['rates[0].tiers'], `At most ${p.MAX_TIERS} tiers.`);
});

test('per-unit checks, indexed by rate', () => {
  const d = p.draftFrom('standard', version, '2026-06-01T00:00');
  d.rates[1] = { ...d.rates[1], unitPrice: '', spotUnitPrice: '1.' };
  assert.deepEqual(p.rateProblems(d.rates), {
    'rates[1].unitPrice': 'A price, 0 or more, such as 2.49.',
    'rates[1].spotUnitPrice': 'A price, 0 or more, or empty for none.',
  });
  assert.ok(p.isPrice(' 2.10 '));
  assert.ok(p.isPrice('0'));
  for (const bad of ['', '-1', '+1', '.5', '1.', '1e2', '1,5']) assert.equal(p.isPrice(bad), false, bad);
});

test('the fields a rate shows, to place the server errors', () => {
  const d = p.draftFrom('standard', version, '2026-06-01T00:00');
  assert.deepEqual(p.shownFields(d.rates[0]), ['unitPrice', 'spotUnitPrice']);
  assert.deepEqual(p.shownFields(d.rates[2]), ['tiers', 'tiers[0].upTo', 'tiers[0].unitPrice', 'tiers[0].flatFee', 'tiers[1].unitPrice', 'tiers[1].flatFee']);
  assert.deepEqual(p.shownFields(d.rates[3]), ['packageSize', 'packagePrice']);
  const [, rest] = p.rateField('input.rates[2].tiers[1].unitPrice');
  assert.ok(p.shownFields(d.rates[2]).includes(rest));
  assert.equal(p.shownFields(d.rates[2]).includes(p.rateField('rates[2].tiers[1].upTo')[1]), false);
});

test('same shape: values edited only, not tiers added, modes switched or rates removed', () => {
  const rates = p.draftFrom('standard', version, '2026-06-01T00:00').rates;
  const edited = rates.map((r) => ({ ...r, unitPrice: '9' }));
  assert.equal(p.sameShape(rates, edited), true);
  assert.equal(p.sameShape(rates, rates.map((r, i) => (i === 2 ? p.addTier(r) : r))), false);
  assert.equal(p.sameShape(rates, rates.map((r, i) => (i === 2 ? p.withMode(r, 'VOLUME') : r))), false);
  assert.equal(p.sameShape(rates, rates.slice(1)), false);
});
