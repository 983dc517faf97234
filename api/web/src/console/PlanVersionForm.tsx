import { useEffect, useRef, useState } from 'preact/hooks';
import type { ApiError } from '../lib/api';
import { compare } from '../lib/decimal';
import { dateTime } from '../lib/format';
import { useMutation } from '../lib/hooks';
import { Button } from '../ui/Button';
import { Field, unclaimed } from '../ui/Field';
import { ErrorNotice, Notice } from '../ui/Notice';
import { useFocusByName } from './focusByName';
import { CreatePlanVersion, type PlansResult, PreviewPlanVersion } from './operations';
import { PlanPreview, type Preview } from './PlanPreview';
import { type Draft, draftFrom, isPrice, latestVersion, NEW_PLAN, nextHourUtc, planName, rateProblems, sameShape, shownFields, toInput } from './planDraft';
import { AddRate, RateRows } from './RateRows';
import { type PickedTenant, TenantPicker, useTenantSearch } from './TenantPicker';

type Plan = PlansResult['plans'][number];
export type Sku = PlansResult['catalog']['skus'][number];
type Problems = Record<string, string>;

/** The names of the fields the server's INVALID_INPUT may point at (rates at their row). */
const FIELDS = ['plan', 'currency', 'effectiveFrom', 'minimumBillableSeconds', 'commitment', 'rates', 'tenantId'];

function start(plans: readonly Plan[], choice: string, effectiveFrom: string): Draft {
  const plan = plans.find((p) => p.name === choice);
  return draftFrom(plan ? plan.name : NEW_PLAN, plan ? latestVersion(plan.versions) : null, effectiveFrom);
}

/**
 * A new version of a plan: it starts from the chosen plan's latest version (every rate's
 * mode and prices editable, tiers and packages included, and the rate removable), can
 * add rates of any mode, previews what a tenant's latest finalized invoice would have
 * come to under it, and creates it.
 */
