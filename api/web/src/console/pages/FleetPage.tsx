import { divide, multiply } from '../../lib/decimal';
import { enumLabel } from '../../lib/format';
import { usePaged, useQuery } from '../../lib/hooks';
import { StatusBadge } from '../../ui/Badge';
import { type Column, DataTable, LoadMore } from '../../ui/DataTable';
import { Stat } from '../../ui/Stat';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { NodeActions } from '../NodeActions';
import { GpuHealthSummary } from '../node';
import { FleetOverview, type FleetOverviewResult, Nodes, type NodesResult } from '../operations';

type NodeRow = NodesResult['nodes']['nodes'][number];
type Capacity = FleetOverviewResult['fleetOverview']['capacity'][number];

const PAGE_SIZE = 25;

/** The fleet at a glance, and every node with drain and undrain. */
export function FleetPage() {
  const overview = useQuery(FleetOverview, {}, { pollMs: 30_000 });
  const nodes = usePaged(Nodes, { first: PAGE_SIZE }, (r) => r.nodes);
  const changed = (node: NodeRow) => {
    nodes.replace((n) => n.id === node.id, node);
    overview.reload();
  };
  return (
    <Page title="Fleet" lead="Nodes by state, GPUs by health and allocated capacity per region and model.">
      <ErrorNotice error={overview.error} onRetry={overview.reload} />
      {overview.data && <Overview data={overview.data.fleetOverview} />}
      <Section title="Nodes">
        <ErrorNotice error={nodes.error} onRetry={nodes.reload} />
        {nodes.loading && nodes.items.length === 0 ? (
          <Loading label="Loading nodes…" />
        ) : (
          <DataTable caption="Registered nodes" hideCaption columns={nodeColumns(changed)} rows={nodes.items} rowKey={(n) => n.id} loading={nodes.loading} empty="No nodes are registered." />
        )}
        <LoadMore hasMore={nodes.hasMore} loading={nodes.loading} onLoadMore={nodes.loadMore} count={nodes.items.length} />
      </Section>
    </Page>
  );
}

function Overview({ data }: { data: FleetOverviewResult['fleetOverview'] }) {
  const count = (list: { key: string; count: number }[], key: string) => list.find((c) => c.key.toUpperCase() === key)?.count ?? 0;
  const nodes = data.nodesByState.reduce((n, c) => n + c.count, 0);
  const gpus = data.gpusByHealth.reduce((n, c) => n + c.count, 0);
  return (
    <>
      <div class="stats">
        <Stat label="Nodes" value={nodes} note={data.nodesByState.map((c) => `${c.count} ${enumLabel(c.key).toLowerCase()}`).join(' · ') || 'none'} />
        <Stat label="GPUs" value={gpus} note={data.gpusByHealth.map((c) => `${c.count} ${enumLabel(c.key).toLowerCase()}`).join(' · ') || 'none'} />
        <Stat label="Draining" value={count(data.nodesByState, 'DRAINING')} note={`${count(data.nodesByState, 'DOWN')} down`} />
        <Stat label="Failed GPUs" value={count(data.gpusByHealth, 'FAILED')} note={`${count(data.gpusByHealth, 'DEGRADED')} degraded`} />
      </div>
      <Section title="Capacity">
        <DataTable caption="Allocated capacity per region and GPU model" hideCaption columns={CAPACITY_COLUMNS} rows={data.capacity} rowKey={(c) => `${c.region}-${c.gpuModel}`} empty="No capacity registered." />
      </Section>
    </>
  );
}

/** allocatedShare ("0.625") as a percentage string ("62.5%"), exactly. */
function percent(share: string): string {
  return `${divide(multiply(share, 100), '1', 1)}%`;
}

const CAPACITY_COLUMNS: Column<Capacity>[] = [
  { header: 'Region', cell: (c) => c.region },
  { header: 'GPU model', cell: (c) => c.gpuModel },
  { header: 'GPUs', numeric: true, cell: (c) => c.gpus },
  { header: 'Allocated', numeric: true, cell: (c) => c.allocatedGpus },
  { header: 'Share', cell: (c) => <ShareBar share={c.allocatedShare} /> },
];

function ShareBar({ share }: { share: string }) {
  const pct = Math.min(100, Math.max(0, Number(share) * 100));
  return (
    <span class="share">
      <span class="share-track" aria-hidden="true">
        <span class="share-fill" style={{ width: `${pct}%` }} />
      </span>
      {percent(share)}
    </span>
  );
}

function nodeColumns(changed: (n: NodeRow) => void): Column<NodeRow>[] {
  return [
    {
      header: 'Hostname',
      cell: (n) => (
        <div class="cell-stack">
          <strong>{n.hostname}</strong>
          <code class="muted">{n.id}</code>
        </div>
      ),
    },
    { header: 'Region', cell: (n) => `${n.region} / ${n.zone}` },
    { header: 'Rack', cell: (n) => n.rack },
    { header: 'State', cell: (n) => <StatusBadge value={n.state} /> },
    { header: 'GPUs', numeric: true, cell: (n) => `${n.gpus.length} × ${n.gpuModel}` },
    { header: 'Health', cell: (n) => <GpuHealthSummary gpus={n.gpus} /> },
    { header: 'Actions', hiddenHeader: true, cell: (n) => <NodeActions node={n} onChanged={changed} /> },
  ];
}
