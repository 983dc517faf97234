import { useState } from 'preact/hooks';
import { type AllocationStatus, AllocationStatusValues } from '../../gql/schema';
import { dateTime, enumLabel, since } from '../../lib/format';
import { usePaged } from '../../lib/hooks';
import { shortId } from '../../lib/ids';
import { StatusBadge } from '../../ui/Badge';
import { type Column, DataTable, LoadMore } from '../../ui/DataTable';
import { Flash } from '../../ui/Flash';
import { Link } from '../../ui/Link';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page } from '../../ui/Page';
import { canChange, useViewer } from '../../ui/viewer';
import { type AllocationRow, gpuSummary, HealthBadge, releasable } from '../allocation';
import { Allocations } from '../operations';
import { ReleaseButton } from '../ReleaseButton';

const PAGE_SIZE = 25;

/** The tenant's allocations, filterable by status, with where they run and their GPUs' health. */
export function AllocationsPage() {
  const viewer = useViewer();
  const [status, setStatus] = useState<AllocationStatus | ''>('ACTIVE');
  const paged = usePaged(Allocations, { first: PAGE_SIZE, status: status || null }, (r) => r.allocations);
  const onReleased = (a: AllocationRow) => (released: { id: string; status: AllocationStatus; endedAt: string | null }) =>
    paged.replace((x) => x.id === a.id, { ...a, ...released });
  return (
    <Page title="Allocations" lead="What you are running, where it runs, and the health of its GPUs." actions={<Link class="btn btn-primary" to="/">Order GPUs</Link>}>
      <Flash />
      <div class="toolbar">
        <label for="status-filter">Status</label>
        <select id="status-filter" value={status} onChange={(e) => setStatus(e.currentTarget.value as AllocationStatus | '')}>
          <option value="">All</option>
          {AllocationStatusValues.map((s) => (
            <option key={s} value={s}>
              {enumLabel(s)}
            </option>
          ))}
        </select>
      </div>
      <ErrorNotice error={paged.error} onRetry={paged.reload} />
      {paged.loading && paged.items.length === 0 ? (
        <Loading label="Loading allocations…" />
      ) : (
        <DataTable virtual caption="Allocations" hideCaption columns={columns(canChange(viewer), onReleased)} rows={paged.items} rowKey={(a) => a.id} loading={paged.loading} empty={status ? `No ${enumLabel(status).toLowerCase()} allocations.` : 'No allocations yet.'} />
      )}
      <LoadMore hasMore={paged.hasMore} loading={paged.loading} onLoadMore={paged.loadMore} count={paged.items.length} />
    </Page>
  );
}

type OnReleased = (a: AllocationRow) => (released: { id: string; status: AllocationStatus; endedAt: string | null }) => void;

function columns(mayChange: boolean, onReleased: OnReleased): Column<AllocationRow>[] {
  const cols: Column<AllocationRow>[] = [
    {
      header: 'Allocation',
      cell: (a) => (
        <div class="cell-stack">
          <Link to={`/allocations/${a.id}`}>
            <span class="sr-only">Allocation </span>
            <code>{shortId(a.id)}</code>
          </Link>
          <span class="muted">
            {a.sku.name} · {enumLabel(a.class)}
          </span>
        </div>
      ),
    },
    { header: 'Status', cell: (a) => <StatusBadge value={a.status} /> },
    {
      header: 'Where',
      cell: (a) => (
        <div class="cell-stack">
          <span>
            {a.node.region} · rack {a.node.rack}
          </span>
          <span class="muted">{a.node.hostname}</span>
        </div>
      ),
    },
    {
      header: 'GPUs',
      cell: (a) => (
        <div class="cell-stack">
          <span>{gpuSummary(a)}</span>
          <HealthBadge gpus={a.gpus} />
        </div>
      ),
    },
    {
      header: 'Started',
      cell: (a) => (
        <div class="cell-stack">
          <span>{dateTime(a.startedAt)}</span>
          <span class="muted">{a.endedAt ? `ended ${dateTime(a.endedAt)}` : `running ${since(a.startedAt)}`}</span>
        </div>
      ),
    },
    { header: 'Access', cell: (a) => <StatusBadge value={a.access.state} /> },
  ];
  if (mayChange) cols.push({ header: 'Actions', hiddenHeader: true, cell: (a) => releasable(a) && <ReleaseButton id={a.id} onReleased={onReleased(a)} /> });
  return cols;
}
