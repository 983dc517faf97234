/** Pure helpers of a search-as-you-type picker (ui/Combobox): the term, the active option, the status line. */

/**
 * The search term of what was typed: trimmed, at most `max` characters (code points, as
 * the API counts them); null when nothing is left (no filter).
 */
export function searchTerm(text: string, max = 100): string | null {
  const term = Array.from(text.trim()).slice(0, max).join('').trim();
  return term === '' ? null : term;
}

export type MoveKey = 'ArrowDown' | 'ArrowUp';

/**
 * The active option after a key among `count` options (-1: none). Down from none is the
 * first, up from none the last; both wrap around.
 */
export function moveActive(active: number, count: number, key: MoveKey): number {
  if (count <= 0) return -1;
  if (key === 'ArrowDown') return active < 0 || active >= count - 1 ? 0 : active + 1;
  return active <= 0 || active >= count ? count - 1 : active - 1;
}

/**
 * What the picker says under its input: searching while a term waits for its answer, then
 * how many matched (`more`: the API has more than were asked for).
 */
export function pickerStatus({ pending, count, more, noun }: { pending: boolean; count: number; more: boolean; noun: string }): string {
  if (pending) return 'Searching…';
  if (count === 0) return `No ${noun} matches`;
  if (more) return `First ${count} matches: type more to narrow.`;
  return count === 1 ? '1 match' : `${count} matches`;
}
