import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const x = await load('src/console/exchangeRates.ts');
const held = await load('src/provider-shared/statementHold.ts');

test('datetime-local values read as UTC instants (RFC 3339); anything else is null', () => {
  assert.equal(x.utcInstantOf('2026-11-30T16:00'), '2026-11-30T16:00:00Z');
  assert.equal(x.utcInstantOf('2026-11-30T16:00:15'), '2026-11-30T16:00:15Z');
  assert.equal(x.utcInstantOf('2026-11-30T16:00:15.250'), '2026-11-30T16:00:15.250Z');
  assert.equal(x.utcInstantOf(' 2028-02-29T00:00 '), '2028-02-29T00:00:00Z');
  assert.equal(x.utcInstantOf('2026-11-31T00:00'), null, 'no 31 November');
  assert.equal(x.utcInstantOf('2027-02-29T00:00'), null, 'not a leap year');
  assert.equal(x.utcInstantOf('2026-11-30T24:00'), null);
  assert.equal(x.utcInstantOf('2026-11-30'), null);
  assert.equal(x.utcInstantOf(''), null);
});

test('instants as datetime-local values in UTC, rounded down to the minute', () => {
  assert.equal(x.localUtc('2026-12-01T00:00:00+00:00'), '2026-12-01T00:00');
  assert.equal(x.localUtc('2026-12-01T01:30:59.900+01:00'), '2026-12-01T00:30');
  assert.equal(x.localUtc('2026-11-30T23:59:59Z'), '2026-11-30T23:59');
  assert.equal(x.localUtc(''), '');
  assert.equal(x.localUtc('soon'), '');
  assert.equal(x.utcInstantOf(x.localUtc('2026-12-01T00:00:00Z')), '2026-12-01T00:00:00Z');
});

test("a held statement's hold gives the pair and the instant, and the link to the form carries them", () => {
  const hold = { reason: "no USD→EUR exchange rate in force at 2026-12-01T00:00:00+00:00, the end of an invoice's period", from: 'USD', to: 'EUR', at: '2026-12-01T00:00:00+00:00' };
  assert.deepEqual(x.rateNeeded(hold), { from: 'USD', to: 'EUR', at: '2026-12-01T00:00:00+00:00' });
  assert.equal(x.exchangeRatesPath(null), '/providers/exchange-rates');
  assert.equal(x.exchangeRatesPath(x.rateNeeded(hold)), '/providers/exchange-rates?from=USD&to=EUR&at=2026-12-01T00%3A00%3A00%2B00%3A00');
  // The page reads back what the link carries.
  const back = x.neededFrom(new URL(`http://x${x.exchangeRatesPath(x.rateNeeded(hold))}`).searchParams);
  assert.deepEqual(back, { from: 'USD', to: 'EUR', at: '2026-12-01T00:00:00+00:00' });
  assert.deepEqual(x.neededFrom(new URLSearchParams('from=usd&to=EURO&at=later')), { from: 'USD', to: '', at: '' });
  assert.equal(x.neededFrom(new URLSearchParams('')), null);
});

test('rates: bounds of the API, codes of three letters', () => {
  assert.equal(x.rateProblem('0.9215'), null);
  assert.equal(x.rateProblem(' 1600 '), null);
  assert.equal(x.rateProblem('1000000'), null);
  assert.equal(x.rateProblem('0.1234567890'), null);
  assert.equal(x.rateProblem('1.50000000000000'), null, 'trailing zeros are no decimals');
  assert.match(x.rateProblem('0'), /above zero/);
  assert.match(x.rateProblem('-1'), /above zero/);
  assert.match(x.rateProblem('1,5'), /above zero/);
  assert.match(x.rateProblem(''), /above zero/);
  assert.match(x.rateProblem('1000000.01'), /1,000,000/);
  assert.match(x.rateProblem('0.12345678901'), /10 decimal/);
  assert.equal(x.isCurrencyCode('usd'), true);
  assert.equal(x.isCurrencyCode('US'), false);
  assert.equal(x.isCurrencyCode('US1'), false);
});

test("rates by pair, each pair's newest first, and which is in force now", () => {
  const r = (from, to, effectiveFrom) => ({ from, to, effectiveFrom });
  const a = r('USD', 'EUR', '2026-11-01T00:00:00Z');
  const b = r('USD', 'EUR', '2026-11-20T00:00:00Z');
  const c = r('USD', 'EUR', '2027-01-01T00:00:00Z');
  const d = r('GBP', 'EUR', '2026-10-01T00:00:00Z');
  const e = r('USD', 'CHF', '2026-11-05T00:00:00Z');
  assert.deepEqual(x.byPairNewestFirst([a, b, c, d, e]), [d, e, c, b, a]);
  const states = x.rateStates([a, b, c, d, e], new Date('2026-12-01T00:00:00Z'));
  assert.deepEqual([a, b, c, d, e].map((v) => states.get(v)), ['replaced', 'in_force', 'upcoming', 'in_force', 'in_force']);
  assert.equal(x.rateStateLabel('upcoming'), 'Upcoming');
  const early = x.rateStates([a, b], new Date('2026-10-01T00:00:00Z'));
  assert.deepEqual([a, b].map((v) => early.get(v)), ['upcoming', 'upcoming']);
  assert.deepEqual(x.knownCodes([a, d], ['eur', 'SEK', 'x']), ['EUR', 'GBP', 'SEK', 'USD']);
});

test('a held statement is covered once its pair has a rate from at or before the instant', () => {
  const needed = { from: 'USD', to: 'EUR', at: '2026-12-01T00:00:00+00:00' };
  const r = (from, to, effectiveFrom) => ({ from, to, effectiveFrom });
  assert.equal(x.coveredBy([], needed), false);
  assert.equal(x.coveredBy([r('USD', 'EUR', '2026-12-01T00:00:01Z')], needed), false, 'starts after it');
  assert.equal(x.coveredBy([r('EUR', 'USD', '2026-11-01T00:00:00Z')], needed), false, 'a pair has a direction');
  assert.equal(x.coveredBy([r('USD', 'EUR', '2026-12-01T00:00:00Z')], needed), true);
  assert.equal(x.coveredBy([r('USD', 'EUR', '2026-01-01T00:00:00Z')], { ...needed, at: '' }), false, 'no instant: not known');
});

test("a held statement's reason reads as a sentence, its instants as the console writes them", () => {
  assert.equal(
    held.readableReason("no USD→EUR exchange rate in force at 2026-12-01T00:00:00+00:00, the end of an invoice's period"),
    "No USD→EUR exchange rate in force at 1 Dec 2026, 00:00 UTC, the end of an invoice's period.",
  );
  assert.equal(held.readableReason('held at 2026-11-30T23:30:00.5+01:00.'), 'Held at 30 Nov 2026, 22:30 UTC.');
  assert.equal(held.readableReason(''), '');
});
