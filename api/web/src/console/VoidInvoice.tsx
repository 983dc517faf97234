import { useState } from 'preact/hooks';
import { useMutation } from '../lib/hooks';
import { Button } from '../ui/Button';
import { Field, unclaimed } from '../ui/Field';
import { ErrorNotice } from '../ui/Notice';
import { VoidInvoice as VoidInvoiceMutation } from './operations';

/** "Void", then a reason (required, kept on the invoice) and "Confirm void". */
export function VoidInvoice({ id, number, onVoided }: { id: string; number: string; onVoided: () => void }) {
  const [open, setOpen] = useState(false);
  const [reason, setReason] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const run = useMutation(VoidInvoiceMutation);
  const submit = async (e: Event) => {
    e.preventDefault();
    setProblem(reason.trim() ? null : 'Say why it is voided.');
    if (!reason.trim()) return;
    if (await run.run({ id, reason: reason.trim() })) {
      setOpen(false);
      onVoided();
    }
  };
  if (!open) {
    return (
      <Button small variant="danger" onClick={() => setOpen(true)} aria-label={`Void invoice ${number}`}>
        Void
      </Button>
    );
  }
  return (
    <form class="inline-form" onSubmit={submit} noValidate aria-label={`Void invoice ${number}`}>
      <Field label="Reason" name="reason" error={run.error} message={problem}>
        {(p) => <input {...p} type="text" maxLength={500} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />}
      </Field>
      <div class="inline-actions">
        <Button type="submit" small variant="danger" pending={run.pending}>
          Confirm void
        </Button>
        <Button small variant="ghost" disabled={run.pending} onClick={() => setOpen(false)}>
          Cancel
        </Button>
      </div>
      <ErrorNotice error={unclaimed(run.error, ['reason'])} />
    </form>
  );
}
