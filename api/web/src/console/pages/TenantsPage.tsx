import { dateTime } from '../../lib/format';
import { usePaged } from '../../lib/hooks';
import { StatusBadge } from '../../ui/Badge';
import { type Column, DataTable, LoadMore } from '../../ui/DataTable';
import { Link } from '../../ui/Link';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page } from '../../ui/Page';
import { Tenants, type TenantRowFragment } from '../operations';
import { TenantActions } from '../TenantActions';

const PAGE_SIZE = 50;

/** Every tenant with its status, each linked to its page; suspend and resume. */
export function TenantsPage() {
  const paged = usePaged(Tenants, { first: PAGE_SIZE }, (r) => r.tenants);
  const changed = (t: TenantRowFragment) => paged.replace((x) => x.id === t.id, t);
  return (
    <Page title="Tenants" lead="Suspending a tenant blocks its new orders; what it runs keeps running.">
      <ErrorNotice error={paged.error} onRetry={paged.reload} />
      {paged.loading && paged.items.length === 0 ? (
        <Loading label="Loading tenants…" />
      ) : (
        <DataTable virtual caption="Tenants" hideCaption columns={columns(changed)} rows={paged.items} rowKey={(t) => t.id} loading={paged.loading} empty="No tenants yet." />
      )}
      <LoadMore hasMore={paged.hasMore} loading={paged.loading} onLoadMore={paged.loadMore} count={paged.items.length} />
    </Page>
  );
}

function columns(changed: (t: TenantRowFragment) => void): Column<TenantRowFragment>[] {
  return [
    {
      header: 'Tenant',
      cell: (t) => (
        <div class="cell-stack">
          <Link to={`/tenants/${t.id}`}>
            <strong>{t.name}</strong>
          </Link>
          <code class="muted">{t.id}</code>
        </div>
      ),
    },
    {
      header: 'Status',
      cell: (t) => (
        <div class="cell-stack">
          <StatusBadge value={t.status} />
          {t.suspensionReason && <span class="muted">{t.suspensionReason}</span>}
        </div>
      ),
    },
    { header: 'Currency', cell: (t) => t.currency },
    { header: 'Home region', cell: (t) => t.homeRegion ?? '—' },
    { header: 'Created', cell: (t) => dateTime(t.createdAt) },
    { header: 'Actions', hiddenHeader: true, cell: (t) => <TenantActions tenant={t} onChanged={changed} /> },
  ];
}
