import { useQuery } from '../../lib/hooks';
import { StatementBody } from '../../provider-shared/StatementBody';
import { StatementDownloads } from '../../provider-shared/statements';
import { Link } from '../../ui/Link';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page } from '../../ui/Page';
import { ConsoleProvider, ProviderStatement } from '../operations';

/** One provider statement: its totals, its lines by kind, every line, and its CSV and PDF. */
export function ProviderStatementPage({ params }: { params: Record<string, string> }) {
  const providerId = params['id'] ?? '';
  const { data, error, loading, reload } = useQuery(ProviderStatement, { id: params['statementId'] ?? '' });
  const provider = useQuery(ConsoleProvider, { id: providerId });
  const s = data?.providerStatement;
  const name = provider.data?.provider.name;
  return (
    <Page
      title={s ? `Statement ${s.number}` : 'Statement'}
      lead={<Link to={`/providers/${encodeURIComponent(providerId)}`}>{name ? `← Provider ${name}` : '← The provider'}</Link>}
      actions={s && <StatementDownloads id={s.id} number={s.number} full />}
    >
      <ErrorNotice error={error} onRetry={reload} />
      {!s && loading && <Loading label="Loading the statement…" />}
      {s && <StatementBody statement={s} />}
    </Page>
  );
}
