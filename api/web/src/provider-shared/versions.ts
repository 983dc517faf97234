/**
 * Which version of something dated (an exchange rate of a pair, a provider's agreement) is
 * in force now. No runtime import: unit-tested.
 */

export interface Dated {
  /** An RFC 3339 instant. */
  effectiveFrom: string;
}

/** Where a version stands now: in force, starting later, or replaced by a later one. */
export type VersionState = 'in_force' | 'upcoming' | 'replaced';

/**
 * Each version's state at `now`, by the version: in each group (by `group`) the latest
 * start at or before now is in force. `newestFirst` is sorted newest first within a group.
 */
export function versionStates<T extends Dated>(newestFirst: readonly T[], now: Date, group: (v: T) => string = () => ''): Map<T, VersionState> {
  const states = new Map<T, VersionState>();
  const inForce = new Set<string>();
  for (const v of newestFirst) {
    const key = group(v);
    if (Date.parse(v.effectiveFrom) > now.getTime()) states.set(v, 'upcoming');
    else if (inForce.has(key)) states.set(v, 'replaced');
    else {
      inForce.add(key);
      states.set(v, 'in_force');
    }
  }
  return states;
}

/** The versions newest first (by start). */
export function newestFirst<T extends Dated>(versions: readonly T[]): T[] {
  return [...versions].sort((a, b) => Date.parse(b.effectiveFrom) - Date.parse(a.effectiveFrom));
}

const STATE_LABELS: Record<VersionState, string> = { in_force: 'In force', upcoming: 'Upcoming', replaced: 'Replaced' };

export function versionStateLabel(state: VersionState): string {
  return STATE_LABELS[state];
}
