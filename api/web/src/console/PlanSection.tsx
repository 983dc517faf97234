import { useState } from 'preact/hooks';
import { date, dateTime } from '../lib/format';
import { useMutation, useQuery } from '../lib/hooks';
import { Button } from '../ui/Button';
import { Field, unclaimed } from '../ui/Field';
import { ErrorNotice, Loading, Notice } from '../ui/Notice';
import { Section } from '../ui/Page';
import { AssignPlan, TenantPlan, type TenantPlanResult } from './operations';

type Plan = TenantPlanResult['plans'][number];

/** The plan the open period is rated with, and moving the tenant to another version. */
export function PlanSection({ tenantId, currency }: { tenantId: string; currency: string }) {
  const { data, error, loading, reload } = useQuery(TenantPlan, { tenantId });
  return (
    <Section title="Plan">
      <ErrorNotice error={error} onRetry={reload} />
      {!data && loading && <Loading label="Loading plans…" />}
      {data && (
        <>
          <p>
            This billing period is rated with <strong>{data.upcomingInvoice.plan}</strong>.
          </p>
          <AssignForm tenantId={tenantId} plans={inCurrency(data.plans, currency)} currency={currency} onAssigned={reload} />
        </>
      )}
    </Section>
  );
}

function inCurrency(plans: Plan[], currency: string): Plan[] {
  return plans.map((p) => ({ ...p, versions: p.versions.filter((v) => v.currency === currency) })).filter((p) => p.versions.length > 0);
}

function AssignForm({ tenantId, plans, currency, onAssigned }: { tenantId: string; plans: Plan[]; currency: string; onAssigned: () => void }) {
  const [version, setVersion] = useState('');
  const [done, setDone] = useState<string | null>(null);
  const assign = useMutation(AssignPlan);
  const submit = async (e: Event) => {
    e.preventDefault();
    setDone(null);
    const r = await assign.run({ tenantId, planVersionId: version });
    if (!r) return;
    setDone(`Assigned from ${dateTime(r.assignPlan.effectiveFrom)}.`);
    onAssigned();
  };
  if (plans.length === 0) return <p class="muted">{`No plan has a version in ${currency}.`}</p>;
  return (
    <form class="card inline-grid" onSubmit={submit} noValidate aria-label="Assign a plan">
      <Field label="Plan version" name="planVersionId" error={assign.error} hint={`Versions in ${currency}. The tenant moves at the later of now and the version's start.`}>
        {(p) => (
          <select {...p} value={version} onChange={(e) => setVersion(e.currentTarget.value)}>
            <option value="">Choose a version…</option>
            {plans.map((plan) => (
              <optgroup key={plan.name} label={plan.name}>
                {plan.versions.map((v) => (
                  <option key={v.id} value={v.id}>{`${plan.name} v${v.version} (${date(v.effectiveFrom)})`}</option>
                ))}
              </optgroup>
            ))}
          </select>
        )}
      </Field>
      <div class="inline-grid-actions">
        <Button type="submit" variant="primary" pending={assign.pending} disabled={version === ''}>
          Assign plan
        </Button>
      </div>
      <div class="inline-grid-wide">
        <ErrorNotice error={unclaimed(assign.error, ['planVersionId'])} />
        {done && <Notice tone="success">{done}</Notice>}
      </div>
    </form>
  );
}
