import { dateTime, groupDigits } from '../../lib/format';
import { useQuery } from '../../lib/hooks';
import { shortId } from '../../lib/ids';
import { eventKindLabel, VerificationStatus } from '../../provider-shared/node';
import { percent } from '../../provider-shared/payouts';
import { StatusBadge } from '../../ui/Badge';
import { type Column, DataTable } from '../../ui/DataTable';
import { DescriptionList } from '../../ui/DescriptionList';
import { Link } from '../../ui/Link';
import { ErrorNotice, Loading, Notice } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { hours } from '../fleet';
import { NodeActions } from '../NodeActions';
import { OwnNodeDetails, type OwnNodeDetailsResult } from '../operations';

type Node = OwnNodeDetailsResult['providerNodes'][number];
type Gpu = Node['gpus'][number];
type HealthEvent = Node['healthEvents'][number];
type Reliability = NonNullable<Node['reliability']>;
type Gap = Reliability['coverageGaps'][number];

/**
 * One of the provider's nodes: where it is, its verification, its GPUs (what runs there
 * only as allocation ids), its health events and reliability; drain, return to service, retire.
 */
export function NodePage({ params }: { params: Record<string, string> }) {
  const id = params['id'] ?? '';
  // No query reads one provider node: the node is found among the provider's.
  const { data, error, loading, reload } = useQuery(OwnNodeDetails, {});
  const n = data?.providerNodes.find((node) => node.id === id);
  return (
    <Page title={n ? n.hostname : 'Node'} lead={<Link to="/">← Nodes</Link>}>
      <ErrorNotice error={error} onRetry={reload} />
      {!data && loading && <Loading label="Loading the node…" />}
      {data && !n && (
        <Notice tone="warning" title="Not found">
          <p>None of your nodes has this id.</p>
        </Notice>
      )}
      {n && <NodeBody node={n} onChanged={reload} />}
    </Page>
  );
}

function NodeBody({ node: n, onChanged }: { node: Node; onChanged: () => void }) {
  return (
    <>
      <Overview node={n} />
      {n.state !== 'RETIRED' && (
        <Section title="Maintenance">
          <NodeActions node={n} onChanged={onChanged} />
        </Section>
      )}
      <Section title="GPUs">
        <DataTable caption={`GPUs of ${n.hostname}`} hideCaption columns={GPU_COLUMNS} rows={[...n.gpus].sort((a, b) => a.index - b.index)} rowKey={(g) => String(g.index)} empty="This node has no GPUs." />
      </Section>
      <Section title="Health events">
        <p class="section-lead muted">What the node's agent reported in the last 30 days, newest first (at most 20): its GPUs' health and its reliability come from them.</p>
        <DataTable caption={`XID and ECC events of ${n.hostname}, newest first`} hideCaption columns={EVENT_COLUMNS} rows={n.healthEvents} rowKey={(e) => `${e.at}-${e.gpuIndex ?? 'x'}-${e.kind}-${e.code}`} empty="No XID or ECC event in the last 30 days." />
      </Section>
      <ReliabilitySection reliability={n.reliability} />
    </>
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
          ['GPUs', `${n.gpus.length} × ${n.gpuModel}, ${n.gpusInUse} in use`],
          ['Verification', <VerificationStatus node={n} />],
          ['Retired', n.retiredAt ? dateTime(n.retiredAt) : '—'],
          ['Id', <code>{n.id}</code>],
        ]}
      />
    </Section>
  );
}

/** Running allocations by id only: a provider never learns whose they are. */
function Allocations({ ids }: { ids: readonly string[] }) {
  if (ids.length === 0) return <span class="muted">None</span>;
  return (
    <span class="cell-stack">
      {ids.map((id) => (
        <code key={id} title={id}>
          {shortId(id)}
        </code>
      ))}
    </span>
  );
}

const GPU_COLUMNS: Column<Gpu>[] = [
  { header: 'Index', numeric: true, cell: (g) => g.index },
  { header: 'UUID', cell: (g) => <code>{g.uuid}</code> },
  { header: 'Model', cell: (g) => g.model },
  { header: 'Health', cell: (g) => <StatusBadge value={g.health} /> },
  { header: 'Since', cell: (g) => dateTime(g.healthChangedAt) },
  { header: 'Running allocations', cell: (g) => <Allocations ids={g.allocationIds} /> },
];

const EVENT_COLUMNS: Column<HealthEvent>[] = [
  { header: 'Time', cell: (e) => dateTime(e.at) },
  { header: 'GPU', numeric: true, cell: (e) => e.gpuIndex ?? <span class="muted">Not one of its GPUs</span> },
  { header: 'Kind', cell: (e) => eventKindLabel(e.kind) },
  { header: 'XID code', numeric: true, cell: (e) => (e.kind === 'xid' ? e.code : '—') },
];

function ReliabilitySection({ reliability: r }: { reliability: Node['reliability'] }) {
  return (
    <Section title="Reliability">
      {r ? <ReliabilityDetails reliability={r} /> : <p class="empty">No record yet: reliability is computed once the node's agent has reported.</p>}
    </Section>
  );
}

function ReliabilityDetails({ reliability: r }: { reliability: Reliability }) {
  return (
    <>
      <DescriptionList
        items={[
          ['Score', r.score ? percent(r.score) : 'None: the window is empty'],
          ['Availability', percent(r.availability)],
          ['Window', `${dateTime(r.windowStart)} – ${dateTime(r.windowEnd)}`],
          ['Covered by agent reports', `${hours(r.coveredSeconds)} h of ${hours(r.windowSeconds)} h`],
          ['GPUs', r.gpuCount],
          ['Failed GPU time', `${hours(r.failedGpuSeconds)} GPU-hours`],
          ['Faults (30 days)', r.faults],
          ['Degradations (30 days)', r.degradations],
          ['Allocations preempted by a fault', r.preemptionsByFault],
          ['Computed', dateTime(r.computedAt)],
        ]}
      />
      <p class="muted small">The score is availability × GPU health: the share of the window some agent report covered, less the time GPUs spent failed.</p>
      <h3 class="subhead">Hours not fully covered</h3>
      <DataTable virtual caption="Hours of the window the agents did not fully cover, newest first" hideCaption columns={GAP_COLUMNS} rows={r.coverageGaps} rowKey={(g) => g.hourStart} empty="None: agent reports covered the whole window." compact />
    </>
  );
}

const GAP_COLUMNS: Column<Gap>[] = [
  { header: 'Hour', cell: (g) => dateTime(g.hourStart) },
  { header: 'Missing', numeric: true, cell: (g) => `${groupDigits(String(g.missingSeconds))} s` },
];
