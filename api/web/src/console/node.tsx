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

const HEALTH_WORDS: Record<GpuHealth, string> = { OK: 'OK', DEGRADED: 'degraded', FAILED: 'failed' };

/**
 * A node's GPUs as small chips: the index, coloured and marked by health (a degraded
 * chip is dashed, a failed one struck through), and the whole in words for screen readers.
 */
export function GpuChips({ host, gpus }: { host: string; gpus: { index: number; health: GpuHealth }[] }) {
  if (gpus.length === 0) return <span class="muted">No GPUs</span>;
  return (
    <ul class="gpu-chips" aria-label={`GPUs of ${host}`}>
      {[...gpus]
        .sort((a, b) => a.index - b.index)
        .map((g) => (
          <li key={g.index} class={`gpu-chip gpu-${g.health.toLowerCase()}`} title={`GPU ${g.index}: ${HEALTH_WORDS[g.health]}`}>
            <span aria-hidden="true">{g.index}</span>
            <span class="sr-only">{`GPU ${g.index} ${HEALTH_WORDS[g.health]}`}</span>
          </li>
        ))}
    </ul>
  );
}
