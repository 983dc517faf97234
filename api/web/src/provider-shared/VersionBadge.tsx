import { Badge, type Tone } from '../ui/Badge';
import { type VersionState, versionStateLabel } from './versions';

const TONES: Record<VersionState, Tone> = { in_force: 'good', upcoming: 'info', replaced: 'neutral' };

/** "In force", "Upcoming" or "Replaced" as a badge. */
export function VersionBadge({ state }: { state: VersionState }) {
  return <Badge tone={TONES[state]}>{versionStateLabel(state)}</Badge>;
}
