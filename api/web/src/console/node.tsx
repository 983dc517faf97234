import type { GpuHealth } from '../gql/schema';
import { Badge } from '../ui/Badge';

/** "8 GPUs: 7 OK, 1 failed". */
export function GpuHealthSummary({ gpus }: { gpus: { health: GpuHealth }[] }) {
  const failed = gpus.filter((g) => g.health === 'FAILED').length;
  const degraded = gpus.filter((g) => g.health === 'DEGRADED').length;
  if (gpus.length === 0) return <span class="muted">No GPUs</span>;
  if (failed === 0 && degraded === 0) return <Badge tone="good">All OK</Badge>;
  return (
    <span class="badges">
      {failed > 0 && <Badge tone="bad">{`${failed} failed`}</Badge>}
      {degraded > 0 && <Badge tone="warn">{`${degraded} degraded`}</Badge>}
    </span>
  );
}
