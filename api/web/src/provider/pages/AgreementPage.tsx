import { useMemo } from 'preact/hooks';
import { date, enumLabel, money } from '../../lib/format';
import { useQuery } from '../../lib/hooks';
import { AGREEMENT_COLUMNS } from '../../provider-shared/agreements';
import { ProviderDetails } from '../../provider-shared/ProviderDetails';
import { VersionBadge } from '../../provider-shared/VersionBadge';
import { newestFirst, type VersionState, versionStates } from '../../provider-shared/versions';
import { type Column, DataTable } from '../../ui/DataTable';
import { DescriptionList } from '../../ui/DescriptionList';
import { ErrorNotice, Loading, Notice } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { OwnAgreement, type OwnAgreementResult } from '../operations';

type Agreement = OwnAgreementResult['providerAgreements'][number];
type Rate = Agreement['fixedRates'][number];

/** The provider's terms: the agreement in force, every version, and its own details. */
export function AgreementPage() {
  const { data, error, loading, reload } = useQuery(OwnAgreement, {});
  const versions = useMemo(() => newestFirst(data?.providerAgreements ?? []), [data]);
  // What is in force is judged when the agreements were read.
  const states = useMemo(() => versionStates(versions, new Date()), [versions]);
  const current = versions.find((a) => states.get(a) === 'in_force');
  return (
    <Page title="Agreement" lead="The terms your earnings are computed by. The operator sets each new version, in force from its start; every statement line names the version it was computed by.">
      <ErrorNotice error={error} onRetry={reload} />
      {!data && loading && <Loading label="Loading your agreement…" />}
      {data && (
        <>
          <Section title="In force">
            {current ? (
              <Terms agreement={current} />
            ) : (
              <Notice title="No agreement in force yet">
                <p>No version has started yet: the operator sets your terms, each version in force from its start.</p>
              </Notice>
            )}
          </Section>
          <Section title="Every version">
            <DataTable caption="Versions of your agreement, newest first" hideCaption columns={versionColumns(states)} rows={versions} rowKey={(a) => a.id} empty="No agreement yet." />
          </Section>
          <Section title="Your details">
            <ProviderDetails provider={data.provider} />
            <p class="muted small">The operator keeps these details; ask them to change your legal or payout details.</p>
          </Section>
        </>
      )}
    </Page>
  );
}

function versionColumns(states: ReadonlyMap<Agreement, VersionState>): Column<Agreement>[] {
  return [{ header: 'Status', cell: (a) => <VersionBadge state={states.get(a) ?? 'replaced'} /> }, ...AGREEMENT_COLUMNS];
}

/** What a credit note the operator gives a tenant does to what you earned. */
function creditNotesInWords(a: Agreement): string {
  if (a.model === 'REVENUE_SHARE') return 'Shared: your share is of what tenants pay after credit notes';
  return a.creditNotesShared
    ? 'Shared: a note takes back the same part of what an allocation earned you as it gave back of its invoice'
    : 'Not shared: the hours your hardware served keep what they earned';
}

function Terms({ agreement: a }: { agreement: Agreement }) {
  const revenueShare = a.model === 'REVENUE_SHARE';
  const earns: [string, string] = revenueShare
    ? ['Revenue share', `${a.revenueSharePercent ?? '—'}% of what tenants are invoiced for your hardware`]
    : ['Fixed rates', `${a.fixedRates.length} ${a.fixedRates.length === 1 ? 'price' : 'prices'} per unit-hour, by form and region (below)`];
  return (
    <>
      <DescriptionList
        items={[
          ['Version', `v${a.version}, from ${date(a.effectiveFrom)}`],
          ['Model', enumLabel(a.model)],
          earns,
          ['Platform fee', `${a.platformFeePercent}% of your gross`],
          ['SLA credits borne by', a.slaCreditsBorneBy === 'PROVIDER' ? "You: a failed GPU's SLA credit is charged back" : 'The platform'],
          ['Payout schedule', enumLabel(a.payoutSchedule)],
          ['Payout minimum', `${money(a.payoutMinimum, a.currency)} (less carries over)`],
          ['Hold until paid', a.holdUntilPaid ? "Yes: only what tenants' paid invoices earned is paid out" : 'No'],
          ['Credit notes', creditNotesInWords(a)],
          ['Currency', a.currency],
        ]}
      />
      {!revenueShare && (
        <>
          <h3 class="subhead">Fixed rates</h3>
          <DataTable caption={`Fixed rates of version ${a.version}, per unit-hour`} hideCaption columns={rateColumns(a.currency)} rows={a.fixedRates} rowKey={(r) => `${r.form}-${r.region}`} empty="No rates." compact />
        </>
      )}
    </>
  );
}

function rateColumns(currency: string): Column<Rate>[] {
  return [
    { header: 'Form', cell: (r) => enumLabel(r.form) },
    { header: 'Region', cell: (r) => r.region },
    { header: 'Per unit-hour', numeric: true, cell: (r) => money(r.pricePerUnitHour, currency) },
  ];
}
