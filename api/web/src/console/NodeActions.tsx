import { useMutation } from '../lib/hooks';
import { Button } from '../ui/Button';
import { ErrorNotice } from '../ui/Notice';
import { DrainNode, type NodeRowFragment, SetNodeState } from './operations';

/** Drain an active node; undrain (back to ACTIVE) a draining or down one. */
export function NodeActions({ node, onChanged }: { node: NodeRowFragment; onChanged: (n: NodeRowFragment) => void }) {
  const drain = useMutation(DrainNode);
  const activate = useMutation(SetNodeState);
  const onDrain = async () => {
    const r = await drain.run({ id: node.id });
    if (r) onChanged(r.drainNode);
  };
  const onActivate = async () => {
    const r = await activate.run({ id: node.id, state: 'ACTIVE' });
    if (r) onChanged(r.setNodeState);
  };
  return (
    <div class="inline-actions">
      {node.state === 'ACTIVE' ? (
        <Button small variant="secondary" pending={drain.pending} onClick={onDrain}>
          Drain
        </Button>
      ) : (
        <Button small variant="secondary" pending={activate.pending} onClick={onActivate}>
          {node.state === 'DRAINING' ? 'Undrain' : 'Set active'}
        </Button>
      )}
      <ErrorNotice error={drain.error ?? activate.error} />
    </div>
  );
}
