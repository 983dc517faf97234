import { useState } from 'preact/hooks';
import { type QuotaScope, QuotaScopeValues } from '../gql/schema';
import { useMutation } from '../lib/hooks';
import { Button } from '../ui/Button';
import { Field, unclaimed } from '../ui/Field';
import { ErrorNotice, Notice } from '../ui/Notice';
import { SetQuota } from './operations';

const VALUE_HINTS: Record<QuotaScope, string> = {
  GPU_MODEL: 'The GPU model, e.g. H100. Counted in GPU-equivalents.',
  SKU: 'The SKU id. Counted in GPU-equivalents.',
  REGION: 'The region, e.g. eu-west. Counted in GPU-equivalents.',
  ALLOCATIONS: 'Leave empty: counts running allocations.',
  STORAGE_GB: 'A region, or empty for all regions. Counted in GB.',
  VOLUMES: 'Leave empty: counts live volumes.',
};

const SCOPE_LABELS: Record<QuotaScope, string> = {
  GPU_MODEL: 'GPU model',
  SKU: 'SKU',
  REGION: 'Region',
  ALLOCATIONS: 'Allocations',
  STORAGE_GB: 'Storage (GB)',
  VOLUMES: 'Volumes',
};

export function scopeLabel(scope: QuotaScope): string {
  return SCOPE_LABELS[scope];
}

/** Sets a quota (the same scope and value changes it). */
export function QuotaForm({ tenantId, onSaved }: { tenantId: string; onSaved: () => void }) {
  const [scope, setScope] = useState<QuotaScope>('GPU_MODEL');
  const [value, setValue] = useState('');
  const [max, setMax] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const set = useMutation(SetQuota);
  const submit = async (e: Event) => {
    e.preventDefault();
    const n = Number(max);
    const bad = max.trim() === '' || !Number.isInteger(n) || n < 0;
    setProblem(bad ? 'Enter a whole number, 0 or more.' : null);
    setDone(null);
    if (bad) return;
    if (!(await set.run({ input: { tenantId, scope, value: value.trim(), max: n } }))) return;
    setDone(`Quota set: ${scopeLabel(scope)} ${value.trim()} at most ${n}.`);
    setValue('');
    setMax('');
    onSaved();
  };
  return (
    <form class="card inline-grid" onSubmit={submit} noValidate aria-label="Set a quota">
      <Field label="Scope" name="scope" error={set.error}>
        {(p) => (
          <select {...p} value={scope} onChange={(e) => setScope(e.currentTarget.value as QuotaScope)}>
            {QuotaScopeValues.map((s) => (
              <option key={s} value={s}>
                {scopeLabel(s)}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field label="Applies to" name="value" error={set.error} hint={VALUE_HINTS[scope]}>
        {(p) => <input {...p} type="text" autocomplete="off" value={value} onInput={(e) => setValue(e.currentTarget.value)} />}
      </Field>
      <Field label="Maximum" name="max" error={set.error} message={problem}>
        {(p) => <input {...p} type="number" inputMode="numeric" min={0} step={1} value={max} onInput={(e) => setMax(e.currentTarget.value)} />}
      </Field>
      <div class="inline-grid-actions">
        <Button type="submit" variant="primary" pending={set.pending}>
          Set quota
        </Button>
      </div>
      <div class="inline-grid-wide">
        <ErrorNotice error={unclaimed(set.error, ['scope', 'value', 'max'])} />
        {done && <Notice tone="success">{done}</Notice>}
      </div>
    </form>
  );
}
