import { useQuery } from '../../lib/hooks';
import { StatementBody } from '../../provider-shared/StatementBody';
import { StatementDownloads } from '../../provider-shared/statements';
import { Link } from '../../ui/Link';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page } from '../../ui/Page';
import { OwnStatement } from '../operations';

/** One of the provider's statements: its totals, its lines by kind, every line, and its CSV and PDF. */
export function StatementPage({ params }: { params: Record<string, string> }) {
  const { data, error, loading, reload } = useQuery(OwnStatement, { id: params['id'] ?? '' });
  const s = data?.providerStatement;
  return (
    <Page title={s ? `Statement ${s.number}` : 'Statement'} lead={<Link to="/statements">← Statements</Link>} actions={s && <StatementDownloads id={s.id} number={s.number} full />}>
      <ErrorNotice error={error} onRetry={reload} />
      {!s && loading && <Loading label="Loading the statement…" />}
      {s && <StatementBody statement={s} />}
    </Page>
  );
}
