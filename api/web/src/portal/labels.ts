import type { LabelInput } from '../gql/schema';

/** "team=ml, env=prod" or one pair a line → labels; an error message for a bad pair. */
export function parseLabels(text: string): { labels: LabelInput[]; error: string | null } {
  const labels: LabelInput[] = [];
  for (const raw of text.split(/[\n,]/)) {
    const pair = raw.trim();
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq <= 0) return { labels, error: `"${pair}" is not key=value.` };
    labels.push({ key: pair.slice(0, eq).trim(), value: pair.slice(eq + 1).trim() });
  }
  return { labels, error: null };
}
