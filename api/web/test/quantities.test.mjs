import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const q = await load('src/portal/quantities.ts');

test('usageCost: to the cent from a cent up, digits grouped', () => {
  assert.equal(q.usageCost('1234.567891', 'USD'), '$1,234.57');
  assert.equal(q.usageCost('12.5', 'USD'), '$12.50');
  assert.equal(q.usageCost('0.01', 'EUR'), '€0.01');
  assert.equal(q.usageCost('0.014999', 'USD'), '$0.01');
  assert.equal(q.usageCost('-1.5', 'EUR'), '−€1.50');
  assert.equal(q.usageCost('1000', 'CHF'), '1,000.00 CHF');
});

test('usageCost: nothing is $0.00; under a cent is never shown as nothing', () => {
  assert.equal(q.usageCost('0', 'USD'), '$0.00');
  assert.equal(q.usageCost('0.000000', 'USD'), '$0.00');
  assert.equal(q.usageCost('-0.000000', 'USD'), '$0.00');
  assert.equal(q.usageCost('0.004166', 'USD'), '$0.0042');
  assert.equal(q.usageCost('0.000417', 'USD'), '$0.0004');
  assert.equal(q.usageCost('0.009999', 'USD'), '$0.01');
  assert.equal(q.usageCost('-0.0042', 'USD'), '−$0.0042');
  // Rounding to 4 places would read as nothing: the API's 6 places as they are.
  assert.equal(q.usageCost('0.000004', 'USD'), '$0.000004');
  assert.equal(q.usageCost('-0.00004', 'GBP'), '−£0.00004');
});

test('chartCost: a position in the currency', () => {
  assert.equal(q.chartCost('12.345678'), 12.345678);
  assert.equal(q.chartCost('-1.5'), -1.5);
  assert.equal(q.chartCost('0'), 0);
});

test('costColumn: a numeric column of the row cost', () => {
  const col = q.costColumn('USD');
  assert.equal(col.header, 'Cost');
  assert.equal(col.numeric, true);
  assert.equal(col.cell({ cost: '0.000417' }), '$0.0004');
  assert.deepEqual(
    q.usageColumns('EUR').map((c) => c.header),
    ['Allocated (h)', 'Active (GPU-h)', 'SLA credit (h)', 'Energy (kWh)', 'Cost'],
  );
});
