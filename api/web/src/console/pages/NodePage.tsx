import { useState } from 'preact/hooks';
import { dateTime } from '../../lib/format';
import { useQuery } from '../../lib/hooks';
import { VerificationStatus } from '../../provider-shared/node';
import { StatusBadge } from '../../ui/Badge';
import { type Column, DataTable } from '../../ui/DataTable';
import { DescriptionList } from '../../ui/DescriptionList';
import { Link } from '../../ui/Link';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { GpuActions } from '../GpuActions';
import { NodeActions } from '../NodeActions';
import { GpuHealthSummary } from '../node';
import { ConsoleNode, type ConsoleNodeResult, GpuHistory, type GpuHistoryResult } from '../operations';
import { XidTimeline } from '../XidTimeline';

type Node = ConsoleNodeResult['node'];
type History = GpuHistoryResult['gpuHistory'][number];
type GpuRow = Node['gpus'][number] & { history: History | undefined };

const DAYS = 30;

/** One node: where it is, its state (drain, undrain), its GPUs (repair, take out of service) and their XID timeline. */
export function NodePage({ params }: { params: Record<string, string> }) {
  const id = params['id'] ?? '';
  const node = useQuery(ConsoleNode, { id });
  const history = useQuery(GpuHistory, { nodeId: id, days: DAYS });
  // The timeline ends when the history was read; a reload moves it on.
  const [now, setNow] = useState(() => Date.now());
  const reload = () => {
    node.reload();
    history.reload();
    setNow(Date.now());
  };
  const n = node.data?.node;
  return (
    <Page title={n ? n.hostname : 'Node'} lead={<Link to="/">← Fleet</Link>} actions={n && <NodeActions node={n} onChanged={reload} />}>
      <ErrorNotice error={node.error} onRetry={node.reload} />
      {!n && node.loading && <Loading label="Loading the node…" />}
      {n && (
        <>
          <Overview node={n} />
          <Section title="GPUs">
            <DataTable caption="GPUs of this node" hideCaption columns={gpuColumns(reload)} rows={gpuRows(n, history.data?.gpuHistory ?? [])} rowKey={(g) => g.uuid} loading={node.loading} empty="This node has no GPUs." />
          </Section>
          <Section title="XID timeline">
            <ErrorNotice error={history.error} onRetry={history.reload} />
            {!history.data && history.loading && <Loading label="Loading the GPUs' history…" />}
            {history.data && <XidTimeline history={history.data.gpuHistory} days={DAYS} now={now} />}
          </Section>
        </>
      )}
    </Page>
  );
}

function Overview({ node: n }: { node: Node }) {
  return (
    <Section title="Overview">
      <DescriptionList
        items={[
          ['Hostname', n.hostname],
          ['State', <StatusBadge value={n.state} />],
          ['Region / zone', `${n.region} / ${n.zone}`],
          ['Rack', n.rack],
          ['NVLink domain', n.nvlinkDomain],
          ['GPUs', `${n.gpus.length} × ${n.gpuModel}${n.migEnabled ? ' (MIG)' : ''}${n.sharedGpus ? ' (time-shared)' : ''}`],
          ['Health', <GpuHealthSummary gpus={n.gpus} />],
          ['Verification', <VerificationStatus node={n} />],
          ['CPU / memory', `${n.cpuMilli / 1000} CPUs / ${Math.round(n.memoryMib / 1024)} GiB`],
          ['Running allocations', n.allocations.length],
          ['Registered', dateTime(n.createdAt)],
          ['Id', <code>{n.id}</code>],
        ]}
      />
    </Section>
  );
}

function gpuRows(n: Node, history: readonly History[]): GpuRow[] {
  const byUuid = new Map(history.map((h) => [h.uuid, h]));
  return [...n.gpus].sort((a, b) => a.index - b.index).map((g) => ({ ...g, history: byUuid.get(g.uuid) }));
}

function gpuColumns(changed: () => void): Column<GpuRow>[] {
  return [
    { header: 'Index', numeric: true, cell: (g) => g.index },
    { header: 'Model', cell: (g) => `${g.model}, ${Math.round(g.memoryMib / 1024)} GiB` },
    { header: 'UUID', cell: (g) => <code>{g.uuid}</code> },
    { header: 'Health', cell: (g) => <StatusBadge value={g.health} /> },
    { header: 'Since', cell: (g) => dateTime(g.history?.healthChangedAt) },
    { header: `Events (${DAYS} d)`, numeric: true, cell: (g) => g.history?.events.length ?? '—' },
    { header: 'Actions', hiddenHeader: true, cell: (g) => <GpuActions gpu={g} onChanged={changed} /> },
  ];
}
