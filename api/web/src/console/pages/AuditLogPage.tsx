import { useState } from 'preact/hooks';
import type { AuditFilter } from '../../gql/schema';
import { dateTime } from '../../lib/format';
import { usePaged } from '../../lib/hooks';
import { shortId } from '../../lib/ids';
import { navigate, useLocation } from '../../lib/router';
import { Button } from '../../ui/Button';
import { type Column, DataTable, LoadMore } from '../../ui/DataTable';
import { Field } from '../../ui/Field';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page } from '../../ui/Page';
import { AuditLog, type AuditLogResult } from '../operations';

type Entry = AuditLogResult['auditLog']['nodes'][number];
type Key = keyof AuditFilter;

const PAGE_SIZE = 50;

const FILTERS: [Key, string, string][] = [
  ['tenantId', 'Tenant id', 'a tenant UUID'],
  ['action', 'Action', 'e.g. tenant.suspend'],
  ['objectType', 'Object type', 'e.g. node'],
  ['objectId', 'Object id', ''],
];

/** Who did what, filtered by tenant, action and object; the filter lives in the URL. */
export function AuditLogPage() {
  const { query } = useLocation();
  const filter = filterFrom(query);
  const paged = usePaged(AuditLog, { first: PAGE_SIZE, filter }, (r) => r.auditLog);
  return (
    <Page title="Audit log" lead="Every change, oldest first, sealed into a hash chain.">
      <FilterForm current={filter} />
      <ErrorNotice error={paged.error} onRetry={paged.reload} />
      {paged.loading && paged.items.length === 0 ? (
        <Loading label="Loading the audit log…" />
      ) : (
        <DataTable virtual caption="Audit entries" hideCaption columns={COLUMNS} rows={paged.items} rowKey={(e) => e.id} loading={paged.loading} empty="No entries match." />
      )}
      <LoadMore hasMore={paged.hasMore} loading={paged.loading} onLoadMore={paged.loadMore} count={paged.items.length} />
    </Page>
  );
}

function filterFrom(query: URLSearchParams): AuditFilter {
  const filter: AuditFilter = {};
  for (const [key] of FILTERS) {
    const value = query.get(key)?.trim();
    if (value) filter[key] = value;
  }
  return filter;
}

function FilterForm({ current }: { current: AuditFilter }) {
  const [draft, setDraft] = useState<AuditFilter>(current);
  const apply = (f: AuditFilter) => {
    const params = new URLSearchParams();
    for (const [key] of FILTERS) if (f[key]?.trim()) params.set(key, f[key]!.trim());
    const qs = params.toString();
    navigate(qs ? `/audit?${qs}` : '/audit', { replace: true });
  };
  const clear = () => {
    setDraft({});
    apply({});
  };
  return (
    <form class="card filter-form" role="search" aria-label="Filter the audit log" onSubmit={(e) => (e.preventDefault(), apply(draft))}>
      {FILTERS.map(([key, label, placeholder]) => (
        <Field key={key} label={label} name={key}>
          {(p) => <input {...p} type="text" placeholder={placeholder} value={draft[key] ?? ''} onInput={(e) => setDraft({ ...draft, [key]: e.currentTarget.value })} />}
        </Field>
      ))}
      <div class="filter-actions">
        <Button type="submit" variant="primary">
          Apply filters
        </Button>
        <Button onClick={clear}>Clear</Button>
      </div>
    </form>
  );
}

const COLUMNS: Column<Entry>[] = [
  { header: 'Seq', numeric: true, cell: (e) => e.seq ?? '—' },
  { header: 'When', cell: (e) => dateTime(e.at) },
  {
    header: 'Actor',
    cell: (e) => (
      <div class="cell-stack">
        <span>{e.actorRole}</span>
        {e.actorKeyId && <code class="muted">key {shortId(e.actorKeyId)}</code>}
      </div>
    ),
  },
  { header: 'Action', cell: (e) => <code>{e.action}</code> },
  {
    header: 'Object',
    cell: (e) => (
      <div class="cell-stack">
        <span>{e.objectType}</span>
        <code class="muted">{e.objectId}</code>
      </div>
    ),
  },
  { header: 'Tenant', cell: (e) => (e.tenantId ? <code>{shortId(e.tenantId)}</code> : '—') },
  { header: 'Change', cell: (e) => <Change entry={e} /> },
];

function Change({ entry }: { entry: Entry }) {
  if (!entry.before && !entry.after) return <span class="muted">—</span>;
  return (
    <details class="change">
      <summary>Before and after</summary>
      <div class="change-body">
        <p class="muted">Before</p>
        <pre>{pretty(entry.before)}</pre>
        <p class="muted">After</p>
        <pre>{pretty(entry.after)}</pre>
      </div>
    </details>
  );
}

function pretty(json: string | null): string {
  if (!json) return '—';
  try {
    return JSON.stringify(JSON.parse(json), null, 2);
  } catch {
    return json;
  }
}
