import { useEffect, useRef, useState } from 'preact/hooks';
import type { GpuHealth } from '../gql/schema';
import { useMutation } from '../lib/hooks';
import { Button } from '../ui/Button';
import { Field, unclaimed } from '../ui/Field';
import { ErrorNotice } from '../ui/Notice';
import { SetGpuHealth } from './operations';

interface Props {
  gpu: { uuid: string; index: number; health: GpuHealth };
  onChanged: () => void;
}

/**
 * "Mark repaired" (back to OK) when the GPU is not OK; "Take out of service" (FAILED,
 * with a reason, confirmed) when it is not failed already.
 */
export function GpuActions({ gpu, onChanged }: Props) {
  const [asking, setAsking] = useState(false);
  const repair = useMutation(SetGpuHealth);
  const onRepair = async () => {
    if (await repair.run({ uuid: gpu.uuid, health: 'OK', reason: '' })) onChanged();
  };
  if (asking) return <TakeOut gpu={gpu} onDone={() => (setAsking(false), onChanged())} onCancel={() => setAsking(false)} />;
  return (
    <div class="inline-actions">
      {gpu.health !== 'OK' && (
        <Button small variant="primary" pending={repair.pending} onClick={onRepair} aria-label={`Mark repaired: GPU ${gpu.index}`}>
          Mark repaired
        </Button>
      )}
      {gpu.health !== 'FAILED' && (
        <Button small disabled={repair.pending} onClick={() => setAsking(true)} aria-label={`Take out of service: GPU ${gpu.index}`}>
          Take out of service
        </Button>
      )}
      <ErrorNotice error={repair.error} />
    </div>
  );
}

/** The reason (kept in the GPU's health history), then "Confirm out of service". */
function TakeOut({ gpu, onDone, onCancel }: { gpu: Props['gpu']; onDone: () => void; onCancel: () => void }) {
  const [reason, setReason] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const fail = useMutation(SetGpuHealth);
  const input = useRef<HTMLInputElement>(null);
  // The button that opened the form is gone: the focus goes to the reason.
  useEffect(() => input.current?.focus(), []);
  const submit = async (e: Event) => {
    e.preventDefault();
    const why = reason.trim();
    setProblem(why ? null : 'Say why it is taken out of service.');
    if (!why) return;
    if (await fail.run({ uuid: gpu.uuid, health: 'FAILED', reason: why })) onDone();
  };
  return (
    <form class="inline-form" onSubmit={submit} noValidate aria-label={`Take GPU ${gpu.index} out of service`}>
      <Field label="Reason" name="reason" error={fail.error} message={problem} hint="Kept in its health history.">
        {(p) => <input {...p} ref={input} type="text" maxLength={500} autocomplete="off" value={reason} onInput={(e) => setReason(e.currentTarget.value)} />}
      </Field>
      <div class="inline-actions">
        <Button type="submit" small variant="danger" pending={fail.pending}>
          Confirm out of service
        </Button>
        <Button small variant="ghost" disabled={fail.pending} onClick={onCancel}>
          Cancel
        </Button>
      </div>
      <ErrorNotice error={unclaimed(fail.error, ['reason'])} />
    </form>
  );
}
