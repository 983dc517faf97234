import { dateTime } from '../../lib/format';
import { useQuery } from '../../lib/hooks';
import { Badge } from '../../ui/Badge';
import { type Column, DataTable } from '../../ui/DataTable';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { Stat } from '../../ui/Stat';
import { IngestHealth, type IngestHealthResult } from '../operations';
import { QuarantinedBatches } from '../QuarantinedBatches';

type Health = IngestHealthResult['ingestHealth'];
type Agent = Health['agents'][number];
type Anomaly = Health['anomalies'][number];
type Rejected = Health['rejected'][number];

/** A stream this far behind is flagged. */
const LAG_WARN_S = 300;

/** Whether usage is arriving whole: every agent's lag and gaps, and what was set aside. */
export function IngestPage() {
  const { data, error, loading, reload } = useQuery(IngestHealth, {}, { pollMs: 30_000 });
  // The API names the host of every node these lists mention, however large the fleet.
  const hosts = new Map((data?.ingestHealth.hosts ?? []).map((h) => [h.nodeId, h.hostname]));
  const host = (id: string | null) => (id ? (hosts.get(id) ?? id) : '—');
  return (
    <Page title="Ingest health" lead="Usage batches from the node agents: how far behind each stream is, what is missing, and what was set aside. Refreshes every 30 seconds.">
      <ErrorNotice error={error} onRetry={reload} />
      {!data && loading && <Loading label="Loading ingest health…" />}
      {data && (
        <>
          <Overview health={data.ingestHealth} />
          <Section title="Agents">
            <DataTable virtual caption="Agent streams" hideCaption columns={AGENT_COLUMNS} rows={byWorst(data.ingestHealth.agents)} rowKey={(a) => `${a.agentId}-${a.bootId}`} empty="No agent has reported yet." />
          </Section>
          <QuarantinedBatches batches={data.ingestHealth.quarantined} host={host} onRequeued={reload} />
          <Section title="Anomalies">
            <DataTable caption="Ingest anomalies, newest first" hideCaption columns={anomalyColumns(host)} rows={data.ingestHealth.anomalies} rowKey={(a) => `${a.batchId}-${a.device}-${a.kind}`} empty="No anomalies." />
          </Section>
          <Section title="Rejected messages">
            <DataTable caption="Rejected transport messages, newest first" hideCaption columns={rejectedColumns(host)} rows={data.ingestHealth.rejected} rowKey={(r) => r.id} empty="No message was rejected." />
          </Section>
        </>
      )}
    </Page>
  );
}

function Overview({ health: h }: { health: Health }) {
  const gaps = h.agents.reduce((n, a) => n + a.gaps, 0);
  const lag = Math.max(0, ...h.agents.map((a) => a.lagSeconds));
  return (
    <div class="stats">
      <Stat label="Agents" value={h.agents.length} note={`${h.agents.filter((a) => a.gaps > 0).length} with gaps`} />
      <Stat label="Worst lag" value={seconds(lag)} note="since an agent's last batch" />
      <Stat label="Gaps" value={gaps} note="skipped batch numbers" />
      <Stat label="Quarantined" value={h.quarantined.length} note="batches set aside" />
      <Stat label="Backlog" value={h.pendingBatches} note={h.stream ? `stream: ${h.stream.pending} pending, ${h.stream.ackPending} unacked` : 'batches not yet aggregated'} />
    </div>
  );
}

function byWorst(agents: Agent[]): Agent[] {
  return [...agents].sort((a, b) => b.gaps - a.gaps || b.lagSeconds - a.lagSeconds || a.agentId.localeCompare(b.agentId));
}

function seconds(s: number): string {
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${Math.round(s / 3600)} h`;
}

const AGENT_COLUMNS: Column<Agent>[] = [
  { header: 'Agent', cell: (a) => <strong>{a.agentId}</strong> },
  { header: 'Lag', numeric: true, cell: (a) => (a.lagSeconds > LAG_WARN_S ? <Badge tone="warn">{seconds(a.lagSeconds)}</Badge> : seconds(a.lagSeconds)) },
  { header: 'Gaps', numeric: true, cell: (a) => (a.gaps > 0 ? <Badge tone="bad">{a.gaps}</Badge> : 0) },
  { header: 'Last batch', numeric: true, cell: (a) => a.lastSeq },
  { header: 'Received', cell: (a) => dateTime(a.lastReceivedAt) },
  { header: 'Overlap (s)', numeric: true, cell: (a) => a.overlapSeconds },
  { header: 'Boot', cell: (a) => <code class="muted">{a.bootId.slice(0, 8)}</code> },
];

function anomalyColumns(host: (id: string) => string): Column<Anomaly>[] {
  return [
    { header: 'When', cell: (a) => dateTime(a.recordedAt) },
    { header: 'Node', cell: (a) => host(a.nodeId) },
    { header: 'Kind', cell: (a) => <code>{a.kind}</code> },
    { header: 'Device', cell: (a) => <code>{a.device}</code> },
    { header: 'Detail', cell: (a) => a.detail },
  ];
}

function rejectedColumns(host: (id: string | null) => string): Column<Rejected>[] {
  return [
    { header: 'When', cell: (r) => dateTime(r.rejectedAt) },
    { header: 'Node', cell: (r) => host(r.nodeId) },
    { header: 'Subject', cell: (r) => <code class="wrap">{r.subject}</code> },
    { header: 'Reason', cell: (r) => r.reason },
  ];
}
