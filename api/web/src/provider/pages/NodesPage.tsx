import { useQuery } from '../../lib/hooks';
import { VerificationStatus } from '../../provider-shared/node';
import { percent } from '../../provider-shared/payouts';
import { StatusBadge } from '../../ui/Badge';
import { type Column, DataTable } from '../../ui/DataTable';
import { Link } from '../../ui/Link';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { Stat } from '../../ui/Stat';
import { fleetSummary } from '../fleet';
import { OwnNodes, type OwnNodeRowFragment } from '../operations';
import { nodePath } from '../paths';

type Node = OwnNodeRowFragment;

/** The provider's nodes: where they are, what runs on them, whether they are verified and how reliable. */
export function NodesPage() {
  const { data, error, loading, reload } = useQuery(OwnNodes, {});
  return (
    <Page title="Nodes" actions={<Link to="/nodes/new">Register a node</Link>} lead="Your nodes and what runs on them. A node takes allocations only once its agent reported the hardware it was registered with (verified, or trusted when the operator registered it).">
      <ErrorNotice error={error} onRetry={reload} />
      {!data && loading && <Loading label="Loading your nodes…" />}
      {data && (
        <>
          <Summary nodes={data.providerNodes} />
          <Section title="Every node">
            <DataTable virtual caption="Your nodes" hideCaption columns={COLUMNS} rows={data.providerNodes} rowKey={(n) => n.id} loading={loading} empty="No nodes yet: a node registered with your provider key shows here." />
          </Section>
        </>
      )}
    </Page>
  );
}

function Summary({ nodes }: { nodes: readonly Node[] }) {
  const s = fleetSummary(nodes);
  return (
    <div class="stats">
      <Stat label="Nodes" value={s.nodes} note={s.retired > 0 ? `and ${s.retired} retired` : 'in the fleet'} />
      <Stat label="GPUs" value={s.gpus} note="on those nodes" />
      <Stat label="GPUs in use" value={s.gpusInUse} note="holding at least one allocation" />
      <Stat label="Needing attention" value={s.attention} note="hardware not verified: mismatch or pending" />
    </div>
  );
}

const COLUMNS: Column<Node>[] = [
  {
    header: 'Hostname',
    cell: (n) => (
      <Link to={nodePath(n.id)}>
        <strong>{n.hostname}</strong>
      </Link>
    ),
  },
  { header: 'Region / zone / rack', cell: (n) => `${n.region} / ${n.zone} / ${n.rack}` },
  { header: 'NVLink domain', cell: (n) => n.nvlinkDomain },
  { header: 'GPU model', cell: (n) => n.gpuModel },
  { header: 'GPUs', numeric: true, cell: (n) => n.gpus.length },
  { header: 'In use', numeric: true, cell: (n) => n.gpusInUse },
  { header: 'State', cell: (n) => <StatusBadge value={n.state} /> },
  { header: 'Verification', cell: (n) => <VerificationStatus node={n} /> },
  { header: 'Availability (30 days)', numeric: true, cell: (n) => (n.reliability ? percent(n.reliability.availability) : <span class="muted">No record yet</span>) },
];
