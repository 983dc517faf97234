/** Display formatting. Money stays a string: digits are grouped, never re-rounded. */

/** "1234567.5" → "1,234,567.5". */
export function groupDigits(decimal: string): string {
  const neg = decimal.startsWith('-');
  const body = neg ? decimal.slice(1) : decimal;
  const [int = '0', frac] = body.split('.');
  const grouped = int.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${neg ? '−' : ''}${grouped}${frac !== undefined ? `.${frac}` : ''}`;
}

const SYMBOLS: Record<string, string> = { USD: '$', EUR: '€', GBP: '£', JPY: '¥' };

/**
 * "1234.50", "USD" → "$1,234.50"; other currencies keep their code ("1,234.50 CHF").
 * Zeros past the cents go ("4.9800" → "4.98"); other digits stay ("0.2125").
 */
export function money(amount: string, currency: string): string {
  const symbol = SYMBOLS[currency];
  const neg = amount.startsWith('-');
  const digits = groupDigits(trimCents(neg ? amount.slice(1) : amount));
  if (symbol) return `${neg ? '−' : ''}${symbol}${digits}`;
  return `${neg ? '−' : ''}${digits} ${currency}`;
}

function trimCents(decimal: string): string {
  const [int, frac] = decimal.split('.');
  if (frac === undefined) return decimal;
  const kept = frac.replace(/0+$/, '');
  return `${int}.${kept.padEnd(2, '0')}`;
}

const DATE_TIME = new Intl.DateTimeFormat('en-GB', {
  year: 'numeric',
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  timeZone: 'UTC',
});

const DATE = new Intl.DateTimeFormat('en-GB', { year: 'numeric', month: 'short', day: 'numeric', timeZone: 'UTC' });

/** An RFC 3339 instant as "3 May 2026, 14:05 UTC"; "—" for none. */
export function dateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${DATE_TIME.format(d)} UTC`;
}

/** An RFC 3339 instant (or a YYYY-MM-DD day) as "3 May 2026". */
export function date(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso.length === 10 ? `${iso}T00:00:00Z` : iso);
  return Number.isNaN(d.getTime()) ? iso : DATE.format(d);
}

/** A period [from, to) as "1 May – 1 Jun 2026". */
export function period(from: string, to: string): string {
  return `${date(from)} – ${date(to)}`;
}

/** "ON_DEMAND" → "On demand". */
export function enumLabel(value: string): string {
  const words = value.toLowerCase().replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** How long since `iso`, as "3 d 4 h", "2 h 5 m" or "4 m". */
export function since(iso: string, now: Date = new Date()): string {
  const minutes = Math.max(0, Math.floor((now.getTime() - new Date(iso).getTime()) / 60000));
  const days = Math.floor(minutes / 1440);
  const hours = Math.floor((minutes % 1440) / 60);
  if (days > 0) return `${days} d ${hours} h`;
  if (hours > 0) return `${hours} h ${minutes % 60} m`;
  return `${minutes} m`;
}
