import { date, enumLabel, money } from '../../lib/format';
import { useQuery } from '../../lib/hooks';
import { type Column, DataTable } from '../../ui/DataTable';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { Plans, type PlansResult } from '../operations';
import { PlanVersionForm } from '../PlanVersionForm';
import { metricLabel, type Rate, ratePrice } from '../rate';

type Plan = PlansResult['plans'][number];
type Version = Plan['versions'][number];

/** Every plan with its versions and rates, and a new version (previewed against a tenant's last invoice). */
export function PlansPage() {
  const { data, error, loading, reload } = useQuery(Plans, {});
  const skus = new Map((data?.catalog.skus ?? []).map((s) => [s.id, s.name]));
  return (
    <Page title="Plans" lead="What tenants pay: each plan's versions, with their minimums, commitments and rates per SKU.">
      <ErrorNotice error={error} onRetry={reload} />
      {!data && loading && <Loading label="Loading plans…" />}
      {data?.plans.length === 0 && <p class="empty">No plans: tenants pay list prices.</p>}
      {data?.plans.map((plan) => (
        <Section key={plan.name} title={`Plan ${plan.name}`}>
          {[...plan.versions].reverse().map((v) => (
            <VersionDetails key={v.id} plan={plan.name} version={v} skuName={(id) => skus.get(id) ?? id} />
          ))}
        </Section>
      ))}
      {data && (
        <Section title="New version">
          <PlanVersionForm plans={data.plans} skus={data.catalog.skus} onCreated={reload} />
        </Section>
      )}
    </Page>
  );
}

function VersionDetails({ plan, version: v, skuName }: { plan: string; version: Version; skuName: (id: string) => string }) {
  const commitment = v.commitment ? `${money(v.commitment.monthlyMinimum, v.currency)} a month minimum, ${v.commitment.discountPct}% off` : 'none';
  return (
    <details class="card version">
      <summary>
        <strong>{`${plan} v${v.version}`}</strong>
        <span class="muted">{` · ${v.currency} · from ${date(v.effectiveFrom)} · ${v.rates.length} rates · ${v.minimumBillableSeconds} s minimum billed · commitment: ${commitment}`}</span>
      </summary>
      <DataTable caption={`Rates of ${plan} v${v.version}`} hideCaption columns={columns(v.currency, skuName)} rows={v.rates} rowKey={(r) => `${r.sku}-${r.metric}`} empty="No rates: list prices apply." />
    </details>
  );
}

function columns(currency: string, skuName: (id: string) => string): Column<Rate>[] {
  return [
    { header: 'SKU', cell: (r) => skuName(r.sku) },
    { header: 'Metric', cell: (r) => metricLabel(r.metric) },
    { header: 'Tiers', cell: (r) => enumLabel(r.tiersMode) },
    { header: 'Price per unit', cell: (r) => ratePrice(r, currency) },
    { header: 'Spot', numeric: true, cell: (r) => (r.spotUnitPrice ? money(r.spotUnitPrice, currency) : '—') },
  ];
}