export function PlanVersionForm({ plans, skus, onCreated }: { plans: readonly Plan[]; skus: readonly Sku[]; onCreated: () => void }) {
  const [draft, setDraft] = useState<Draft>(() => start(plans, plans[0]?.name ?? NEW_PLAN, nextHourUtc(new Date())));
  const [problems, setProblems] = useState<Problems>({});
  const [tenant, setTenant] = useState<PickedTenant | null>(null);
  const tenantId = tenant?.id ?? '';
  const [active, setActive] = useState<'preview' | 'create' | null>(null);
  const [result, setResult] = useState<{ preview: Preview; tenant: string } | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const tenants = useTenantSearch();
  const preview = useMutation(PreviewPlanVersion);
  const create = useMutation(CreatePlanVersion);
  const error = active === 'preview' ? preview.error : active === 'create' ? create.error : null;
  const form = useRef<HTMLFormElement>(null);
  const focus = useFocusByName(form);
  // After a check or an answer that found problems, the first field marked takes the focus.
  useEffect(() => {
    if (Object.keys(problems).length > 0 || error?.code === 'INVALID_INPUT') form.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus();
  }, [problems, error]);
  const skuName = (id: string) => skus.find((s) => s.id === id)?.name ?? id;

  /** Any change makes the last preview and answer stale. */
  const update = (change: (d: Draft) => Draft) => {
    setDraft(change);
    setResult(null);
    setDone(null);
  };
  const set = <K extends keyof Draft>(key: K, value: Draft[K]) => update((d) => ({ ...d, [key]: value }));
  const choose = (choice: string) => {
    setDraft((d) => start(plans, choice, d.effectiveFrom));
    setProblems({});
    setResult(null);
    setDone(null);
    preview.reset();
    create.reset();
  };

  const onPreview = async () => {
    setActive('preview');
    setDone(null);
    setResult(null);
    preview.reset();
    const found = check(draft, tenantId);
    setProblems(found);
    if (Object.keys(found).length > 0) return;
    const r = await preview.run({ input: toInput(draft), tenantId });
    if (r) setResult({ preview: r.previewPlanVersion, tenant: tenant?.name ?? tenantId });
  };

  const submit = async (e: Event) => {
    e.preventDefault();
    setActive('create');
    setDone(null);
    create.reset();
    const found = check(draft, null);
    setProblems(found);
    if (Object.keys(found).length > 0) return;
    const r = await create.run({ input: toInput(draft) });
    if (!r) return;
    const v = r.createPlanVersion.planVersion;
    setDone(`Created ${v.plan} v${v.version} in ${v.currency}, in force from ${dateTime(v.effectiveFrom)}.`);
    setDraft((d) => ({ ...d, plan: v.plan, newPlan: '' }));
    onCreated();
  };

  /** Clears the marks at the fields (ours and the last answer's). */
  const unmark = () => {
    setProblems({});
    preview.reset();
    create.reset();
  };

  const message = (name: string) => problems[name] ?? null;
  return (
    <form ref={form} class="card plan-form" onSubmit={submit} noValidate aria-label="New plan version">
      <div class="inline-grid">
        <Field label="Plan" name="planChoice" hint={draft.plan === NEW_PLAN ? 'Its first version.' : 'Starts from its latest version.'}>
          {(p) => (
            <select {...p} value={draft.plan} onChange={(e) => choose(e.currentTarget.value)}>
              {plans.map((plan) => {
                const latest = latestVersion(plan.versions);
                return (
                  <option key={plan.name} value={plan.name}>
                    {latest ? `${plan.name} (latest v${latest.version}, ${latest.currency})` : plan.name}
                  </option>
                );
              })}
              <option value={NEW_PLAN}>A new plan…</option>
            </select>
          )}
        </Field>
        {draft.plan === NEW_PLAN ? (
          <Field label="New plan name" name="plan" error={error} message={message('plan')} hint="Lower case, digits and dashes.">
            {(p) => <input {...p} type="text" autocomplete="off" value={draft.newPlan} onInput={(e) => set('newPlan', e.currentTarget.value)} />}
          </Field>
        ) : (
          <FieldError name="plan" error={error} message={message('plan')} />
        )}
        <Field label="Currency" name="currency" error={error} message={message('currency')} hint="The tenants it is for are billed in it.">
          {(p) => <input {...p} type="text" autocomplete="off" maxLength={3} value={draft.currency} onInput={(e) => set('currency', e.currentTarget.value.toUpperCase())} />}
        </Field>
        <Field label="Effective from (UTC)" name="effectiveFrom" error={error} message={message('effectiveFrom')} hint="Tenants assigned to it are rated by it from then.">
          {(p) => <input {...p} type="datetime-local" value={draft.effectiveFrom} onInput={(e) => set('effectiveFrom', e.currentTarget.value)} />}
        </Field>
        <Field label="Minimum billable seconds" name="minimumBillableSeconds" error={error} message={message('minimumBillableSeconds')} hint="Shorter allocations are billed this long.">
          {(p) => <input {...p} type="number" inputMode="numeric" min={0} step={1} value={draft.minimumBillableSeconds} onInput={(e) => set('minimumBillableSeconds', e.currentTarget.value)} />}
        </Field>
        <Field label={`Monthly commitment (${draft.currency || 'currency'}, optional)`} name="commitment.monthlyMinimum" error={error} message={message('commitment.monthlyMinimum')} hint="Empty: no commitment.">
          {(p) => <input {...p} type="text" inputMode="decimal" autocomplete="off" value={draft.monthlyMinimum} onInput={(e) => set('monthlyMinimum', e.currentTarget.value)} />}
        </Field>
        <Field label="Commitment discount (%)" name="commitment.discountPct" error={error} message={message('commitment.discountPct')} hint="Off every charge while committed.">
          {(p) => <input {...p} type="text" inputMode="decimal" autocomplete="off" value={draft.discountPct} onInput={(e) => set('discountPct', e.currentTarget.value)} />}
        </Field>
      </div>

      <h3 class="subhead">Rates</h3>
      <RateRows
        rates={draft.rates}
        currency={draft.currency}
        skuName={skuName}
        error={error}
        problems={problems}
        onChange={(rates) => {
          // A tier added or removed, or a mode changed: the marks may point at other fields now.
          if (!sameShape(draft.rates, rates)) unmark();
          set('rates', rates);
        }}
        onRemove={(i) => {
          set(
            'rates',
            draft.rates.filter((_, j) => j !== i),
          );
          unmark();
        }}
      />
      <AddRate
        skus={skus.filter((s) => s.currency === draft.currency.trim().toUpperCase())}
        currency={draft.currency}
        rates={draft.rates}
        onAdd={(rate) => {
          set('rates', [...draft.rates, rate]);
          // A tiered or package rate is added without its prices: to its first input.
          const first = rate.tiersMode === 'PER_UNIT' ? undefined : shownFields(rate).find((f) => f !== 'tiers');
          if (first) focus(`rates[${draft.rates.length}].${first}`);
        }}
      />

      <h3 class="subhead">Preview</h3>
      <p class="muted small">What a tenant's latest finalized invoice would have come to with this version in force over its whole period: the same usage, tax and credits. Nothing is stored.</p>
      <div class="inline-grid">
        <TenantPicker search={tenants} value={tenant} onChange={(t) => (setTenant(t), setResult(null))} error={error} message={message('tenantId')} />
        <div class="inline-grid-actions">
          <Button pending={preview.pending} disabled={create.pending} onClick={onPreview}>
            Preview
          </Button>
        </div>
      </div>
      <ErrorNotice error={tenants.error} onRetry={tenants.reload} />
      {active === 'preview' && <ErrorNotice error={unclaimed(preview.error, FIELDS)} />}
      {active === 'preview' && <CheckAbove problems={problems} error={preview.error} />}
      {result && <PlanPreview preview={result.preview} tenant={result.tenant} />}

      <div class="form-actions">
        <Button type="submit" variant="primary" pending={create.pending} disabled={preview.pending}>
          Create version
        </Button>
        <span class="muted small">{`Creates ${planName(draft) || 'the plan'} v${nextVersion(plans, planName(draft))}: versions are never changed once created.`}</span>
      </div>
      {active === 'create' && <ErrorNotice error={unclaimed(create.error, FIELDS)} />}
      {active === 'create' && <CheckAbove problems={problems} error={create.error} />}
      {done && <Notice tone="success">{done}</Notice>}
    </form>
  );
}

