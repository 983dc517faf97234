import { useState } from 'preact/hooks';
import { type CreditKind, CreditKindValues, type GrantCreditsInput } from '../gql/schema';
import { compare, isDecimal } from '../lib/decimal';
import { enumLabel, money } from '../lib/format';
import { useMutation } from '../lib/hooks';
import { Button } from '../ui/Button';
import { Field, unclaimed } from '../ui/Field';
import { ErrorNotice, Notice } from '../ui/Notice';
import { GrantCredits } from './operations';

interface Draft {
  kind: CreditKind;
  amount: string;
  reason: string;
  expires: string;
}

const EMPTY: Draft = { kind: 'PROMOTIONAL', amount: '', reason: '', expires: '' };
const FIELDS = ['kind', 'amount', 'reason', 'expiresAt'];

/** Grants prepaid or promotional credit, usable now, paying this period's charges. */
export function CreditForm({ tenantId, currency, onGranted }: { tenantId: string; currency: string; onGranted: () => void }) {
  const [draft, setDraft] = useState<Draft>(EMPTY);
  const [problem, setProblem] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const grant = useMutation(GrantCredits);
  const set = <K extends keyof Draft>(key: K, value: Draft[K]) => setDraft((d) => ({ ...d, [key]: value }));
  const submit = async (e: Event) => {
    e.preventDefault();
    setDone(null);
    const amount = draft.amount.trim();
    const bad = !isDecimal(amount) || compare(amount, '0') <= 0;
    setProblem(bad ? 'Enter an amount above zero, such as 250.00.' : null);
    if (bad) return;
    const input: GrantCreditsInput = { tenantId, kind: draft.kind, amount, reason: draft.reason.trim(), ...(draft.expires ? { expiresAt: `${draft.expires}T00:00:00Z` } : {}) };
    const r = await grant.run({ input });
    if (!r) return;
    setDone(`Granted ${money(r.grantCredits.amount, r.grantCredits.currency)} of ${enumLabel(r.grantCredits.kind).toLowerCase()} credit.`);
    setDraft(EMPTY);
    onGranted();
  };
  return (
    <form class="card inline-grid" onSubmit={submit} noValidate aria-label="Grant credits">
      <Field label="Kind" name="kind" error={grant.error}>
        {(p) => (
          <select {...p} value={draft.kind} onChange={(e) => set('kind', e.currentTarget.value as CreditKind)}>
            {CreditKindValues.map((k) => (
              <option key={k} value={k}>
                {enumLabel(k)}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field label={`Amount (${currency})`} name="amount" error={grant.error} message={problem}>
        {(p) => <input {...p} type="text" inputMode="decimal" autocomplete="off" value={draft.amount} onInput={(e) => set('amount', e.currentTarget.value)} />}
      </Field>
      <Field label="Reason" name="reason" error={grant.error}>
        {(p) => <input {...p} type="text" autocomplete="off" value={draft.reason} onInput={(e) => set('reason', e.currentTarget.value)} />}
      </Field>
      <Field label="Expires (optional)" name="expiresAt" error={grant.error} hint="At 00:00 UTC that day.">
        {(p) => <input {...p} type="date" value={draft.expires} onInput={(e) => set('expires', e.currentTarget.value)} />}
      </Field>
      <div class="inline-grid-actions">
        <Button type="submit" variant="primary" pending={grant.pending}>
          Grant credits
        </Button>
      </div>
      <div class="inline-grid-wide">
        <ErrorNotice error={unclaimed(grant.error, FIELDS)} />
        {done && <Notice tone="success">{done}</Notice>}
      </div>
    </form>
  );
}
