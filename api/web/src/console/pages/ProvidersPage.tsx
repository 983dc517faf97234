import { enumLabel } from '../../lib/format';
import { useQuery } from '../../lib/hooks';
import { AGREEMENT_COLUMNS } from '../../provider-shared/agreements';
import { type Column, DataTable } from '../../ui/DataTable';
import { Link } from '../../ui/Link';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { EXCHANGE_RATES_PATH } from '../exchangeRates';
import { Providers, type ProvidersResult, ProviderTerms, type ProviderTermsResult } from '../operations';
import { StatementHeld } from '../StatementHeld';

type Provider = ProvidersResult['providers'][number];
type OwnNode = ProviderTermsResult['providerNodes'][number];

/** The companies whose hardware is resold, with their terms and nodes (read-only). */
export function ProvidersPage() {
  const { data, error, loading, reload } = useQuery(Providers, {});
  return (
    <Page
      title="Providers"
      lead="Whose hardware the fleet is: each provider's payout details, terms by version, and nodes; its statements and payouts on its own page."
      actions={
        <Link class="btn btn-secondary" to={EXCHANGE_RATES_PATH}>
          Exchange rates
        </Link>
      }
    >
      <ErrorNotice error={error} onRetry={reload} />
      {!data && loading && <Loading label="Loading providers…" />}
      {data?.providers.length === 0 && <p class="empty">No providers yet: nodes registered without one belong to the operator.</p>}
      {data?.providers.map((p) => (
        <ProviderSection key={p.id} provider={p} />
      ))}
    </Page>
  );
}

function ProviderSection({ provider: p }: { provider: Provider }) {
  const { data, error, reload } = useQuery(ProviderTerms, { providerId: p.id });
  const where = [p.country, p.currency, enumLabel(p.payoutMethod)].filter(Boolean).join(' · ');
  return (
    <Section title={`Provider ${p.name}`}>
      <p>
        <strong>{p.legalName}</strong> <span class="muted">{where}</span>
      </p>
      <StatementHeld hold={p.statementHeld} title={`The next statement of ${p.name} is held`} />
      <p>
        <Link to={`/providers/${encodeURIComponent(p.id)}`}>Statements and payouts of {p.name} →</Link>
      </p>
      <ErrorNotice error={error} onRetry={reload} />
      {data && (
        <>
          <DataTable caption={`Agreements of ${p.name}`} columns={AGREEMENT_COLUMNS} rows={[...data.providerAgreements].reverse()} rowKey={(a) => a.id} empty="No agreement yet." />
          <DataTable virtual caption={`Nodes of ${p.name}`} columns={NODE_COLUMNS} rows={data.providerNodes} rowKey={(n) => n.hostname} empty="No nodes." />
        </>
      )}
    </Section>
  );
}

const NODE_COLUMNS: Column<OwnNode>[] = [
  { header: 'Node', cell: (n) => n.hostname },
  { header: 'Region', cell: (n) => n.region },
  { header: 'State', cell: (n) => enumLabel(n.state) },
  { header: 'GPUs in use', numeric: true, cell: (n) => `${n.gpusInUse} of ${n.gpus.length}` },
];
