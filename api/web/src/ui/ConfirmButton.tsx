import { useState } from 'preact/hooks';
import type { ApiError } from '../lib/api';
import { Button } from './Button';
import { ErrorNotice } from './Notice';

interface ConfirmButtonProps {
  /** "Revoke": the first button. */
  label: string;
  /** "Confirm revoke": the button that runs it. */
  confirmLabel: string;
  /** Names what it acts on, for screen readers ("Revoke key ci-runner"). */
  what?: string;
  pending: boolean;
  error: ApiError | null;
  /** Runs the action; resolves true when it is done (the question closes). */
  onConfirm: () => Promise<boolean>;
}

/** A destructive action in two clicks: "Revoke", then "Confirm revoke" or "Cancel". */
export function ConfirmButton({ label, confirmLabel, what, pending, error, onConfirm }: ConfirmButtonProps) {
  const [asking, setAsking] = useState(false);
  const confirm = async () => {
    if (await onConfirm()) setAsking(false);
  };
  if (!asking) {
    return (
      <div class="inline-actions">
        <Button small onClick={() => setAsking(true)} aria-label={what ? `${label} ${what}` : undefined}>
          {label}
        </Button>
      </div>
    );
  }
  return (
    <div class="inline-actions" role="group" aria-label={what ? `${confirmLabel}: ${what}` : confirmLabel}>
      <Button small variant="danger" pending={pending} onClick={confirm}>
        {confirmLabel}
      </Button>
      <Button small variant="ghost" disabled={pending} onClick={() => setAsking(false)}>
        Cancel
      </Button>
      <ErrorNotice error={error} />
    </div>
  );
}
