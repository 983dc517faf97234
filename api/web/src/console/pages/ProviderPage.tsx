import { useState } from 'preact/hooks';
import { type QueryState, useMutation, useQuery } from '../../lib/hooks';
import { closedNote } from '../../provider-shared/payouts';
import { ProviderDetails } from '../../provider-shared/ProviderDetails';
import { statementColumns } from '../../provider-shared/statements';
import { Button } from '../../ui/Button';
import { DataTable } from '../../ui/DataTable';
import { Link } from '../../ui/Link';
import { ErrorNotice, Loading, Notice } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { CloseProviderStatements, ConsoleProvider, type ConsoleProviderResult, ProviderPayouts, ProviderStatements, type ProviderStatementRowFragment, type ProviderStatementsResult } from '../operations';
import { PayoutsSection } from '../PayoutsSection';
import { StatementHeld } from '../StatementHeld';
import { statementPath } from '../statements';

type Provider = ConsoleProviderResult['provider'];

/** One provider: its payout details, its monthly statements (close ended months) and its payouts. */
export function ProviderPage({ params }: { params: Record<string, string> }) {
  const id = params['id'] ?? '';
  const provider = useQuery(ConsoleProvider, { id });
  const statements = useQuery(ProviderStatements, { providerId: id });
  const payouts = useQuery(ProviderPayouts, { providerId: id });
  const p = provider.data?.provider;
  const numbers = new Map((statements.data?.providerStatements ?? []).map((s) => [s.id, s.number]));
  // Closing a statement queues its payout: the payouts are read again too, and the
  // provider (a statement held for a rate says so, or no longer).
  const closed = () => {
    statements.reload();
    payouts.reload();
    provider.reload();
  };
  return (
    <Page title={p ? `Provider ${p.name}` : 'Provider'} lead={<Link to="/providers">← Every provider</Link>}>
      <ErrorNotice error={provider.error} onRetry={provider.reload} />
      {!p && provider.loading && <Loading label="Loading the provider…" />}
      {p && (
        <>
          <StatementHeld hold={p.statementHeld} />
          <Overview provider={p} />
          <StatementsSection provider={p} statements={statements} onClosed={closed} />
          <PayoutsSection provider={p} payouts={payouts} statementNumbers={numbers} />
        </>
      )}
    </Page>
  );
}

function Overview({ provider: p }: { provider: Provider }) {
  return (
    <Section title="Overview">
      <ProviderDetails provider={p} />
    </Section>
  );
}

/** The statements, newest first, and "Close ended months" (every provider's, as the sweep does). */
function StatementsSection({ provider: p, statements, onClosed }: { provider: Provider; statements: QueryState<ProviderStatementsResult>; onClosed: () => void }) {
  const close = useMutation(CloseProviderStatements);
  const [note, setNote] = useState<string | null>(null);
  const run = async () => {
    setNote(null);
    const r = await close.run({});
    if (r) {
      setNote(closedNote(r.closeProviderStatements));
      onClosed();
    }
  };
  const actions = (
    <Button small pending={close.pending} onClick={run}>
      Close ended months
    </Button>
  );
  return (
    <Section title="Statements" actions={actions}>
      <p class="section-lead muted">A month that has ended closes into a statement by itself within minutes; Close ended months does it now, for every provider. Each closed statement queues its payout.</p>
      {note && <Notice tone="success">{note}</Notice>}
      <ErrorNotice error={close.error} />
      <ErrorNotice error={statements.error} onRetry={statements.reload} />
      {!statements.data && statements.loading && <Loading label="Loading statements…" />}
      {statements.data && (
        <DataTable
          virtual
          caption={`Statements of ${p.name}, newest first`}
          hideCaption
          columns={statementColumns<ProviderStatementRowFragment>((statementId) => statementPath(p.id, statementId))}
          rows={statements.data.providerStatements}
          rowKey={(s) => s.id}
          loading={statements.loading}
          empty="No statements yet: the first closes once the provider's first month has ended."
        />
      )}
    </Section>
  );
}
