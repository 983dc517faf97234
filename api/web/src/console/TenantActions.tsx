import { useState } from 'preact/hooks';
import { useMutation } from '../lib/hooks';
import { Button } from '../ui/Button';
import { Field, unclaimed } from '../ui/Field';
import { ErrorNotice } from '../ui/Notice';
import { ResumeTenant, SuspendTenant, type TenantRowFragment } from './operations';

type Props = { tenant: TenantRowFragment; onChanged: (t: TenantRowFragment) => void };

/** Suspend (with a reason the tenant sees) or resume a tenant. */
export function TenantActions({ tenant, onChanged }: Props) {
  return tenant.status === 'SUSPENDED' ? <Resume tenant={tenant} onChanged={onChanged} /> : <Suspend tenant={tenant} onChanged={onChanged} />;
}

function Resume({ tenant, onChanged }: Props) {
  const resume = useMutation(ResumeTenant);
  const run = async () => {
    const r = await resume.run({ id: tenant.id });
    if (r) onChanged(r.resumeTenant);
  };
  return (
    <div class="inline-actions">
      <Button small pending={resume.pending} onClick={run}>
        Resume
      </Button>
      <ErrorNotice error={resume.error} />
    </div>
  );
}

function Suspend({ tenant, onChanged }: Props) {
  const [open, setOpen] = useState(false);
  const [reason, setReason] = useState('');
  const suspend = useMutation(SuspendTenant);
  const submit = async (e: Event) => {
    e.preventDefault();
    const r = await suspend.run({ id: tenant.id, reason: reason.trim() });
    if (r) {
      setOpen(false);
      onChanged(r.suspendTenant);
    }
  };
  if (!open) {
    return (
      <Button small variant="danger" onClick={() => setOpen(true)}>
        Suspend
      </Button>
    );
  }
  return (
    <form class="inline-form" onSubmit={submit} aria-label={`Suspend ${tenant.name}`}>
      <Field label="Reason (shown to the tenant)" name="reason" error={suspend.error}>
        {(p) => <input {...p} type="text" value={reason} onInput={(e) => setReason(e.currentTarget.value)} />}
      </Field>
      <div class="inline-actions">
        <Button type="submit" small variant="danger" pending={suspend.pending}>
          Confirm suspension
        </Button>
        <Button small variant="ghost" disabled={suspend.pending} onClick={() => setOpen(false)}>
          Cancel
        </Button>
      </div>
      <ErrorNotice error={unclaimed(suspend.error, ['reason'])} />
    </form>
  );
}
