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