/** Near the buttons, a pointer to what is marked at its field above (the server's message too). */
function CheckAbove({ problems, error }: { problems: Problems; error: ApiError | null }) {
  const count = Object.keys(problems).length;
  const claimed = error && error.code === 'INVALID_INPUT' && unclaimed(error, FIELDS) === null;
  if (count === 0 && !claimed) return null;
  return (
    <Notice tone="warning" title="Please check the form">
      <p>{claimed ? `Marked above: ${error.message}` : `${count === 1 ? 'One field is' : `${count} fields are`} marked above.`}</p>
    </Notice>
  );
}

/** A message about the plan name while the name is a choice (the server's, or ours). */
function FieldError({ name, error, message }: { name: string; error: ApiError | null; message: string | null }) {
  const text = message ?? (error && unclaimed(error, [name]) === null ? error.message : null);
  return text ? <p class="field-error">{text}</p> : null;
}

function nextVersion(plans: readonly Plan[], name: string): number {
  const plan = plans.find((p) => p.name === name);
  return (plan ? (latestVersion(plan.versions)?.version ?? 0) : 0) + 1;
}

/** The form's own checks, by field name; a tenant is needed for a preview only. */
function check(d: Draft, tenantId: string | null): Problems {
  const found: Problems = {};
  if (!planName(d)) found['plan'] = 'Name the plan, such as standard.';
  if (!/^[A-Za-z]{3}$/.test(d.currency.trim())) found['currency'] = 'A three-letter currency code, such as USD.';
  if (!d.effectiveFrom) found['effectiveFrom'] = 'Choose when it takes effect (UTC).';
  const seconds = d.minimumBillableSeconds.trim();
  if (!/^\d+$/.test(seconds)) found['minimumBillableSeconds'] = 'A whole number of seconds, 0 or more.';
  const minimum = d.monthlyMinimum.trim();
  const discount = d.discountPct.trim();
  if (minimum && !isPrice(minimum)) found['commitment.monthlyMinimum'] = 'An amount, 0 or more, such as 1000.00.';
  if (discount && !(isPrice(discount) && compare(discount, '100') <= 0)) found['commitment.discountPct'] = 'A percentage from 0 to 100.';
  else if (discount && !minimum) found['commitment.discountPct'] = 'Set a monthly commitment for the discount to apply to.';
  if (d.rates.length === 0) found['rates'] = 'Add at least one rate.';
  Object.assign(found, rateProblems(d.rates));
  if (tenantId !== null && !tenantId) found['tenantId'] = 'Choose a tenant to compare with.';
  return found;
}
