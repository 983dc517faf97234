/** Calendar months in UTC, as "2026-05". */

export interface Month {
  year: number;
  /** 1–12. */
  month: number;
}

export function thisMonth(now: Date = new Date()): Month {
  return { year: now.getUTCFullYear(), month: now.getUTCMonth() + 1 };
}

export function parseMonth(text: string | null): Month | null {
  const m = /^(\d{4})-(\d{2})$/.exec(text ?? '');
  if (!m) return null;
  const month = Number(m[2]);
  return month >= 1 && month <= 12 ? { year: Number(m[1]), month } : null;
}

export function monthKey(m: Month): string {
  return `${m.year}-${String(m.month).padStart(2, '0')}`;
}

export function addMonths(m: Month, n: number): Month {
  const index = m.year * 12 + (m.month - 1) + n;
  return { year: Math.floor(index / 12), month: (index % 12) + 1 };
}

/** [first instant of the month, first instant of the next) as RFC 3339. */
export function monthRange(m: Month): { from: string; to: string } {
  const next = addMonths(m, 1);
  return { from: `${monthKey(m)}-01T00:00:00Z`, to: `${monthKey(next)}-01T00:00:00Z` };
}

/** Every day of the month as "YYYY-MM-DD" (the API's DAY keys). */
export function daysOf(m: Month): string[] {
  const days = new Date(Date.UTC(m.year, m.month, 0)).getUTCDate();
  return Array.from({ length: days }, (_, i) => `${monthKey(m)}-${String(i + 1).padStart(2, '0')}`);
}

export function monthName(m: Month): string {
  return new Intl.DateTimeFormat('en-GB', { month: 'long', year: 'numeric', timeZone: 'UTC' }).format(new Date(Date.UTC(m.year, m.month - 1, 1)));
}
