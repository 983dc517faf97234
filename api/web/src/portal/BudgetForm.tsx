import { useState } from 'preact/hooks';
import type { BudgetInput } from '../gql/schema';
import { compare, isDecimal } from '../lib/decimal';
import { useMutation } from '../lib/hooks';
import { Button } from '../ui/Button';
import { Check } from '../ui/Check';
import { Field, unclaimed } from '../ui/Field';
import { ErrorNotice } from '../ui/Notice';
import { type BudgetDetailFragment, SetBudget } from './operations';

interface Draft {
  limit: string;
  thresholds: string;
  hardCap: boolean;
  stopAllocations: boolean;
  webhookUrl: string;
  rotate: boolean;
}

type Problems = Partial<Record<'monthlyLimit' | 'alertThresholds', string>>;

const FIELDS = ['monthlyLimit', 'alertThresholds', 'webhookUrl', 'hardCap', 'stopAllocations'];

function draftOf(b: BudgetDetailFragment | null): Draft {
  return {
    limit: b?.monthlyLimit ?? '',
    thresholds: (b?.alertThresholds ?? [50, 80, 100]).join(', '),
    hardCap: b?.hardCap ?? false,
    stopAllocations: b?.stopAllocations ?? false,
    webhookUrl: b?.webhookUrl ?? '',
    rotate: false,
  };
}

/** Sets (creates or replaces) the budget; the parent shows a new webhook secret once. */
export function BudgetForm({ budget, currency, onSaved }: { budget: BudgetDetailFragment | null; currency: string; onSaved: (secret: string | null) => void }) {
  const [draft, setDraft] = useState<Draft>(() => draftOf(budget));
  const [problems, setProblems] = useState<Problems>({});
  const save = useMutation(SetBudget);
  const set = <K extends keyof Draft>(key: K, value: Draft[K]) => setDraft((d) => ({ ...d, [key]: value }));
  const submit = async (e: Event) => {
    e.preventDefault();
    const checked = check(draft);
    setProblems(checked.problems);
    if (!checked.input) return;
    const r = await save.run({ input: checked.input });
    if (!r) return;
    setDraft(draftOf(r.setBudget.budget));
    onSaved(r.setBudget.webhookSecret);
  };
  return (
    <form class="card form-card" onSubmit={submit} noValidate aria-label="Budget">
      <Field label={`Monthly limit (${currency})`} name="monthlyLimit" error={save.error} message={problems.monthlyLimit} hint="Per billing period: usage and fees, before credits.">
        {(p) => <input {...p} type="text" inputMode="decimal" autocomplete="off" placeholder="e.g. 5000.00" value={draft.limit} onInput={(e) => set('limit', e.currentTarget.value)} />}
      </Field>
      <Field label="Alert thresholds (% of the limit)" name="alertThresholds" error={save.error} message={problems.alertThresholds} hint="Whole percentages separated by commas; each alerts once a period.">
        {(p) => <input {...p} type="text" inputMode="numeric" autocomplete="off" value={draft.thresholds} onInput={(e) => set('thresholds', e.currentTarget.value)} />}
      </Field>
      <Check label="Hard cap: refuse new orders once the limit is reached" checked={draft.hardCap} onChange={(v) => set('hardCap', v)} />
      {draft.hardCap && <Check label="Also stop running allocations when no prepaid credit is left" checked={draft.stopAllocations} onChange={(v) => set('stopAllocations', v)} />}
      <Field label="Alert webhook URL (optional)" name="webhookUrl" error={save.error} hint="Budget alerts are also sent here, signed; a public http(s) address.">
        {(p) => <input {...p} type="url" autocomplete="off" placeholder="https://example.com/hooks/budget" value={draft.webhookUrl} onInput={(e) => set('webhookUrl', e.currentTarget.value)} />}
      </Field>
      {budget?.webhookUrl && draft.webhookUrl.trim() !== '' && <Check label="Issue a new webhook signing secret" checked={draft.rotate} onChange={(v) => set('rotate', v)} />}
      <ErrorNotice error={unclaimed(save.error, FIELDS)} />
      <Button type="submit" variant="primary" pending={save.pending}>
        Save budget
      </Button>
    </form>
  );
}

function check(d: Draft): { problems: Problems; input: BudgetInput | null } {
  const problems: Problems = {};
  const limit = d.limit.trim();
  if (!isDecimal(limit) || compare(limit, '0') <= 0) problems.monthlyLimit = 'Enter an amount above zero, such as 5000.00.';
  const parts = d.thresholds.split(',').map((t) => t.trim()).filter(Boolean);
  const thresholds = parts.map(Number);
  if (thresholds.some((t) => !Number.isInteger(t) || t < 1 || t > 1000)) problems.alertThresholds = 'Use whole percentages between 1 and 1000, e.g. 50, 80, 100.';
  if (Object.keys(problems).length > 0) return { problems, input: null };
  const url = d.webhookUrl.trim();
  return {
    problems,
    input: {
      monthlyLimit: limit,
      alertThresholds: thresholds,
      hardCap: d.hardCap,
      stopAllocations: d.hardCap && d.stopAllocations,
      rotateWebhookSecret: d.rotate,
      ...(url ? { webhookUrl: url } : {}),
    },
  };
}
