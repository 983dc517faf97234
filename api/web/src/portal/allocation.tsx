import type { GpuHealth } from '../gql/schema';
import { Badge } from '../ui/Badge';
import type { AllocationsResult } from './operations';

export type AllocationRow = AllocationsResult['allocations']['nodes'][number];

/** "8 × H100", "MIG 3g.40gb on H100", "250 milli-GPU of H100". */
export function gpuSummary(a: Pick<AllocationRow, 'gpus' | 'migProfile' | 'milliGpu'>): string {
  const model = a.gpus[0]?.model ?? 'GPU';
  if (a.migProfile) return `MIG ${a.migProfile} on ${model}`;
  if (a.milliGpu) return `${a.milliGpu} milli-GPU of ${model}`;
  return `${a.gpus.length} × ${model}`;
}

/** The worst health among the GPUs, with how many are in it. */
export function HealthBadge({ gpus }: { gpus: { health: GpuHealth }[] }) {
  const failed = gpus.filter((g) => g.health === 'FAILED').length;
  const degraded = gpus.filter((g) => g.health === 'DEGRADED').length;
  if (gpus.length === 0) return <span class="muted">—</span>;
  if (failed > 0) return <Badge tone="bad">{`${failed} failed`}</Badge>;
  if (degraded > 0) return <Badge tone="warn">{`${degraded} degraded`}</Badge>;
  return <Badge tone="good">{gpus.length === 1 ? 'Healthy' : `All ${gpus.length} healthy`}</Badge>;
}

/** Whether it can still be released. */
export function releasable(a: { status: string }): boolean {
  return a.status === 'ACTIVE' || a.status === 'PREEMPTING';
}
