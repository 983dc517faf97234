/** Buying credit (`startTopUp`): the amount as the API takes it, checked exactly. */

import { compare } from '../lib/decimal';

export const MIN_TOP_UP = '1';
export const MAX_TOP_UP = '1000000';

/** ISO 4217 currencies without minor units, and those with three (the rest have two). */
const NO_DECIMALS = new Set(['BIF', 'CLP', 'DJF', 'GNF', 'ISK', 'JPY', 'KMF', 'KRW', 'PYG', 'RWF', 'UGX', 'VND', 'VUV', 'XAF', 'XOF', 'XPF']);
const THREE_DECIMALS = new Set(['BHD', 'IQD', 'JOD', 'KWD', 'LYD', 'OMR', 'TND']);

/** How many decimals an amount in `currency` may have. */
export function minorDigits(currency: string): number {
  const c = currency.toUpperCase();
  return NO_DECIMALS.has(c) ? 0 : THREE_DECIMALS.has(c) ? 3 : 2;
}

/**
 * The amount typed, checked: a plain decimal ("250", "250.50") from 1 to 1,000,000 with
 * at most the currency's decimals; never turned into a float.
 */
export function checkTopUpAmount(typed: string, currency: string): { amount: string } | { problem: string } {
  const amount = typed.trim();
  if (amount === '') return { problem: 'Enter an amount.' };
  const m = /^(\d+)(?:\.(\d+))?$/.exec(amount);
  if (!m) return { problem: 'Enter an amount with digits and a point, such as 250.00.' };
  const digits = minorDigits(currency);
  if ((m[2] ?? '').length > digits) {
    return { problem: digits === 0 ? `${currency} amounts have no decimals.` : `${currency} amounts have at most ${digits} decimals.` };
  }
  if (compare(amount, MIN_TOP_UP) < 0 || compare(amount, MAX_TOP_UP) > 0) return { problem: 'Enter an amount from 1 to 1,000,000.' };
  return { amount };
}
