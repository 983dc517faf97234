/**
 * An allocation's utilization as the live charts lay it out: one slot per minute of the
 * window the API read, null where its agent reported nothing (a gap, never a zero); in
 * total and per GPU. Imports only lib/decimal: unit-tested.
 */

import { compare } from '../lib/decimal';

export interface UtilizationSample {
  /** The minute's start (RFC 3339). */
  minute: string;
  smActivePct: string;
  memoryGib: string;
  sampledSeconds: number;
}

export interface MinuteWindow {
  /** The first minute's start, in ms since the epoch. */
  start: number;
  /** How many minutes. */
  count: number;
  /** The index of the minute the allocation started in (0 when it started before the window). */
  first: number;
}

export const MINUTE = 60_000;

const floorMinute = (ms: number) => Math.floor(ms / MINUTE) * MINUTE;

/**
 * The last `minutes` minutes of the allocation's life up to now (or to its end), the
 * minute begun included: what `Allocation.utilization(minutes)` reads, whose answer starts
 * no earlier than the allocation (`first`). Samples outside it (this browser's clock
 * differs from the server's) widen it.
 */
export function minuteWindow(a: { startedAt: string; endedAt: string | null }, minutes: number, now: number, samples: readonly UtilizationSample[] = []): MinuteWindow {
  const last = Math.min(a.endedAt ? Date.parse(a.endedAt) : now, now);
  const sampled = samples.map((s) => Date.parse(s.minute));
  const end = Math.max(floorMinute(last) + MINUTE, ...sampled.map((m) => m + MINUTE));
  const start = Math.min(end - minutes * MINUTE, ...sampled);
  const count = Math.max(1, Math.round((end - start) / MINUTE));
  const started = Math.min(floorMinute(Date.parse(a.startedAt)), ...sampled);
  return { start, count, first: Math.min(count - 1, Math.max(0, Math.round((started - start) / MINUTE))) };
}

/** The part of `window` the allocation has lived: from its first minute on. */
export function lived(window: MinuteWindow): MinuteWindow {
  return { start: window.start + window.first * MINUTE, count: window.count - window.first, first: 0 };
}

/** One slot per minute of `window`: its sample, or null when there is none. */
export function minuteSlots<S extends UtilizationSample>(samples: readonly S[], window: MinuteWindow): (S | null)[] {
  const slots: (S | null)[] = Array.from({ length: window.count }, () => null);
  for (const s of samples) {
    const i = Math.round((Date.parse(s.minute) - window.start) / MINUTE);
    if (i >= 0 && i < window.count) slots[i] = s;
  }
  return slots;
}

/** A minute with a sample, or a run of minutes without. */
export type Stretch<S> = { kind: 'sample'; at: number; sample: S } | { kind: 'gap'; from: number; minutes: number };

/** The slots as the table lists them: each sampled minute, each gap once with its length. */
export function stretches<S>(slots: readonly (S | null)[], window: MinuteWindow): Stretch<S>[] {
  const out: Stretch<S>[] = [];
  slots.forEach((s, i) => {
    const at = window.start + i * MINUTE;
    const prev = out[out.length - 1];
    if (s !== null) out.push({ kind: 'sample', at, sample: s });
    else if (prev?.kind === 'gap') prev.minutes += 1;
    else out.push({ kind: 'gap', from: at, minutes: 1 });
  });
  return out;
}

/** Where the time axis gets a label: every `step` minutes, few enough to fit (about 8). */
export function minuteStep(count: number): number {
  return [1, 2, 5, 10, 15, 30, 60, 120, 180, 240, 360].find((s) => count / s <= 8) ?? 360;
}

/** The sample of the latest minute; null when there is none. */
export function latestSample<S extends UtilizationSample>(samples: readonly S[]): S | null {
  return samples.reduce<S | null>((l, s) => (l === null || Date.parse(s.minute) > Date.parse(l.minute) ? s : l), null);
}

/** A GPU of the allocation with its own minutes (`AllocatedGpu.utilization`). */
export interface GpuUtilization {
  index: number;
  utilization: readonly UtilizationSample[];
}

/** The most lines the per-GPU chart draws: one colour each, few enough to tell apart. */
export const GPU_LINES = 8;

/**
 * The GPUs the per-GPU chart draws, in index order: all of them when they are at most
 * `n`, else the `n` with the highest SM activity in their latest sampled minute (GPUs
 * without samples last, ties by index).
 */
export function chartedGpus<G extends GpuUtilization>(gpus: readonly G[], n: number = GPU_LINES): G[] {
  const byIndex = [...gpus].sort((a, b) => a.index - b.index);
  if (byIndex.length <= n) return byIndex;
  const pct = new Map(byIndex.map((g) => [g, latestSample(g.utilization)?.smActivePct ?? null]));
  // A stable sort: equal ones stay in index order.
  const ranked = [...byIndex].sort((a, b) => {
    const x = pct.get(a) ?? null;
    const y = pct.get(b) ?? null;
    if (x === null || y === null) return (x === null ? 1 : 0) - (y === null ? 1 : 0);
    return compare(y, x);
  });
  const chosen = new Set(ranked.slice(0, n));
  return byIndex.filter((g) => chosen.has(g));
}

/**
 * Per minute, each GPU's slot (in the order of `perGpu`, each one slot per minute of a
 * `count`-minute window); null for a minute none of them has a sample, so that a table
 * lists a gap of them all once.
 */
export function acrossGpus<S>(perGpu: readonly (readonly (S | null)[])[], count: number): ((S | null)[] | null)[] {
  return Array.from({ length: count }, (_, i) => {
    const row = perGpu.map((slots) => slots[i] ?? null);
    return row.some((s) => s !== null) ? row : null;
  });
}
