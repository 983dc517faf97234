import { useState } from 'preact/hooks';
import { useMutation } from '../lib/hooks';
import { Button } from '../ui/Button';
import { ErrorNotice } from '../ui/Notice';
import { ReleaseAllocation, type ReleaseAllocationResult } from './operations';

type Released = ReleaseAllocationResult['releaseAllocation'];

/** "Release", then "Confirm release" / "Cancel": ending an allocation takes two clicks. */
export function ReleaseButton({ id, onReleased }: { id: string; onReleased: (a: Released) => void }) {
  const [confirming, setConfirming] = useState(false);
  const release = useMutation(ReleaseAllocation);
  const confirm = async () => {
    const result = await release.run({ id });
    setConfirming(false);
    if (result) onReleased(result.releaseAllocation);
  };
  if (!confirming) {
    return (
      <div class="inline-actions">
        <Button small onClick={() => setConfirming(true)}>
          Release
        </Button>
        <ErrorNotice error={release.error} />
      </div>
    );
  }
  return (
    <div class="inline-actions" role="group" aria-label="Confirm the release">
      <Button small variant="danger" pending={release.pending} onClick={confirm}>
        Confirm release
      </Button>
      <Button small variant="ghost" disabled={release.pending} onClick={() => setConfirming(false)}>
        Cancel
      </Button>
    </div>
  );
}
