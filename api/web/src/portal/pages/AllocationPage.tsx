import { dateTime, enumLabel } from '../../lib/format';
import { useQuery } from '../../lib/hooks';
import { shortId } from '../../lib/ids';
import { StatusBadge } from '../../ui/Badge';
import { type Column, DataTable } from '../../ui/DataTable';
import { DescriptionList } from '../../ui/DescriptionList';
import { Link } from '../../ui/Link';
import { Flash } from '../../ui/Flash';
import { ErrorNotice, Loading, Notice } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { canChange, useViewer } from '../../ui/viewer';
import { gpuSummary, HealthBadge, releasable } from '../allocation';
import { Allocation, type AllocationResult } from '../operations';
import { ReleaseButton } from '../ReleaseButton';
import { UtilizationSection } from '../UtilizationSection';

type Detail = AllocationResult['allocation'];
type Gpu = Detail['gpus'][number];
type Endpoint = Detail['access']['endpoints'][number];

/**
 * One allocation: where it runs, its GPUs' utilization minute by minute, how to reach
 * it, its GPUs and their health history.
 */
export function AllocationPage({ params }: { params: Record<string, string> }) {
  const id = params['id'] ?? '';
  const { data, error, loading, reload } = useQuery(Allocation, { id });
  const viewer = useViewer();
  const a = data?.allocation;
  const actions = a && canChange(viewer) && releasable(a) ? <ReleaseButton id={a.id} onReleased={reload} /> : null;
  return (
    <Page title={`Allocation ${shortId(id)}`} lead={<Link to="/allocations">← All allocations</Link>} actions={actions}>
      <Flash />
      <ErrorNotice error={error} onRetry={reload} />
      {!a && loading && <Loading label="Loading the allocation…" />}
      {a && <AllocationDetail a={a} />}
    </Page>
  );
}

function AllocationDetail({ a }: { a: Detail }) {
  return (
    <>
      <Section title="Overview">
        <DescriptionList
          items={[
            ['Status', <StatusBadge value={a.status} />],
            ['SKU', a.sku.name],
            ['Class', enumLabel(a.class)],
            ['GPUs', gpuSummary(a)],
            ['Health', <HealthBadge gpus={a.gpus} />],
            ['Started', dateTime(a.startedAt)],
            [a.preemptAt ? 'Preempted at' : 'Ended', dateTime(a.preemptAt ?? a.endedAt)],
            ['Order', <code>{a.orderId}</code>],
            ['Labels', a.labels.length ? a.labels.map((l) => `${l.key}=${l.value}`).join(', ') : '—'],
          ]}
        />
      </Section>
      <UtilizationSection a={a} />
      <Section title="Where it runs">
        <DescriptionList
          items={[
            ['Region', a.node.region],
            ['Zone', a.node.zone],
            ['Rack', a.node.rack],
            ['NVLink domain', a.node.nvlinkDomain],
            ['Host', a.node.hostname],
          ]}
        />
      </Section>
      <AccessSection access={a.access} />
      <Section title="GPUs">
        <DataTable caption="GPUs of this allocation" hideCaption columns={GPU_COLUMNS} rows={a.gpus} rowKey={(g) => g.uuid} empty="No GPUs." />
      </Section>
      <HealthHistory gpus={a.gpus} />
    </>
  );
}

function AccessSection({ access }: { access: Detail['access'] }) {
  return (
    <Section title="Access">
      {access.state === 'PENDING' && <Notice tone="info">Being provisioned: connection details appear here once the machine is handed over.</Notice>}
      {access.state === 'FAILED' && <Notice tone="danger" title="Provisioning failed">{access.reason ?? 'No reason was given.'} None of it is billed.</Notice>}
      {access.endpoints.length > 0 && (
        <DataTable caption="Endpoints" hideCaption columns={ENDPOINT_COLUMNS} rows={access.endpoints} rowKey={(e) => `${e.kind}-${e.host}-${e.port}`} empty="" />
      )}
      {access.changedAt && <p class="muted">Last reported {dateTime(access.changedAt)}.</p>}
    </Section>
  );
}

const ENDPOINT_COLUMNS: Column<Endpoint>[] = [
  { header: 'Kind', cell: (e) => e.kind },
  { header: 'Address', cell: (e) => <code>{e.kind === 'ssh' ? `ssh ${e.username ? `${e.username}@` : ''}${e.host} -p ${e.port}` : `${e.host}:${e.port}`}</code> },
  { header: 'Description', cell: (e) => e.description ?? '—' },
];

const GPU_COLUMNS: Column<Gpu>[] = [
  { header: 'Index', numeric: true, cell: (g) => g.index },
  { header: 'Model', cell: (g) => g.model },
  { header: 'UUID', cell: (g) => <code>{g.uuid}</code> },
  { header: 'Health', cell: (g) => <StatusBadge value={g.health} /> },
  { header: 'Since', cell: (g) => dateTime(g.healthChangedAt) },
  { header: 'Events', numeric: true, cell: (g) => g.events.length },
];

interface Span {
  gpu: number;
  health: string;
  from: string;
  to: string | null;
  cause: string;
}

const SPAN_COLUMNS: Column<Span>[] = [
  { header: 'GPU', numeric: true, cell: (s) => s.gpu },
  { header: 'Health', cell: (s) => <StatusBadge value={s.health} /> },
  { header: 'From', cell: (s) => dateTime(s.from) },
  { header: 'To', cell: (s) => (s.to ? dateTime(s.to) : 'still') },
  { header: 'Cause', cell: (s) => s.cause },
];

/** When GPUs were degraded or failed while this allocation held them (failed time is credited). */
function HealthHistory({ gpus }: { gpus: Gpu[] }) {
  const spans = gpus.flatMap((g) => g.healthHistory.map((h) => ({ gpu: g.index, ...h })));
  return (
    <Section title="Health history">
      <DataTable caption="Degraded and failed periods" hideCaption columns={SPAN_COLUMNS} rows={spans} rowKey={(s) => `${s.gpu}-${s.from}`} empty="No GPU was degraded or failed while this allocation held it." />
    </Section>
  );
}
