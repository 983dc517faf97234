import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const d = await load('src/lib/decimal.ts');

test('multiply is exact on decimal strings', () => {
  assert.equal(d.multiply('2.10', 3), '6.30');
  assert.equal(d.multiply('0.1', '0.2'), '0.02');
  assert.equal(d.multiply('0.2125', 7), '1.4875');
  assert.equal(d.multiply('19.92', 0), '0.00');
  assert.equal(d.multiply('-1.5', 2), '-3.0');
  // 0.1 * 3 in floats is 0.30000000000000004
  assert.equal(d.multiply('0.1', 3), '0.3');
});

test('add keeps the larger scale', () => {
  assert.equal(d.add('0.1', '0.2'), '0.3');
  assert.equal(d.add('1', '2.50'), '3.50');
  assert.equal(d.add('-5.25', '2'), '-3.25');
  assert.equal(d.sum(['1.10', '2.20', '3.30']), '6.60');
  assert.equal(d.add('99999999999999999999.99', '0.01'), '100000000000000000000.00');
});

test('compare orders decimals of any scale', () => {
  assert.equal(d.compare('7.47', '7.470'), 0);
  assert.equal(d.compare('7.48', '7.47'), 1);
  assert.equal(d.compare('-1', '0.5'), -1);
});

test('divide rounds half away from zero', () => {
  assert.equal(d.divide('7200', '3600', 2), '2.00');
  assert.equal(d.divide('5400', '3600', 1), '1.5');
  assert.equal(d.divide('1', '3', 3), '0.333');
  assert.equal(d.divide('2', '3', 2), '0.67');
  assert.equal(d.divide('-2', '3', 2), '-0.67');
  assert.equal(d.divide('0.625', '1', 2), '0.63');
  assert.throws(() => d.divide('1', '0', 2), RangeError);
});

test('isDecimal accepts what the API writes and nothing else', () => {
  for (const ok of ['1', '1.5', '.5', '0.2125', '-3', '25.00']) assert.ok(d.isDecimal(ok), ok);
  for (const bad of ['', '.', 'abc', '1e3', '1.2.3', '1,5', 'NaN']) assert.ok(!d.isDecimal(bad), bad);
  assert.throws(() => d.add('1e3', '1'), RangeError);
});

test('abs drops the sign, keeps the digits', () => {
  assert.equal(d.abs('-1.50'), '1.50');
  assert.equal(d.abs('0.000417'), '0.000417');
  assert.equal(d.abs('+2'), '2');
  assert.equal(d.compare(d.abs('-40'), d.abs('10.5')), 1);
});
