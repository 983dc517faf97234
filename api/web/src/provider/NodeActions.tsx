import type { NodeState } from '../gql/schema';
import { useMutation } from '../lib/hooks';
import { Button } from '../ui/Button';
import { ConfirmButton } from '../ui/ConfirmButton';
import { ErrorNotice } from '../ui/Notice';
import { DrainOwnNode, RetireOwnNode, SetOwnNodeState } from './operations';

interface Props {
  node: { id: string; hostname: string; state: NodeState };
  onChanged: () => void;
}

const WHAT: Record<Exclude<NodeState, 'RETIRED'>, string> = {
  ACTIVE: 'Drain stops new allocations on the node for maintenance; what runs there keeps running until it ends.',
  DRAINING: 'Draining: nothing new is placed here. Return it to service once the work is done, or retire it.',
  DOWN: 'The operator marked this node down. Return it to service once it is fixed, or retire it.',
};

/**
 * Drain an active node; return a draining or down one to service, or retire it for good
 * (asked twice; refused while allocations run). A retired node has no actions.
 */
export function NodeActions({ node, onChanged }: Props) {
  const drain = useMutation(DrainOwnNode);
  const activate = useMutation(SetOwnNodeState);
  const retire = useMutation(RetireOwnNode);
  if (node.state === 'RETIRED') return null;
  const onDrain = async () => {
    if (await drain.run({ id: node.id })) onChanged();
  };
  const onActivate = async () => {
    if (await activate.run({ id: node.id, state: 'ACTIVE' })) onChanged();
  };
  // A refusal (allocations still run) keeps the question open, with its reason.
  const onRetire = async () => {
    const ok = (await retire.run({ id: node.id })) !== null;
    if (ok) onChanged();
    return ok;
  };
  return (
    <>
      <p class="section-lead muted">{WHAT[node.state]}</p>
      {node.state === 'ACTIVE' && (
        <div class="inline-actions">
          <Button small variant="secondary" pending={drain.pending} onClick={onDrain}>
            Drain
          </Button>
        </div>
      )}
      {(node.state === 'DRAINING' || node.state === 'DOWN') && (
        <>
          <p class="muted small">Retiring takes the node out of the fleet for good; it is refused while any allocation still runs there. Its history stays.</p>
          <div class="inline-actions">
            <Button small variant="primary" pending={activate.pending} onClick={onActivate}>
              Return to service
            </Button>
            <ConfirmButton label="Retire" confirmLabel="Confirm: retire for good" what={`node ${node.hostname}`} pending={retire.pending} error={retire.error} onConfirm={onRetire} />
          </div>
        </>
      )}
      <ErrorNotice error={drain.error ?? activate.error} />
    </>
  );
}
