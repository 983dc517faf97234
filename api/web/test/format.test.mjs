import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const f = await load('src/lib/format.ts');
const m = await load('src/lib/month.ts');

test('money groups digits and never re-rounds', () => {
  assert.equal(f.money('1234567.89', 'USD'), '$1,234,567.89');
  assert.equal(f.money('4.9800', 'USD'), '$4.98');
  assert.equal(f.money('0.2125', 'USD'), '$0.2125');
  assert.equal(f.money('0.1', 'USD'), '$0.10');
  assert.equal(f.money('-12.5', 'EUR'), '−€12.50');
  assert.equal(f.money('1000', 'CHF'), '1,000 CHF');
});

test('dates are shown in UTC', () => {
  assert.equal(f.dateTime('2026-05-03T14:05:00Z'), '3 May 2026, 14:05 UTC');
  assert.equal(f.date('2026-05-03'), '3 May 2026');
  assert.equal(f.dateTime(null), '—');
});

test('months: ranges, days and stepping across years', () => {
  assert.deepEqual(m.monthRange({ year: 2026, month: 12 }), { from: '2026-12-01T00:00:00Z', to: '2027-01-01T00:00:00Z' });
  assert.equal(m.daysOf({ year: 2028, month: 2 }).length, 29);
  assert.deepEqual(m.addMonths({ year: 2026, month: 1 }, -1), { year: 2025, month: 12 });
  assert.equal(m.parseMonth('2026-13'), null);
  assert.deepEqual(m.parseMonth('2026-04'), { year: 2026, month: 4 });
});
