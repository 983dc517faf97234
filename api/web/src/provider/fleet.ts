/** Pure helpers of the provider's node pages. No runtime import but lib/format: unit-tested. */

import { groupDigits } from '../lib/format';

interface NodeLike {
  state: string;
  verification: string;
  gpusInUse: number;
  gpus: readonly unknown[];
}

export interface FleetSummary {
  /** Nodes in the fleet (not retired). */
  nodes: number;
  retired: number;
  gpus: number;
  gpusInUse: number;
  /** Nodes in the fleet whose agent reported other hardware, or none yet. */
  attention: number;
}

/** Whether a node needs its provider: its agent reported other hardware, or nothing yet. */
export function needsAttention(node: { verification: string }): boolean {
  return node.verification === 'MISMATCH' || node.verification === 'PENDING';
}

/** The counts over the headline of the nodes page: retired nodes are out of the fleet. */
export function fleetSummary(nodes: readonly NodeLike[]): FleetSummary {
  const live = nodes.filter((n) => n.state !== 'RETIRED');
  return {
    nodes: live.length,
    retired: nodes.length - live.length,
    gpus: live.reduce((n, node) => n + node.gpus.length, 0),
    gpusInUse: live.reduce((n, node) => n + node.gpusInUse, 0),
    attention: live.filter(needsAttention).length,
  };
}

/** Seconds as hours, to a tenth (2,592,000 → "720.0"). */
export function hours(seconds: number): string {
  return groupDigits((seconds / 3600).toFixed(1));
}
