import { useState } from 'preact/hooks';
import { enumLabel } from '../../lib/format';
import { usePaged, useQuery } from '../../lib/hooks';
import { StatusBadge } from '../../ui/Badge';
import { type Column, DataTable, LoadMore } from '../../ui/DataTable';
import { Link } from '../../ui/Link';
import { Stat } from '../../ui/Stat';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { FleetTopology } from '../FleetTopology';
import { NodeActions } from '../NodeActions';
import { GpuHealthSummary } from '../node';
import { FleetOverview, type FleetOverviewResult, Nodes, type NodesResult } from '../operations';
import { ShareBar } from '../share';

type NodeRow = NodesResult['nodes']['nodes'][number];
type Capacity = FleetOverviewResult['fleetOverview']['capacity'][number];

const PAGE_SIZE = 25;

/** The fleet at a glance, as a tree of its NVLink domains, and every node with drain and undrain. */
export function FleetPage() {
  const overview = useQuery(FleetOverview, {}, { pollMs: 30_000 });
  const nodes = usePaged(Nodes, { first: PAGE_SIZE }, (r) => r.nodes);
  const [generation, setGeneration] = useState(0);
  const changed = (node: NodeRow) => {
    nodes.replace((n) => n.id === node.id, node);
    overview.reload();
    setGeneration((g) => g + 1);
  };
  return (
    <Page title="Fleet" lead="Nodes by state, GPUs by health and allocated capacity per region and model.">
      <ErrorNotice error={overview.error} onRetry={overview.reload} />
      {overview.data && <Overview data={overview.data.fleetOverview} />}
      <Section title="Topology">
        <p class="muted section-lead">Region → rack → NVLink domain. Open a domain to see its nodes and their GPUs.</p>
        <FleetTopology generation={generation} />
      </Section>
      <Section title="Nodes">
        <ErrorNotice error={nodes.error} onRetry={nodes.reload} />
        {nodes.loading && nodes.items.length === 0 ? (
          <Loading label="Loading nodes…" />
        ) : (
          <DataTable virtual caption="Registered nodes" hideCaption columns={nodeColumns(changed)} rows={nodes.items} rowKey={(n) => n.id} loading={nodes.loading} empty="No nodes are registered." />
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

const CAPACITY_COLUMNS: Column<Capacity>[] = [
  { header: 'Region', cell: (c) => c.region },
  { header: 'GPU model', cell: (c) => c.gpuModel },
  { header: 'GPUs', numeric: true, cell: (c) => c.gpus },
  { header: 'Allocated', numeric: true, cell: (c) => c.allocatedGpus },
  { header: 'Share', cell: (c) => <ShareBar share={c.allocatedShare} /> },
];

function nodeColumns(changed: (n: NodeRow) => void): Column<NodeRow>[] {
  return [
    {
      header: 'Hostname',
      cell: (n) => (
        <div class="cell-stack">
          <Link to={`/nodes/${n.id}`}>
            <strong>{n.hostname}</strong>
          </Link>
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
