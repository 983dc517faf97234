import type { ComponentChildren } from 'preact';
import { enumLabel } from '../lib/format';

export type Tone = 'neutral' | 'good' | 'warn' | 'bad' | 'info';

const TONES: Record<string, Tone> = {
  ACTIVE: 'good',
  OK: 'good',
  READY: 'good',
  PAID: 'good',
  DELIVERED: 'good',
  DRAINING: 'warn',
  DEGRADED: 'warn',
  PENDING: 'info',
  PREEMPTING: 'warn',
  OPEN: 'info',
  DRAFT: 'neutral',
  DOWN: 'bad',
  RETIRED: 'neutral',
  FAILED: 'bad',
  SUSPENDED: 'bad',
  OVERDUE: 'bad',
  UNCOLLECTIBLE: 'bad',
  RELEASED: 'neutral',
  VOID: 'neutral',
  INVITED: 'info',
  REMOVED: 'neutral',
  REVOKED: 'neutral',
  DISABLED: 'bad',
};

/** A status pill: the text always says the status; colour only repeats it. */
export function Badge({ tone, children }: { tone: Tone; children: ComponentChildren }) {
  return <span class={`badge badge-${tone}`}>{children}</span>;
}

/** An enum value ("PREEMPTING") as a badge ("Preempting") in its tone. */
export function StatusBadge({ value }: { value: string }) {
  return <Badge tone={TONES[value] ?? 'neutral'}>{value === 'OK' ? 'OK' : enumLabel(value)}</Badge>;
}
