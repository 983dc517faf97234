import { useQuery } from '../../lib/hooks';
import { payoutColumns } from '../../provider-shared/payoutColumns';
import { DataTable } from '../../ui/DataTable';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page } from '../../ui/Page';
import { OwnPayouts, type OwnPayoutsResult } from '../operations';
import { statementPath } from '../paths';

type Payout = OwnPayoutsResult['providerPayouts'][number];

/** The provider's payouts, newest first, each with the statement that made it due. */
export function PayoutsPage() {
  const { data, error, loading, reload } = useQuery(OwnPayouts, {});
  const numbers = new Map((data?.providerStatements ?? []).map((s) => [s.id, s.number]));
  return (
    <Page title="Payouts" lead="A closed statement queues a payout once you are owed at least your agreement's minimum; a failed payout is owed again and paid with the next.">
      <ErrorNotice error={error} onRetry={reload} />
      {!data && loading && <Loading label="Loading payouts…" />}
      {data && (
        <DataTable
          virtual
          caption="Your payouts, newest first"
          columns={payoutColumns<Payout>(statementPath, numbers)}
          rows={data.providerPayouts}
          rowKey={(p) => p.id}
          loading={loading}
          empty="No payouts yet: a closed statement queues one once you are owed at least your agreement's minimum."
        />
      )}
    </Page>
  );
}
