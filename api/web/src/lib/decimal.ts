/**
 * Exact decimal arithmetic on the strings the API returns ("2.10", "-0.5", "12").
 * Money is never turned into a float: a value is a BigInt coefficient and a scale.
 */

interface Dec {
  coef: bigint;
  scale: number;
}

const DECIMAL = /^([+-]?)(\d*)(?:\.(\d*))?$/;

function parseDec(s: string): Dec {
  const m = DECIMAL.exec(s.trim());
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) throw new RangeError(`not a decimal: ${JSON.stringify(s)}`);
  const frac = m[3] ?? '';
  const coef = BigInt(`${m[2] || '0'}${frac}`);
  return { coef: m[1] === '-' ? -coef : coef, scale: frac.length };
}

function rescale(d: Dec, scale: number): bigint {
  return d.coef * 10n ** BigInt(scale - d.scale);
}

function format(d: Dec): string {
  const neg = d.coef < 0n;
  const digits = (neg ? -d.coef : d.coef).toString().padStart(d.scale + 1, '0');
  const int = digits.slice(0, digits.length - d.scale);
  const frac = d.scale > 0 ? `.${digits.slice(digits.length - d.scale)}` : '';
  return `${neg ? '-' : ''}${int}${frac}`;
}

/** Whether `s` is a decimal number as the API writes them. */
export function isDecimal(s: string): boolean {
  const m = DECIMAL.exec(s.trim());
  return m !== null && !(m[2] === '' && (m[3] ?? '') === '');
}

export function add(a: string, b: string): string {
  const x = parseDec(a);
  const y = parseDec(b);
  const scale = Math.max(x.scale, y.scale);
  return format({ coef: rescale(x, scale) + rescale(y, scale), scale });
}

export function multiply(a: string, b: string | number): string {
  const x = parseDec(a);
  const y = parseDec(String(b));
  return format({ coef: x.coef * y.coef, scale: x.scale + y.scale });
}

/** -1, 0 or 1 as `a` is less than, equal to or greater than `b`. */
export function compare(a: string, b: string): number {
  const x = parseDec(a);
  const y = parseDec(b);
  const scale = Math.max(x.scale, y.scale);
  const d = rescale(x, scale) - rescale(y, scale);
  return d < 0n ? -1 : d > 0n ? 1 : 0;
}

/** `s` without its sign ("-1.50" → "1.50"). */
export function abs(s: string): string {
  const t = s.trim();
  return t.startsWith('-') || t.startsWith('+') ? t.slice(1) : t;
}

/** The sum of decimal strings ("0" for none). */
export function sum(values: readonly string[]): string {
  return values.reduce(add, '0');
}

/**
 * `a / b` rounded half away from zero to `places` decimals: for quantities such as
 * seconds → hours, never for money the API already rounded.
 */
export function divide(a: string, b: string, places: number): string {
  const x = parseDec(a);
  const y = parseDec(b);
  if (y.coef === 0n) throw new RangeError('division by zero');
  // a/b = (x.coef / 10^x.scale) / (y.coef / 10^y.scale), scaled by 10^places.
  let num = x.coef * 10n ** BigInt(places + y.scale);
  let den = y.coef * 10n ** BigInt(x.scale);
  if (den < 0n) {
    num = -num;
    den = -den;
  }
  const neg = num < 0n;
  const abs = neg ? -num : num;
  const q = (abs * 2n + den) / (den * 2n);
  return format({ coef: neg ? -q : q, scale: places });
}
