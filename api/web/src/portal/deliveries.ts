/** Pure helpers of the webhook delivery log. */

/** The newest of `attempts` (newest first, as the API lists them) for `eventId`. */
export function lastAttemptOf<A extends { eventId: string }>(attempts: readonly A[], eventId: string): A | null {
  return attempts.find((a) => a.eventId === eventId) ?? null;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** A `<input type="datetime-local">` value ("2026-05-03T14:05") for `at` in local time. */
export function toLocalInput(at: Date): string {
  return `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}T${pad(at.getHours())}:${pad(at.getMinutes())}`;
}

/**
 * "Redeliver since…": the local date and time typed, as the instant the API takes; not
 * in the future.
 */
export function sinceInstant(value: string, now: Date): { since: string } | { problem: string } {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(value.trim())) return { problem: 'Enter a date and a time.' };
  const at = new Date(value.trim());
  if (Number.isNaN(at.getTime())) return { problem: 'Enter a date and a time.' };
  if (at.getTime() > now.getTime()) return { problem: 'Choose a moment in the past.' };
  return { since: at.toISOString() };
}

/** "1 event queued again", "12 events queued again", "No event since then". */
export function redeliveredNote(count: number, url: string): string {
  if (count === 0) return `No event since then for ${url}: nothing was queued.`;
  return `${count} ${count === 1 ? 'event' : 'events'} queued again for ${url}.`;
}
