import { useState } from 'preact/hooks';
import { useMutation } from '../lib/hooks';
import { Button } from '../ui/Button';
import { ErrorNotice } from '../ui/Notice';
import { DrainNode, type NodeRowFragment, RetireNode, SetNodeState } from './operations';

/**
 * Drain an active node; undrain (back to ACTIVE) a draining or down one, or retire it for
 * good once nothing runs there (asked twice). A retired node has no actions.
 */
export function NodeActions({ node, onChanged }: { node: NodeRowFragment; onChanged: (n: NodeRowFragment) => void }) {
  const drain = useMutation(DrainNode);
  const activate = useMutation(SetNodeState);
  const retire = useMutation(RetireNode);
  const [confirming, setConfirming] = useState(false);
  if (node.state === 'RETIRED') return null;
  const onDrain = async () => {
    const r = await drain.run({ id: node.id });
    if (r) onChanged(r.drainNode);
  };
  const onActivate = async () => {
    const r = await activate.run({ id: node.id, state: 'ACTIVE' });
    if (r) onChanged(r.setNodeState);
  };
  const onRetire = async () => {
    const r = await retire.run({ id: node.id });
    setConfirming(false);
    if (r) onChanged(r.retireNode);
  };
  return (
    <div class="inline-actions">
      {node.state === 'ACTIVE' ? (
        <Button small variant="secondary" pending={drain.pending} onClick={onDrain}>
          Drain
        </Button>
      ) : (
        <>
          <Button small variant="secondary" pending={activate.pending} onClick={onActivate}>
            {node.state === 'DRAINING' ? 'Undrain' : 'Set active'}
          </Button>
          {confirming ? (
            <Button small variant="danger" pending={retire.pending} onClick={onRetire}>
              Retire {node.hostname} for good
            </Button>
          ) : (
            <Button small variant="secondary" onClick={() => setConfirming(true)}>
              Retire…
            </Button>
          )}
        </>
      )}
      <ErrorNotice error={drain.error ?? activate.error ?? retire.error} />
    </div>
  );
}
