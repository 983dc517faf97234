import { useQuery } from '../../lib/hooks';
import { HeldNotice } from '../../provider-shared/HeldNotice';
import { statementColumns } from '../../provider-shared/statements';
import { DataTable } from '../../ui/DataTable';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page } from '../../ui/Page';
import { OwnStatements, type OwnStatementRowFragment } from '../operations';
import { statementPath } from '../paths';

/** The provider's monthly statements, newest first, with their CSV and PDF. */
export function StatementsPage() {
  const { data, error, loading, reload } = useQuery(OwnStatements, {});
  return (
    <Page title="Statements" lead="One statement per month, closed within minutes of the month's end: what your hardware earned, less the platform's fees and SLA chargebacks. Each closed statement queues its payout.">
      <ErrorNotice error={error} onRetry={reload} />
      {!data && loading && <Loading label="Loading statements…" />}
      {data && (
        <>
          <HeldNotice hold={data.provider.statementHeld}>
            <p>The operator adds the missing exchange rate; the statement closes on the next sweep once it is in.</p>
          </HeldNotice>
          <DataTable
            virtual
            caption="Your statements, newest first"
            columns={statementColumns<OwnStatementRowFragment>(statementPath)}
            rows={data.providerStatements}
            rowKey={(s) => s.id}
            loading={loading}
            empty="No statements yet: the first closes once your first month with nodes has ended."
          />
        </>
      )}
    </Page>
  );
}
